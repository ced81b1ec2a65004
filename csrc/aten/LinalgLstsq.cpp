// linalg_lstsq on ocl: the least-squares / minimum-norm solution through our SVD (LinalgEig.cpp),
// X = V diag(1/s_i for s_i > rcond * s_max) U^H B, for every driver, real and complex. The outputs follow the CPU's
// per-driver contract: rank for gelsy/gelsd/gelss, singular values for gelsd/gelss, residuals
// (squared 2-norms of A X - B per column) when m > n for gels, and for gelsd/gelss when every
// matrix has full rank. The default driver is the CPU's (gelsy). For full-rank problems all
// drivers agree with LAPACK's up to rounding; for rank-deficient ones the SVD's truncation decides
// the rank (gelsy's QR-based rank estimate can differ near the threshold).
#include "aten/LinalgCommon.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/all.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_svd.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&, at::Tensor&> lstsq_out(
    const at::Tensor& A, const at::Tensor& B, std::optional<double> rcond, std::optional<c10::string_view> driver_opt,
    at::Tensor& solution, at::Tensor& residuals, at::Tensor& rank, at::Tensor& singular_values) {
  const char* op = "torch.linalg.lstsq";
  TORCH_CHECK(A.dim() >= 2, op, ": input must have at least 2 dimensions.");
  TORCH_CHECK(B.dim() >= 1, op, ": other must have at least 1 dimension.");
  TORCH_CHECK(A.scalar_type() == B.scalar_type(), op, ": Expected input and other to have the same dtype, but got ",
              "input's dtype ", A.scalar_type(), " and other's dtype ", B.scalar_type());
  const int64_t dim_diff = A.dim() - B.dim();
  TORCH_CHECK(0 <= dim_diff && dim_diff <= 1, op,
              ": input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  const bool vector_case = dim_diff == 1;
  at::Tensor Bm = vector_case ? B.unsqueeze(-1) : B;
  TORCH_CHECK(A.size(-2) == Bm.size(-2), op, vector_case ? ": input.size(-2) should match other.size(-1)"
                                                          : ": input.size(-2) should match other.size(-2)");
  std::string driver = driver_opt.has_value() ? std::string(*driver_opt) : std::string("gelsy");
  TORCH_CHECK(driver == "gels" || driver == "gelsy" || driver == "gelsd" || driver == "gelss", op,
              ": parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  at::native::checkFloatingOrComplex(A, op);
  check_ocl(A, op, "input");
  check_ocl(B, op, "other");
  check_dtype(A, op, /*complex_ok=*/true);
  c10::DeviceGuard guard(A.device());

  const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), nrhs = Bm.size(-1);
  std::vector<int64_t> batch = at::infer_size(A.sizes().slice(0, A.dim() - 2), Bm.sizes().slice(0, Bm.dim() - 2));
  auto with = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  at::Tensor Ab = A.expand(with({m, n})), Bb = Bm.expand(with({m, nrhs}));
  at::Tensor X, S, r;
  if (k == 0) {
    X = at::zeros(with({n, nrhs}), A.options());
    S = at::empty(with({0}), A.options().dtype(c10::toRealValueType(A.scalar_type())));
    r = at::zeros(batch, A.options().dtype(c10::kLong));
  } else {
    auto [U, Sv, Vh] = at::linalg_svd(Ab, /*full_matrices=*/false);
    const c10::ScalarType real_t = c10::toRealValueType(A.scalar_type());
    const double eps = real_t == c10::kDouble ? std::numeric_limits<double>::epsilon()
                                              : std::numeric_limits<float>::epsilon();
    const double rc = rcond.has_value() && *rcond >= 0 ? *rcond : eps * std::max(m, n);
    at::Tensor keep = Sv.gt(Sv.narrow(-1, 0, 1).mul(rc));
    at::Tensor inv = at::where(keep, Sv.reciprocal(), 0.0);
    X = at::matmul(Vh.mH(), inv.unsqueeze(-1).mul(at::matmul(U.mH(), Bb)));
    S = Sv;
    r = keep.sum(-1, /*keepdim=*/false, c10::kLong);
  }
  const bool full_rank_drv = driver == "gelsd" || driver == "gelss";
  bool with_residuals = m > n && driver != "gelsy";
  if (with_residuals && full_rank_drv) with_residuals = r.numel() == 0 || at::all(r.eq(n)).item<bool>();
  at::Tensor res = with_residuals ? at::matmul(Ab, X).sub(Bb).abs().pow(2).sum(-2)
                                  : at::empty({0}, A.options().dtype(c10::toRealValueType(A.scalar_type())));

  if (vector_case) X = X.squeeze(-1);
  at::native::resize_output(solution, X.sizes());
  solution.copy_(X);
  at::native::resize_output(residuals, res.sizes());
  residuals.copy_(res);
  if (driver == "gels") {
    at::native::resize_output(rank, {0});
  } else {
    at::native::resize_output(rank, r.sizes());
    rank.copy_(r);
  }
  if (full_rank_drv) {
    at::native::resize_output(singular_values, S.sizes());
    singular_values.copy_(S);
  } else {
    at::native::resize_output(singular_values, {0});
  }
  return {solution, residuals, rank, singular_values};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_lstsq.out", TORCH_FN(lstsq_out));
}

} // namespace pytorch_ocl
