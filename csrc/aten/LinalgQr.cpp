// Householder QR on dlprim's linalg_qr kernels: geqrf, linalg_householder_product (orgqr) and
// linalg_qr (reduced / complete / r), ormqr, LAPACK's conventions so R, tau and Q match the CPU's,
// real and complex.
#include "aten/LinalgCommon.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

std::tuple<at::Tensor&, at::Tensor&> geqrf_out(const at::Tensor& A, at::Tensor& QR, at::Tensor& tau) {
  const char* op = "geqrf";
  TORCH_CHECK(A.dim() >= 2, "torch.geqrf: input must have at least 2 dimensions.");
  check_ocl(A, op, "input");
  check_dtype(A, op, /*complex_ok=*/true);
  const int64_t m = A.size(-2), n = A.size(-1);
  at::native::resize_output(QR, A.sizes());
  std::vector<int64_t> tau_shape(A.sizes().begin(), A.sizes().end() - 2);
  tau_shape.push_back(std::min(m, n));
  at::native::resize_output(tau, tau_shape);
  if (A.numel() == 0) return {QR, tau};
  c10::DeviceGuard guard(A.device());
  at::Tensor work = work_for(QR, A);
  copy_into(work, A);
  at::Tensor t = tau.is_contiguous() ? tau : at::empty(tau_shape, tau.options());
  geqrf_in_place(work, t, op);
  write_back(QR, work);
  write_back(tau, t);
  return {QR, tau};
}

std::tuple<at::Tensor, at::Tensor> geqrf(const at::Tensor& A) {
  at::Tensor QR = at::empty({0}, A.options()), tau = at::empty({0}, A.options());
  geqrf_out(A, QR, tau);
  return {QR, tau};
}

at::Tensor& householder_product_out(const at::Tensor& A, const at::Tensor& tau, at::Tensor& out) {
  const char* op = "torch.linalg.householder_product";
  TORCH_CHECK(A.dim() >= 2, op, ": input must have at least 2 dimensions.");
  TORCH_CHECK(A.size(-2) >= A.size(-1), op, ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  TORCH_CHECK(A.size(-1) >= tau.size(-1), op, ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(A.dim() - tau.dim() == 1, op,
              ": Expected tau to have one dimension less than input, but got tau.ndim equal to ",
              tau.dim(), " and input.ndim is equal to ", A.dim());
  TORCH_CHECK(A.sizes().slice(0, A.dim() - 2).equals(tau.sizes().slice(0, tau.dim() - 1)), op,
              ": Expected batch dimensions of tau to be equal to input.shape[:-2], but got ", tau.sizes());
  TORCH_CHECK(tau.scalar_type() == A.scalar_type(), op, ": tau dtype ", tau.scalar_type(),
              " does not match input dtype ", A.scalar_type());
  check_ocl(A, op, "input");
  check_ocl(tau, op, "tau");
  check_dtype(A, op, /*complex_ok=*/true);
  at::native::resize_output(out, A.sizes());
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(A.device());
  at::Tensor work = work_for(out, A);
  orgqr_into(flat(A), tau.resolve_conj().contiguous(), work, op);
  write_back(out, work);
  return out;
}

at::Tensor householder_product(const at::Tensor& A, const at::Tensor& tau) {
  at::Tensor out = at::empty({0}, A.options());
  return householder_product_out(A, tau, out);
}

std::tuple<at::Tensor&, at::Tensor&> qr_out(const at::Tensor& A, c10::string_view mode, at::Tensor& Q,
                                            at::Tensor& R) {
  const char* op = "linalg.qr";
  at::native::checkIsMatrix(A, op);
  at::native::checkFloatingOrComplex(A, op);
  auto [compute_q, reduced] = at::native::_parse_qr_mode(mode);
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
  std::vector<int64_t> shape = A.sizes().vec();
  shape.end()[-1] = reduced ? k : m;
  if (compute_q) at::native::resize_output(Q, shape);
  else at::native::resize_output(Q, {0});
  shape.end()[-2] = (reduced || !compute_q) ? k : m;
  shape.end()[-1] = n;
  at::native::resize_output(R, shape);
  c10::DeviceGuard guard(A.device());
  std::vector<int64_t> tau_shape(A.sizes().begin(), A.sizes().end() - 2);
  tau_shape.push_back(k);
  at::Tensor work = at::native::cloneBatchedColumnMajor(A.resolve_conj());
  at::Tensor tau = at::empty(tau_shape, A.options());
  if (A.numel() > 0) geqrf_in_place(work, tau, op);
  if (R.numel() > 0) {
    if (R.size(-2) == k) {
      R.copy_(work.narrow(-2, 0, k).triu());
    } else {  // complete with m > n: R is m x n, zero below row n
      R.copy_(work.triu());
    }
  }
  if (compute_q && Q.numel() > 0) {
    at::Tensor qwork = work_for(Q, A);
    orgqr_into(work, tau, qwork, op);
    write_back(Q, qwork);
  }
  return {Q, R};
}

// ormqr: op(Q) @ other (left) or other @ op(Q), Q the full m x m product of input's reflectors
// (built by the orgqr kernel, then one matmul).
at::Tensor& ormqr_out(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left,
                      bool transpose, at::Tensor& out) {
  const char* op = "torch.ormqr";
  TORCH_CHECK(input.dim() >= 2, op, ": input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 2, op, ": other must have at least 2 dimensions.");
  const int64_t left_size_condition = left ? -2 : -1;
  TORCH_CHECK(other.size(left_size_condition) >= tau.size(-1), op, ": other.shape[", left_size_condition,
              "] must be greater than or equal to tau.shape[-1]");
  TORCH_CHECK(other.size(left_size_condition) == input.size(-2), op, ": other.shape[", left_size_condition,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) <= input.size(-1), op, ": tau.shape[-1] must be less than or equal to input.shape[-1]");
  TORCH_CHECK(input.dim() - tau.dim() == 1, op,
              ": Expected tau to have one dimension less than input, but got tau.ndim equal to ",
              tau.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(input.dim() == other.dim(), op,
              ": Expected other to have the same number of dimensions as input, but got other.ndim equal to ",
              other.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(input.scalar_type() == other.scalar_type() && input.scalar_type() == tau.scalar_type(), op,
              ": Expected input, tau and other to have the same dtype");
  check_ocl(input, op, "input");
  check_dtype(input, op, /*complex_ok=*/true);
  const int64_t m = input.size(-2);
  std::vector<int64_t> qshape(input.sizes().begin(), input.sizes().end() - 2);
  qshape.push_back(m);
  qshape.push_back(m);
  c10::DeviceGuard guard(input.device());
  at::Tensor Q = at::empty(qshape, input.options());
  if (Q.numel() > 0) orgqr_into(flat(input), tau.resolve_conj().contiguous(), Q, op);
  at::Tensor Qop = transpose ? Q.mH() : Q;  // transpose: the adjoint for complex (LAPACK's 'C')
  at::Tensor r = left ? at::matmul(Qop, other) : at::matmul(other, Qop);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

at::Tensor ormqr(const at::Tensor& input, const at::Tensor& tau, const at::Tensor& other, bool left,
                 bool transpose) {
  at::Tensor out = at::empty({0}, input.options());
  return ormqr_out(input, tau, other, left, transpose, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("geqrf", TORCH_FN(geqrf));
  m.impl("geqrf.a", TORCH_FN(geqrf_out));
  m.impl("linalg_householder_product", TORCH_FN(householder_product));
  m.impl("linalg_householder_product.out", TORCH_FN(householder_product_out));
  m.impl("linalg_qr.out", TORCH_FN(qr_out));
  m.impl("ormqr", TORCH_FN(ormqr));
  m.impl("ormqr.out", TORCH_FN(ormqr_out));
}

} // namespace pytorch_ocl
