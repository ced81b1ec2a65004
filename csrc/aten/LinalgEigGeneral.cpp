// The general (non-symmetric) eigenproblem: linalg_eig (linalg.eig) and linalg_eigvals, on
// dlprim's linalg_eig kernel (Hessenberg reduction, complex shifted QR, back-substitution on the
// Schur form; kernels/linalg_eig.cl). Real input runs as complex: the CPU's dgeev gives exactly
// real eigenvalues (and real vectors) where ours carry rounding-sized imaginary parts, and the
// order of the eigenvalues may differ from LAPACK's. Eigenvectors have unit 2-norm with their
// largest component real, zgeev's convention; they are unique only up to that (and within repeated
// eigenvalues). linalg_eig's backward is torch's formula on complex ops that run natively.
#include "aten/LinalgCommon.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

// torch's checks (BatchLinearAlgebra.cpp's linalg_eig_out), in its words.
void check_eig_args(const at::Tensor& A, const at::Tensor& W, const at::Tensor* V, const char* api) {
  at::native::squareCheckInputs(A, api + 6);  // "linalg.eig" / "linalg.eigvals"
  check_ocl(A, api + 6, "A");
  check_dtype(A, api + 6, /*complex_ok=*/true);
  const c10::ScalarType ct = c10::toComplexType(A.scalar_type());
  at::native::checkSameDevice(api, W, A, "eigenvalues");
  at::native::checkLinalgCompatibleDtype(api, W.scalar_type(), ct, "eigenvalues");
  if (V) {
    at::native::checkSameDevice(api, *V, A, "eigenvectors");
    at::native::checkLinalgCompatibleDtype(api, V->scalar_type(), ct, "eigenvectors");
  }
  // LAPACK's geev would loop on them; the CPU checks first, in these words (one sync, as the CPU's).
  if (A.numel() > 0)
    TORCH_CHECK(at::isfinite(A).all().item<bool>(), api, ": input tensor should not contain infs or NaNs.");
}

// Eigenvalues into W (and eigenvectors into *V when given), both resized; A is not modified.
void eig_into(const at::Tensor& A, at::Tensor& W, at::Tensor* V, const char* api) {
  check_eig_args(A, W, V, api);
  const int64_t n = A.size(-1);
  std::vector<int64_t> wshape(A.sizes().begin(), A.sizes().end() - 1);
  at::native::resize_output(W, wshape);
  if (V) at::native::resize_output(*V, A.sizes());
  const int64_t batch = batch_count(A);
  if (batch == 0 || n == 0) return;
  c10::DeviceGuard guard(A.device());
  const c10::ScalarType ct = c10::toComplexType(A.scalar_type());
  const auto copt = A.options().dtype(ct);
  // The kernel's working copy: complex, column-major batches (destroyed: becomes the Schur form).
  at::Tensor H = at::native::cloneBatchedColumnMajor(A.resolve_conj().resolve_neg().to(ct));
  at::Tensor w = at::empty({batch, n}, copt);
  // z: the Schur vectors (vectors only); x: the triangular eigenvectors, or with no vectors just
  // the Householder vector of the reduction (n), which the kernel keeps in x's first column.
  at::Tensor z = at::empty({batch, V ? n * n : 1}, copt);
  at::Tensor x = at::empty({batch, V ? n * n : n}, copt);
  at::Tensor vw = V ? at::empty(A.sizes(), copt) : at::Tensor();
  dlprim::MatrixRef vref = V ? matrix_ref(vw) : dlprim::MatrixRef();
  // info per matrix, contiguous (batch dims; one stride apart as the kernel indexes it).
  at::Tensor info = at::zeros(std::vector<int64_t>(A.sizes().begin(), A.sizes().end() - 2), A.options().dtype(c10::kInt));
  BufferRef ib = buffer_of(info);
  int device = A.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(api + 6, dlprim::eig(context(device), q, to_dlprim(c10::toRealValueType(ct), api + 6), batch, n,
                                       matrix_ref(H), vec_ref(w), vec_ref(z), vec_ref(x), V ? &vref : nullptr,
                                       dlprim::IntVecRef{ib.mem, ib.offset / 4, 1}));
  note_enqueued(q);
  // QR that did not converge: the CPU's LinAlgError ("failed to converge ... (error code: i)").
  at::_linalg_check_errors(info, api, A.dim() == 2);
  W.copy_(w.view(wshape));
  if (V) V->copy_(vw);
}

std::tuple<at::Tensor&, at::Tensor&> eig_out(const at::Tensor& A, at::Tensor& W, at::Tensor& V) {
  eig_into(A, W, &V, "torch.linalg.eig");
  return {W, V};
}

std::tuple<at::Tensor, at::Tensor> eig(const at::Tensor& A) {
  const auto copt = A.options().dtype(c10::toComplexType(A.scalar_type()));
  at::Tensor W = at::empty({0}, copt), V = at::empty({0}, copt);
  eig_into(A, W, &V, "torch.linalg.eig");
  return {W, V};
}

at::Tensor& eigvals_out(const at::Tensor& A, at::Tensor& W) {
  eig_into(A, W, nullptr, "torch.linalg.eigvals");
  return W;
}

at::Tensor eigvals(const at::Tensor& A) {
  at::Tensor W = at::empty({0}, A.options().dtype(c10::toComplexType(A.scalar_type())));
  eig_into(A, W, nullptr, "torch.linalg.eigvals");
  return W;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_eig", TORCH_FN(eig));
  m.impl("linalg_eig.out", TORCH_FN(eig_out));
  m.impl("_linalg_eigvals", TORCH_FN(eigvals));
  m.impl("linalg_eigvals.out", TORCH_FN(eigvals_out));
}

} // namespace pytorch_ocl
