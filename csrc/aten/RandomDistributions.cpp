// The samplers behind torch.distributions' Gamma (and so Beta, Chi2, StudentT), Dirichlet, Poisson and Binomial: rows of
// dlprim's distribution table that draw as many Philox words per element as their rejection method takes
// (random_rejection.cl: the CPU's methods), reading the parameters from the input tensor. The dtypes and their
// errors are the CPU's.
#include "aten/RandomLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_assert_async.h>
#include <ATen/ops/all.h>
#include <ATen/ExpandUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <optional>

namespace pytorch_ocl {

namespace {

void check_floating(const at::Tensor& self, bool half, const char* name) {
  c10::ScalarType t = self.scalar_type();
  bool ok = t == c10::kFloat || t == c10::kDouble || (half && (t == c10::kHalf || t == c10::kBFloat16));
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", name, "\" not implemented for '", c10::toString(t), "'");
}

at::Tensor sample(dlprim::Distribution dist, const at::Tensor& self, const std::optional<at::Generator>& gen,
                  const char* op) {
  check_ocl(self, op, "self");
  c10::DeviceGuard guard(self.device());
  at::Tensor out = at::empty_like(self, at::MemoryFormat::Contiguous);
  if (out.numel() > 0) launch_random(dist, {out}, &self, dlprim::RandomParams{}, gen, op);
  return out;
}

at::Tensor standard_gamma(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, false, "gamma_cpu");
  return sample(dlprim::Distribution::Gamma, self, gen, "_standard_gamma");
}

at::Tensor poisson(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, true, "poisson_cpu");
  // The CPU's check of the rates, without a wait: raised where the host next waits (AssertAsync.cpp)
  if (self.numel() > 0) at::_assert_async(at::all(self >= 0), "invalid Poisson rate, expected rate to be non-negative");
  return sample(dlprim::Distribution::Poisson, self, gen, "poisson");
}

// count and prob of one dtype, the broadcast of both (as the CPU's TensorIterator)
at::Tensor binomial(const at::Tensor& count, const at::Tensor& prob, std::optional<at::Generator> gen) {
  check_floating(count, false, "binomial_cpu");
  TORCH_CHECK(prob.scalar_type() == count.scalar_type(), "Found dtype ", prob.scalar_type(), " but expected ",
              count.scalar_type());  // the CPU's TensorIterator message
  check_ocl(count, "binomial", "count");
  check_ocl(prob, "binomial", "prob");
  c10::DeviceGuard guard(count.device());
  at::Tensor out = at::empty(at::infer_size(count.sizes(), prob.sizes()), count.options());
  if (out.numel() > 0) launch_random(dlprim::Distribution::Binomial, {out}, &count, {}, gen, "binomial", &prob);
  return out;
}

// Gamma(alpha) samples normalised over the last dim, as the CPU's dirichlet (each sample at least the type's
// smallest normal value, so a row of tiny concentrations still sums to a positive number)
at::Tensor sample_dirichlet(const at::Tensor& self, std::optional<at::Generator> gen) {
  check_floating(self, false, "dirichlet");
  at::Tensor g = sample(dlprim::Distribution::Gamma, self, gen, "_sample_dirichlet");
  if (g.dim() == 0 || g.numel() == 0) return g / g;  // one value: 1, as on the CPU
  return g / at::sum(g, {-1}, /*keepdim=*/true);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_standard_gamma", TORCH_FN(standard_gamma));
  m.impl("poisson", TORCH_FN(poisson));
  m.impl("_sample_dirichlet", TORCH_FN(sample_dirichlet));
  m.impl("binomial", TORCH_FN(binomial));
}

} // namespace pytorch_ocl
