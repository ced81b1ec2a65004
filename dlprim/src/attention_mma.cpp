// Host side of the matrix-engine attention forward (kernels/attention_mma.cl): the calls it takes, its
// work-group shape and program text. attention.cpp sets the arguments (those of attn_fwd_tiled) and launches.
#include "attention_mma.h"

#include "gemm_internal.h"

#include <dlprim/env.h>
#include <dlprim/embedded.h>
#include <dlprim/int_math.h>
#include <dlprim/program_cache.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

namespace dlprim {
namespace detail {

namespace {

struct MmaLayout {
  int nw = 4;            // warps per work-group (16 queries each)
  int bkt = 32;          // keys per staged tile
  int prefetch = 0;      // the next tile's global loads held in registers across the products
};

bool is16(MmaKind k) { return k == MmaKind::Bf16 || k == MmaKind::Fp16; }

// Local bytes of attention_mma.cl's tiles (its KLD / VLD paddings) and the emulation's registers.
uint64_t local_bytes(const MmaLayout& l, MmaChoice m, int64_t D, int64_t DV) {
  const bool h = is16(m.kind);
  const int64_t ks = h ? 16 : 8, dk = ceil_div(D, ks) * ks, dvn = ceil_div(DV, 8) * 8;
  const int64_t kld = h ? dk + ((dk / 2) % 16 == 0 ? 16 : 0) : dk + 4;
  const int64_t v = h ? dvn * (l.bkt + 8) : static_cast<int64_t>(l.bkt) * (dvn + 4);
  return static_cast<uint64_t>(l.bkt * kld + v) * (h ? 2 : 4) + (m.emulate ? 32 * l.nw * 6 * 4 : 0);
}

// PYTORCH_OCL_ATTN_MMA: "0" keeps the FMA kernels; unset or "1" takes the mma kernels wherever the engine
// gives the dtype's kind (checked and timed on an H100: faster than the FMA kernels in every SDPA case of
// benchmarks/transformer.py); "NW,BKT,PREFETCH" (also on) sets warps per work-group, keys per
// tile and the register prefetch (0/1) (layout experiments). Default 4 warps (64 queries), 32-key tiles
// (16 for fp32 heads over 64), prefetch for heads up to 64 except 3xtf32. Chosen by register estimates
// (scripts/ptx_registers.py attnmma=...: under 255 without spills), not yet by timings.
bool layout_for(const Context& ctx, MmaChoice m, int64_t D, int64_t DV, MmaLayout& l) {
  const char* env = env_value("PYTORCH_OCL_ATTN_MMA");
  if (env && (!std::strcmp(env, "0") || !std::strcmp(env, "off"))) return false;
  const bool wide = std::max(D, DV) > 64;
  l.bkt = wide && !is16(m.kind) ? 16 : 32;
  l.prefetch = !wide && m.kind != MmaKind::Tf32x3;
  // 16-bit forward: 8 warps (128 queries share each staged key tile); heads over 64 on 64-key tiles. Timed on
  // an H100 (bf16 causal, benchmarks/attention_layouts.py): D 64 L 4096 1.25 -> 1.08 ms, D 128 L 2048 1.06 -> 0.90.
  if (is16(m.kind) && ctx.info().max_work_group_size >= 256) {
    l.nw = 8;
    if (wide) l.bkt = 64;
  }
  if (env) {
    MmaLayout e;
    char extra = 0;
    if (std::sscanf(env, "%d,%d,%d%c", &e.nw, &e.bkt, &e.prefetch, &extra) == 3 && e.nw >= 1 && e.nw <= 16 &&
        e.bkt >= 16 && e.bkt % 16 == 0 && e.bkt <= 128)
      l = e;
  }
  if (static_cast<uint64_t>(32 * l.nw) > ctx.info().max_work_group_size) return false;
  const uint64_t limit = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
  while (l.bkt > 16 && local_bytes(l, m, D, DV) > limit) l.bkt /= 2;
  return local_bytes(l, m, D, DV) <= limit;
}

// Whether a [B, H, rows, dim] operand's rows are whole aligned 16-byte units (unit stride, offsets and
// strides multiples of the unit).
bool vec16(const AttnTensor& t, int64_t dim, int unit) {
  return dim % unit == 0 && t.sd == 1 && t.sl % unit == 0 && t.sh % unit == 0 && t.sb % unit == 0 &&
         t.offset % unit == 0;
}

std::string program_text(DType dtype, MmaChoice m, int64_t D, int64_t DV, const MmaLayout& l, bool mask,
                         bool dropout, const bool (&vec)[4], bool prefetch, bool bwd, bool split, int onepass) {
  std::ostringstream s;
  s << kernel_source("common");
  // The backward's head-dim split over warp pairs (attention_mma_bwd.cl): k-steps and n-tiles padded to even counts.
  if (split) s << "#define DSPLIT 2\n#define KPAD " << (is16(m.kind) ? 32 : 16) << "\n#define NPAD 16\n";
  if (dropout) s << kernel_source("philox") << "#define DROPOUT 1\n";
  s << "#define T float\n#define T4 float4\n#define ST " << storage_cl_type(dtype) << "\n"
    << "#define LOAD(p, i) (" << convert_expr(dtype, DType::F32, load_expr(dtype, "(p)", "(i)")) << ")\n"
    << "#define STORE(p, i, v) do { " << store_stmt(dtype, "(p)", "(i)", convert_expr(DType::F32, dtype, "(v)"))
    << " } while (0)\n"
    << "#define D " << D << "\n#define DV " << DV << "\n#define HAS_MASK " << (mask ? 1 : 0)
    << "\n#define ATTN_NATIVE_EXP 1\n#define ATTN_VEC 0\n"
    << "#define MMA_KIND " << static_cast<int>(m.kind) << "\n#define MMA_EMULATE " << (m.emulate ? 1 : 0)
    << "\n#define NW " << l.nw << "\n#define BKT " << l.bkt << "\n#define VEC_K " << vec[0] << "\n#define VEC_V " << vec[1]
    << "\n#define VEC_Q " << vec[2] << "\n#define VEC_DO " << vec[3] << "\n#define PREFETCH " << prefetch << "\n";
  s << kernel_source("attention_common") << kernel_source("mma_common");
  if (onepass) s << "#define ATTN_MMA_DQ 1\n#define ATTN_ONEPASS 1\n#define ONEPASS_ATOMIC " << (onepass == 2)
                << "\n" << kernel_source("attention_mma")
                << kernel_source("attention_mma_onepass") << kernel_source("attention_mma_bwd");
  else if (bwd) s << "#define ATTN_MMA_DQ 1\n" << kernel_source("attention_mma") << kernel_source("attention_mma_bwd");
  else s << kernel_source("attention_mma");
  return s.str();
}

struct Entry {
  std::mutex m;
  cl_kernel k = nullptr;
};

enum class Pass { Fwd = 0, Dq = 1, DkDv = 2, OnePass = 3 };

// Local bytes of the backward passes (attention_mma_bwd.cl: two staged [row][dim] tiles, 16-bit transposed
// copies, the dk/dv pass's lse and delta; split: the partial products' exchange).
uint64_t bwd_local_bytes(const MmaLayout& l, MmaChoice m, int64_t D, int64_t DV, bool split) {
  const bool h = is16(m.kind);
  const int64_t ks = (h ? 16 : 8) * (split ? 2 : 1), np = split ? 16 : 8;
  const int64_t dk = ceil_div(D, ks) * ks, dvk = ceil_div(DV, ks) * ks;
  const int64_t rows = h ? dk + dvk + 32 : dk + dvk + 8;  // the paddings, at most
  const int64_t t = h ? (ceil_div(D, np) + ceil_div(DV, np)) * np * (l.bkt + 8) : 0;
  const int64_t xch = split ? l.nw * 2 * (l.bkt / 8) * 4 * 32 * 4 : 0;
  return static_cast<uint64_t>(l.bkt * rows + t) * (h ? 2 : 4) + 8 * l.bkt + xch +
         (m.emulate ? 32 * l.nw * 6 * 4 : 0);
}

// The one-pass kernel's (attention_mma_onepass.cl) on top of the dk/dv pass's: the K block and the tile's dS.
uint64_t onepass_local_bytes(const MmaLayout& l, MmaChoice m, int64_t D, int64_t DV) {
  const int64_t nq = 16 * l.nw, dn = ceil_div(D, 8) * 8;
  const int64_t extra = is16(m.kind) ? (dn + l.bkt) * (nq + ((nq / 2) % 16 == 0 ? 16 : 0)) * 2
                                     : (nq * (dn + 4) + l.bkt * (nq + 4)) * 4;
  return bwd_local_bytes(l, m, D, DV, false) + static_cast<uint64_t>(extra) + 4;
}

// PYTORCH_OCL_ATTN_BWD_ONEPASS: "1" / "on" takes the one-pass kernel with dq added in a fixed order where it applies;
// "atomic" the one-pass kernel adding dq with float atomics (not bit-reproducible; never under
// torch.use_deterministic_algorithms, s.deterministic: the ordered kernel then); unset, "0" or "off" runs the
// backward's two passes (dq, then dk/dv): on an H200 (benchmarks/attention_layouts.py --onepass, B8 H12 L1024 D64
// fp32) the ordered one-pass backward took 1.77 ms causal / 3.14 ms not against the two passes' 1.57 / 2.64, its
// tiles waiting for their turns and its extra barriers costing more than the dq pass's S and dP products.
// The atomic kernel (H200, same run, backward kernels' ms, atomic / ordered / two passes): float32 B8 H12 L1024 D64
// causal 1.62 / 1.81 / 1.60, not causal 2.54 / 3.23 / 2.66, B16 H12 L512 1.36 / 1.64 / 1.38, B4 H16 L4096 causal
// 13.6 / 16.1 / 14.1; bfloat16 0.64 / 0.69 / 0.49, 0.94 / 1.11 / 0.73, 0.54 / 0.59 / 0.43, 4.49 / 5.60 / 3.50. Within
// a few percent of the two passes in float32 and slower in 16-bit, so not the default (dq would vary run to run).
// "NW,BKT" (also on, ordered) sets its warps (16 keys each) and query tile (a multiple of 16 that divides 16 NW).
// Returns 0 (two passes), 1 (ordered) or 2 (atomic).
int onepass_mode(MmaLayout& l, const AttnShape& s) {
  const char* e = env_value("PYTORCH_OCL_ATTN_BWD_ONEPASS");
  if (!e || !*e || !std::strcmp(e, "0") || !std::strcmp(e, "off")) return 0;
  if (!std::strcmp(e, "atomic")) return s.deterministic ? 1 : 2;
  int nw = 0, bkt = 0;
  char extra = 0;
  if (std::sscanf(e, "%d,%d%c", &nw, &bkt, &extra) == 2 && nw >= 1 && nw <= 16 && bkt >= 16 && bkt % 16 == 0 &&
      bkt <= 128)
    l.nw = nw, l.bkt = bkt;
  return 1;
}

// PYTORCH_OCL_ATTN_MMA_BWD: layout experiments for the backward's two passes (benchmarks/attention_layouts.py
// --mma-bwd), parts joined by '+', each "dq=NW,BKT[,split][,rN]" or "dkdv=NW,BKT[,split][,rN]": warps per work-group,
// keys (dq) or queries (dk/dv) per tile, the head-dim split over warp pairs at any head dim (DSPLIT: half the
// fragments and accumulators per warp, so fewer registers and more resident warps), and on NVIDIA a register cap
// (-cl-nv-maxrregcount=N). A part that does not parse leaves that pass's defaults.
struct BwdEnvLayout {
  bool set = false, split = false;
  int nw = 0, bkt = 0, maxrreg = 0;
};

BwdEnvLayout bwd_env_layout(Pass pass) {
  BwdEnvLayout r;
  const char* e = env_value("PYTORCH_OCL_ATTN_MMA_BWD");
  if (!e || (pass != Pass::Dq && pass != Pass::DkDv)) return r;
  const std::string want = pass == Pass::Dq ? "dq=" : "dkdv=";
  std::istringstream parts(e);
  for (std::string part; std::getline(parts, part, '+');) {
    if (part.compare(0, want.size(), want) != 0) continue;
    std::istringstream fields(part.substr(want.size()));
    BwdEnvLayout l;
    int i = 0;
    bool ok = true;
    for (std::string f; std::getline(fields, f, ','); ++i) {
      if (i == 0) ok = ok && std::sscanf(f.c_str(), "%d", &l.nw) == 1;
      else if (i == 1) ok = ok && std::sscanf(f.c_str(), "%d", &l.bkt) == 1;
      else if (f == "split") l.split = true;
      else if (f.size() > 1 && f[0] == 'r') ok = ok && std::sscanf(f.c_str() + 1, "%d", &l.maxrreg) == 1;
      else ok = false;
    }
    if (ok && i >= 2 && l.nw >= 1 && l.nw <= 16 && l.bkt >= 16 && l.bkt % 16 == 0 && l.bkt <= 128) {
      l.set = true;
      r = l;
    }
  }
  return r;
}

// The forward or a backward pass (attention_mma_bwd.cl) for s, or no kernel.
AttnMmaKernel mma_kernel(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q, const AttnTensor& K,
                         const AttnTensor& V, const AttnTensor* dO, Pass pass) {
  AttnMmaKernel r;
  if (dtype != DType::F32 && dtype != DType::BF16 && dtype != DType::F16) return r;
  if (s.D > 128 || s.DV > 128 || s.D < 1 || s.DV < 1) return r;  // registers: Q and O fragments live in them
  const MmaChoice m = mma_choice(ctx, dtype, s.fp32_math == Fp32Math::Tf32 ? Fp32Math::Tf32 : Fp32Math::Exact);
  if (!m) return r;
  MmaLayout l;
  if (!layout_for(ctx, m, s.D, s.DV, l)) return r;
  bool split = false;
  int onepass = 0;
  BwdEnvLayout benv;
  if (pass != Pass::Fwd) {
    // Registers (scripts/ptx_registers.py attnmmadq=... / attnmmadkdv=...), without spills: dq (Q, dO and dq
    // fragments) for heads up to 64 on 16-key tiles (16-bit: 32), 16-bit up to 128 on 16-key tiles; dk/dv
    // (K, V, dk and dv fragments) up to 64 on 16-query tiles. Heads over 64 elsewhere (fp32 dq, every dk/dv)
    // split the head dims over warp pairs (attention_mma_bwd.cl's DSPLIT: a lane holds what it holds at D 64),
    // 16-row blocks per pair, so an even number of warps: 16-bit 8 (the 64 rows of the unsplit kernels), tf32
    // kinds 4 (two pairs: more work-groups resident; H200, ptxas 254 / 204 registers without spills, fp32 B8 H12
    // L2048 D128 causal: dk/dv 6.76 -> 6.57 ms, dq 5.76 -> 4.95 against 8 warps). At head dims up to 64 the split
    // was slower in every pass and layout timed (benchmarks/attention_layouts.py --mma-bwd: fewer registers did
    // not pay for the exchange and the doubled elementwise work).
    const bool wide = std::max(s.D, s.DV) > 64;
    const bool kv = pass != Pass::Dq;  // the dk/dv pass's layout (the one-pass kernel is that kernel)
    split = wide && (!is16(m.kind) || kv);
    if (pass == Pass::OnePass && (split || s.S == 0)) return r;
    const char* e = env_value("PYTORCH_OCL_ATTN_MMA");
    const bool env = e && std::strchr(e, ',');  // an explicit layout
    if (split && !env && is16(m.kind) && ctx.info().max_work_group_size >= 256) l.nw = 8;
    // 32-key dq tiles at heads up to 64 for every kind (float32 as 3xtf32 too: timed on an H100, B8 H12 L1024 D64
    // causal 0.72 -> 0.67 ms, B16 H12 L512 non-causal 0.61 -> 0.56, although ptxas reports a few spilled words).
    if (!env) l.bkt = wide || kv ? 16 : 32;
    // 16-bit, 8 warps: 64-row tiles for both passes at heads up to 64, 32-key tiles for dq over 64 (timed on an
    // H100, bf16 causal: D 64 L 4096 dk/dv 2.80 -> 2.34 ms, dq 1.54 -> 1.31; D 128 L 2048 dq 1.79 -> 1.42 ms).
    if (!env && is16(m.kind)) {
      if (!wide) l.bkt = 64;
      else if (pass == Pass::Dq) l.bkt = 32;
      if ((!wide || pass == Pass::Dq) && ctx.info().max_work_group_size >= 256) l.nw = 8;
    }
    l.prefetch = 0;
    benv = bwd_env_layout(pass);
    if (benv.set) {
      l.nw = benv.nw, l.bkt = benv.bkt;
      split = split || benv.split;
      if (static_cast<uint64_t>(32 * l.nw) > ctx.info().max_work_group_size) return r;
    }
    if (split && l.nw % 2) return r;
    const uint64_t limit = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
    if (bwd_local_bytes(l, m, s.D, s.DV, split) > limit) return r;
    if (pass == Pass::OnePass) {
      onepass = onepass_mode(l, s);
      if (!onepass) return r;
      // The K block and dS tile on top: shorter query tiles where they do not fit (16-bit at D 64: 64 -> 32),
      // and every 16-row block of a tile's dq product gets whole warps (attention_mma_onepass.cl's OP_WPR).
      if (static_cast<uint64_t>(32 * l.nw) > ctx.info().max_work_group_size) return r;
      while (l.bkt > 16 && onepass_local_bytes(l, m, s.D, s.DV) > limit) l.bkt /= 2;
      if (onepass_local_bytes(l, m, s.D, s.DV) > limit || l.nw % (l.bkt / 16)) return r;
    }
  }
  const int unit = is16(m.kind) ? 8 : 4;
  const bool vec[4] = {vec16(K, s.D, unit), vec16(V, s.DV, unit), vec16(Q, s.D, unit), dO && vec16(*dO, s.DV, unit)};
  const bool prefetch = l.prefetch != 0;
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int, int, int64_t, int64_t, int, int, int, int>, Entry> cache;
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    e = &cache[std::make_tuple(ctx.context(), static_cast<int>(dtype), static_cast<int>(m.kind) + 8 * m.emulate,
                               s.D, s.DV, l.nw * 1000 + l.bkt,
                               (s.has_mask ? 1 : 0) | (s.dropout > 0 ? 2 : 0) | (vec[0] ? 4 : 0) | (vec[1] ? 8 : 0) |
                                   (vec[2] ? 16 : 0) | (vec[3] ? 32 : 0),
                               (prefetch ? 1 : 0) | (onepass == 2 ? 2 : 0) | (split ? 4 : 0) | (benv.maxrreg << 3),
                               static_cast<int>(pass))];
  }
  {
    std::lock_guard<std::mutex> lock(e->m);
    static const char* names[] = {"attn_fwd_mma", "attn_bwd_dq_mma", "attn_bwd_dkdv_mma", "attn_bwd_onepass_mma"};
    if (!e->k)
      e->k = create_kernel(ctx.program(program_text(dtype, m, s.D, s.DV, l, s.has_mask, s.dropout > 0, vec, prefetch,
                                                    pass != Pass::Fwd, split, onepass),
                                       benv.maxrreg && !m.emulate && ctx.info().is_nvidia()
                                           ? "-cl-nv-maxrregcount=" + std::to_string(benv.maxrreg) : std::string()),
                           names[static_cast<int>(pass)]);
  }
  r.kernel = e->k;
  r.m = &e->m;
  r.threads = static_cast<size_t>(32 * l.nw);
  r.rows = 16 * l.nw / (split ? 2 : 1);
  r.tile = l.bkt;
  r.emulated = m.emulate;
  r.atomic = onepass == 2;
  return r;
}

} // namespace

AttnMmaKernel attention_mma_forward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                    const AttnTensor& K, const AttnTensor& V) {
  return mma_kernel(ctx, s, dtype, Q, K, V, nullptr, Pass::Fwd);
}

AttnMmaKernel attention_mma_backward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                     const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO, bool dkdv) {
  return mma_kernel(ctx, s, dtype, Q, K, V, &dO, dkdv ? Pass::DkDv : Pass::Dq);
}

AttnMmaKernel attention_mma_onepass(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                    const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO) {
  return mma_kernel(ctx, s, dtype, Q, K, V, &dO, Pass::OnePass);
}

} // namespace detail
} // namespace dlprim
