// native_dropout (what F.dropout decomposes into) and its backward: the keep mask and the
// scaled output come from one fused random kernel.
#include "aten/Launch.h"
#include "aten/RandomLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/ops/empty_like.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/ones_like.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

std::tuple<at::Tensor, at::Tensor> native_dropout(const at::Tensor& input, double p, std::optional<bool> train) {
  check_ocl(input, "native_dropout", "input");
  if (input.numel() == 0) return {input, at::empty_like(input)};
  if (train.has_value() && !*train)
    return {input.clone(), at::ones_like(input, input.options().dtype(c10::kBool))};
  TORCH_CHECK(p >= 0 && p <= 1, "dropout probability has to be between 0 and 1, but got ", p);
  TORCH_CHECK_TYPE(c10::isFloatingType(input.scalar_type()), "native_dropout: expected a floating point input, got ",
                   input.scalar_type());
  double keep = 1.0 - p;
  dlprim::RandomParams params;
  params.a = keep;
  params.b = keep == 0 ? 0.0 : 1.0 / keep;  // as the CPU: p == 1 scales by 0, not inf
  at::Tensor output = at::empty_like(input);
  at::Tensor mask = at::empty_like(input, input.options().dtype(c10::kBool));
  launch_random(dlprim::Distribution::Dropout, {output, mask}, &input, params, std::nullopt, "native_dropout");
  return {output, mask};
}

// grad * mask * scale with the CPU's promotion: the promoted dtype of grad and mask, or the
// default float dtype when that is integral (scale is a Python float).
const dlprim::ElementwiseOp k_dropout_backward{"native_dropout_backward", "y0 = x0 * x1 * w0;", "", 1, 2, 1};

at::Tensor native_dropout_backward(const at::Tensor& grad, const at::Tensor& mask, double scale) {
  check_ocl(grad, "native_dropout_backward", "grad_output");
  check_ocl(mask, "native_dropout_backward", "mask");
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "Mask should be Bool Scalar Type", mask.scalar_type());
  c10::ScalarType t = at::result_type(grad, mask);
  if (c10::isIntegralType(t, true)) t = c10::typeMetaToScalarType(c10::get_default_dtype());
  at::Tensor out;
  auto iter = at::TensorIteratorConfig()
                  .add_output(out)
                  .add_const_input(grad)
                  .add_const_input(mask)
                  .check_all_same_dtype(false)
                  .promote_inputs_to_common_dtype(false)
                  .declare_static_dtype(t)
                  .build();
  launch_elementwise(k_dropout_backward, iter, t, {dlprim::Scalar::floating(scale)});
  return iter.output();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_dropout", TORCH_FN(native_dropout));
  m.impl("native_dropout_backward", TORCH_FN(native_dropout_backward));
}

} // namespace pytorch_ocl
