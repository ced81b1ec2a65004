// GEMM on Hopper's wgmma (kernels/gemm_wgmma.cl): when it runs, its program text, its workspace (the packed
// operands) and its launches. On for bfloat16 / float16 products on sm_90 devices, and for float32 ones as TF32
// ('high' / 'medium' matmul precision, convolutions with allow_tf32) or 3xTF32 (the default 'highest': fp32
// accuracy) where the mma.sync kernels would run them (PYTORCH_OCL_WGMMA=0 keeps those). H200: bf16 against
// cuBLAS 0.58 at 4096^3 with the packing (mma.sync 0.34); checked natively by tests/test_gemm_wgmma.py, which CI
// runs on PoCL with the kernel's emulation (PYTORCH_OCL_MMA=emulate PYTORCH_OCL_WGMMA=1). Devices without sm_90
// never see it otherwise.
#include "gemm_wgmma.h"

#include "gemm_internal.h"
#include "ptx_sm90a.h"

#include <dlprim/capture.h>
#include <dlprim/embedded.h>
#include <dlprim/env.h>
#include <dlprim/matrix_engine.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>

namespace dlprim {
namespace detail {

namespace {

// The layout timed fastest on an H200 (scripts/wgmma_probe.cpp, bf16 4096^3: 482 TFLOP/s): 2 consumer
// warpgroups on 128 x 128 tiles, K stages of one instruction (32 bytes of each row), 5 of them (40 KiB of the
// 48 KiB of local memory).
constexpr int kWgs = 2, kRowBytes = 32;
constexpr int kBm = 64 * kWgs;
constexpr uint64_t kTileA = uint64_t(kBm) * kRowBytes;

// The tile's columns and K stages: 128 and 5 unless PYTORCH_OCL_WGMMA_TILE=BN,STAGES asks for others (layout
// experiments: BN of 64, 128 or 256, the stages' buffers within 46 KiB, leaving room for the mbarriers).
struct Tile {
  int bn = 128, stages = 5;
  uint64_t tile_b() const { return uint64_t(bn) * kRowBytes; }
};

Tile tile() {
  Tile t;
  const char* e = env_value("PYTORCH_OCL_WGMMA_TILE");
  if (!e || !*e) return t;
  int bn = 0, stages = 0;
  char extra = 0;
  if (std::sscanf(e, "%d,%d%c", &bn, &stages, &extra) != 2 || (bn != 64 && bn != 128 && bn != 256) || stages < 2 ||
      static_cast<uint64_t>(stages) * (kBm + bn) * kRowBytes > 46 * 1024)
    throw Error(std::string("PYTORCH_OCL_WGMMA_TILE: expected BN,STAGES with BN 64, 128 or 256 and STAGES >= 2 whose "
                            "buffers (STAGES x (128 + BN) x 32 bytes) fit 46 KiB, got '") + e + "'");
  t.bn = bn;
  t.stages = stages;
  return t;
}
// float32 products pack their operands as tf32 (TF32: 1x their size) or as big + small tf32 parts (3xTF32: 2x): past
// this workspace the mma.sync kernels, which pack nothing, run them.
constexpr uint64_t kMaxFloatWorkspace = 512ull << 20;

uint64_t align256(uint64_t v) { return (v + 255) / 256 * 256; }

enum class Kind { Bf16, F16, Tf32, Tf32x3 };

const char* kind_name(Kind k) {
  return k == Kind::Bf16 ? "bf16" : k == Kind::F16 ? "f16" : k == Kind::Tf32 ? "tf32" : "3xtf32";
}

// The kind a product of `g` runs as, if any: 16-bit as it is, float32 as mma_choice says (TF32 or 3xTF32).
bool kind_of(const Context& ctx, const Gemm& g, Kind* out) {
  if (g.dtype == DType::BF16 || g.dtype == DType::F16) {
    *out = g.dtype == DType::BF16 ? Kind::Bf16 : Kind::F16;
    return true;
  }
  if (g.dtype != DType::F32) return false;
  const MmaChoice m = mma_choice(ctx, g.dtype, g.fp32_math);
  if (m.kind != MmaKind::Tf32 && m.kind != MmaKind::Tf32x3) return false;
  *out = m.kind == MmaKind::Tf32 ? Kind::Tf32 : Kind::Tf32x3;
  return true;
}

int parts_of(Kind k) { return k == Kind::Tf32x3 ? 3 : 1; }         // product stages per K stage
int packed_parts_of(Kind k) { return k == Kind::Tf32x3 ? 2 : 1; }  // packed tiles per K stage (big, small)
int bk_of(Kind k) { return k == Kind::Tf32 || k == Kind::Tf32x3 ? kRowBytes / 4 : kRowBytes / 2; }

struct Sizes {
  int64_t nk, nrb_a, nrb_b, zc;  // nk: K stages of the operands (packed: nk * packed parts tiles)
  uint64_t a_bytes, b_bytes, flag_bytes;
};

Sizes sizes_of(const Gemm& g, Kind kind, const Tile& tl) {
  Sizes s;
  const int parts = packed_parts_of(kind);
  s.nk = (g.K + bk_of(kind) - 1) / bk_of(kind);
  s.nrb_a = (g.M + kBm - 1) / kBm;
  s.nrb_b = (g.N + tl.bn - 1) / tl.bn;
  s.zc = gemm_zcount(g);
  s.a_bytes = align256(static_cast<uint64_t>(s.zc) * s.nrb_a * s.nk * parts * kTileA);
  s.b_bytes = align256(static_cast<uint64_t>(s.zc) * s.nrb_b * s.nk * parts * tl.tile_b());
  s.flag_bytes = parts_of(kind) == 3 ? align256(static_cast<uint64_t>(s.zc) * (s.nrb_a + s.nrb_b) * 4) : 0;
  return s;
}

bool emulated() {
  const char* mma = env_value("PYTORCH_OCL_MMA");
  return mma && !std::strcmp(mma, "emulate");
}

std::string program_text(DType dtype, DType c_dtype, Kind kind, const Tile& tl, bool emulate) {
  const int nacc = tl.bn / 2;
  std::ostringstream regs, ops;
  for (int i = 0; i < nacc; ++i) {
    regs << (i ? ", %" : "%") << i;
    ops << (i ? ", " : "") << "\"+f\"(d[" << i << "])";
  }
  const bool tf32 = kind == Kind::Tf32 || kind == Kind::Tf32x3;
  // the instruction's K and types, and its immediates (scale-a, scale-b; 16-bit kinds also name their layouts)
  const std::string shape = tf32 ? "k8.f32.tf32.tf32" : std::string("k16.f32.") + kind_name(kind) + "." + kind_name(kind);
  std::ostringstream s;
  s << gemm_program_head(dtype, c_dtype) << (emulate ? "" : kSm90aProgram) << "#define WG_EMULATE " << emulate
    << "\n#define WG_BF16 " << (kind == Kind::Bf16) << "\n#define WG_TF32 " << tf32 << "\n#define WG_PARTS "
    << parts_of(kind) << "\n#define WGS " << kWgs << "\n#define BN " << tl.bn << "\n#define STAGES " << tl.stages
    << "\n#define NACC " << nacc << "\n#define WG_BN_STR \"" << tl.bn << "\"\n#define WG_SHAPE \"" << shape
    << "\"\n#define WG_IMM \"" << (tf32 ? ", 1, 1" : ", 1, 1, 0, 0") << "\"\n#define WG_ACC_REGS \"" << regs.str()
    << "\"\n#define WG_ACC_OPS " << ops.str() << "\n#define WG_DA \"%" << nacc << "\"\n#define WG_DB \"%" << nacc + 1
    << "\"\n";
  if (tf32)
    s << "#define MMA_KIND " << (kind == Kind::Tf32 ? 1 : 2) << "\n#define MMA_EMULATE " << emulate << "\n"
      << kernel_source("mma_common");
  s << kernel_source("gemm_wgmma");
  return s.str();
}

LockedKernel& kernel(const Context& ctx, DType dtype, DType c_dtype, Kind kind, const Tile& tl, const char* name) {
  const bool emulate = emulated();
  LockedKernel& slot = kernel_slot(ctx, std::string("gemm_wgmma|") + kind_name(kind) + "|" + std::to_string(tl.bn) +
                                            "," + std::to_string(tl.stages) + "|" + dtype_name(dtype) + ">" +
                                            dtype_name(c_dtype) + (emulate ? "|emulated|" : "|") + name);
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) slot.k = create_kernel(ctx.program(program_text(dtype, c_dtype, kind, tl, emulate)), name);
  return slot;
}

// Packs the rows x K operand with element (r, k) at m.offset + r rs + k cs (batch / group strides of m) into
// ws from ws_off; 3xTF32 marks its row blocks at flag_off (bytes) of ws.
void pack(const Context& ctx, cl_command_queue q, const Gemm& g, Kind kind, const Tile& tl, const GemmMatrix& m,
          int64_t rows, int64_t rs, int64_t cs, int64_t nrb, int br, int64_t nk, cl_mem ws, uint64_t ws_off,
          uint64_t flag_off, std::vector<cl_event>* events) {
  LockedKernel& slot = kernel(ctx, g.dtype, gemm_out_dtype(g), kind, tl, "gemm_wgmma_pack");
  std::lock_guard<std::mutex> lock(slot.m);
  const uint64_t total = static_cast<uint64_t>(gemm_zcount(g)) * nrb * nk * br * (kRowBytes / 16);
  KernelArgs a(slot.k);
  a.add(m.mem).add<cl_ulong>(m.offset).add<cl_long>(rs).add<cl_long>(cs).add<cl_long>(m.batch_stride);
  a.add<cl_long>(m.group_stride).add<cl_int>(static_cast<int>(g.groups)).add<cl_int>(static_cast<int>(rows));
  a.add<cl_int>(static_cast<int>(g.K)).add<cl_int>(static_cast<int>(nrb)).add<cl_int>(static_cast<int>(nk));
  // vector reads where K is contiguous (16-bit: and every row / entry starts on 8 elements, as nn.Linear's input
  // and weight do, for 16-byte reads; float32 reads 4 floats at any element)
  const bool vec = cs == 1 && (g.dtype == DType::F32 || (m.offset % 8 == 0 && (rows == 1 || rs % 8 == 0) &&
                                                          m.batch_stride % 8 == 0 && m.group_stride % 8 == 0));
  a.add<cl_int>(br).add(ws).add<cl_ulong>(ws_off / 16).add<cl_ulong>(total).add<cl_int>(vec ? 1 : 0);
  a.add(ws).add<cl_ulong>(flag_off / 4);
  const size_t local = ctx.work_group_size(256), global = static_cast<size_t>((total + local - 1) / local * local);
  launch_nd_events(q, slot.k, 1, nullptr, &global, &local, events);
}

bool sm90(const Context& ctx) {  // matrix_engine() probes once per context and remembers
  const MatrixEngine& e = matrix_engine(ctx);
  return e.kind == "nvidia-mma" && e.cc_major == 9 && e.bf16 && e.fp16;
}

} // namespace

WgmmaUse wgmma_use(const Context& ctx, const Gemm& g) {
  Kind kind;
  const char* env = env_value("PYTORCH_OCL_WGMMA");
  if (env && std::strcmp(env, "0") == 0) return WgmmaUse::No;
  // the matrix engine off, or a tile config forced: the tiled kernels. Emulated engine (PYTORCH_OCL_MMA=emulate):
  // the emulated wgmma kernel only when asked for by name (PYTORCH_OCL_WGMMA=1, or =tune for the tuned choice), on
  // any device
  const char* mma = env_value("PYTORCH_OCL_MMA");
  if (mma && !std::strcmp(mma, "0")) return WgmmaUse::No;
  if (const char* cfg = env_value("PYTORCH_OCL_GEMM_CONFIG")) if (*cfg) return WgmmaUse::No;
  const bool forced = env && std::strcmp(env, "1") == 0, tune = env && std::strcmp(env, "tune") == 0;
  const bool rule = env && std::strcmp(env, "rule") == 0;  // the size rule alone: no engine timing (cold start)
  const bool emulate = emulated();
  if (emulate && !forced && !tune && !rule) return WgmmaUse::No;
  if (!kind_of(ctx, g, &kind)) return WgmmaUse::No;
  if (g.k_outer != 1 || g.alpha == 0 || g.M < 64 || g.N < 64 || g.K < 16) return WgmmaUse::No;
  if (gemm_zcount(g) > 65535 || (g.M + kBm - 1) / kBm > 65535) return WgmmaUse::No;
  const int64_t int_max = 0x7fffffff;
  if (g.M > int_max || g.N > int_max || g.K > int_max) return WgmmaUse::No;
  if (!emulate && !sm90(ctx)) return WgmmaUse::No;
  if (g.dtype == DType::F32 && wgmma_workspace_bytes(ctx, g) > kMaxFloatWorkspace) return WgmmaUse::No;
  if (forced) return WgmmaUse::Yes;
  // Where the tiled kernels are faster (H200, against cuBLAS fp32): fewer 128 x 128 tiles than compute units leave
  // units idle while those split K (1024^3, 3xTF32: 0.74 here, 0.93 there; bf16 0.52 against 0.58); M or N under
  // 128 half-fill a tile, and K under 128 leaves the packing most of the time (attention-sized batches
  // 96 x (512x64x512) / (512x512x64): 0.37 / 0.77 here, 1.10 / 1.18 there).
  const int bn = tile().bn;
  const uint64_t tiles = static_cast<uint64_t>(gemm_zcount(g)) * ((g.M + kBm - 1) / kBm) * ((g.N + bn - 1) / bn);
  if (tiles < ctx.info().compute_units || g.M < 128 || g.N < 128 || g.K < 128) return WgmmaUse::No;
  // Large on every side: the engine (TF32 4096^3: 0.75 of cuBLAS against 0.34 on mma.sync). Between, the packing's
  // extra pass over both operands can cost more than the engine gains: resnet50's convolutions under TF32 (1x1
  // layers with 128-512 output channels, Winograd's 36 products of K = 128-512) ran 10-70% faster on the tiled
  // mma.sync kernels, so such products are timed both ways.
  if (rule || (g.M >= 1024 && g.N >= 1024 && g.K >= 1024)) return WgmmaUse::Yes;
  return WgmmaUse::Tune;
}

double wgmma_first_margin() {
  static const double margin = [] {
    const char* v = env_value("PYTORCH_OCL_WGMMA_MARGIN");
    if (!v || !*v) return 1.25;
    char* end = nullptr;
    const double m = std::strtod(v, &end);
    if (*end || !(m >= 0)) throw Error(std::string("PYTORCH_OCL_WGMMA_MARGIN: expected a number >= 0, got '") + v + "'");
    return m;
  }();
  return margin;
}

uint64_t wgmma_workspace_bytes(const Context& ctx, const Gemm& g) {
  Kind kind;
  if (!kind_of(ctx, g, &kind)) return 0;
  const Sizes s = sizes_of(g, kind, tile());
  return s.a_bytes + s.b_bytes + s.flag_bytes;
}

std::string wgmma_description(const Context& ctx, const Gemm& g) {
  Kind kind = Kind::Bf16;
  kind_of(ctx, g, &kind);
  const Tile tl = tile();
  return std::string("wgmma ") + kind_name(kind) + " " + std::to_string(kBm) + "x" + std::to_string(tl.bn) + "x" +
         std::to_string(bk_of(kind)) + " stages=" + std::to_string(tl.stages);
}

void prepare_wgmma(const Context& ctx, const Gemm& g) {
  Kind kind;
  if (!kind_of(ctx, g, &kind)) return;
  kernel(ctx, g.dtype, gemm_out_dtype(g), kind, tile(), "gemm_wgmma_pack");
  kernel(ctx, g.dtype, gemm_out_dtype(g), kind, tile(), "gemm_wgmma");
}

void run_gemm_wgmma(const Context& ctx, cl_command_queue q, const Gemm& g, cl_mem ws, uint64_t ws_off,
                    std::vector<cl_event>* events) {
  if (ws_off % 16) throw Error("gemm (wgmma): the workspace offset must be a multiple of 16 bytes");
  Kind kind;
  if (!kind_of(ctx, g, &kind)) throw Error("gemm (wgmma): no wgmma kind for this product");
  const Tile tl = tile();
  const Sizes s = sizes_of(g, kind, tl);
  const uint64_t fa_off = ws_off + s.a_bytes + s.b_bytes, fb_off = fa_off + 4 * s.zc * s.nrb_a;
  if (s.flag_bytes) {  // the packs mark row blocks the 3xTF32 split cannot carry
    const cl_int zero = 0;
    enqueue_fill_buffer(q, ws, &zero, sizeof(zero), fa_off, s.flag_bytes);
  }
  // A: M x K as is; B (K x N) as B^T, N x K
  pack(ctx, q, g, kind, tl, g.a, g.M, g.a.row_stride, g.a.col_stride, s.nrb_a, kBm, s.nk, ws, ws_off, fa_off, events);
  pack(ctx, q, g, kind, tl, g.b, g.N, g.b.col_stride, g.b.row_stride, s.nrb_b, tl.bn, s.nk, ws, ws_off + s.a_bytes,
       fb_off, events);
  LockedKernel& slot = kernel(ctx, g.dtype, gemm_out_dtype(g), kind, tl, "gemm_wgmma");
  std::lock_guard<std::mutex> lock(slot.m);
  KernelArgs a(slot.k);
  a.add(ws).add<cl_ulong>(ws_off / 16).add(ws).add<cl_ulong>((ws_off + s.a_bytes) / 16);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N));
  a.add<cl_int>(static_cast<int>(s.nk * parts_of(kind)));
  a.add<cl_int>(static_cast<int>(s.nrb_a)).add<cl_int>(static_cast<int>(s.nrb_b)).add<cl_int>(static_cast<int>(g.groups));
  a.add(ws).add<cl_ulong>(fa_off / 4).add<cl_ulong>(fb_off / 4);
  add_out_args(a, g);
  const size_t nth = 128 * kWgs + 32;
  const size_t global[3] = {nth * static_cast<size_t>(s.nrb_b), static_cast<size_t>(s.nrb_a), static_cast<size_t>(s.zc)};
  const size_t local[3] = {nth, 1, 1};
  launch_nd_events(q, slot.k, 3, nullptr, global, local, events);
}

} // namespace detail
} // namespace dlprim
