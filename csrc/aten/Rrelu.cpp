// rrelu_with_noise (F.rrelu; functional, in-place and out= forms) on native ops. Training: every
// element <= 0 is scaled by a slope drawn uniformly from [lower, upper] with the op's generator
// (native uniform_, so torch.manual_seed and generator= hold), and `noise` records the slope per
// element (1 for positive ones), which the backward (rrelu_with_noise_backward, a composite of
// native ops) multiplies in. Evaluation: leaky_relu with the mean slope (lower + upper) / 2.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/where.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor rrelu_compute(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                         bool training, std::optional<at::Generator> gen) {
  check_ocl(self, "rrelu_with_noise", "self");
  check_ocl(noise, "rrelu_with_noise", "noise");
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"rrelu_with_noise\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ocl");
  double lo = lower.toDouble(), hi = upper.toDouble();
  TORCH_CHECK(lo <= hi, "Lower bound should be less than or equal to the upper bound");
  c10::DeviceGuard guard(self.device());
  if (!training) return at::leaky_relu(self, (lo + hi) / 2);
  at::native::resize_output(noise, self.sizes());
  at::Tensor slope = at::empty_like(self, at::MemoryFormat::Contiguous).uniform_(lo, hi, gen);
  at::Tensor r = at::where(self <= 0, slope, at::ones({}, self.options()));
  noise.copy_(r);
  return self * r;
}

at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                            const at::Scalar& upper, bool training, std::optional<at::Generator> gen) {
  return rrelu_compute(self, noise, lower, upper, training, gen);
}

at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const at::Scalar& lower, const at::Scalar& upper,
                              bool training, std::optional<at::Generator> gen) {
  return self.copy_(rrelu_compute(self, noise, lower, upper, training, gen));
}

at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const at::Scalar& lower,
                                 const at::Scalar& upper, bool training, std::optional<at::Generator> gen,
                                 at::Tensor& out) {
  at::Tensor r = rrelu_compute(self, noise, lower, upper, training, gen);
  at::native::resize_output(out, r.sizes());
  return out.copy_(r);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_with_noise));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_with_noise_));
  m.impl("rrelu_with_noise.out", TORCH_FN(rrelu_with_noise_out));
}

} // namespace pytorch_ocl
