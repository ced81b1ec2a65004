// Tile configurations, program text, kernel caching and launches of the tiled GEMM skeleton.
#include "gemm_internal.h"

#include <dlprim/autotune.h>
#include <dlprim/env.h>
#include <dlprim/int_math.h>

#include <dlprim/embedded.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>

namespace dlprim {
namespace detail {

namespace {

bool is_vector_width(int v) { return v == 1 || v == 2 || v == 4 || v == 8 || v == 16; }


} // namespace

std::string TileConfig::str() const {
  char buf[96];
  const char* mode = local == 2 ? "local2" : local ? "local" : "global";
  if (mma) {
    char async_mode[16];
    std::snprintf(async_mode, sizeof(async_mode), "async%d", local);
    std::snprintf(buf, sizeof(buf), "mma %dx%dx%d w%dx%d %s", bm, bn, bk, tm, tn, async ? async_mode : mode);
    return buf;
  }
  std::snprintf(buf, sizeof(buf), "%dx%dx%d t%dx%d v%dx%d %s", bm, bn, bk, tm, tn, vm, vn, mode);
  return buf;
}

bool TileConfig::parse(const std::string& s, TileConfig* out) {
  TileConfig c;
  char mode[16] = {0};
  if (s.compare(0, 4, "mma ") == 0) {
    if (std::sscanf(s.c_str(), "mma %dx%dx%d w%dx%d %15s", &c.bm, &c.bn, &c.bk, &c.tm, &c.tn, mode) != 6) return false;
    std::string m(mode);
    c.local = m == "local2" ? 2 : m == "local" ? 1 : 0;
    if (m.size() == 6 && m.compare(0, 5, "async") == 0 && m[5] >= '2' && m[5] <= '4') c.local = m[5] - '0', c.async = 1;
    if (!c.local) return false;
    c.mma = 1;
    c.vm = c.vn = 1;
    *out = c;
    return true;
  }
  if (std::sscanf(s.c_str(), "%dx%dx%d t%dx%d v%dx%d %15s", &c.bm, &c.bn, &c.bk, &c.tm, &c.tn, &c.vm, &c.vn, mode) != 8)
    return false;
  std::string m(mode);
  c.local = m == "local2" ? 2 : m == "local" ? 1 : 0;
  if (!c.local && m != "global") return false;
  *out = c;
  return true;
}

bool tile_config_fits(const Context& ctx, const TileConfig& c, DType acc) {
  if (c.mma) return false;  // mma configs: mma_config_fits
  if (c.bm <= 0 || c.bn <= 0 || c.bk <= 0 || c.tm <= 0 || c.tn <= 0) return false;
  if (!is_vector_width(c.vm) || !is_vector_width(c.vn)) return false;
  if (c.bm % (c.tm * c.vm) || c.bn % (c.tn * c.vn)) return false;
  size_t nt = static_cast<size_t>(c.threads());
  if (nt > ctx.info().max_work_group_size) return false;
  if ((c.bm * c.bk) % nt || (c.bn * c.bk) % nt) return false;
  if (c.local) {
    // Worst-case padding (both operands transposed while staged).
    uint64_t bytes = static_cast<uint64_t>(c.bk) * (c.bm + c.vm + c.bn + c.vn) * dtype_size(acc) * c.local_buffers();
    if (bytes + 256 > ctx.info().local_mem_size) return false;
  }
  return true;
}

std::vector<TileConfig> tile_candidates(const Context& ctx, DType acc) {
  std::vector<TileConfig> all;
  // Random tuning (tests) draws from both lists on any device, so CI's CPU device runs the
  // local-memory configs GPUs get, inside whole networks.
  bool random = autotune_mode() == TuneMode::Random;
  if (ctx.info().is_cpu || random) {
    // CPU devices: a work-group runs as a loop on one core; few candidates keep tuning cheap.
    // Each work-item keeps RM rows x RN/16 SIMD vectors of accumulators in registers.
    all = {
        {32, 64, 16, 4, 2, 1, 16, 0},
        {8, 32, 16, 1, 1, 1, 16, 0},
        {8, 64, 64, 1, 2, 1, 16, 0},
        {6, 64, 16, 1, 1, 1, 16, 0},
    };
  }
  if (!ctx.info().is_cpu || random) {
    all.insert(all.end(), {
        {128, 128, 16, 16, 16, 4, 4, 1}, {128, 128, 8, 16, 16, 4, 4, 1},  {128, 128, 16, 16, 16, 1, 1, 1},
        {128, 128, 32, 16, 16, 4, 4, 1}, {128, 64, 16, 16, 16, 4, 4, 1},  {64, 128, 16, 16, 16, 4, 4, 1},
        {64, 64, 16, 16, 16, 4, 4, 1},   {64, 64, 16, 16, 16, 1, 1, 1},   {64, 64, 32, 8, 8, 8, 8, 1},
        {32, 32, 16, 8, 8, 4, 4, 1},
        // 16 x 8 outputs per work-item (H200, 4096^3, TFLOP/s: 128x256x16 48.0, 128x128x16 46.5,
        // against 42.4 for 128x128x16 with 8 x 8 per item); two alternating local buffers (one
        // barrier per K step) help the BK = 8 ones (44-47).
        {128, 256, 16, 8, 32, 4, 4, 1},  {128, 128, 16, 8, 16, 4, 4, 1},  {256, 128, 8, 16, 16, 4, 4, 2},
        {128, 128, 8, 8, 16, 4, 4, 2},   {128, 256, 8, 8, 32, 4, 4, 2},   {64, 64, 16, 16, 16, 4, 4, 2},
    });
  }
  std::vector<TileConfig> out;
  for (const auto& c : all)
    if (tile_config_fits(ctx, c, acc)) out.push_back(c);
  return out;
}

TileConfig default_tile_config(const Context& ctx, DType acc, int64_t M, int64_t N) {
  std::vector<TileConfig> prefs;
  if (ctx.info().is_cpu) {
    prefs = {{32, 64, 16, 4, 2, 1, 16, 0}, {8, 32, 16, 1, 1, 1, 16, 0}};
  } else if (M >= 512 && N >= 512) {
    prefs = {{128, 128, 16, 8, 16, 4, 4, 1}, {128, 128, 16, 16, 16, 4, 4, 1}, {64, 64, 16, 16, 16, 4, 4, 1}};
  } else if (M >= 64 && N >= 64) {
    prefs = {{64, 64, 16, 16, 16, 4, 4, 1}};
  } else {
    prefs = {{32, 32, 16, 8, 8, 4, 4, 1}};
  }
  prefs.push_back({32, 32, 8, 8, 8, 1, 1, 1});
  prefs.push_back({16, 16, 8, 4, 4, 1, 1, 1});
  prefs.push_back({8, 8, 8, 2, 2, 1, 1, 0});
  for (const auto& c : prefs)
    if (tile_config_fits(ctx, c, acc)) return c;
  return {4, 4, 4, 1, 1, 1, 1, 0};  // one work-item: fits any device
}

std::string gemm_program_head(DType dtype, DType c_dtype) {
  DType acc = compute_dtype(dtype);
  std::ostringstream s;
  if (dtype == DType::F64 || c_dtype == DType::F64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << "#define T " << storage_cl_type(dtype) << "\n";
  s << "#define ACC " << compute_cl_type(acc) << "\n";
  s << "#define LOAD_T(p, i) (" << load_expr(dtype, "(p)", "(i)") << ")\n";
  s << "#define STORE_T(p, i, v) " << store_stmt(dtype, "(p)", "(i)", "(v)") << "\n";
  const char* at = compute_cl_type(acc);
  s << "#define ACC16 " << at << "16\n#define ACC8 " << at << "8\n#define ACC4 " << at << "4\n";
  if (dtype == DType::F16) s << "#define VLOAD16_T(p) vload_half16(0, (p))\n";
  else if (dtype == DType::BF16) s << "#define VLOAD16_T(p) as_float16(convert_uint16(vload16(0, (p))) << 16)\n";
  else s << "#define VLOAD16_T(p) vload16(0, (p))\n";
  if (is_floating(dtype)) s << "#define GEMM_FLOAT 1\n";  // integer products have no GELU epilogue
  s << "#define TC " << storage_cl_type(c_dtype) << "\n";
  s << "#define LOAD_C(p, i) ((ACC)" << load_expr(c_dtype, "(p)", "(i)") << ")\n";
  s << "#define STORE_C(p, i, v) " << store_stmt(c_dtype, "(p)", "(i)", "(v)") << "\n";
  s << kernel_source("common") << "\n" << kernel_source("gemm_common") << "\n";
  return s.str();
}

std::string tile_defines(const TileConfig& c, DType dtype, bool a_kfast, bool b_nfast, const std::string& kernel_name) {
  const char* at = compute_cl_type(compute_dtype(dtype));
  std::ostringstream s;
  s << "#define BM " << c.bm << "\n#define BN " << c.bn << "\n#define BK " << c.bk << "\n";
  s << "#define TM " << c.tm << "\n#define TN " << c.tn << "\n#define VM " << c.vm << "\n#define VN " << c.vn << "\n";
  s << "#define USE_LOCAL " << (c.local ? 1 : 0) << "\n#define LOCAL_BUFS " << c.local_buffers() << "\n";
  // Staging a tile whose adjacent work-items read adjacent k writes local memory with a stride of
  // the tile width: one padding vector keeps those writes off a single bank.
  s << "#define PAD_A " << (a_kfast ? c.vm : 0) << "\n#define PAD_B " << (b_nfast ? 0 : c.vn) << "\n";
  if (c.vm > 1) s << "#define ACCV_M " << at << c.vm << "\n#define VSTORE_M vstore" << c.vm << "\n";
  if (c.vn > 1) {
    s << "#define ACCV_N " << at << c.vn << "\n#define VSTORE_N vstore" << c.vn << "\n";
    // VN adjacent elements of a buffer of the storage type as an ACCV_N.
    std::string n = std::to_string(c.vn);
    s << "#define VLOAD_TN(p) ";
    if (dtype == DType::F16) s << "vload_half" << n << "(0, (p))\n";
    else if (dtype == DType::BF16) s << "as_float" << n << "(convert_uint" << n << "(vload" << n << "(0, (p))) << 16)\n";
    else s << "vload" << n << "(0, (p))\n";
  }
  s << "#define KERNEL_NAME " << kernel_name << "\n";
  return s.str();
}

LockedKernel& kernel_slot(const Context& ctx, const std::string& key) {
  static std::mutex mutex;
  static std::map<std::pair<cl_context, std::string>, std::unique_ptr<LockedKernel>> slots;
  std::lock_guard<std::mutex> lock(mutex);
  auto& p = slots[{ctx.context(), key}];
  if (!p) p.reset(new LockedKernel());
  return *p;
}

size_t kernel_max_work_group(const Context& ctx, cl_kernel k) {
  size_t wg = 0;
  DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(k, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr));
  return wg;
}

SplitPlan plan_splits(const Context& ctx, const TileConfig& c, int64_t M, int64_t N, int64_t K, int64_t k_outer,
                      int64_t zcount, DType acc, bool allow_split) {
  SplitPlan p;
  p.ksteps = static_cast<int>(std::max<uint64_t>(1, ceil_div(static_cast<uint64_t>(K), c.bk)));
  uint64_t total = static_cast<uint64_t>(std::max<int64_t>(0, k_outer)) * (K > 0 ? p.ksteps : 0);
  if (total > 0x7fffffff) throw Error("gemm: K too large");
  p.total_steps = static_cast<int>(total);
  p.steps_per_split = std::max(1, p.total_steps);
  p.splits = 1;
  uint64_t tiles = ceil_div(M, c.bm) * ceil_div(N, c.bn) * static_cast<uint64_t>(zcount);
  uint64_t cu = std::max<uint32_t>(1, ctx.info().compute_units);
  // Enough groups to fill the device about twice (once on CPUs, where a group is a long loop);
  // each split keeps at least 8 steps so the partial sums stay cheap next to the products.
  // PYTORCH_OCL_SPLIT_WAVES=W (1-64, read once) aims at W groups per compute unit instead (experiments: on the H200
  // a few-tile product such as resnet50's stem weight gradient gets one or two 4-warp groups an SM at 2).
  static const int waves_env = static_cast<int>(env_int("PYTORCH_OCL_SPLIT_WAVES", 1, 64, 0));
  uint64_t target = cu * static_cast<uint64_t>(waves_env ? waves_env : ctx.info().is_cpu ? 1 : 2);
  const uint64_t min_steps = 8;
  // CPU devices (no local staging): consecutive work-groups share a K x BN panel of B through
  // the cache (gemm_tiled.cl's grid order); a deep K makes that panel outgrow a core's L2, and
  // splitting K brings it back (PoCL, 2 cores, 4096^3: 55 GFLOP/s before the grid order, 103 with it,
  // 154 with the split; PyTorch CPU 185) at the cost of
  // one pass over the partial sums.
  uint64_t cache_splits = 1;
  if (ctx.info().is_cpu && !c.local) {
    const uint64_t l2_panel = 256u << 10;
    uint64_t panel = static_cast<uint64_t>(K) * c.bn * dtype_size(acc);
    cache_splits = ceil_div(panel, l2_panel);
  }
  // Random tuning (tests): no split, the heuristic's, or as many splits as the steps allow.
  int variant = total >= 2 * min_steps && allow_split
                    ? tune_variant("gemm_splits|" + c.str() + "|" + std::to_string(M) + "x" + std::to_string(N) + "x" +
                                       std::to_string(K) + "x" + std::to_string(k_outer) + "x" + std::to_string(zcount),
                                   3)
                    : -1;
  bool heuristic_split = (tiles < target || cache_splits > 1) && variant < 0;
  if (allow_split && total >= 2 * min_steps && (heuristic_split || variant > 0)) {
    uint64_t splits = std::min(std::max(ceil_div(target, tiles), cache_splits), total / min_steps);
    if (variant == 2) splits = total / min_steps;
    // Keep the workspace modest.
    uint64_t per_split = static_cast<uint64_t>(M) * N * zcount * dtype_size(acc);
    uint64_t cap = std::min<uint64_t>(256ull << 20, ctx.info().max_alloc_size / 2);
    if (per_split > 0) splits = std::min<uint64_t>(splits, std::max<uint64_t>(1, cap / per_split));
    if (splits > 1) {
      p.steps_per_split = static_cast<int>(ceil_div(total, splits));
      p.splits = static_cast<int>(ceil_div(total, p.steps_per_split));
      if (p.splits > 1) p.workspace_bytes = per_split * p.splits;
    }
  }
  return p;
}

namespace {
void add_matrix_out(KernelArgs& a, const GemmMatrix& m) {
  a.add(m.mem).add<cl_ulong>(m.offset).add<cl_long>(m.row_stride).add<cl_long>(m.col_stride);
  a.add<cl_long>(m.batch_stride).add<cl_long>(m.group_stride);
}
} // namespace

void add_out_args(KernelArgs& a, const Gemm& g) {
  add_matrix_out(a, g.c);
  GemmMatrix d = g.has_d ? g.d : g.c;  // any valid buffer when unused
  add_matrix_out(a, d);
  // GELUs are a second pass (launch_activation); only relu is fused.
  a.add<cl_int>(g.has_d ? 1 : 0).add<cl_int>(g.act == Activation::Relu ? 1 : 0);
  double beta = g.has_d ? g.beta : 0.0;
  switch (compute_dtype(g.dtype)) {  // ACC alpha, ACC beta
    case DType::F64: a.add<cl_double>(g.alpha).add<cl_double>(beta); return;
    case DType::I64: case DType::U64:
      a.add<cl_long>(static_cast<int64_t>(g.alpha)).add<cl_long>(static_cast<int64_t>(beta)); return;
    case DType::I32: case DType::U32:
      a.add<cl_int>(static_cast<int32_t>(static_cast<int64_t>(g.alpha)))
          .add<cl_int>(static_cast<int32_t>(static_cast<int64_t>(beta)));
      return;
    case DType::I16: case DType::U16:
      a.add<cl_short>(static_cast<int16_t>(static_cast<int64_t>(g.alpha)))
          .add<cl_short>(static_cast<int16_t>(static_cast<int64_t>(beta)));
      return;
    case DType::I8: case DType::U8:
      a.add<cl_char>(static_cast<int8_t>(static_cast<int64_t>(g.alpha)))
          .add<cl_char>(static_cast<int8_t>(static_cast<int64_t>(beta)));
      return;
    default: break;
  }
    a.add<cl_float>(static_cast<float>(g.alpha)).add<cl_float>(static_cast<float>(g.has_d ? g.beta : 0.0));
}

void launch_tiled(cl_command_queue q, cl_kernel k, const TileConfig& c, int64_t M, int64_t N, int64_t zcount,
                  std::vector<cl_event>* events) {
  const uint64_t kMaxGroups = 65535;  // grid y/z limit of some drivers
  // Dim 0 walks the N tiles for local-staged configs and the M tiles otherwise (gemm_tiled.cl).
  uint64_t tiles_n = ceil_div(N, c.bn), tiles_m = ceil_div(M, c.bm), gz = static_cast<uint64_t>(zcount);
  uint64_t gx = c.local ? tiles_n : tiles_m, gy = c.local ? tiles_m : tiles_n;
  size_t lx = static_cast<size_t>(c.local ? c.tn : c.tm), ly = static_cast<size_t>(c.local ? c.tm : c.tn);
  if (c.mma) lx *= 32;  // tn warps along dim 0
  if (gx == 0 || gy == 0 || gz == 0) return;
  size_t local[3] = {lx, ly, 1};
  for (uint64_t y0 = 0; y0 < gy; y0 += kMaxGroups) {
    for (uint64_t z0 = 0; z0 < gz; z0 += kMaxGroups) {
      size_t offset[3] = {0, static_cast<size_t>(y0 * ly), static_cast<size_t>(z0)};
      size_t global[3] = {static_cast<size_t>(gx * lx), static_cast<size_t>(std::min(kMaxGroups, gy - y0) * ly),
                          static_cast<size_t>(std::min(kMaxGroups, gz - z0))};
      launch_nd_events(q, k, 3, offset, global, local, events);
    }
  }
}

} // namespace detail
} // namespace dlprim
