// A product's operands: their layouts, the checks every product passes, and the size buckets of its tuning class.
#include "gemm_internal.h"

#include <algorithm>
#include <string>
#include <utility>

namespace dlprim {
namespace detail {

bool matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool* inner_is_col, int64_t* ld) {
  if (cs == 1 || cols == 1) {
    *inner_is_col = true;
    *ld = rows == 1 ? std::max<int64_t>(cols, 1) : rs;
    return true;
  }
  if (rs == 1 || rows == 1) {
    *inner_is_col = false;
    *ld = cs;
    return true;
  }
  return false;
}

GemmMatrix transposed(const GemmMatrix& m) {
  GemmMatrix t = m;
  std::swap(t.row_stride, t.col_stride);
  return t;
}

std::string class_bucket(int64_t v) {
  int b = 0;
  for (int64_t lim = 16; v > lim && b < 5; lim *= 4) ++b;
  return std::to_string(b);
}

void check_supported(const Context& ctx, const Gemm& g) {
  if (g.c_dtype_set && g.c_dtype != g.dtype && g.c_dtype != compute_dtype(g.dtype))
    throw Error("gemm: C must have the dtype of A and B or their accumulation type");
  if (g.dtype == DType::Bool)
    throw Error("gemm: dtype bool is not supported");
  if (g.dtype == DType::F64 && !ctx.info().fp64)
    throw Error("gemm: device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
  const int64_t lim = 0x7fffffff;
  if (g.M < 0 || g.N < 0 || g.K < 0 || g.batch < 0 || g.groups < 1 || g.k_outer < 0)
    throw Error("gemm: negative size");
  if (g.M > lim || g.N > lim || g.K > lim || gemm_zcount(g) > lim || g.k_outer > lim)
    throw Error("gemm: a dimension exceeds 2^31 - 1");
}

} // namespace detail
} // namespace dlprim
