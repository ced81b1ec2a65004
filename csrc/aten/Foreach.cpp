// _foreach_* ops (the optimizers' default path on ocl): a loop over the tensor lists that
// launches the elementwise generator once per tensor, with the same type promotion and checks
// as the single-tensor op (so results equal the non-foreach path). Each op is one table row;
// the wrappers below are shared by every row of the same signature. The per-tensor launches go
// through an ElementwiseBatch: contiguous tensors run several to a launch.
#include "aten/Launch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <ATen/native/ForeachUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/reduce.h>
#include <torch/library.h>

#include <cmath>

namespace pytorch_ocl {

namespace {

using at::TensorList;
using ScalarList = at::ArrayRef<c10::Scalar>;

// name, body (x0 self, x1 other, w0 alpha), integer inputs promoted to float
#define OCL_FOREACH_BINARY_OPS(_)                                       \
  _(add, "y0 = x0 + w0 * x1;", false)                                   \
  _(sub, "y0 = x0 - w0 * x1;", false)                                   \
  _(mul, "y0 = x0 * x1;", false)                                        \
  _(div, "y0 = x0 / x1;", true)                                         \
  _(maximum, "y0 = (x0 != x0 || x0 > x1) ? x0 : x1;", false)            \
  _(minimum, "y0 = (x0 != x0 || x0 < x1) ? x0 : x1;", false)            \
  _(clamp_min, "y0 = (x0 != x0 || x0 > x1) ? x0 : x1;", false)          \
  _(clamp_max, "y0 = (x0 != x0 || x0 < x1) ? x0 : x1;", false)

// name, body, integer inputs promoted to float
#define OCL_FOREACH_UNARY_OPS(_)                    \
  _(neg, "y0 = -x0;", false)                        \
  _(sqrt, "y0 = sqrt(x0);", true)                   \
  _(rsqrt, "y0 = rsqrt(x0);", true)                 \
  _(reciprocal, "y0 = 1 / x0;", true)               \
  _(exp, "y0 = exp(x0);", true)                     \
  _(log, "y0 = log(x0);", true)

// name, body (x0 self, x1 tensor1, x2 tensor2, w0 value): the CPU kernels' order of operations
#define OCL_FOREACH_POINTWISE_OPS(_)         \
  _(addcmul, "y0 = x0 + w0 * x1 * x2;")      \
  _(addcdiv, "y0 = x0 + w0 * x1 / x2;")

#define OCL_DEFINE_BINARY(name, body, to_float) \
  const dlprim::ElementwiseOp k_##name{"_foreach_" #name, body, "", 1, 2, 1};
#define OCL_DEFINE_UNARY(name, body, to_float) \
  const dlprim::ElementwiseOp k_##name{"_foreach_" #name, body, "", 1, 1, 0};
#define OCL_DEFINE_POINTWISE(name, body) \
  const dlprim::ElementwiseOp k_##name{"_foreach_" #name, body, "", 1, 3, 1};
OCL_FOREACH_BINARY_OPS(OCL_DEFINE_BINARY)
OCL_FOREACH_UNARY_OPS(OCL_DEFINE_UNARY)
OCL_FOREACH_POINTWISE_OPS(OCL_DEFINE_POINTWISE)

// torch.lerp: exact at both ends (weight w0, or x2 for tensor weights).
const dlprim::ElementwiseOp k_lerp_scalar{
    "_foreach_lerp", "y0 = fabs(w0) < 0.5f ? x0 + w0 * (x1 - x0) : x1 - (x1 - x0) * (1 - w0);", "", 1, 2, 1};
const dlprim::ElementwiseOp k_lerp_tensor{
    "_foreach_lerp", "y0 = fabs(x2) < 0.5f ? x0 + x2 * (x1 - x0) : x1 - (x1 - x0) * (1 - x2);", "", 1, 3, 0};

at::Tensor wrapped_scalar(const c10::Scalar& s) {
  at::Tensor t = c10::scalar_to_tensor(s);
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// out = op(inputs) for one tensor of the list, as the single-tensor op would (out undefined:
// allocated in the promoted dtype). `same_dtype` for ops without type promotion (lerp).
at::Tensor run(ElementwiseBatch& batch, const at::Tensor& out, std::initializer_list<at::Tensor> inputs,
               bool to_float, const std::vector<dlprim::Scalar>& params, bool same_dtype = false) {
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true).allow_cpu_scalars(true).add_output(out);
  for (const at::Tensor& t : inputs) config.add_const_input(t);
  if (!same_dtype)
    config.promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true)
        .promote_integer_inputs_to_float(to_float);
  auto iter = config.build();
  batch.add(iter, iter.common_dtype(), params);
  return iter.output();
}

dlprim::Scalar one() { return dlprim::Scalar::integral(1); }

using In = ElementwiseBatch::DenseInput;

// out = op(ins) by the batch's fast route where the operands allow it (ElementwiseBatch::dense_route, and
// every tensor of self's floating dtype: no type promotion); undefined where they do not (callers `run`).
at::Tensor dense(ElementwiseBatch& batch, bool in_place, std::initializer_list<In> ins,
                 const std::vector<dlprim::Scalar>& params) {
  const at::Tensor& self = *ins.begin()->tensor;
  if (!c10::isFloatingType(self.scalar_type())) return at::Tensor();
  for (const In& in : ins)
    if (in.tensor && in.tensor->scalar_type() != self.scalar_type()) return at::Tensor();
  const at::Tensor* written = &self;
  if (!ElementwiseBatch::dense_route(self, in_place ? c10::ArrayRef<const at::Tensor*>(written)
                                                    : c10::ArrayRef<const at::Tensor*>(), ins))
    return at::Tensor();
  at::Tensor out = in_place ? self : at::empty(self.sizes(), self.options());
  batch.add_dense({&out}, ins, self.scalar_type(), params);
  return out;
}

// A Python number the fast route takes: real, not bool (bool operands have their own checks and promotion).
bool plain_number(const c10::Scalar& s) { return s.isFloatingPoint() || s.isIntegral(false); }

// A scalar converted to dtype `t` as the CPU kernels do for alpha and for Python-number operands:
// float16/bfloat16 round it (3.14 becomes 3.140625 in float16) before computing in float.
c10::Scalar in_dtype(const c10::Scalar& s, c10::ScalarType t) {
  if (t == c10::kHalf) return c10::Scalar(static_cast<double>(static_cast<float>(s.to<c10::Half>())));
  if (t == c10::kBFloat16) return c10::Scalar(static_cast<double>(static_cast<float>(s.to<c10::BFloat16>())));
  return s;
}
dlprim::Scalar scalar_param(const c10::Scalar& s, c10::ScalarType t) { return to_dlprim_scalar(in_dtype(s, t)); }

// maximum/minimum with a scalar go through clamp_min/clamp_max, which have no bool kernel.
void check_not_bool_clamp(const at::Tensor& t, const at::Tensor& scalar, const dlprim::ElementwiseOp& op) {
  bool clamp = &op == &k_maximum || &op == &k_minimum || &op == &k_clamp_min || &op == &k_clamp_max;
  TORCH_CHECK_NOT_IMPLEMENTED(!clamp || at::result_type(t, scalar) != c10::kBool, "\"", op.name,
                              "\" not implemented for 'Bool'");
}

void check_alpha(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha) {
  c10::ScalarType t = at::result_type(self, other);
  TORCH_CHECK(!alpha.isBoolean() || t == c10::kBool, "Boolean alpha only supported for Boolean results.");
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t) || alpha.isIntegral(true),
              "For integral input tensors, argument alpha must not be a floating point number.");
}

void check_neg(const at::Tensor& t, const dlprim::ElementwiseOp& op) {
  TORCH_CHECK(&op != &k_neg || t.scalar_type() != c10::kBool,
              "Negation, the `-` operator, on a bool tensor is not supported. "
              "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
}

void check_scalar_tensor(const at::Tensor& t) {
  TORCH_CHECK(t.dim() == 0 && t.numel() == 1, "scalar tensor expected to be 0 dim but it has ", t.dim(),
              " dimensions and ", t.numel(), " elements.");
}

// ---- binary: List / Scalar / ScalarList / Tensor, out-of-place and in-place
template <const dlprim::ElementwiseOp* Op, bool ToFloat>
void binary_list(TensorList self, TensorList other, const c10::Scalar& alpha, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self, other);
  ElementwiseBatch batch(*Op);
  for (size_t i = 0; i < self.size(); ++i) {
    if (Op == &k_add || Op == &k_sub) check_alpha(self[i], other[i], alpha);
    at::Tensor r;
    if (!alpha.isBoolean())
      r = dense(batch, !outs, {{&self[i]}, {&other[i]}}, {scalar_param(alpha, self[i].scalar_type())});
    if (!r.defined()) {
      if (Op == &k_sub) at::native::sub_check(self[i], other[i]);
      r = run(batch, outs ? at::Tensor() : self[i], {self[i], other[i]}, ToFloat,
              {scalar_param(alpha, at::result_type(self[i], other[i]))});
    }
    if (outs) outs->push_back(r);
  }
  batch.flush();
}

template <const dlprim::ElementwiseOp* Op, bool ToFloat>
void binary_scalars(TensorList self, ScalarList scalars, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self, scalars);
  ElementwiseBatch batch(*Op);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor r;
    if (plain_number(scalars[i]))
      r = dense(batch, !outs, {{&self[i]}, {nullptr, in_dtype(scalars[i], self[i].scalar_type()).toDouble()}}, {one()});
    if (!r.defined()) {
      at::Tensor other = wrapped_scalar(scalars[i]);
      check_not_bool_clamp(self[i], other, *Op);
      if (Op == &k_sub) at::native::sub_check(self[i], other);
      if (c10::isReducedFloatingType(at::result_type(self[i], other)))
        other = wrapped_scalar(in_dtype(scalars[i], self[i].scalar_type()));
      r = run(batch, outs ? at::Tensor() : self[i], {self[i], other}, ToFloat, {one()});
    }
    if (outs) outs->push_back(r);
  }
  batch.flush();
}

template <const dlprim::ElementwiseOp* Op, bool ToFloat>
void binary_tensor(TensorList self, const at::Tensor& other, const c10::Scalar& alpha, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self);
  ElementwiseBatch batch(*Op);
  check_scalar_tensor(other);
  for (size_t i = 0; i < self.size(); ++i) {
    if (Op == &k_add) check_alpha(self[i], other, alpha);
    at::Tensor r;
    if (!alpha.isBoolean()) r = dense(batch, !outs, {{&self[i]}, {&other}}, {scalar_param(alpha, self[i].scalar_type())});
    if (!r.defined())
      r = run(batch, outs ? at::Tensor() : self[i], {self[i], other}, ToFloat,
              {scalar_param(alpha, at::result_type(self[i], other))});
    if (outs) outs->push_back(r);
  }
  batch.flush();
}

template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> list_alpha(TensorList s, TensorList o, const c10::Scalar& alpha) {
  std::vector<at::Tensor> r;
  binary_list<Op, F>(s, o, alpha, &r);
  return r;
}
template <const dlprim::ElementwiseOp* Op, bool F>
void list_alpha_(TensorList s, TensorList o, const c10::Scalar& alpha) { binary_list<Op, F>(s, o, alpha, nullptr); }
template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> list(TensorList s, TensorList o) { return list_alpha<Op, F>(s, o, 1); }
template <const dlprim::ElementwiseOp* Op, bool F>
void list_(TensorList s, TensorList o) { list_alpha_<Op, F>(s, o, 1); }

template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> scalar_list(TensorList s, ScalarList v) {
  std::vector<at::Tensor> r;
  binary_scalars<Op, F>(s, v, &r);
  return r;
}
template <const dlprim::ElementwiseOp* Op, bool F>
void scalar_list_(TensorList s, ScalarList v) { binary_scalars<Op, F>(s, v, nullptr); }
template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> scalar(TensorList s, const c10::Scalar& v) {
  return scalar_list<Op, F>(s, std::vector<c10::Scalar>(s.size(), v));
}
template <const dlprim::ElementwiseOp* Op, bool F>
void scalar_(TensorList s, const c10::Scalar& v) { scalar_list_<Op, F>(s, std::vector<c10::Scalar>(s.size(), v)); }

template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> tensor_alpha(TensorList s, const at::Tensor& o, const c10::Scalar& alpha) {
  std::vector<at::Tensor> r;
  binary_tensor<Op, F>(s, o, alpha, &r);
  return r;
}
template <const dlprim::ElementwiseOp* Op, bool F>
void tensor_alpha_(TensorList s, const at::Tensor& o, const c10::Scalar& alpha) {
  binary_tensor<Op, F>(s, o, alpha, nullptr);
}
template <const dlprim::ElementwiseOp* Op, bool F>
std::vector<at::Tensor> tensor(TensorList s, const at::Tensor& o) { return tensor_alpha<Op, F>(s, o, 1); }
template <const dlprim::ElementwiseOp* Op, bool F>
void tensor_(TensorList s, const at::Tensor& o) { tensor_alpha_<Op, F>(s, o, 1); }

// ---- unary
template <const dlprim::ElementwiseOp* Op, bool ToFloat>
std::vector<at::Tensor> unary(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  ElementwiseBatch batch(*Op);
  std::vector<at::Tensor> r;
  for (const at::Tensor& t : self) {
    at::Tensor y = dense(batch, false, {{&t}}, {});
    if (!y.defined()) {
      check_neg(t, *Op);
      y = run(batch, at::Tensor(), {t}, ToFloat, {});
    }
    r.push_back(y);
  }
  batch.flush();
  return r;
}
template <const dlprim::ElementwiseOp* Op, bool ToFloat>
void unary_(TensorList self) {
  at::native::check_foreach_api_restrictions(self);
  ElementwiseBatch batch(*Op);
  for (const at::Tensor& t : self) {
    if (dense(batch, true, {{&t}}, {}).defined()) continue;
    check_neg(t, *Op);
    run(batch, t, {t}, ToFloat, {});
  }
  batch.flush();
}

void zero_(TensorList self) {
  for (const at::Tensor& t : self) t.zero_();
}

void copy_(TensorList self, TensorList src, bool non_blocking) {
  at::native::check_foreach_api_restrictions(self, src);
  for (size_t i = 0; i < self.size(); ++i) self[i].copy_(src[i], non_blocking);
}

// ---- addcmul / addcdiv: self + value * tensor1 (* or /) tensor2
template <const dlprim::ElementwiseOp* Op>
void pointwise(TensorList self, TensorList t1, TensorList t2, ScalarList values, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self, t1, t2, values);
  ElementwiseBatch batch(*Op);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor r;
    if (plain_number(values[i]))
      r = dense(batch, !outs, {{&self[i]}, {&t1[i]}, {&t2[i]}}, {to_dlprim_scalar(values[i])});
    if (r.defined()) {
      if (outs) outs->push_back(r);
      continue;
    }
    if (Op == &k_addcdiv)
      TORCH_CHECK(!(c10::isIntegralType(t1[i].scalar_type(), true) && c10::isIntegralType(t2[i].scalar_type(), true)),
                  "Integer division with addcdiv is no longer supported, and in a future release addcdiv will perform "
                  "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as "
                  "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as "
                  "(input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the "
                  "latter implementation: (input + value * tensor1 / tensor2), for all dtypes.");
    c10::ScalarType t = c10::promoteTypes(at::result_type(self[i], t1[i]), t2[i].scalar_type());
    TORCH_CHECK_NOT_IMPLEMENTED(t != c10::kBool, "\"", Op->name, "\" not implemented for 'Bool'");
    if (c10::isIntegralType(t, true))
      TORCH_CHECK(!values[i].isFloatingPoint(), "For integral input tensors, argument value must not be a floating "
                  "point number.");
    r = run(batch, outs ? at::Tensor() : self[i], {self[i], t1[i], t2[i]}, false, {to_dlprim_scalar(values[i])});
    if (outs) outs->push_back(r);
  }
  batch.flush();
}
template <const dlprim::ElementwiseOp* Op>
std::vector<at::Tensor> pw_scalar_list(TensorList s, TensorList a, TensorList b, ScalarList v) {
  std::vector<at::Tensor> r;
  pointwise<Op>(s, a, b, v, &r);
  return r;
}
template <const dlprim::ElementwiseOp* Op>
void pw_scalar_list_(TensorList s, TensorList a, TensorList b, ScalarList v) { pointwise<Op>(s, a, b, v, nullptr); }
template <const dlprim::ElementwiseOp* Op>
std::vector<at::Tensor> pw_scalar(TensorList s, TensorList a, TensorList b, const c10::Scalar& v) {
  return pw_scalar_list<Op>(s, a, b, std::vector<c10::Scalar>(s.size(), v));
}
template <const dlprim::ElementwiseOp* Op>
void pw_scalar_(TensorList s, TensorList a, TensorList b, const c10::Scalar& v) {
  pw_scalar_list_<Op>(s, a, b, std::vector<c10::Scalar>(s.size(), v));
}
template <const dlprim::ElementwiseOp* Op>
std::vector<at::Tensor> pw_tensor(TensorList s, TensorList a, TensorList b, const at::Tensor& v) {
  return pw_scalar_list<Op>(s, a, b, at::native::convert_tensor_to_scalar_list(v, static_cast<int64_t>(s.size())));
}
template <const dlprim::ElementwiseOp* Op>
void pw_tensor_(TensorList s, TensorList a, TensorList b, const at::Tensor& v) {
  pw_scalar_list_<Op>(s, a, b, at::native::convert_tensor_to_scalar_list(v, static_cast<int64_t>(s.size())));
}

// ---- lerp (no type promotion: all operands of one floating dtype, as torch.lerp)
void check_lerp(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(a.scalar_type()), "\"lerp_kernel_ocl\" not implemented for '",
                              c10::toString(a.scalar_type()), "'");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "expected dtype ", a.scalar_type(), " for `end` but got dtype ",
              b.scalar_type());
}
void lerp_scalars(TensorList self, TensorList end, ScalarList w, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self, end, w);
  ElementwiseBatch batch(k_lerp_scalar);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor r;
    if (plain_number(w[i])) r = dense(batch, !outs, {{&self[i]}, {&end[i]}}, {to_dlprim_scalar(w[i])});
    if (!r.defined()) {
      check_lerp(self[i], end[i]);
      r = run(batch, outs ? at::Tensor() : self[i], {self[i], end[i]}, false, {to_dlprim_scalar(w[i])}, true);
    }
    if (outs) outs->push_back(r);
  }
  batch.flush();
}
void lerp_tensors(TensorList self, TensorList end, TensorList w, std::vector<at::Tensor>* outs) {
  at::native::check_foreach_api_restrictions(self, end, w);
  ElementwiseBatch batch(k_lerp_tensor);
  for (size_t i = 0; i < self.size(); ++i) {
    at::Tensor r = dense(batch, !outs, {{&self[i]}, {&end[i]}, {&w[i]}}, {});
    if (!r.defined()) {
      check_lerp(self[i], end[i]);
      TORCH_CHECK(self[i].scalar_type() == w[i].scalar_type(), "expected dtype ", self[i].scalar_type(),
                  " for `weight` but got dtype ", w[i].scalar_type());
      r = run(batch, outs ? at::Tensor() : self[i], {self[i], end[i], w[i]}, false, {}, true);
    }
    if (outs) outs->push_back(r);
  }
  batch.flush();
}
std::vector<at::Tensor> lerp_list(TensorList s, TensorList e, TensorList w) {
  std::vector<at::Tensor> r;
  lerp_tensors(s, e, w, &r);
  return r;
}
void lerp_list_(TensorList s, TensorList e, TensorList w) { lerp_tensors(s, e, w, nullptr); }
std::vector<at::Tensor> lerp_scalar_list(TensorList s, TensorList e, ScalarList w) {
  std::vector<at::Tensor> r;
  lerp_scalars(s, e, w, &r);
  return r;
}
void lerp_scalar_list_(TensorList s, TensorList e, ScalarList w) { lerp_scalars(s, e, w, nullptr); }
std::vector<at::Tensor> lerp_scalar(TensorList s, TensorList e, const c10::Scalar& w) {
  return lerp_scalar_list(s, e, std::vector<c10::Scalar>(s.size(), w));
}
void lerp_scalar_(TensorList s, TensorList e, const c10::Scalar& w) {
  lerp_scalar_list_(s, e, std::vector<c10::Scalar>(s.size(), w));
}

// ---- norm: one linalg_vector_norm (the reduction generator) per tensor.
at::Tensor norm_one(const at::Tensor& t, double ord, std::optional<c10::ScalarType> dtype) {
  return at::linalg_vector_norm(t, ord, at::OptionalIntArrayRef(), false, dtype);
}

std::vector<at::Tensor> norm(TensorList self, const c10::Scalar& ord, std::optional<c10::ScalarType> dtype) {
  at::native::check_foreach_api_restrictions(self);
  std::vector<at::Tensor> r;
  for (const at::Tensor& t : self) r.push_back(norm_one(t, ord.toDouble(), dtype));
  return r;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OCL_REG_BINARY(name, body, F)                                                               \
  m.impl("_foreach_" #name ".Scalar", TORCH_FN((scalar<&k_##name, F>)));                           \
  m.impl("_foreach_" #name "_.Scalar", TORCH_FN((scalar_<&k_##name, F>)));                         \
  m.impl("_foreach_" #name ".ScalarList", TORCH_FN((scalar_list<&k_##name, F>)));                  \
  m.impl("_foreach_" #name "_.ScalarList", TORCH_FN((scalar_list_<&k_##name, F>)));
  OCL_FOREACH_BINARY_OPS(OCL_REG_BINARY)
  // List forms: add/sub take alpha; the others do not.
  m.impl("_foreach_add.List", TORCH_FN((list_alpha<&k_add, false>)));
  m.impl("_foreach_add_.List", TORCH_FN((list_alpha_<&k_add, false>)));
  m.impl("_foreach_sub.List", TORCH_FN((list_alpha<&k_sub, false>)));
  m.impl("_foreach_sub_.List", TORCH_FN((list_alpha_<&k_sub, false>)));
#define OCL_REG_LIST(name, F)                                          \
  m.impl("_foreach_" #name ".List", TORCH_FN((list<&k_##name, F>)));  \
  m.impl("_foreach_" #name "_.List", TORCH_FN((list_<&k_##name, F>)));
  OCL_REG_LIST(mul, false)
  OCL_REG_LIST(div, true)
  OCL_REG_LIST(maximum, false)
  OCL_REG_LIST(minimum, false)
  OCL_REG_LIST(clamp_min, false)
  OCL_REG_LIST(clamp_max, false)
  // Tensor forms (a 0-dim tensor operand): add (with alpha), mul, div.
  m.impl("_foreach_add.Tensor", TORCH_FN((tensor_alpha<&k_add, false>)));
  m.impl("_foreach_add_.Tensor", TORCH_FN((tensor_alpha_<&k_add, false>)));
  m.impl("_foreach_mul.Tensor", TORCH_FN((tensor<&k_mul, false>)));
  m.impl("_foreach_mul_.Tensor", TORCH_FN((tensor_<&k_mul, false>)));
  m.impl("_foreach_div.Tensor", TORCH_FN((tensor<&k_div, true>)));
  m.impl("_foreach_div_.Tensor", TORCH_FN((tensor_<&k_div, true>)));
#define OCL_REG_UNARY(name, body, F)                                 \
  m.impl("_foreach_" #name, TORCH_FN((unary<&k_##name, F>)));      \
  m.impl("_foreach_" #name "_", TORCH_FN((unary_<&k_##name, F>)));
  OCL_FOREACH_UNARY_OPS(OCL_REG_UNARY)
#define OCL_REG_POINTWISE(name, body)                                                        \
  m.impl("_foreach_" #name ".Scalar", TORCH_FN(pw_scalar<&k_##name>));                      \
  m.impl("_foreach_" #name "_.Scalar", TORCH_FN(pw_scalar_<&k_##name>));                    \
  m.impl("_foreach_" #name ".ScalarList", TORCH_FN(pw_scalar_list<&k_##name>));             \
  m.impl("_foreach_" #name "_.ScalarList", TORCH_FN(pw_scalar_list_<&k_##name>));           \
  m.impl("_foreach_" #name ".Tensor", TORCH_FN(pw_tensor<&k_##name>));                      \
  m.impl("_foreach_" #name "_.Tensor", TORCH_FN(pw_tensor_<&k_##name>));
  OCL_FOREACH_POINTWISE_OPS(OCL_REG_POINTWISE)
  m.impl("_foreach_lerp.List", TORCH_FN(lerp_list));
  m.impl("_foreach_lerp_.List", TORCH_FN(lerp_list_));
  m.impl("_foreach_lerp.Scalar", TORCH_FN(lerp_scalar));
  m.impl("_foreach_lerp_.Scalar", TORCH_FN(lerp_scalar_));
  m.impl("_foreach_lerp.ScalarList", TORCH_FN(lerp_scalar_list));
  m.impl("_foreach_lerp_.ScalarList", TORCH_FN(lerp_scalar_list_));
  m.impl("_foreach_zero_", TORCH_FN(zero_));
  m.impl("_foreach_copy_", TORCH_FN(copy_));
  m.impl("_foreach_norm.Scalar", TORCH_FN(norm));
}

} // namespace pytorch_ocl
