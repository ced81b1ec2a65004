// The tiled GEMM kernel (gemm_tiled.cl / gemm_mma.cl) built for a config and the operands' layouts
// (gemm_tiled_kernel.cpp), shared by gemm.cpp's launches and its tuner.
#pragma once
#include <dlprim/gemm.h>

#include "gemm_internal.h"

#include <string>

namespace dlprim {
namespace detail {

// Which operands the tiled kernel stages with unchecked 4-wide loads (gemm.cl's VEC4_A / VEC4_B),
// and whether every step of every tile may (VEC4_FULL: M, N, K multiples of the tile, so the
// kernel is built without the checked loads: +3% at 4096^3 on the H200).
struct Vec4 {
  bool a = false, b = false, full = false;
};

bool whole_tiles(const TileConfig& c, int64_t M, int64_t N, int64_t K);
// Vec4 for `g` with A k-contiguous (`a_kc`) at leading dim `lda`, B n-contiguous (`b_nc`) at `ldb`.
Vec4 vec4_operands(const TileConfig& c, const Gemm& g, bool a_kc, int64_t lda, bool b_nc, int64_t ldb);
// The kernel, built once per context (an Error when the device cannot run the config's work-group).
LockedKernel& tiled_kernel(const Context& ctx, DType dtype, DType c_dtype, const TileConfig& cfg,
                           const std::string& cfg_text, MmaChoice mma, bool a_kc, bool b_nc, bool idx64, Vec4 vec);

} // namespace detail
} // namespace dlprim
