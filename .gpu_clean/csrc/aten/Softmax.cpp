// softmax / log_softmax over any dim and their backward: one dlprim kernel family.
#include "aten/RowsLaunch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/WrapDimMinimal.h>
#include <dlprim/softmax.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// x1 is undefined for the forward kinds.
void run_softmax(dlprim::SoftmaxKind kind, const at::Tensor& x0_in, const at::Tensor& x1_in, int64_t dim,
                 const at::Tensor& out, const char* name) {
  check_ocl(x0_in, name, "input");
  check_ocl(out, name, "out");
  if (x1_in.defined()) {
    check_ocl(x1_in, name, "output");
    TORCH_CHECK(x0_in.sizes() == x1_in.sizes(), name, ": grad_output and output must have the same shape, got ",
                x0_in.sizes(), " and ", x1_in.sizes());
  }
  dim = c10::maybe_wrap_dim(dim, x0_in.dim());
  at::native::resize_output(out, x0_in.sizes());
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(x0_in.device());
  at::Tensor x0 = x0_in, x1 = x1_in.defined() ? x1_in : x0_in;
  RowsOutputs outs({out}, {x0, x1});
  at::Tensor y = outs.tensors[0];
  dlprim::RowsShape shape;
  if (!rows_of({x0, x1, y}, dim, shape)) {
    x0 = x0.contiguous();
    x1 = x1.contiguous();
    if (!y.is_contiguous()) y = at::empty(y.sizes(), y.options());
    outs.tensors[0] = y;
    TORCH_CHECK(rows_of({x0, x1, y}, dim, shape), name, ": cannot describe shape ", x0.sizes());
  }
  c10::ScalarType ct = x0.scalar_type() == c10::kDouble || out.scalar_type() == c10::kDouble ? c10::kDouble
                                                                                                 : c10::kFloat;
  int device = x0.device().index();
  OCL_TRACE(name, " ", x0.sizes(), " ", x0.scalar_type(), " dim=", dim, " out=", out.scalar_type());
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::softmax(context(device), q, kind, to_dlprim(ct, name), shape,
                                        rows_tensor(x0, name), rows_tensor(x1, name), rows_tensor(y, name)));
  note_enqueued(q);
  outs.copy_back();
}

void check_float(const at::Tensor& t, const char* name) {
  TORCH_CHECK(c10::isFloatingType(t.scalar_type()), name, ": expected a floating point tensor, got ",
              t.scalar_type());
}

c10::ScalarType forward_dtype(const at::Tensor& self, bool half_to_float, const char* name) {
  if (half_to_float)
    TORCH_CHECK(self.scalar_type() == c10::kHalf || self.scalar_type() == c10::kBFloat16, name,
                ": conversion to float is only for half/bfloat16 inputs, got ", self.scalar_type());
  return half_to_float ? c10::kFloat : self.scalar_type();
}

at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  check_float(self, "softmax");
  TORCH_CHECK(out.scalar_type() == forward_dtype(self, half_to_float, "softmax"), "softmax: out has dtype ",
              out.scalar_type());
  run_softmax(dlprim::SoftmaxKind::Softmax, self, at::Tensor(), dim, out, "softmax");
  return out;
}

at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  check_float(self, "log_softmax");
  TORCH_CHECK(out.scalar_type() == forward_dtype(self, half_to_float, "log_softmax"), "log_softmax: out has dtype ",
              out.scalar_type());
  run_softmax(dlprim::SoftmaxKind::LogSoftmax, self, at::Tensor(), dim, out, "log_softmax");
  return out;
}

at::Tensor& softmax_backward_out(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                 c10::ScalarType input_dtype, at::Tensor& grad_input) {
  check_float(grad_output, "softmax_backward");
  run_softmax(dlprim::SoftmaxKind::SoftmaxBackward, grad_output, output, dim, grad_input, "softmax_backward");
  return grad_input;
}

at::Tensor& log_softmax_backward_out(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                     c10::ScalarType input_dtype, at::Tensor& grad_input) {
  check_float(grad_output, "log_softmax_backward");
  run_softmax(dlprim::SoftmaxKind::LogSoftmaxBackward, grad_output, output, dim, grad_input,
              "log_softmax_backward");
  return grad_input;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax.out", TORCH_FN(softmax_out));
  m.impl("_log_softmax.out", TORCH_FN(log_softmax_out));
  m.impl("_softmax_backward_data.out", TORCH_FN(softmax_backward_out));
  m.impl("_log_softmax_backward_data.out", TORCH_FN(log_softmax_backward_out));
}

} // namespace pytorch_ocl
