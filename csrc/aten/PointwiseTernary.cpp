// Ternary rows of the pointwise table: where, lerp, addcmul, addcdiv, the clamp family and
// masked_fill_. Scalar operands become CPU scalar operands of the iterator (passed by value).
#include "aten/ComplexOps.h"
#include "aten/PointwiseTable.h"
#include "core/TensorUtils.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <ATen/ExpandUtils.h>
#include <ATen/native/Resize.h>

#include <optional>

namespace pytorch_ocl {

namespace {

using at::native::wrapped_scalar_tensor;

at::Tensor run_where(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other, at::Tensor out) {
  TORCH_CHECK(cond.scalar_type() == c10::kBool || cond.scalar_type() == c10::kByte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ", cond.scalar_type());
  c10::ScalarType result = at::result_type(self, other);
  if (!out.defined()) out = at::empty({0}, self.options().dtype(result).device(cond.device()));
  TORCH_CHECK(out.scalar_type() == result, "Expected out type to be ", result, " but got ", out.scalar_type());
  if (pw_is_complex(result)) {  // the components launcher takes any number of CPU scalars
    at::native::resize_output(out, at::infer_size(cond.sizes(), at::infer_size(self.sizes(), other.sizes())));
    pw_complex_launch(PW_where, out, {cond, self, other}, result);
    return out;
  }
  pw_check_dtype(PW_where, result);
  // An iterator takes at most one CPU scalar operand: put a second one on the device.
  auto is_cpu_scalar = [](const at::Tensor& t) { return t.device().is_cpu() && t.dim() == 0; };
  at::Tensor a = self, b = other;
  if (is_cpu_scalar(a) + is_cpu_scalar(b) + is_cpu_scalar(cond) > 1) {
    if (is_cpu_scalar(a)) a = a.to(out.device());
    if (is_cpu_scalar(b)) b = b.to(out.device());
  }
  auto iter = at::TensorIteratorConfig()
                  .allow_cpu_scalars(true)
                  .check_all_same_dtype(false)
                  .add_output(out)
                  .add_const_input(cond)
                  .add_const_input(a)
                  .add_const_input(b)
                  .build();
  pw_launch(PW_where, iter, result, {});
  return out;
}
at::Tensor where_self(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other) {
  return run_where(cond, self, other, at::Tensor());
}
at::Tensor& where_self_out(const at::Tensor& cond, const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  run_where(cond, self, other, out);
  return out;
}

// Runners (PwForms: out, self, rest...); `out` undefined allocates the result.
at::Tensor lerp_tensor_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& end,
                           const at::Tensor& weight) {
  TORCH_CHECK(self.dtype() == end.dtype(), "expected dtype ", self.dtype(), " for `end` but got dtype ", end.dtype());
  TORCH_CHECK(self.dtype() == weight.dtype() || weight.dim() == 0, "expected dtype ", self.dtype(),
              " for `weight` but got dtype ", weight.dtype());
  if (self.is_complex()) {
    at::Tensor dst = out.defined() ? out : at::empty({0}, self.options());
    at::native::resize_output(dst, at::infer_size(self.sizes(), at::infer_size(end.sizes(), weight.sizes())));
    pw_complex_launch(PW_lerp, dst, {self, end, weight}, self.scalar_type());
    return out.defined() ? at::Tensor() : dst;
  }
  pw_check_dtype(PW_lerp, self.scalar_type());
  // The operands' dtypes may differ (a CPU scalar weight), so the iterator cannot allocate.
  at::Tensor allocated;
  const at::Tensor& dst = out.defined() ? out : (allocated = at::empty({0}, self.options()));
  auto iter = at::TensorIteratorConfig()
                  .allow_cpu_scalars(true)
                  .check_all_same_dtype(false)
                  .add_output(dst)
                  .add_const_input(self)
                  .add_const_input(end)
                  .add_const_input(weight)
                  .build();
  pw_launch(PW_lerp, iter, self.scalar_type(), {});
  return allocated;
}
at::Tensor lerp_scalar_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& end,
                           const c10::Scalar& weight) {
  return lerp_tensor_run(out, self, end, wrapped_scalar_tensor(weight));
}

at::Tensor addcmul_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                       const c10::Scalar& value) {
  at::TensorIterator iter;
  iter.build_ternary_op(out, self, t1, t2);
  if (pw_is_complex(iter.common_dtype())) {
    pw_complex_launch(PW_addcmul, iter.output(), {iter.input(0), iter.input(1), iter.input(2)}, iter.common_dtype(),
                      value);
    return pw_result(out, iter);
  }
  pw_check_dtype(PW_addcmul, iter.common_dtype());
  pw_launch(PW_addcmul, iter, {to_dlprim_scalar(value)});
  return pw_result(out, iter);
}

at::Tensor addcdiv_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& t1, const at::Tensor& t2,
                       const c10::Scalar& value) {
  TORCH_CHECK(!(c10::isIntegralType(t1.scalar_type(), true) && c10::isIntegralType(t2.scalar_type(), true)),
              "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
              "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
              "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
              "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter "
              "implementation: (input + value * tensor1 / tensor2), for all dtypes.");
  at::TensorIterator iter;
  iter.build_ternary_op(out, self, t1, t2);
  if (pw_is_complex(iter.common_dtype())) {
    pw_complex_launch(PW_addcdiv, iter.output(), {iter.input(0), iter.input(1), iter.input(2)}, iter.common_dtype(),
                      value);
    return pw_result(out, iter);
  }
  pw_check_dtype(PW_addcdiv, iter.common_dtype());
  pw_launch(PW_addcdiv, iter, {to_dlprim_scalar(value)});
  return pw_result(out, iter);
}

// clamp with scalar bounds: the result dtype promotes self with the bounds (as the CPU does),
// the bounds ride along as CPU scalar operands.
at::Tensor clamp_run(const at::Tensor& out, const at::Tensor& self, const std::optional<c10::Scalar>& min,
                     const std::optional<c10::Scalar>& max) {
  TORCH_CHECK(min.has_value() || max.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  c10::ScalarType result = self.scalar_type();
  if (!c10::isFloatingType(result)) {
    at::native::ResultTypeState state = {};
    state = at::native::update_result_type_state(self, state);
    if (min) state = at::native::update_result_type_state(*min, state);
    if (max) state = at::native::update_result_type_state(*max, state);
    result = at::native::result_type(state);
    TORCH_CHECK(result == self.scalar_type() || !out.is_same(self), "result type ", result,
                " can't be cast to the desired output type ", self.dtype());
  }
  // Both bounds: kernel parameters (an iterator takes at most one CPU scalar operand).
  PwId id = min && max ? PW_clamp_scalar : (min ? PW_clamp_min : PW_clamp_max);
  pw_check_dtype(id, result);
  // The iterator does not promote (the bounds may be CPU scalars of another dtype): allocate here.
  at::Tensor allocated;
  const at::Tensor& dst = out.defined() ? out : (allocated = at::empty({0}, self.options().dtype(result)));
  at::TensorIteratorConfig config;
  config.allow_cpu_scalars(true).check_all_same_dtype(false).add_output(dst).add_const_input(self);
  if (id != PW_clamp_scalar) config.add_owned_const_input(wrapped_scalar_tensor(min ? *min : *max));
  auto iter = config.build();
  std::vector<dlprim::Scalar> params;
  if (id == PW_clamp_scalar) params = {to_dlprim_scalar(*min), to_dlprim_scalar(*max)};
  pw_launch(id, iter, result, params);
  return allocated;
}

at::Tensor clamp_tensor_run(const at::Tensor& out, const at::Tensor& self, const std::optional<at::Tensor>& min,
                            const std::optional<at::Tensor>& max) {
  bool has_min = min.has_value() && min->defined(), has_max = max.has_value() && max->defined();
  TORCH_CHECK(has_min || has_max, "torch.clamp: At least one of 'min' or 'max' must not be None");
  at::TensorIteratorConfig config;
  config.allow_cpu_scalars(true)
      .set_check_mem_overlap(true)
      .add_output(out)
      .add_const_input(self)
      .promote_inputs_to_common_dtype(true)
      .cast_common_dtype_to_outputs(true)
      .enforce_safe_casting_to_output(true);
  if (has_min) config.add_const_input(*min);
  if (has_max) config.add_const_input(*max);
  auto iter = config.build();
  PwId id = has_min && has_max ? PW_clamp : (has_min ? PW_clamp_min : PW_clamp_max);
  pw_check_dtype(id, iter.common_dtype());
  pw_launch(id, iter);
  return pw_result(out, iter);
}

// clamp_min / clamp_max with a scalar promote like clamp.
at::Tensor clamp_min_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& min) {
  return clamp_run(out, self, min, std::nullopt);
}
at::Tensor clamp_max_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& max) {
  return clamp_run(out, self, std::nullopt, max);
}

template <PwId Id>
at::Tensor clamp_bound_tensor_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& bound) {
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, bound);
  pw_check_dtype(Id, iter.common_dtype());
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

// masked_fill_: self is both the output and the first input, so unmasked elements keep
// their value; a 0-dim value tensor (CPU or ocl) is an operand, never read on the host.
at::Tensor& masked_fill_tensor_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  if (self.numel() == 0) return self;
  if (self.is_complex()) {
    pw_complex_launch(PW_masked_fill, self, {self, mask, value}, self.scalar_type());
    return self;
  }
  pw_check_dtype(PW_masked_fill, self.scalar_type());
  auto iter = at::TensorIteratorConfig()
                  .allow_cpu_scalars(true)
                  .set_check_mem_overlap(false)
                  .check_all_same_dtype(false)
                  .resize_outputs(false)
                  .add_output(self)
                  .add_const_input(self)
                  .add_const_input(mask)
                  .add_const_input(value)
                  .build();
  pw_launch(PW_masked_fill, iter, self.scalar_type(), {});
  return self;
}
at::Tensor& masked_fill_scalar_(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
  return masked_fill_tensor_(self, mask, wrapped_scalar_tensor(value));
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  pw_impl(m, PW_where, "where.self", TORCH_FN(where_self));
  pw_impl(m, PW_where, "where.self_out", TORCH_FN(where_self_out));
  pw_impl_forms<OCL_PW_FORMS(lerp_scalar_run)>(m, PW_lerp, "lerp.Scalar_out");
  pw_impl_forms<OCL_PW_FORMS(lerp_tensor_run)>(m, PW_lerp, "lerp.Tensor_out");
  pw_impl_forms<OCL_PW_FORMS(addcmul_run)>(m, PW_addcmul, "addcmul.out");
  pw_impl_forms<OCL_PW_FORMS(addcdiv_run)>(m, PW_addcdiv, "addcdiv.out");
  pw_impl_forms<OCL_PW_FORMS(clamp_run)>(m, PW_clamp_scalar, "clamp.out");
  pw_impl_forms<OCL_PW_FORMS(clamp_tensor_run)>(m, PW_clamp, "clamp.Tensor_out");
  pw_impl_forms<OCL_PW_FORMS(clamp_min_run)>(m, PW_clamp_min, "clamp_min.out");
  pw_impl_forms<OCL_PW_FORMS(clamp_bound_tensor_run<PW_clamp_min>)>(m, PW_clamp_min, "clamp_min.Tensor_out");
  pw_impl_forms<OCL_PW_FORMS(clamp_max_run)>(m, PW_clamp_max, "clamp_max.out");
  pw_impl_forms<OCL_PW_FORMS(clamp_bound_tensor_run<PW_clamp_max>)>(m, PW_clamp_max, "clamp_max.Tensor_out");
  pw_impl(m, PW_masked_fill, "masked_fill_.Scalar", TORCH_FN(masked_fill_scalar_));
  pw_impl(m, PW_masked_fill, "masked_fill_.Tensor", TORCH_FN(masked_fill_tensor_));
}

} // namespace pytorch_ocl
