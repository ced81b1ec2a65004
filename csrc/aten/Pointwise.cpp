// Elementwise arithmetic: each op is one table row (name + OpenCL expression); the
// wrappers below are shared by every row of the same signature.
#include "aten/Launch.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/BinaryOps.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// x0, x1: operands, w0: alpha. Computed in the promoted dtype (float for 16-bit floats).
#define OCL_BINARY_ALPHA_OPS(_) \
  _(add, "y0 = x0 + w0 * x1;")  \
  _(sub, "y0 = x0 - w0 * x1;")

// The last column picks TensorIterator's promotion rule: `binary` keeps integer
// results integral, `float` promotes integers to the default float dtype (true division).
#define OCL_BINARY_OPS(_)            \
  _(mul, "y0 = x0 * x1;", binary)    \
  _(div, "y0 = x0 / x1;", float)

// Unary ops; `unary` keeps the input dtype, `unary_float` promotes integers to float.
#define OCL_UNARY_OPS(_)                  \
  _(neg, "y0 = -x0;", unary)              \
  _(reciprocal, "y0 = 1 / x0;", unary_float)

#define OCL_DEFINE_UNARY_OP(name, body, kind) const dlprim::ElementwiseOp k_##name{#name, body, "", 1, 1, 0};
#define OCL_DEFINE_ALPHA_OP(name, body) const dlprim::ElementwiseOp k_##name{#name, body, "", 1, 2, 1};
#define OCL_DEFINE_OP(name, body, kind) const dlprim::ElementwiseOp k_##name{#name, body, "", 1, 2, 0};
OCL_UNARY_OPS(OCL_DEFINE_UNARY_OP)
OCL_BINARY_ALPHA_OPS(OCL_DEFINE_ALPHA_OP)
OCL_BINARY_OPS(OCL_DEFINE_OP)

at::TensorIterator make_iter_unary(at::Tensor& out, const at::Tensor& a) {
  return at::TensorIterator::unary_op(out, a);
}
at::TensorIterator make_iter_unary_float(at::Tensor& out, const at::Tensor& a) {
  return at::TensorIterator::unary_float_op(out, a);
}

template <const dlprim::ElementwiseOp* Op, at::TensorIterator (*MakeIter)(at::Tensor&, const at::Tensor&)>
at::Tensor& unary_out(const at::Tensor& self, at::Tensor& out) {
  auto iter = MakeIter(out, self);
  launch_elementwise(*Op, iter, iter.common_dtype());
  return out;
}

template <const dlprim::ElementwiseOp* Op>
at::Tensor& binary_alpha_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha,
                             at::Tensor& out) {
  if (Op == &k_sub) at::native::sub_check(self, other);
  auto iter = at::TensorIterator::borrowing_binary_op(out, self, other);
  at::native::alpha_check(iter.common_dtype(), alpha);
  launch_elementwise(*Op, iter, iter.common_dtype(), {to_dlprim_scalar(alpha)});
  return out;
}

at::TensorIterator make_iter_binary(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  return at::TensorIterator::borrowing_binary_op(out, a, b);
}
at::TensorIterator make_iter_float(at::Tensor& out, const at::Tensor& a, const at::Tensor& b) {
  return at::TensorIterator::binary_float_op(out, a, b);
}

template <const dlprim::ElementwiseOp* Op, at::TensorIterator (*MakeIter)(at::Tensor&, const at::Tensor&, const at::Tensor&)>
at::Tensor& binary_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  auto iter = MakeIter(out, self, other);
  launch_elementwise(*Op, iter, iter.common_dtype());
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OCL_REGISTER_UNARY_OP(name, body, kind) \
  m.impl(#name ".out", TORCH_FN((unary_out<&k_##name, make_iter_##kind>)));
#define OCL_REGISTER_ALPHA_OP(name, body) m.impl(#name ".out", TORCH_FN(binary_alpha_out<&k_##name>));
#define OCL_REGISTER_OP(name, body, kind) m.impl(#name ".out", TORCH_FN((binary_out<&k_##name, make_iter_##kind>)));
  OCL_UNARY_OPS(OCL_REGISTER_UNARY_OP)
  OCL_BINARY_ALPHA_OPS(OCL_REGISTER_ALPHA_OP)
  OCL_BINARY_OPS(OCL_REGISTER_OP)
}

} // namespace pytorch_ocl
