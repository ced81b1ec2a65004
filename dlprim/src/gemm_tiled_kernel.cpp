// The tiled GEMM kernel's program (gemm_tiled.cl, or gemm_mma.cl on a matrix engine) for a config and the
// operands' layouts, and which operands it may stage with 4-wide loads.
#include <dlprim/embedded.h>
#include <dlprim/program_cache.h>

#include "gemm_tiled_kernel.h"

#include <sstream>

namespace dlprim {
namespace detail {

bool whole_tiles(const TileConfig& c, int64_t M, int64_t N, int64_t K) {
  return M % c.bm == 0 && N % c.bn == 0 && K % c.bk == 0;
}

namespace {

// Whether operand `m` (leading dim `ld`) may be staged with 4-wide loads: float storage (the FMA
// kernel reinterprets it as ACC4; the mma kernel loads any storage as its raw bits), every slice a
// work-item reads starting at a multiple of 4 elements (so 16- or 32-byte aligned: buffers are), and whole groups
// of 4 per work-item.
// `tile_fast` is the tile's extent along the operand's unit-stride dim, `tile_slow` the other.
// The mma kernel's units are 16 bytes (4 or 8 elements): the same rule with its unit size.
bool vec4_operand(const TileConfig& c, DType dtype, const GemmMatrix& m, int64_t ld, int tile_fast, int tile_slow) {
  if (!c.local || (!c.mma && dtype != DType::F32 && dtype != DType::F64)) return false;
  const int g = c.mma ? 16 / static_cast<int>(dtype_size(dtype)) : 4;
  if (tile_fast % g || (tile_fast * tile_slow / c.threads()) % g) return false;
  for (int64_t v : {static_cast<int64_t>(m.offset), ld, m.batch_stride, m.group_stride, m.outer_stride})
    if (v % g) return false;
  return true;
}

} // namespace

Vec4 vec4_operands(const TileConfig& c, const Gemm& g, bool a_kc, int64_t lda, bool b_nc, int64_t ldb) {
  Vec4 v;
  v.a = vec4_operand(c, g.dtype, g.a, lda, a_kc ? c.bk : c.bm, a_kc ? c.bm : c.bk);
  v.b = vec4_operand(c, g.dtype, g.b, ldb, b_nc ? c.bn : c.bk, b_nc ? c.bk : c.bn);
  v.full = v.a && v.b && whole_tiles(c, g.M, g.N, g.K);
  return v;
}

namespace {

const std::string& tiled_program(DType dtype, DType c_dtype, const TileConfig& cfg, MmaChoice mma, bool a_kc,
                                 bool b_nc, bool idx64, Vec4 vec, std::string* text) {
  std::ostringstream s;
  s << gemm_program_head(dtype, c_dtype) << "#define A_KCONTIG " << a_kc << "\n#define B_NCONTIG " << b_nc
    << "\n#define IDX_T " << (idx64 ? "long" : "int") << "\n#define VEC4_A " << vec.a << "\n#define VEC4_B " << vec.b
    << "\n#define VEC4_FULL " << vec.full << "\n";
  if (cfg.mma)
    s << mma_defines(cfg, mma, "gemm_tiled") << kernel_source("gemm") << kernel_source("mma_common") << kernel_source("gemm_mma");
  else
    s << tile_defines(cfg, dtype, a_kc, b_nc, "gemm_tiled") << kernel_source("gemm") << kernel_source("gemm_tiled");
  *text = s.str();
  return *text;
}

} // namespace

LockedKernel& tiled_kernel(const Context& ctx, DType dtype, DType c_dtype, const TileConfig& cfg,
                           const std::string& cfg_text, MmaChoice mma, bool a_kc, bool b_nc, bool idx64, Vec4 vec) {
  std::string key = std::string("gemm_tiled|") + dtype_name(dtype) + ">" + dtype_name(c_dtype) + "|" + cfg_text +
                    "|" + (cfg.mma ? mma.str() : std::string()) +
                    "|" + (a_kc ? "1" : "0") + (b_nc ? "1" : "0") + (idx64 ? "L" : "I") + (vec.a ? "a" : "") +
                    (vec.b ? "b" : "") + (vec.full ? "f" : "");
  LockedKernel& slot = kernel_slot(ctx, key);
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) {
    std::string text;
    cl_kernel k = create_kernel(ctx.program(tiled_program(dtype, c_dtype, cfg, mma, a_kc, b_nc, idx64, vec, &text)),
                                "gemm_tiled");
    if (kernel_max_work_group(ctx, k) < static_cast<size_t>(cfg.threads())) {
      clReleaseKernel(k);
      throw Error("gemm: tile config " + cfg_text + " needs more resources than the device has");
    }
    slot.k = k;
  }
  return slot;
}

} // namespace detail
} // namespace dlprim
