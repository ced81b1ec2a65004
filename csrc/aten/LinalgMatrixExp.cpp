// linalg_matrix_exp on ocl: scaling and squaring with the [13/13] Padé approximant (Higham 2005,
// "The scaling and squaring method for the matrix exponential revisited"), composed of our
// matmul and LU solve. The CPU uses a Taylor scheme (Bader, Blanes, Casas 2019); both are accurate
// to rounding for any norm. Each matrix of a batch is scaled by its own power of two: the squarings
// run for the largest and leave the matrices that need fewer unchanged. The backward
// (linalg_matrix_exp_differential) calls this op on a block matrix, so it runs here too.
#include "aten/LinalgCommon.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/linalg_solve.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/where.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

constexpr double kTheta13 = 5.371920351148152;  // largest 1-norm where [13/13] Padé is exact to double rounding
constexpr double kPade13[] = {64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
                              129060195264000.0,   10559470521600.0,    670442572800.0,     33522128640.0,
                              1323241920.0,        40840800.0,          960960.0,           16380.0,
                              182.0,               1.0};

at::Tensor matrix_exp_pade(const at::Tensor& A) {
  const char* op = "linalg.matrix_exp";
  at::native::squareCheckInputs(A, op);
  at::native::checkFloatingOrComplex(A, op);
  check_ocl(A, op, "A");
  // float16/bfloat16 (the CPU takes them too): computed in float32, where the Padé constants fit.
  if (A.scalar_type() == c10::kHalf || A.scalar_type() == c10::kBFloat16)
    return matrix_exp_pade(A.to(c10::kFloat)).to(A.scalar_type());
  check_dtype(A, op, /*complex_ok=*/true);  // complex: the same products and LU solve
  if (A.numel() == 0) return at::empty(A.sizes(), A.options());
  c10::DeviceGuard guard(A.device());
  const int64_t n = A.size(-1);
  // s = ceil(log2(||A||_1 / theta13)) per matrix, at least 0.
  at::Tensor norm1 = A.abs().sum(-2).amax(-1, /*keepdim=*/true).unsqueeze(-1);  // (..., 1, 1)
  at::Tensor s = norm1.div(kTheta13).log2_().ceil_().clamp_min_(0);
  s = at::where(s.isfinite(), s, 0.0);  // inf/NaN input: no scaling (the result is inf/NaN anyway)
  const int64_t s_max = static_cast<int64_t>(s.max().item<double>());
  at::Tensor X = A.div(s.exp2());
  at::Tensor I = at::eye(n, A.options());
  at::Tensor X2 = at::matmul(X, X), X4 = at::matmul(X2, X2), X6 = at::matmul(X4, X2);
  const double* b = kPade13;
  at::Tensor U = at::matmul(X, at::matmul(X6, X6.mul(b[13]).add_(X4, b[11]).add_(X2, b[9]))
                                   .add_(X6, b[7]).add_(X4, b[5]).add_(X2, b[3]).add_(I, b[1]));
  at::Tensor V = at::matmul(X6, X6.mul(b[12]).add_(X4, b[10]).add_(X2, b[8]))
                     .add_(X6, b[6]).add_(X4, b[4]).add_(X2, b[2]).add_(I, b[0]);
  at::Tensor R = at::linalg_solve(V.sub(U), V.add(U));
  for (int64_t k = 0; k < s_max; ++k) R = at::where(s.gt(static_cast<double>(k)), at::matmul(R, R), R);
  return R;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_matrix_exp", TORCH_FN(matrix_exp_pade));  // (.out is a composite of it)
}

} // namespace pytorch_ocl
