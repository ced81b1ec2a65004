// Factorizations: linalg_cholesky_ex (and the legacy cholesky), linalg_lu_factor_ex, linalg_lu and
// lu_unpack, on dlprim's linalg kernels (one work-group per matrix). Structured ops register their
// .out overload only (the functional forms reach it after torch's meta checks and allocation);
// the wrappers repeat the CPU's checks for direct .out calls and resize out.
#include "aten/LinalgCommon.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/linalg_cholesky_ex.h>
#include <ATen/ops/linalg_lu_factor_ex.h>
#include <ATen/ops/lu_unpack.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

std::vector<int64_t> batch_shape(const at::Tensor& A, int64_t drop) {
  return std::vector<int64_t>(A.sizes().begin(), A.sizes().end() - drop);
}

void resize_int(const at::Tensor& t, c10::IntArrayRef shape, const char* op, const char* name) {
  TORCH_CHECK(t.scalar_type() == c10::kInt, op, ": Expected ", name, " to have dtype Int but got ", t.scalar_type());
  at::native::resize_output(t, shape);
}

std::tuple<at::Tensor&, at::Tensor&> cholesky_ex_out(const at::Tensor& A, bool upper, bool check_errors,
                                                     at::Tensor& L, at::Tensor& info) {
  const char* op = "linalg.cholesky";
  at::native::squareCheckInputs(A, op);
  at::native::checkFloatingOrComplex(A, op);
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  TORCH_CHECK(L.scalar_type() == A.scalar_type(), op, ": Expected L to have dtype ", A.scalar_type(), " but got ",
              L.scalar_type());
  at::native::resize_output(L, A.sizes());
  resize_int(info, batch_shape(A, 2), op, "info");
  c10::DeviceGuard guard(A.device());
  if (A.numel() == 0) {
    info.zero_();
    return {L, info};
  }
  at::Tensor work = work_for(L, A);
  copy_into(work, A);
  cholesky_lower(work, upper, info, op);
  write_back(L, work);
  if (check_errors) at::_linalg_check_errors(info, op, A.dim() == 2);
  return {L, info};
}

// torch.cholesky (deprecated): linalg.cholesky's factor, its own name in the error.
at::Tensor& cholesky_out(const at::Tensor& A, bool upper, at::Tensor& out) {
  const char* op = "cholesky";
  at::native::squareCheckInputs(A, op);
  at::native::checkFloatingOrComplex(A, op);
  at::Tensor info = at::empty(batch_shape(A, 2), A.options().dtype(c10::kInt));
  at::linalg_cholesky_ex_outf(A, upper, /*check_errors=*/false, out, info);
  at::_linalg_check_errors(info, op, A.dim() == 2);
  return out;
}

at::Tensor cholesky(const at::Tensor& A, bool upper) {
  at::Tensor out = at::empty({0}, A.options());
  cholesky_out(A, upper, out);
  return out;
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_factor_ex_out(const at::Tensor& A, bool pivot,
                                                                   bool check_errors, at::Tensor& LU,
                                                                   at::Tensor& pivots, at::Tensor& info) {
  const char* op = "torch.linalg.lu_factor_ex";
  TORCH_CHECK(A.dim() >= 2, "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", A.sizes(),
              " instead");
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on ocl");
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  const int64_t m = A.size(-2), n = A.size(-1);
  at::native::resize_output(LU, A.sizes());
  std::vector<int64_t> piv_shape = batch_shape(A, 1);
  piv_shape.back() = std::min(m, n);
  resize_int(pivots, piv_shape, op, "pivots");
  resize_int(info, batch_shape(A, 2), op, "info");
  c10::DeviceGuard guard(A.device());
  if (A.numel() == 0) {  // a (0, 0) matrix still has an info
    info.zero_();
    return {LU, pivots, info};
  }
  at::Tensor work = work_for(LU, A);
  copy_into(work, A);
  bool piv_flat = flat_batches(pivots, 1) && (pivots.size(-1) <= 1 || pivots.stride(-1) == 1);
  at::Tensor piv = piv_flat ? pivots : at::empty(piv_shape, pivots.options());
  lu_factor(work, piv, info, op);
  write_back(LU, work);
  write_back(pivots, piv);
  if (check_errors) at::_linalg_check_errors(info, op, A.dim() == 2);
  return {LU, pivots, info};
}

// P (m x m), L (m x k, unit lower), U (k x n) of packed LU and its pivots. A = P L U.
void unpack(const at::Tensor& LU, const at::Tensor& pivots, bool unpack_data, bool unpack_pivots, at::Tensor& P,
            at::Tensor& L, at::Tensor& U, const char* op) {
  const int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  std::vector<int64_t> shape = LU.sizes().vec();
  if (unpack_pivots) {
    shape.end()[-1] = m;
    at::native::resize_output(P, shape);
  } else {
    at::native::resize_output(P, {0});
  }
  if (unpack_data) {
    shape.end()[-1] = k;
    at::native::resize_output(L, shape);
    shape.end()[-2] = k;
    shape.end()[-1] = n;
    at::native::resize_output(U, shape);
    if (LU.numel() > 0 || L.numel() > 0 || U.numel() > 0) {
      // L: the strictly lower part of the first k columns plus ones; U: the upper part of the first k rows.
      if (m >= n) {
        L.copy_(LU.tril(-1));
        L.diagonal(0, -2, -1).fill_(1);
        U.copy_(LU.narrow(-2, 0, k).triu());
      } else {
        L.copy_(LU.narrow(-1, 0, k).tril(-1));
        L.diagonal(0, -2, -1).fill_(1);
        U.copy_(LU.triu());
      }
    }
  } else {
    at::native::resize_output(L, {0});
    at::native::resize_output(U, {0});
  }
  if (unpack_pivots && P.numel() > 0) {
    // P[r][c] = 1 where perm[c] == r: row i of P^T A is row perm[i] of A.
    at::Tensor perm = permutation(pivots, m, op);
    at::Tensor rows = at::arange(m, pivots.options().dtype(c10::kLong)).unsqueeze(-1);
    P.copy_(at::eq(perm.unsqueeze(-2), rows));
  }
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> lu_unpack_out(const at::Tensor& LU, const at::Tensor& pivots,
                                                                bool unpack_data, bool unpack_pivots, at::Tensor& P,
                                                                at::Tensor& L, at::Tensor& U) {
  const char* op = "torch.lu_unpack";
  TORCH_CHECK(LU.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", LU.sizes(),
              " instead");
  if (unpack_pivots) {
    TORCH_CHECK(pivots.scalar_type() == at::kInt,
                "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
                "Note: this function is intended to be used with the output produced by torch.linalg.lu_factor");
    std::vector<int64_t> expect = batch_shape(LU, 1);
    expect.back() = std::min(LU.size(-2), LU.size(-1));
    TORCH_CHECK(pivots.sizes().equals(expect), "torch.lu_unpack: Expected pivots of shape ", expect, " but got ",
                pivots.sizes());
    check_ocl(pivots, op, "pivots");
  }
  check_ocl(LU, op, "LU");
  c10::DeviceGuard guard(LU.device());
  unpack(LU, pivots, unpack_data, unpack_pivots, P, L, U, op);
  return {P, L, U};
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> linalg_lu_out(const at::Tensor& A, bool pivot, at::Tensor& P,
                                                                at::Tensor& L, at::Tensor& U) {
  TORCH_CHECK(A.dim() >= 2, "linalg.lu: Expected tensor with 2 or more dimensions. Got size: ", A.sizes(),
              " instead");
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on ocl");
  c10::DeviceGuard guard(A.device());
  at::Tensor LU = at::empty({0}, A.options());
  at::Tensor pivots = at::empty({0}, A.options().dtype(c10::kInt));
  at::Tensor info = at::empty({0}, A.options().dtype(c10::kInt));
  at::linalg_lu_factor_ex_outf(A, true, false, LU, pivots, info);
  unpack(LU, pivots, true, true, P, L, U, "linalg.lu");
  return {P, L, U};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cholesky_ex.L", TORCH_FN(cholesky_ex_out));
  m.impl("cholesky", TORCH_FN(cholesky));
  m.impl("cholesky.out", TORCH_FN(cholesky_out));
  m.impl("linalg_lu_factor_ex.out", TORCH_FN(lu_factor_ex_out));
  m.impl("lu_unpack.out", TORCH_FN(lu_unpack_out));
  m.impl("linalg_lu.out", TORCH_FN(linalg_lu_out));
}

} // namespace pytorch_ocl
