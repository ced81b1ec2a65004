// Binary rows of the pointwise table: the binary / binary_float / binary_alpha / comparison /
// logical wrapper templates, and pow, div with a rounding mode and floor_divide, whose
// signatures are their own.
#include "aten/ComplexOps.h"
#include "aten/PointwiseTable.h"
#include "core/TensorUtils.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/Resize.h>

#include <optional>
#include <c10/util/string_view.h>

namespace pytorch_ocl {

namespace {

// The kinds' runners (PwForms): `out` undefined allocates the result.
// heaviside's meta() checks: no type promotion, so differing dtypes are an error.
void heaviside_check(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(!self.is_complex() && !other.is_complex() && (!out.defined() || !out.is_complex()),
              "heaviside is not yet implemented for complex tensors.");
  TORCH_CHECK(self.dtype() == other.dtype() && (!out.defined() || out.dtype() == self.dtype()),
              "heaviside is not yet implemented for tensors with different dtypes.");
}

template <PwId Id>
at::Tensor binary_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  if (Id == PW_heaviside) heaviside_check(out, self, other);
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (pw_is_complex(iter.common_dtype()) && pw_has_complex(Id)) {
    pw_complex_binary(Id, iter);
    return pw_result(out, iter);
  }
  pw_check_dtype(Id, iter.common_dtype());
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

template <PwId Id>
at::Tensor binary_float_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  at::TensorIterator iter;
  iter.build_borrowing_binary_float_op(out, self, other);
  if (pw_is_complex(iter.common_dtype()) && pw_has_complex(Id)) {
    pw_complex_binary(Id, iter);
    return pw_result(out, iter);
  }
  pw_check_dtype(Id, iter.common_dtype());
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

template <PwId Id>
at::Tensor binary_alpha_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other,
                            const c10::Scalar& alpha) {
  if (Id == PW_sub) at::native::sub_check(self, other);
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (pw_is_complex(iter.common_dtype()) && pw_has_complex(Id)) {
    pw_complex_binary(Id, iter, alpha);
    return pw_result(out, iter);
  }
  pw_check_dtype(Id, iter.common_dtype());
  at::native::alpha_check(iter.common_dtype(), alpha);
  pw_launch(Id, iter, {to_dlprim_scalar(alpha)});
  return pw_result(out, iter);
}

// rsub(self, other, alpha) = other - alpha * self; only the functional form is a kernel.
at::Tensor rsub(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  at::native::sub_check(self, other);
  at::Tensor out;
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  if (pw_is_complex(iter.common_dtype())) {
    pw_complex_binary(PW_rsub, iter, alpha);
    return iter.output();
  }
  pw_check_dtype(PW_rsub, iter.common_dtype());
  at::native::alpha_check(iter.common_dtype(), alpha);
  pw_launch(PW_rsub, iter, {to_dlprim_scalar(alpha)});
  return iter.output();
}

// Comparisons and logical ops: computed in the inputs' common dtype, stored in out's dtype.
template <PwId Id>
at::Tensor comparison_run(const at::Tensor& out, const at::Tensor& self, const at::Tensor& other) {
  at::TensorIterator iter;
  iter.build_borrowing_comparison_op(out, self, other);
  if (pw_is_complex(iter.common_dtype()) && pw_has_complex(Id)) {
    pw_complex_binary(Id, iter);
    return pw_result(out, iter);
  }
  pw_check_dtype(Id, iter.common_dtype());
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

template <PwId Id>
at::Tensor comparison_scalar_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& other) {
  return comparison_run<Id>(out, self, at::native::wrapped_scalar_tensor(other));
}

// div(rounding_mode): "trunc" and "floor" keep integer dtypes integral.
at::Tensor& div_mode_out(const at::Tensor& self, const at::Tensor& other, std::optional<c10::string_view> mode,
                         at::Tensor& out) {
  if (!mode.has_value()) return OCL_PW_FORMS(binary_float_run<PW_div>)::out(self, other, out);
  double code = 0;
  if (*mode == "trunc")
    code = 1;
  else if (*mode == "floor")
    code = 2;
  else
    TORCH_CHECK(false, "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '", *mode, "'");
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  pw_check_dtype(PW_div_mode, iter.common_dtype());
  pw_launch(PW_div_mode, iter, {pw_scalar(code)});
  return out;
}

at::Tensor run_floor_divide(const at::Tensor& self, const at::Tensor& other, const at::Tensor& out) {
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  pw_check_dtype(PW_floor_divide, iter.common_dtype());
  pw_launch(PW_floor_divide, iter);
  return pw_result(out, iter);
}
at::Tensor floor_divide(const at::Tensor& self, const at::Tensor& other) {
  return run_floor_divide(self, other, at::Tensor());
}
at::Tensor& floor_divide_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  run_floor_divide(self, other, out);
  return out;
}
at::Tensor& floor_divide_(at::Tensor& self, const at::Tensor& other) {
  run_floor_divide(self, other, self);
  return self;
}

// Python's << and >> (__lshift__ & co.): the shift rows, functional or in-place.
template <PwId Id>
at::Tensor shift(const at::Tensor& self, const at::Tensor& other) {
  at::Tensor out;
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  pw_check_dtype(Id, iter.common_dtype());
  pw_launch(Id, iter);
  return iter.output();
}
template <PwId Id>
at::Tensor shift_scalar(const at::Tensor& self, const c10::Scalar& other) {
  return shift<Id>(self, at::native::wrapped_scalar_tensor(other));
}
template <PwId Id>
at::Tensor& shift_(at::Tensor& self, const at::Tensor& other) {
  binary_run<Id>(self, self, other);
  return self;
}
template <PwId Id>
at::Tensor& shift_scalar_(at::Tensor& self, const c10::Scalar& other) {
  return shift_<Id>(self, at::native::wrapped_scalar_tensor(other));
}

at::Tensor& pow_tensor_tensor_out(const at::Tensor& base, const at::Tensor& exp, at::Tensor& out) {
  binary_run<PW_pow>(out, base, exp);
  return out;
}

at::Tensor& pow_tensor_scalar_out(const at::Tensor& base, const c10::Scalar& exp, at::Tensor& out) {
  TORCH_CHECK(!(c10::isIntegralType(base.scalar_type(), true) && exp.isIntegral(true) && exp.toLong() < 0),
              "Integers to negative integer powers are not allowed.");
  if (exp.equal(0.0) || exp.equal(false)) {
    at::native::resize_output(out, base.sizes());
    out.fill_(1);
    return out;
  }
  if (exp.equal(1.0) || exp.equal(true)) {
    at::native::resize_output(out, base.sizes());
    out.copy_(base);
    return out;
  }
  binary_run<PW_pow>(out, base, at::native::wrapped_scalar_tensor(exp));
  return out;
}

at::Tensor& pow_scalar_out(const c10::Scalar& base, const at::Tensor& exp, at::Tensor& out) {
  if (base.equal(1.0)) {
    at::native::resize_output(out, exp.sizes());
    out.fill_(1);
    return out;
  }
  binary_run<PW_pow>(out, at::native::wrapped_scalar_tensor(base), exp);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OCL_PW_REG_binary(id, aten) pw_impl_forms<OCL_PW_FORMS(binary_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_binary_float(id, aten) pw_impl_forms<OCL_PW_FORMS(binary_float_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_binary_alpha(id, aten) pw_impl_forms<OCL_PW_FORMS(binary_alpha_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_comparison(id, aten)                                                          \
  pw_impl_forms<OCL_PW_FORMS(comparison_run<PW_##id>)>(m, PW_##id, aten ".Tensor_out");        \
  pw_impl_forms<OCL_PW_FORMS(comparison_scalar_run<PW_##id>)>(m, PW_##id, aten ".Scalar_out");
#define OCL_PW_REG_logical(id, aten) pw_impl_forms<OCL_PW_FORMS(comparison_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_custom(i, p, o) OCL_PW_SKIP
#define OCL_PW_SKIP(id, aten)
#define OCL_PW_REG(kind, id, aten, dtypes, prelude, versions, body) OCL_PW_REG_##kind(id, aten)
  OCL_POINTWISE_BINARY(OCL_PW_REG)
  OCL_POINTWISE_SPECIAL_BINARY(OCL_PW_REG)

  pw_impl(m, PW_rsub, "rsub.Tensor", TORCH_FN(rsub));
  pw_impl(m, PW_div_mode, "div.out_mode", TORCH_FN(div_mode_out));
  pw_impl(m, PW_floor_divide, "floor_divide", TORCH_FN(floor_divide));
  pw_impl(m, PW_floor_divide, "floor_divide.out", TORCH_FN(floor_divide_out));
  pw_impl(m, PW_floor_divide, "floor_divide_.Tensor", TORCH_FN(floor_divide_));
  pw_impl(m, PW_bitwise_left_shift, "__lshift__.Tensor", TORCH_FN(shift<PW_bitwise_left_shift>));
  pw_impl(m, PW_bitwise_left_shift, "__lshift__.Scalar", TORCH_FN(shift_scalar<PW_bitwise_left_shift>));
  pw_impl(m, PW_bitwise_left_shift, "__ilshift__.Tensor", TORCH_FN(shift_<PW_bitwise_left_shift>));
  pw_impl(m, PW_bitwise_left_shift, "__ilshift__.Scalar", TORCH_FN(shift_scalar_<PW_bitwise_left_shift>));
  pw_impl(m, PW_bitwise_right_shift, "__rshift__.Tensor", TORCH_FN(shift<PW_bitwise_right_shift>));
  pw_impl(m, PW_bitwise_right_shift, "__rshift__.Scalar", TORCH_FN(shift_scalar<PW_bitwise_right_shift>));
  pw_impl(m, PW_bitwise_right_shift, "__irshift__.Tensor", TORCH_FN(shift_<PW_bitwise_right_shift>));
  pw_impl(m, PW_bitwise_right_shift, "__irshift__.Scalar", TORCH_FN(shift_scalar_<PW_bitwise_right_shift>));
  pw_impl(m, PW_pow, "pow.Tensor_Tensor_out", TORCH_FN(pow_tensor_tensor_out));
  pw_impl(m, PW_pow, "pow.Tensor_Scalar_out", TORCH_FN(pow_tensor_scalar_out));
  pw_impl(m, PW_pow, "pow.Scalar_out", TORCH_FN(pow_scalar_out));
}

} // namespace pytorch_ocl
