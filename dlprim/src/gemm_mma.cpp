// Matrix-engine GEMM host pieces: which mma kind a product runs as, the tile configs of gemm_mma.cl
// (fit checks, tuning candidates, defaults) and its defines. Launches, split-K and the epilogue are the
// FMA skeleton's (gemm.cpp, gemm_tiles.cpp): the two kernels take the same arguments.
#include "gemm_internal.h"

#include <dlprim/env.h>
#include <dlprim/matrix_engine.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace dlprim {
namespace detail {

namespace {

bool is16(MmaKind k) { return k == MmaKind::Bf16 || k == MmaKind::Fp16; }
int elem_bytes(MmaKind k) { return is16(k) ? 2 : 4; }
int k_step(MmaKind k) { return is16(k) ? 16 : 8; }  // mma.sync m16n8k16 / m16n8k8

// Local bytes of one staging buffer pair (A and B) for either staged layout of each operand
// (gemm_mma.cl's KPAD / MNPAD; the ldmatrix layout of 16-bit async configs is swizzled, not padded).
uint64_t buffer_bytes(const TileConfig& c, MmaKind k) {
  bool swizzled = is16(k) && c.async;
  int kpad = swizzled ? 0 : is16(k) ? 16 : 4, mnpad = swizzled ? 0 : is16(k) ? 8 : 4;
  uint64_t a = std::max<uint64_t>(static_cast<uint64_t>(c.bm) * (c.bk + kpad), static_cast<uint64_t>(c.bk) * (c.bm + mnpad));
  uint64_t b = std::max<uint64_t>(static_cast<uint64_t>(c.bn) * (c.bk + kpad), static_cast<uint64_t>(c.bk) * (c.bn + mnpad));
  return (a + b) * elem_bytes(k);
}

TileConfig mma_config(int bm, int bn, int bk, int wm, int wn, int local) {
  TileConfig c;
  c.bm = bm, c.bn = bn, c.bk = bk, c.tm = wm, c.tn = wn, c.vm = c.vn = 1, c.local = local, c.mma = 1;
  return c;
}
// A cp.async pipeline of `stages` buffers.
TileConfig mma_async_config(int bm, int bn, int bk, int wm, int wn, int stages) {
  TileConfig c = mma_config(bm, bn, bk, wm, wn, stages);
  c.async = 1;
  return c;
}

} // namespace

int mma_unit_elements(MmaChoice m) { return 16 / elem_bytes(m.kind); }

std::string MmaChoice::str() const {
  static const char* names[] = {"", "tf32", "3xtf32", "bf16", "fp16"};
  std::string s = names[static_cast<int>(kind)];
  return s.empty() || !emulate ? s : s + "-emulated";
}

MmaChoice mma_choice(const Context& ctx, DType dtype, Fp32Math math) {
  MmaChoice m;
  if (dtype == DType::F32) {
    // Full fp32 accuracy runs as 3xtf32 on an engine with tf32 (H200: 1.1-1.2x cuBLAS fp32 and 1.1-1.5x our
    // FMA kernel on every shape measured, docs/benchmarks.md) unless PYTORCH_OCL_3XTF32=0 keeps the FMA kernel.
    const char* x3 = env_value("PYTORCH_OCL_3XTF32");
    bool fma = math == Fp32Math::Exact && x3 && x3[0] == '0';
    m.kind = math == Fp32Math::Tf32 ? MmaKind::Tf32 : fma ? MmaKind::None : MmaKind::Tf32x3;
  } else if (dtype == DType::BF16) {
    m.kind = MmaKind::Bf16;
  } else if (dtype == DType::F16) {
    m.kind = MmaKind::Fp16;
  }
  if (!m) return m;
  const char* env = env_value("PYTORCH_OCL_MMA");
  if (env && (!std::strcmp(env, "0") || !std::strcmp(env, "off"))) return MmaChoice();
  if (env && !std::strcmp(env, "emulate")) {
    m.emulate = true;
    return m;
  }
  const MatrixEngine& e = matrix_engine(ctx);
  bool has = e.kind == "nvidia-mma" && (m.kind == MmaKind::Bf16 ? e.bf16 : m.kind == MmaKind::Fp16 ? e.fp16 : e.tf32);
  return has ? m : MmaChoice();
}

bool mma_config_fits(const Context& ctx, const TileConfig& c, MmaChoice m) {
  if (!c.mma || !m || c.tm <= 0 || c.tn <= 0 || c.bm <= 0 || c.bn <= 0 || c.bk <= 0 || !c.local) return false;
  if (c.bm % (16 * c.tm) || c.bn % (8 * c.tn) || c.bk % k_step(m.kind) || c.bk % 4) return false;
  uint64_t nt = static_cast<uint64_t>(c.threads());
  if (nt > ctx.info().max_work_group_size) return false;
  // Whole 16-byte staging units per work-item, for either layout; 16-bit fragments read k in fours
  // (bk a multiple of 32 keeps their 8-byte loads off shared banks).
  uint64_t g = mma_unit_elements(m);
  if ((static_cast<uint64_t>(c.bm) * c.bk) % (g * nt) || (static_cast<uint64_t>(c.bn) * c.bk) % (g * nt)) return false;
  if (c.bm % g || c.bn % g || c.bk % g || (is16(m.kind) && c.bk % 32)) return false;
  // cp.async staging: 2..4 buffers; 3xtf32 checks its values while staging them, so it keeps the register path;
  // 16-bit ldmatrix reads B fragments of two 8-column blocks at once.
  if (c.async && (c.local < 2 || c.local > 4 || m.kind == MmaKind::Tf32x3 || (is16(m.kind) && (c.bn / c.tn) % 16)))
    return false;
  uint64_t bytes = buffer_bytes(c, m.kind) * c.local_buffers() + (m.emulate ? nt * 6 * 4 : 0);
  // The register-staged kernels keep a little local memory besides the buffers (3xtf32's flag); the 16-bit
  // async one nothing, so its buffers may fill the device's local memory.
  bool buffers_only = c.async && is16(m.kind) && !m.emulate;
  return bytes + (buffers_only ? 0 : 256) <= ctx.info().local_mem_size;
}

std::vector<TileConfig> mma_candidates(const Context& ctx, MmaChoice m) {
  std::vector<TileConfig> all;
  if (is16(m.kind)) {
    all = {mma_config(128, 128, 32, 2, 4, 1), mma_config(128, 256, 32, 2, 4, 1), mma_config(256, 128, 32, 4, 2, 1),
           mma_config(128, 128, 64, 2, 4, 1), mma_config(128, 128, 32, 2, 2, 1), mma_config(64, 128, 32, 2, 2, 2),
           mma_config(128, 64, 32, 2, 2, 2),  mma_config(64, 64, 32, 2, 2, 2),  mma_config(64, 64, 64, 2, 2, 2),
           mma_config(128, 128, 64, 2, 2, 1), mma_async_config(128, 128, 32, 2, 2, 2),
           mma_async_config(128, 128, 32, 2, 4, 2), mma_async_config(128, 128, 32, 2, 2, 3),
           mma_async_config(128, 128, 32, 2, 4, 3), mma_async_config(128, 256, 32, 2, 4, 2),
           mma_async_config(256, 128, 32, 4, 2, 2), mma_async_config(128, 64, 32, 2, 2, 4),
           mma_async_config(64, 128, 32, 2, 2, 4), mma_async_config(64, 64, 32, 2, 2, 4)};
  } else {
    all = {mma_config(128, 128, 16, 2, 4, 2), mma_config(128, 128, 32, 2, 4, 1), mma_config(128, 256, 16, 2, 4, 1),
           mma_config(256, 128, 16, 4, 2, 1), mma_config(128, 128, 16, 2, 2, 2), mma_config(64, 128, 16, 2, 2, 2),
           mma_config(128, 64, 16, 2, 2, 2),  mma_config(64, 64, 32, 2, 2, 2),  mma_config(64, 64, 16, 2, 2, 2)};
    if (m.kind == MmaKind::Tf32)
      for (const auto& c : {mma_async_config(128, 128, 16, 2, 2, 2), mma_async_config(128, 128, 16, 2, 4, 2),
                            mma_async_config(128, 64, 16, 2, 2, 3), mma_async_config(64, 128, 16, 2, 2, 3)})
        all.push_back(c);
  }
  std::vector<TileConfig> out;
  for (const auto& c : all)
    if (mma_config_fits(ctx, c, m)) out.push_back(c);
  return out;
}

TileConfig default_mma_config(const Context& ctx, MmaChoice m, int64_t M, int64_t N) {
  int bk = is16(m.kind) ? 32 : 16;
  std::vector<TileConfig> prefs;
  // H200, 4096^3: 128x128x64 w2x4 (one buffer) for 16-bit, 128x128x16 w2x2 local2 for tf32 won tuning.
  if (M >= 512 && N >= 512) prefs.push_back(is16(m.kind) ? mma_config(128, 128, 64, 2, 4, 1) : mma_config(128, 128, 16, 2, 2, 2));
  if (M >= 128 && N >= 128) prefs.push_back(mma_config(64, 64, bk, 2, 2, 2));
  prefs.push_back(mma_config(32, 32, bk, 1, 2, 2));
  prefs.push_back(mma_config(16, 16, bk, 1, 1, 1));
  for (const auto& c : prefs)
    if (mma_config_fits(ctx, c, m)) return c;
  return mma_config(16, 8, 32, 1, 1, 1);  // one warp (fits whenever 32 work-items and 3 KiB do)
}

std::string mma_defines(const TileConfig& c, MmaChoice m, const std::string& kernel_name) {
  std::ostringstream s;
  s << "#define MMA_KIND " << static_cast<int>(m.kind) << "\n#define MMA_EMULATE " << (m.emulate ? 1 : 0) << "\n";
  s << "#define MT " << (is16(m.kind) ? "ushort" : "float") << "\n";
  s << "#define BM " << c.bm << "\n#define BN " << c.bn << "\n#define BK " << c.bk << "\n";
  s << "#define WARPS_M " << c.tm << "\n#define WARPS_N " << c.tn << "\n#define LOCAL_BUFS " << c.local_buffers()
    << "\n#define MMA_ASYNC " << c.async << "\n#define KERNEL_NAME " << kernel_name << "\n";
  return s.str();
}

} // namespace detail
} // namespace dlprim
