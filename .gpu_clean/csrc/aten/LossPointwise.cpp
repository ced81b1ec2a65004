// Elementwise losses with their own aten kernels (mse, smooth_l1, huber, binary_cross_entropy),
// forward and backward. One table row per loss; one forward and one backward wrapper serve
// every row. The per-element loss comes from the elementwise generator, the mean/sum from the
// native reductions, as on the CPU (unreduced loss, then .mean()/.sum()). The other losses of
// torch.nn.functional are CompositeImplicitAutograd and decompose into native ops above us.
#include "aten/Launch.h"
#include "core/TensorUtils.h"

#include <ATen/ScalarOps.h>
#include <ATen/TensorIterator.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// _(id, forward body, backward body)
//   forward:  x0 input, x1 target, x2 weight (a scalar 1 when absent), w0 beta/delta -> y0 loss
//   backward: x0 grad_output, x1 input, x2 target, x3 weight, w0 beta/delta, w1 norm (1/numel
//             for mean, else 1) -> y0 grad_input
// Bodies follow the CPU kernels' formulas and order of operations (aten/native/cpu/*Loss*).
// clang-format off
#define OCL_LOSS_OPS(_) \
  _(mse_loss, \
    "dl_t d = x0 - x1; y0 = d * d;", \
    "y0 = (2 * w1) * (x1 - x2) * x0;") \
  _(smooth_l1_loss, \
    "dl_t z = fabs(x0 - x1); y0 = z < w0 ? (dl_t)0.5 * z * z / w0 : z - (dl_t)0.5 * w0;", \
    "dl_t d = x1 - x2; y0 = d <= -w0 ? -w1 * x0 : (d >= w0 ? w1 * x0 : w1 * d * x0 / w0);") \
  _(huber_loss, \
    "dl_t z = fabs(x0 - x1); y0 = z < w0 ? (dl_t)0.5 * z * z : w0 * (z - (dl_t)0.5 * w0);", \
    "dl_t d = x1 - x2; y0 = d <= -w0 ? -w1 * x0 * w0 : (d >= w0 ? w1 * x0 * w0 : w1 * d * x0);") \
  _(binary_cross_entropy, \
    "y0 = ((x1 - 1) * fmax(log1p(-x0), (dl_t)-100) - x1 * fmax(log(x0), (dl_t)-100)) * x2;", \
    "y0 = x0 * (x1 - x2) / fmax((1 - x1) * x1, (dl_t)1e-12) * x3 * w1;")
// clang-format on

enum LossId {
#define OCL_LOSS_ENUM(id, fwd, bwd) L_##id,
  OCL_LOSS_OPS(OCL_LOSS_ENUM)
#undef OCL_LOSS_ENUM
};

struct LossKernels {
  dlprim::ElementwiseOp forward, backward;
};

const LossKernels& kernels(LossId id) {
  static const LossKernels table[] = {
#define OCL_LOSS_ROW(id, fwd, bwd) {{#id, fwd, "", 1, 3, 1}, {#id "_backward", bwd, "", 1, 4, 2}},
      OCL_LOSS_OPS(OCL_LOSS_ROW)
#undef OCL_LOSS_ROW
  };
  return table[id];
}

const char* loss_name(LossId id) { return kernels(id).forward.name.c_str(); }

void check_floating(LossId id, const at::Tensor& t) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", loss_name(id), "_ocl\" not implemented for '",
                              t.scalar_type(), "'");
}

// An absent weight is the CPU scalar 1 (passed to the kernel by value).
at::Tensor weight_or_one(const std::optional<at::Tensor>& weight) {
  if (weight.has_value() && weight->defined()) return *weight;
  at::Tensor one = c10::scalar_to_tensor(1.0);
  one.unsafeGetTensorImpl()->set_wrapped_number(true);
  return one;
}

// The unreduced loss written into `out` (any strides; resized when needed).
void elementwise_loss(LossId id, const at::Tensor& input, const at::Tensor& target,
                      const std::optional<at::Tensor>& weight, double param, at::Tensor& out) {
  check_ocl(input, loss_name(id), "input");
  check_floating(id, input);
  at::Tensor w = weight_or_one(weight);
  auto iter = at::TensorIteratorConfig()
                  .add_output(out)
                  .add_const_input(input)
                  .add_const_input(target)
                  .add_const_input(w)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  launch_elementwise(kernels(id).forward, iter, iter.common_dtype(), {dlprim::Scalar::floating(param)});
}

at::Tensor& loss_out(LossId id, const at::Tensor& input, const at::Tensor& target,
                     const std::optional<at::Tensor>& weight, int64_t reduction, double param, at::Tensor& out) {
  if (reduction == at::Reduction::None) {
    elementwise_loss(id, input, target, weight, param, out);
    return out;
  }
  at::Tensor loss = at::empty({0}, input.options());
  elementwise_loss(id, input, target, weight, param, loss);
  at::native::resize_output(out, {});
  if (reduction == at::Reduction::Mean)
    at::mean_out(out, loss, at::IntArrayRef{});
  else
    at::sum_out(out, loss, at::IntArrayRef{});
  return out;
}

at::Tensor& loss_backward_out(LossId id, const at::Tensor& grad_output, const at::Tensor& input,
                              const at::Tensor& target, const std::optional<at::Tensor>& weight, int64_t reduction,
                              double param, at::Tensor& grad_input) {
  const char* name = kernels(id).backward.name.c_str();
  check_ocl(input, name, "input");
  check_ocl(grad_output, name, "grad_output");
  check_floating(id, input);
  double norm = reduction == at::Reduction::Mean && input.numel() > 0 ? 1.0 / double(input.numel()) : 1.0;
  at::native::resize_output(grad_input, input.sizes());
  at::Tensor w = weight_or_one(weight);
  auto iter = at::TensorIteratorConfig()
                  .add_output(grad_input)
                  .add_const_input(grad_output)
                  .add_const_input(input)
                  .add_const_input(target)
                  .add_const_input(w)
                  .allow_cpu_scalars(true)
                  .promote_inputs_to_common_dtype(true)
                  .cast_common_dtype_to_outputs(true)
                  .enforce_safe_casting_to_output(true)
                  .build();
  launch_elementwise(kernels(id).backward, iter, iter.common_dtype(),
                     {dlprim::Scalar::floating(param), dlprim::Scalar::floating(norm)});
  return grad_input;
}

// Registered signatures, each a thin call into the two wrappers above.
using Opt = std::optional<at::Tensor>;
using T = at::Tensor;

T& mse_out(const T& self, const T& target, int64_t red, T& out) {
  return loss_out(L_mse_loss, self, target, {}, red, 0, out);
}
T& mse_bw_out(const T& g, const T& self, const T& target, int64_t red, T& gi) {
  return loss_backward_out(L_mse_loss, g, self, target, {}, red, 0, gi);
}
T mse_bw(const T& g, const T& self, const T& target, int64_t red) {
  T gi = at::empty({0}, self.options());
  return mse_bw_out(g, self, target, red, gi);
}

T& smooth_l1_out(const T& self, const T& target, int64_t red, double beta, T& out) {
  return loss_out(L_smooth_l1_loss, self, target, {}, red, beta, out);
}
T& smooth_l1_bw_out(const T& g, const T& self, const T& target, int64_t red, double beta, T& gi) {
  return loss_backward_out(L_smooth_l1_loss, g, self, target, {}, red, beta, gi);
}

T& huber_out(const T& self, const T& target, int64_t red, double delta, T& out) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  return loss_out(L_huber_loss, self, target, {}, red, delta, out);
}
T huber(const T& self, const T& target, int64_t red, double delta) {
  T out = at::empty({0}, self.options());
  return huber_out(self, target, red, delta, out);
}
T& huber_bw_out(const T& g, const T& self, const T& target, int64_t red, double delta, T& gi) {
  return loss_backward_out(L_huber_loss, g, self, target, {}, red, delta, gi);
}

T& bce_out(const T& self, const T& target, const Opt& weight, int64_t red, T& out) {
  return loss_out(L_binary_cross_entropy, self, target, weight, red, 0, out);
}
T bce(const T& self, const T& target, const Opt& weight, int64_t red) {
  T out = at::empty({0}, self.options());
  return bce_out(self, target, weight, red, out);
}
T& bce_bw_out(const T& g, const T& self, const T& target, const Opt& weight, int64_t red, T& gi) {
  return loss_backward_out(L_binary_cross_entropy, g, self, target, weight, red, 0, gi);
}
T bce_bw(const T& g, const T& self, const T& target, const Opt& weight, int64_t red) {
  T gi = at::empty({0}, self.options());
  return bce_bw_out(g, self, target, weight, red, gi);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mse_loss.out", TORCH_FN(mse_out));
  m.impl("mse_loss_backward.grad_input", TORCH_FN(mse_bw_out));
  m.impl("mse_loss_backward", TORCH_FN(mse_bw));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_out));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_bw_out));
  m.impl("huber_loss.out", TORCH_FN(huber_out));
  m.impl("huber_loss", TORCH_FN(huber));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_bw_out));
  m.impl("binary_cross_entropy.out", TORCH_FN(bce_out));
  m.impl("binary_cross_entropy", TORCH_FN(bce));
  m.impl("binary_cross_entropy_backward.grad_input", TORCH_FN(bce_bw_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(bce_bw));
}

} // namespace pytorch_ocl
