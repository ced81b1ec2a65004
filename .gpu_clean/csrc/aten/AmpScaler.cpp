// The two ops torch.amp.GradScaler runs on the gradients' device: unscaling the gradients
// while detecting non-finite values, and updating the scale. Both are small elementwise
// kernels plus one native sum per gradient; nothing is read back to the host.
#include "aten/Launch.h"
#include "core/TensorUtils.h"

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/sum.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// y0 = the unscaled gradient (in place), y1 = 0 for finite values and NaN otherwise, so that the
// sum of y1 is NaN exactly when the gradient holds an inf or a NaN (no overflow of big values).
const dlprim::ElementwiseOp k_unscale{"_amp_unscale", "y0 = x0 * x1; y1 = x0 * 0;", "", 2, 2, 0};
// found_inf (in place) = 1 once a gradient's flag sum is NaN; never reset, as on the CPU.
const dlprim::ElementwiseOp k_flag_non_finite{"_amp_flag_non_finite", "y0 = x1 != x1 ? 1 : x0;", "", 1, 2, 0};
// x0 scale, x1 growth tracker, x2 found_inf; w0 growth factor, w1 backoff factor, w2 interval.
const dlprim::ElementwiseOp k_update_scale{"_amp_update_scale",
                                           "if (x2 != 0) { y0 = x0 * w1; y1 = 0; }"
                                           "else { dl_t n = x1 + 1;"
                                           "  if (n == w2) { dl_t s = x0 * w0; y0 = isfinite(s) ? s : x0; y1 = 0; }"
                                           "  else { y0 = x0; y1 = n; } }",
                                           "", 2, 3, 3};

void check_one_float(const at::Tensor& t, const char* op, const char* what) {
  check_ocl(t, op, what);
  TORCH_CHECK(t.numel() == 1, op, ": ", what, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == c10::kFloat, op, ": ", what, " must be a float tensor.");
}

void non_finite_check_and_unscale(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  const char* op = "_amp_foreach_non_finite_check_and_unscale_";
  check_one_float(found_inf, op, "found_inf");
  check_one_float(inv_scale, op, "inv_scale");
  at::Tensor inv = inv_scale.view(c10::IntArrayRef{}), found = found_inf.view(c10::IntArrayRef{});
  for (const at::Tensor& g : grads) {
    check_ocl(g, op, "scaled_grads");
    TORCH_CHECK(g.device() == found_inf.device(), op, ": scaled_grads, found_inf and inv_scale must be on the same device");
    TORCH_CHECK(c10::isFloatingType(g.scalar_type()), op, ": expected floating point gradients, got ", g.scalar_type());
    if (g.numel() == 0) continue;
    at::Tensor g_mut = g, flags = at::empty_like(g);
    auto iter = at::TensorIteratorConfig()
                    .add_output(g_mut)
                    .add_output(flags)
                    .add_const_input(g)
                    .add_const_input(inv)
                    .check_all_same_dtype(false)
                    .set_check_mem_overlap(false)  // y0 aliases x0 element for element
                    .build();
    launch_elementwise(k_unscale, iter, g.scalar_type());
    at::Tensor total = at::sum(flags, c10::kFloat);
    auto flag = at::TensorIteratorConfig()
                    .add_output(found)
                    .add_const_input(found)
                    .add_const_input(total)
                    .check_all_same_dtype(false)
                    .build();
    launch_elementwise(k_flag_non_finite, flag, c10::kFloat);
  }
}

at::Tensor& update_scale(at::Tensor& scale, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                         double growth_factor, double backoff_factor, int64_t growth_interval) {
  const char* op = "_amp_update_scale_";
  check_one_float(scale, op, "current_scale");
  check_one_float(found_inf, op, "found_inf");
  check_ocl(growth_tracker, op, "growth_tracker");
  TORCH_CHECK(growth_tracker.numel() == 1 && growth_tracker.scalar_type() == c10::kInt, op,
              ": growth_tracker must be a 1-element int tensor.");
  at::Tensor s = scale.view(c10::IntArrayRef{}), t = growth_tracker.view(c10::IntArrayRef{});
  at::Tensor found = found_inf.view(c10::IntArrayRef{});
  auto iter = at::TensorIteratorConfig()
                  .add_output(s)
                  .add_output(t)
                  .add_const_input(s)
                  .add_const_input(t)
                  .add_const_input(found)
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(false)
                  .build();
  launch_elementwise(k_update_scale, iter, c10::kFloat,
                     {dlprim::Scalar::floating(growth_factor), dlprim::Scalar::floating(backoff_factor),
                      dlprim::Scalar::floating(double(growth_interval))});
  return scale;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", TORCH_FN(non_finite_check_and_unscale));
  m.impl("_amp_update_scale_", TORCH_FN(update_scale));
}

} // namespace pytorch_ocl
