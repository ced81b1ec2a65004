// Jacobi-based decompositions on dlprim's linalg_jacobi kernels: _linalg_eigh (linalg.eigh,
// eigvalsh; cyclic two-sided Jacobi up to eigh_crossover(), real matrices above it by the
// tridiagonal path of LinalgEighTridiag.cpp, complex ones always by Jacobi) and _linalg_svd (linalg.svd, svdvals, pinv, matrix_rank,
// matrix_norm, cond; one-sided Jacobi on the tall orientation of A, whose left vectors are then
// completed to an orthonormal basis (zero singular values, full_matrices) by a Householder QR).
// float32/float64 and complex64/complex128: the complex kernels are the real ones with complex
// rotations (the same generator, see linalg_jacobi.cl); eigenvalues and singular values are real.
// Singular vectors and eigenvectors are unique only up to sign (complex: a unit phase) and within
// repeated values: they can differ from the CPU's LAPACK by that, as the CPU's differ between
// LAPACK builds.
#include "aten/LinalgCommon.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/_linalg_eigh.h>
#include <ATen/ops/_linalg_svd.h>
#include <ATen/ops/add.h>
#include <ATen/ops/diag_embed.h>
#include <ATen/ops/real.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/where.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

std::vector<int64_t> batch_plus(const at::Tensor& A, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> s(A.sizes().begin(), A.sizes().end() - 2);
  s.insert(s.end(), tail);
  return s;
}

// The structured wrapper's out= check (we register the out overload directly, past it): the
// kernels write out's memory as `dtype`.
void check_out_dtype(const at::Tensor& out, c10::ScalarType dtype) {
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ", c10::toString(dtype), ", but got ",
              c10::toString(out.scalar_type()), " instead");
}

// int32 info per matrix: `code` where the matrix has a non-finite entry, else 0.
at::Tensor nonfinite_info(const at::Tensor& A, int64_t code) {
  return at::isfinite(A).all(-1).all(-1).logical_not().to(c10::kInt).mul_(code);
}

std::tuple<at::Tensor&, at::Tensor&> eigh_out(const at::Tensor& A, c10::string_view uplo, bool compute_v,
                                              at::Tensor& L, at::Tensor& V) {
  const char* op = "linalg.eigh";
  at::native::squareCheckInputs(A, op);
  at::native::checkUplo(uplo);
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  check_out_dtype(L, c10::toRealValueType(A.scalar_type()));
  check_out_dtype(V, A.scalar_type());
  const int64_t n = A.size(-1);
  if (compute_v) at::native::resize_output(V, A.sizes());
  else at::native::resize_output(V, {0});
  at::native::resize_output(L, batch_plus(A, {n}));
  if (A.numel() == 0) return {L, V};
  c10::DeviceGuard guard(A.device());
  // The full symmetric (Hermitian) matrix from the triangle UPLO names, the diagonal's real part
  // as syevd/heevd read it (exact: the other half is a copy).
  const bool lower = uplo[0] == 'L' || uplo[0] == 'l';
  at::Tensor tri = lower ? A.tril(-1) : A.triu(1);
  at::Tensor sym = at::add(tri, tri.mH()).add_(at::diag_embed(at::real(A.diagonal(0, -2, -1))));
  // LAPACK fails on non-finite input and the CPU raises: the same LinAlgError (our error code, n - 1,
  // stands in for syevd's).
  at::_linalg_check_errors(nonfinite_info(sym, std::max<int64_t>(1, n - 1)), op, A.dim() == 2);
  if (!A.is_complex() && n > std::max<int64_t>(1, eigh_crossover())) {
    at::Tensor w = L.is_contiguous() ? L : at::empty(L.sizes(), L.options());
    at::Tensor vw = compute_v ? work_for(V, A) : at::Tensor();
    eigh_tridiag(sym, w, compute_v ? &vw : nullptr, op);
    write_back(L, w);
    if (compute_v) write_back(V, vw);
    return {L, V};
  }
  const int64_t batch = batch_count(A);
  at::Tensor scratch = at::empty({batch, n * n}, A.options());
  at::Tensor rot = at::empty({batch, n + 1}, A.options());
  at::Tensor w = L.is_contiguous() ? L : at::empty(L.sizes(), L.options());
  at::Tensor vw = compute_v ? work_for(V, A) : at::Tensor();
  dlprim::MatrixRef vref = compute_v ? matrix_ref(vw) : dlprim::MatrixRef();
  int device = A.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::eigh_jacobi(context(device), q, ltype_of(A, op), batch, n,
                                          matrix_ref(sym), vec_ref(scratch), vec_ref(rot), vec_ref(w),
                                          compute_v ? &vref : nullptr));
  note_enqueued(q);
  write_back(L, w);
  if (compute_v) write_back(V, vw);
  return {L, V};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> svd_out(const at::Tensor& A, bool full_matrices, bool compute_uv,
                                                          std::optional<c10::string_view> driver, at::Tensor& U,
                                                          at::Tensor& S, at::Tensor& Vh) {
  const char* op = "linalg.svd";
  at::native::checkIsMatrix(A, op);
  at::native::checkFloatingOrComplex(A, op);
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  check_out_dtype(U, A.scalar_type());
  check_out_dtype(S, c10::toRealValueType(A.scalar_type()));
  check_out_dtype(Vh, A.scalar_type());
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  if (compute_uv) {
    at::native::resize_output(U, batch_plus(A, {m, full_matrices ? m : k}));
    at::native::resize_output(Vh, batch_plus(A, {full_matrices ? n : k, n}));
  } else {
    at::native::resize_output(U, {0});
    at::native::resize_output(Vh, {0});
  }
  at::native::resize_output(S, batch_plus(A, {k}));
  const int64_t batch = batch_count(A);
  if (batch == 0) return {U, S, Vh};
  c10::DeviceGuard guard(A.device());
  // Non-finite input: the CPU's LinAlgError (LAPACK >= 3.10's gesdd reports info -4 for it).
  if (A.numel() > 0) at::_linalg_check_errors(nonfinite_info(A, -4), op, A.dim() == 2);
  // The tall orientation T (M x k, M >= k): A = U S Vh, or A^H = U' S Vh' with U = Vh'^H, Vh = U'^H
  // (cloning resolves a conjugate view).
  const bool tall = m >= n;
  const int64_t M = std::max(m, n);
  at::Tensor W = at::native::cloneBatchedColumnMajor(tall ? A : A.mH()).resolve_neg();
  at::Tensor s = at::empty(batch_plus(A, {k}), A.options().dtype(c10::toRealValueType(A.scalar_type())));
  at::Tensor Uw = at::empty(batch_plus(A, {M, k}), A.options());
  at::Tensor Vw = at::empty(batch_plus(A, {k, k}), A.options());
  at::Tensor scratch = at::empty({batch, k * k}, A.options());
  at::Tensor rot = at::empty({batch, k + 1}, A.options());
  int device = A.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::svd_jacobi(context(device), q, ltype_of(A, op), batch, M, k,
                                         matrix_ref(W), vec_ref(scratch), vec_ref(rot), vec_ref(s), matrix_ref(Uw),
                                         matrix_ref(Vw)));
  note_enqueued(q);
  copy_into(S, s);
  if (!compute_uv) return {U, S, Vh};
  // Orthonormal completion of the left vectors: Uw = Q R with R's diagonal +-1 on the nonzero
  // columns (already orthonormal; geqrf's R has a real diagonal, complex too) and Q's further
  // columns an orthonormal basis of the rest.
  const int64_t qc = full_matrices ? M : k;
  at::Tensor tau = at::empty(batch_plus(A, {k}), A.options());
  at::Tensor QR = Uw.clone();
  geqrf_in_place(QR, tau, op);
  at::Tensor Q = at::empty(batch_plus(A, {M, qc}), A.options());
  orgqr_into(QR, tau, Q, op);
  at::Tensor sign = at::where(at::real(QR.diagonal(0, -2, -1)).lt(0), -1.0, 1.0).to(A.scalar_type());
  Q.narrow(-1, 0, k).mul_(sign.unsqueeze(-2));
  if (tall) {
    U.copy_(Q);
    Vh.copy_(Vw.mH());
  } else {
    U.copy_(Vw);
    Vh.copy_(Q.mH());
  }
  return {U, S, Vh};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_linalg_eigh.eigenvalues", TORCH_FN(eigh_out));
  m.impl("_linalg_svd.U", TORCH_FN(svd_out));
}

} // namespace pytorch_ocl
