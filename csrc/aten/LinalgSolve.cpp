// Solves on dlprim's linalg kernels: linalg_solve_triangular, triangular_solve, cholesky_solve's
// helper, cholesky_inverse, linalg_lu_solve, and on top of LU factor + solve the CPU's own
// compositions of _linalg_solve_ex, linalg_inv_ex, _linalg_det and _linalg_slogdet (same steps,
// so the LU and pivots they save for autograd are what torch's backward formulas expect).
#include "aten/LinalgCommon.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_det.h>
#include <ATen/ops/_linalg_solve_ex.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/linalg_lu_solve.h>
#include <ATen/ops/linalg_solve_ex.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

void check_same_dtype(const at::Tensor& A, const at::Tensor& B, const char* op, const char* a, const char* b) {
  TORCH_CHECK(A.scalar_type() == B.scalar_type(), op, ": Expected ", a, " and ", b,
              " to have the same dtype, but found ", a, " of type ", A.scalar_type(), " and ", b, " of type ",
              B.scalar_type(), " instead");
}

std::vector<int64_t> with_matrix(std::vector<int64_t> batch, int64_t r, int64_t c) {
  batch.push_back(r);
  batch.push_back(c);
  return batch;
}

std::vector<int64_t> batch_of(c10::IntArrayRef shape, int64_t drop) {
  return std::vector<int64_t>(shape.begin(), shape.end() - drop);
}

at::Tensor& solve_triangular_out(const at::Tensor& A, const at::Tensor& B, bool upper, bool left, bool unit,
                                 at::Tensor& out) {
  const char* op = "linalg.solve_triangular";
  at::native::checkInputsSolver(A, B, left, op);
  check_same_dtype(A, B, op, "A", "B");
  check_ocl(A, op, "A");
  check_ocl(B, op, "B");
  check_dtype(A, op, /*complex_ok=*/true);
  auto [B_shape, A_shape] = at::native::_linalg_broadcast_batch_dims(B, A);
  at::native::resize_output(out, B_shape);
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(A.device());
  at::Tensor work = work_for(out, A);
  copy_into(work, B.expand(B_shape));
  at::Tensor a = flat(A.expand(A_shape));
  // X A = B is A^T X^T = B^T.
  trsm(a, left ? work : work.mT(), !upper, !left, unit, op);
  write_back(out, work);
  return out;
}

at::Tensor solve_triangular(const at::Tensor& A, const at::Tensor& B, bool upper, bool left, bool unit) {
  at::Tensor out = at::empty({0}, B.options());
  return solve_triangular_out(A, B, upper, left, unit, out);
}

std::tuple<at::Tensor&, at::Tensor&> triangular_solve_out(const at::Tensor& B, const at::Tensor& A, bool upper,
                                                          bool transpose, bool unit, at::Tensor& X, at::Tensor& M) {
  const char* op = "triangular_solve";
  TORCH_CHECK(B.dim() >= 2, "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has ", B.dim(),
              " dimensions instead");
  TORCH_CHECK(A.dim() >= 2, "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has ", A.dim(),
              " dimensions instead");
  at::native::linearSolveCheckInputs(B, A, op);
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  auto [B_shape, A_shape] = at::native::_linalg_broadcast_batch_dims(B, A);
  at::native::resize_output(X, B_shape);
  at::native::resize_output(M, A_shape);
  c10::DeviceGuard guard(A.device());
  if (M.numel() > 0) copy_into(M, A.expand(A_shape));
  if (X.numel() == 0) return {X, M};
  at::Tensor work = work_for(X, A);
  copy_into(work, B.expand(B_shape));
  trsm(flat(A.expand(A_shape)), work, !upper, transpose, unit, op);
  write_back(X, work);
  return {X, M};
}

// (L L^H)^-1 B (upper: (U^H U)^-1 B) into x, in place; A flat with x's batch. The transposed
// solve is the adjoint one (conjugated for complex).
void cholesky_solve_in_place(const at::Tensor& A, const at::Tensor& x, bool upper, const char* op) {
  trsm(A, x, !upper, upper, false, op, /*conj=*/upper);    // L y = b, or U^H y = b
  trsm(A, x, !upper, !upper, false, op, /*conj=*/!upper);  // L^H x = y, or U x = y
}

at::Tensor cholesky_solve_helper(const at::Tensor& B, const at::Tensor& A, bool upper) {
  const char* op = "cholesky_solve";
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  c10::DeviceGuard guard(A.device());
  at::Tensor x = at::native::cloneBatchedColumnMajor(B.resolve_conj().resolve_neg());
  if (x.numel() > 0) cholesky_solve_in_place(flat(A), x, upper, op);
  return x;
}

at::Tensor& cholesky_inverse_out(const at::Tensor& A, bool upper, at::Tensor& out) {
  const char* op = "cholesky_inverse";
  at::native::squareCheckInputs(A, op);
  at::native::checkFloatingOrComplex(A, op);
  TORCH_CHECK(out.scalar_type() == A.scalar_type(), op, ": Expected result to have dtype ", A.scalar_type(),
              " but got ", out.scalar_type());
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  at::native::resize_output(out, A.sizes());
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(A.device());
  at::Tensor work = work_for(out, A);
  work.zero_();
  work.diagonal(0, -2, -1).fill_(1);
  cholesky_solve_in_place(flat(A), work, upper, op);
  write_back(out, work);
  return out;
}

at::Tensor cholesky_inverse(const at::Tensor& A, bool upper) {
  at::Tensor out = at::empty({0}, A.options());
  return cholesky_inverse_out(A, upper, out);
}

at::Tensor& lu_solve_out(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& B, bool left,
                         bool adjoint, at::Tensor& out) {
  const char* op = "linalg.lu_solve";
  // The meta function's checks, in its order.
  at::native::checkFloatingOrComplex(LU, "torch.linalg.lu_solve");
  TORCH_CHECK(LU.scalar_type() == B.scalar_type(),
              "linalg.lu_solve: Expected LU and B to have the same dtype, but found LU of type ", LU.scalar_type(),
              " and B of type ", B.scalar_type(), " instead");
  TORCH_CHECK(pivots.dtype() == at::kInt, "linalg.lu_solve: pivots should be a Tensor of scalar type torch.int32");
  at::native::squareCheckInputs(LU, "torch.linalg.lu_solve");
  at::native::checkInputsSolver(LU, B, left, op);
  TORCH_CHECK(LU.size(-1) == pivots.size(-1),
              "linalg.lu_solve: Number of pivots per batch should be same as the dimension of the matrix");
  TORCH_CHECK(LU.sizes().slice(0, LU.dim() - 1).equals(pivots.sizes()),
              "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              pivots.sizes(), " instead");
  check_ocl(LU, op, "LU");
  check_ocl(B, op, "B");
  check_ocl(pivots, op, "pivots");
  check_dtype(LU, op, /*complex_ok=*/true);
  std::vector<int64_t> B_shape = std::get<0>(at::native::_linalg_broadcast_batch_dims(B, LU));
  at::native::resize_output(out, B_shape);
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(LU.device());
  const int64_t n = LU.size(-1);
  std::vector<int64_t> batch = batch_of(B_shape, 2);
  // X A = B is A^H X^H = B^H: solve for X^H with the other adjoint (X A^H = B: A X^H = B^H), in
  // the transposed slot of the result, whose values are then conjugated back (real: no-op).
  at::Tensor work = work_for(out, LU);
  at::Tensor x = left ? work : work.mT();
  copy_into(x, left ? B.expand(B_shape) : B.expand(B_shape).mH());
  at::Tensor lu = flat(LU.expand(with_matrix(batch, n, n)));
  std::vector<int64_t> piv_shape = batch;
  piv_shape.push_back(n);
  at::Tensor piv = pivots.expand(piv_shape);
  if (!flat_batches(piv, 1) || (n > 1 && piv.stride(-1) != 1)) piv = piv.contiguous();
  lu_solve_in_place(lu, piv, x, left ? adjoint : !adjoint, op);
  if (!left && work.is_complex()) work.conj_physical_();
  write_back(out, work);
  return out;
}

// Whether this torch's CPU kernel of `op` (_linalg_solve_ex or _linalg_det) factors A^T instead of
// A when A is contiguous (an optimisation some torch versions have and others dropped, and that
// solve never takes for complex A, where A^T is no adjoint). The saved LU must be the one the
// version's backward formula expects, so we ask the CPU once per (op, real or complex): A =
// [[1, 0], [2, 1]] pivots row 2 first, A^T row 1.
bool cpu_uses_transpose(bool det, bool complex) {
  auto probe = [](bool d, bool c) {
    try {
      c10::ScalarType t = c ? c10::kComplexDouble : c10::kDouble;
      at::Tensor A = at::tensor({1.0, 0.0, 2.0, 1.0}, at::kDouble).view({2, 2}).to(t);
      at::Tensor piv = d ? std::get<2>(at::_linalg_det(A))
                         : std::get<2>(at::_linalg_solve_ex(A, at::ones({2, 1}, A.options())));
      return piv[0].item<int>() == 1;
    } catch (const c10::Error&) {  // a torch without LAPACK: nothing saved by the CPU to agree with
      return false;
    }
  };
  static const bool table[2][2] = {{probe(false, false), probe(false, true)}, {probe(true, false), probe(true, true)}};
  return table[det ? 1 : 0][complex ? 1 : 0];
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> solve_ex_out(const at::Tensor& A,
                                                                            const at::Tensor& B, bool left,
                                                                            bool check_errors, at::Tensor& result,
                                                                            at::Tensor& LU, at::Tensor& pivots,
                                                                            at::Tensor& info) {
  // The meta function's checks and result shape (B may be a vector or a batch of vectors).
  at::native::checkFloatingOrComplex(A, "linalg.solve");
  TORCH_CHECK(A.scalar_type() == B.scalar_type(),
              "linalg.solve: Expected A and B to have the same dtype, but found A of type ", A.scalar_type(),
              " and B of type ", B.scalar_type(), " instead");
  const bool vector_case = at::native::linalg_solve_is_vector_rhs(A, B);
  at::Tensor B_ = vector_case ? B.unsqueeze(-1) : B;
  at::native::checkInputsSolver(A, B_, left, "linalg.solve");
  std::vector<int64_t> B_shape = std::get<0>(at::native::_linalg_broadcast_batch_dims(B_, A));
  TORCH_CHECK(left || !vector_case,
              "linalg.solve: Vector broadcasting of the left hand side is not supported for left=False. In this "
              "case linalg.solve is equivalent to B / A.squeeze(-1)");
  if (vector_case) B_shape.pop_back();
  at::native::resize_output(result, B_shape);
  c10::DeviceGuard guard(A.device());
  // The CPU's steps: LU of A (or of A^T for a contiguous A where this torch does so), then lu_solve.
  const bool use_A_T = A.is_contiguous() && cpu_uses_transpose(false, A.is_complex());
  at::linalg_lu_factor_ex_outf(use_A_T ? A.mT() : A, /*pivot=*/true, /*check_errors=*/false, LU, pivots, info);
  if (check_errors) at::_linalg_check_errors(info, "torch.linalg.solve_ex", A.dim() == 2);
  at::Tensor result_ = vector_case ? result.unsqueeze(-1) : result;
  at::linalg_lu_solve_outf(LU, pivots, B_, left, /*adjoint=*/use_A_T, result_);
  return {result, LU, pivots, info};
}

std::tuple<at::Tensor&, at::Tensor&> inv_ex_out(const at::Tensor& A, bool check_errors, at::Tensor& inverse,
                                                at::Tensor& info) {
  at::native::squareCheckInputs(A, "linalg.inv");
  at::native::checkFloatingOrComplex(A, "linalg.inv", /*allow_low_precision_dtypes=*/false);
  at::native::resize_output(inverse, A.sizes());
  c10::DeviceGuard guard(A.device());
  inverse.zero_();
  inverse.diagonal(0, -2, -1).fill_(1);
  at::linalg_solve_ex_outf(A, inverse, /*left=*/true, /*check_errors=*/false, inverse, info);
  if (check_errors) at::_linalg_check_errors(info, "linalg.inv_ex", A.dim() == 2);
  return {inverse, info};
}

// The sign of the permutation of getrf's pivots: (-1)^(number of actual interchanges), int64.
at::Tensor pivots_sign(const at::Tensor& pivots) {
  return at::ne(at::arange(1, pivots.size(-1) + 1, pivots.options()), pivots)
      .sum(-1, /*keepdim=*/false, c10::kLong)
      .fmod_(2)
      .mul_(-2)
      .add_(1);
}

// The CPU's LU for det/slogdet: of A^T when A is contiguous (det(A^T) = det(A)) where this torch
// does so, so the LU and pivots saved for the backward are the ones its formula expects.
void det_lu(const at::Tensor& A, at::Tensor& LU, at::Tensor& pivots) {
  at::Tensor info = at::empty({0}, A.options().dtype(c10::kInt));
  at::linalg_lu_factor_ex_outf(A.is_contiguous() && cpu_uses_transpose(true, A.is_complex()) ? A.mT() : A, true, false, LU, pivots,
                               info);
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> det_out(const at::Tensor& A, at::Tensor& result, at::Tensor& LU,
                                                          at::Tensor& pivots) {
  at::native::squareCheckInputs(A, "linalg.det");
  at::native::checkFloatingOrComplex(A, "linalg.det");
  at::native::resize_output(result, batch_of(A.sizes(), 2));
  c10::DeviceGuard guard(A.device());
  det_lu(A, LU, pivots);
  at::mul_out(result, pivots_sign(pivots), at::prod(LU.diagonal(0, -2, -1), -1));
  return {result, LU, pivots};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> slogdet_out(const at::Tensor& A, at::Tensor& sign,
                                                                           at::Tensor& logabsdet, at::Tensor& LU,
                                                                           at::Tensor& pivots) {
  at::native::squareCheckInputs(A, "linalg.slogdet");
  at::native::checkFloatingOrComplex(A, "linalg.slogdet", /*allow_low_precision_dtypes=*/false);
  std::vector<int64_t> batch = batch_of(A.sizes(), 2);
  at::native::resize_output(sign, batch);
  at::native::resize_output(logabsdet, batch);
  c10::DeviceGuard guard(A.device());
  det_lu(A, LU, pivots);
  at::Tensor diag = LU.diagonal(0, -2, -1);
  at::mul_out(sign, diag.sgn().prod(-1), pivots_sign(pivots));
  at::sum_out(logabsdet, diag.abs().log_(), -1);
  return {sign, logabsdet, LU, pivots};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_solve_triangular", TORCH_FN(solve_triangular));
  m.impl("linalg_solve_triangular.out", TORCH_FN(solve_triangular_out));
  m.impl("triangular_solve.X", TORCH_FN(triangular_solve_out));
  m.impl("_cholesky_solve_helper", TORCH_FN(cholesky_solve_helper));
  m.impl("cholesky_inverse", TORCH_FN(cholesky_inverse));
  m.impl("cholesky_inverse.out", TORCH_FN(cholesky_inverse_out));
  m.impl("linalg_lu_solve.out", TORCH_FN(lu_solve_out));
  m.impl("_linalg_solve_ex.result", TORCH_FN(solve_ex_out));
  m.impl("linalg_inv_ex.inverse", TORCH_FN(inv_ex_out));
  m.impl("_linalg_det.result", TORCH_FN(det_out));
  m.impl("_linalg_slogdet.sign", TORCH_FN(slogdet_out));
}

} // namespace pytorch_ocl
