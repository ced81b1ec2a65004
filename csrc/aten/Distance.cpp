// cdist / pdist (_cdist_forward, _cdist_backward, _pdist_forward, _pdist_backward) composed of
// native ops: the pairwise differences [..., P, R, M] reduced by linalg_vector_norm (every p: 0,
// 1, 2, inf, fractional), and the gradient from the CPU's per-p formulas (Distance.cpp's
// pdist_calc cases, zero where the distance is zero) summed over the other point set. The
// difference tensor costs P * R * M elements: simple and exact rather than fast. p = 2 with many
// points normally takes torch's own matmul path (_euclidean_dist), which is native already.
// pdist is the strict upper triangle of cdist(x, x), row-major, as the CPU orders it.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

namespace pytorch_ocl {

namespace {

void check_cdist(const at::Tensor& x1, const at::Tensor& x2, double p, const char* op) {
  check_ocl(x1, op, "x1");
  check_ocl(x2, op, "x2");
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()), "cdist only supports floating-point dtypes, X1 got: ",
              x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()), "cdist only supports floating-point dtypes, X2 got: ",
              x2.scalar_type());
  TORCH_CHECK(x1.scalar_type() == x2.scalar_type(), "cdist: X1 and X2 must have the same dtype, got ",
              x1.scalar_type(), " and ", x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
              " X2: ", x2.size(-1));
}

// dist [..., P, R] of rows of x1 [..., P, M] and x2 [..., R, M] (batch dims broadcast).
at::Tensor distances(const at::Tensor& x1, const at::Tensor& x2, double p) {
  at::Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  if (x1.size(-1) == 0) return at::zeros(diff.sizes().slice(0, diff.dim() - 1), x1.options());
  return at::linalg_vector_norm(diff, p, {-1}, false, std::nullopt);
}

// d cdist / d x1 contracted with grad [..., P, R]: sum over r of grad * d dist(x1_p, x2_r) / d x1_p.
at::Tensor distances_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                              const at::Tensor& dist) {
  if (p == 0 || x1.numel() == 0 || x2.numel() == 0) return at::zeros_like(x1, at::MemoryFormat::Contiguous);
  at::Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);
  at::Tensor g = grad.unsqueeze(-1), d = dist.unsqueeze(-1);
  at::Tensor zero = at::zeros({}, diff.options());
  at::Tensor t;
  if (p == 1) {
    t = at::sign(diff) * g;
  } else if (std::isinf(p)) {
    t = g * at::sign(diff) * (at::abs(diff) == d).to(diff.scalar_type());
  } else if (p == 2) {
    t = at::where(d == 0, zero, g * diff / d);
  } else if (p < 2) {
    at::Tensor value = at::sign(diff) * at::pow(at::abs(diff), p - 1) * g / at::pow(d, p - 1);
    at::Tensor dead = p < 1 ? (d == 0).logical_or(diff == 0) : (d == 0).expand_as(diff);
    t = at::where(dead, zero, value);
  } else {
    t = at::where(d == 0, zero, diff * at::pow(at::abs(diff), p - 2) * g / at::pow(d, p - 1));
  }
  at::Tensor out = t.sum(-2);
  return out.sizes() == x1.sizes() ? out : out.sum_to_size(x1.sizes());
}

at::Tensor cdist_forward(const at::Tensor& x1, const at::Tensor& x2, double p, std::optional<int64_t> mode) {
  check_cdist(x1, x2, p, "_cdist_forward");
  TORCH_CHECK(!mode.has_value() || (*mode >= 0 && *mode <= 2), "possible modes: None, 1, 2, but was: ", *mode);
  c10::DeviceGuard guard(x1.device());
  return distances(x1, x2, p).contiguous();
}

at::Tensor cdist_backward(const at::Tensor& grad, const at::Tensor& x1, const at::Tensor& x2, double p,
                          const at::Tensor& cdist) {
  check_cdist(x1, x2, p, "_cdist_backward");
  check_ocl(grad, "_cdist_backward", "grad");
  check_ocl(cdist, "_cdist_backward", "cdist");
  c10::DeviceGuard guard(x1.device());
  return distances_backward(grad, x1, x2, p, cdist).contiguous();
}

// The strict upper triangle of an [N, N] matrix, row-major.
at::Tensor upper_mask(int64_t n, const at::Tensor& like) {
  return at::ones({n, n}, like.options().dtype(at::kBool)).triu(1);
}

at::Tensor pdist_forward(const at::Tensor& self, double p) {
  check_ocl(self, "_pdist_forward", "self");
  TORCH_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "pdist only supports floating-point dtypes");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  c10::DeviceGuard guard(self.device());
  int64_t n = self.size(0);
  if (n <= 1) return at::empty({0}, self.options());
  return distances(self, self, p).masked_select(upper_mask(n, self));
}

at::Tensor pdist_backward(const at::Tensor& grad, const at::Tensor& self, double p, const at::Tensor& pdist) {
  check_ocl(self, "_pdist_backward", "self");
  check_ocl(grad, "_pdist_backward", "grad");
  TORCH_CHECK(self.dim() == 2, "_pdist_backward requires self to be 2D, got: ", self.dim(), "D");
  c10::DeviceGuard guard(self.device());
  int64_t n = self.size(0);
  if (n <= 1 || self.size(1) == 0) return at::zeros_like(self, at::MemoryFormat::Contiguous);
  // Each pair's gradient belongs to both rows: a symmetric [N, N] grad and distance matrix.
  at::Tensor mask = upper_mask(n, self);
  at::Tensor g = at::zeros({n, n}, grad.options()).masked_scatter(mask, grad.contiguous());
  at::Tensor d = at::zeros({n, n}, pdist.options()).masked_scatter(mask, pdist.contiguous());
  return distances_backward(g + g.t(), self, self, p, d + d.t()).contiguous();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
}

} // namespace pytorch_ocl
