// Unary rows of the pointwise table: the unary / unary_float / unary_bool wrapper templates and
// the few unary ops with their own signature (isnan, logical_not, nan_to_num, round(decimals),
// polygamma, logit, frexp).
#include "aten/ComplexOps.h"
#include "aten/PointwiseTable.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/mvlgamma.h>
#include <ATen/native/Resize.h>
#include <c10/util/Half.h>
#include <c10/util/BFloat16.h>

#include <limits>
#include <tuple>
#include <optional>

namespace pytorch_ocl {

namespace {

// The kinds' runners (PwForms): `out` undefined allocates the result.
template <PwId Id>
at::Tensor unary_run(const at::Tensor& out, const at::Tensor& self) {
  if (self.is_complex() && pw_has_complex(Id)) return pw_complex_unary(Id, out, self);
  pw_check_dtype(Id, self.scalar_type());
  at::TensorIterator iter;
  iter.build_borrowing_unary_op(out, self);
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

template <PwId Id>
at::Tensor unary_float_run(const at::Tensor& out, const at::Tensor& self) {
  if (self.is_complex() && pw_has_complex(Id)) return pw_complex_unary(Id, out, self);
  pw_check_dtype(Id, self.scalar_type());
  at::TensorIterator iter;
  iter.build_borrowing_unary_float_op(out, self);
  pw_launch(Id, iter);
  return pw_result(out, iter);
}

// Boolean result, computed in the input's dtype.
at::Tensor run_unary_bool(PwId id, const at::Tensor& self, const at::Tensor& out) {
  pw_check_dtype(id, self.scalar_type());
  at::TensorIterator iter;
  iter.build_borrowing_unary_force_boolean_op(out, self);
  pw_launch(id, iter, self.scalar_type(), {});
  return pw_result(out, iter);
}

template <PwId Id>
at::Tensor unary_bool_run(const at::Tensor& out, const at::Tensor& self) {
  return run_unary_bool(Id, self, out);
}

at::Tensor isnan(const at::Tensor& self) {
  if (self.is_complex()) return pw_complex_unary(PW_isnan, at::Tensor(), self);
  return run_unary_bool(PW_isnan, self, at::Tensor());
}

at::Tensor& logical_not_out(const at::Tensor& self, at::Tensor& out) {
  if (self.is_complex() && !out.is_complex()) {
    at::native::resize_output(out, self.sizes());
    pw_complex_launch(PW_logical_not, out, {self}, self.scalar_type());
    return out;
  }
  pw_check_dtype(PW_logical_not, self.scalar_type());
  auto iter = at::TensorIteratorConfig().check_all_same_dtype(false).add_output(out).add_const_input(self).build();
  pw_launch(PW_logical_not, iter, self.scalar_type(), {});
  return out;
}

// Largest finite value and lowest value of a floating dtype, as doubles.
std::pair<double, double> float_limits(c10::ScalarType t) {
  switch (t) {
    case c10::kHalf:
      return {std::numeric_limits<c10::Half>::max(), std::numeric_limits<c10::Half>::lowest()};
    case c10::kBFloat16:
      return {std::numeric_limits<c10::BFloat16>::max(), std::numeric_limits<c10::BFloat16>::lowest()};
    case c10::kFloat:
      return {std::numeric_limits<float>::max(), std::numeric_limits<float>::lowest()};
    default:
      return {std::numeric_limits<double>::max(), std::numeric_limits<double>::lowest()};
  }
}

at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                           std::optional<double> neginf, at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() == out.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  pw_check_dtype(PW_nan_to_num, self.scalar_type());
  if (c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)) {
    at::native::resize_output(out, self.sizes());
    out.copy_(self);
    return out;
  }
  auto limits = float_limits(self.scalar_type());
  auto iter = at::TensorIterator::unary_op(out, self);
  pw_launch(PW_nan_to_num, iter,
            {pw_scalar(nan.value_or(0.0)), pw_scalar(posinf.value_or(limits.first)),
             pw_scalar(neginf.value_or(limits.second))});
  return out;
}

// frexp: two outputs of different dtypes (mantissa like self, int32 exponent), CPU's checks.
std::tuple<at::Tensor&, at::Tensor&> frexp_out(const at::Tensor& self, at::Tensor& mantissa, at::Tensor& exponent) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.frexp() only supports floating-point dtypes");
  TORCH_CHECK(mantissa.dtype() == self.dtype(), "torch.frexp() expects mantissa to have dtype ", self.dtype(),
              " but got ", mantissa.dtype());
  TORCH_CHECK(exponent.dtype() == at::kInt, "torch.frexp() expects exponent to have int dtype but got ",
              exponent.dtype());
  pw_check_dtype(PW_frexp, self.scalar_type());
  auto iter = at::TensorIteratorConfig()
                  .add_output(mantissa)
                  .add_output(exponent)
                  .add_const_input(self)
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(true)
                  .build();
  pw_launch(PW_frexp, iter, self.scalar_type(), {});
  return {mantissa, exponent};
}

at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
  if (decimals == 0) return OCL_PW_FORMS(unary_run<PW_round>)::out(self, out);
  pw_check_dtype(PW_round_decimals, self.scalar_type());
  auto iter = at::TensorIterator::unary_op(out, self);
  pw_launch(PW_round_decimals, iter, {pw_scalar(static_cast<double>(decimals))});
  return out;
}

at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  pw_check_dtype(PW_polygamma, self.scalar_type());
  auto iter = at::TensorIterator::unary_float_op(out, self);
  pw_launch(PW_polygamma, iter, {pw_scalar(static_cast<double>(n))});
  return out;
}

// mvlgamma.out as the CPU's: the functional form (CompositeExplicitAutograd: arange, add, lgamma,
// sum, all native, with its data-dependent domain check) into `out`.
at::Tensor& mvlgamma_out(const at::Tensor& self, int64_t p, at::Tensor& out) {
  at::Tensor result = at::mvlgamma(self, p);
  TORCH_CHECK(c10::canCast(result.scalar_type(), out.scalar_type()), "mvlgamma: result type ",
              result.scalar_type(), " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, result.sizes());
  return out.copy_(result);
}

// logit: eps < 0 stands for "no clamping" (eps=None).
at::Tensor run_logit(const at::Tensor& self, std::optional<double> eps, const at::Tensor& out) {
  pw_check_dtype(PW_logit, self.scalar_type());
  at::TensorIterator iter;
  iter.build_borrowing_unary_float_op(out, self);
  pw_launch(PW_logit, iter, {pw_scalar(eps.value_or(-1.0))});
  return pw_result(out, iter);
}
at::Tensor logit(const at::Tensor& self, std::optional<double> eps) { return run_logit(self, eps, at::Tensor()); }
at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  run_logit(self, eps, out);
  return out;
}
at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) {
  run_logit(self, eps, self);
  return self;
}

at::Tensor& logit_backward_out(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps,
                               at::Tensor& grad_input) {
  pw_check_dtype(PW_logit_backward, self.scalar_type());
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  pw_launch(PW_logit_backward, iter, {pw_scalar(eps.value_or(-1.0))});
  return grad_input;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OCL_PW_REG_unary(id, aten) pw_impl_forms<OCL_PW_FORMS(unary_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_unary_float(id, aten) pw_impl_forms<OCL_PW_FORMS(unary_float_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_unary_bool(id, aten) pw_impl_forms<OCL_PW_FORMS(unary_bool_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_custom(i, p, o) OCL_PW_SKIP
#define OCL_PW_SKIP(id, aten)
#define OCL_PW_REG(kind, id, aten, dtypes, prelude, versions, body) OCL_PW_REG_##kind(id, aten)
  OCL_POINTWISE_UNARY(OCL_PW_REG)
  OCL_POINTWISE_SPECIAL_UNARY(OCL_PW_REG)

  pw_impl(m, PW_isnan, "isnan", TORCH_FN(isnan));
  pw_impl(m, PW_logical_not, "logical_not.out", TORCH_FN(logical_not_out));
  pw_impl(m, PW_nan_to_num, "nan_to_num.out", TORCH_FN(nan_to_num_out));
  pw_impl(m, PW_frexp, "frexp.Tensor_out", TORCH_FN(frexp_out));
  pw_impl(m, PW_round_decimals, "round.decimals_out", TORCH_FN(round_decimals_out));
  pw_impl(m, PW_polygamma, "polygamma.out", TORCH_FN(polygamma_out));
  m.impl("mvlgamma.out", TORCH_FN(mvlgamma_out));
  pw_impl(m, PW_logit, "logit", TORCH_FN(logit));
  pw_impl(m, PW_logit, "logit.out", TORCH_FN(logit_out));
  pw_impl(m, PW_logit, "logit_", TORCH_FN(logit_));
  pw_impl(m, PW_logit_backward, "logit_backward.grad_input", TORCH_FN(logit_backward_out));
}

} // namespace pytorch_ocl
