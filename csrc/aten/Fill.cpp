// fill_ and zero_: a nullary elementwise kernel, or a buffer fill when the tensor is dense.
#include "aten/Launch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <dlprim/capture.h>

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

const dlprim::ElementwiseOp k_fill{"fill", "y0 = w0;", "", 1, 0, 1};

// Writes the value's bytes as a fill pattern: any dtype, no kernel build.
void fill_dense(const at::Tensor& self, const c10::Scalar& value) {
  // Two elements, not one: the CPU's single-element fill skips the overflow check that
  // its general fill applies (70000 into float16 must raise, not store inf).
  at::Tensor pattern = at::empty({2}, self.options().device(c10::kCPU));
  pattern.fill_(value);
  BufferRef buf = buffer_of(self);
  cl_command_queue q = queue_for(self);
  OCL_DLPRIM_CALL("fill_", dlprim::enqueue_fill_buffer(q, buf.mem, pattern.const_data_ptr(), self.itemsize(),
                                                       buf.offset, self.numel() * self.itemsize()));
  note_enqueued(q);
}

at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  if (self.numel() == 0) return self;
  if (self.is_contiguous()) {
    fill_dense(self, value);
    return self;
  }
  if (!has_dlprim_type(self.scalar_type())) {
    // Strided fill of a dtype without kernels: fill a dense copy, then copy by bytes.
    at::Tensor dense = at::empty(self.sizes(), self.options());
    fill_dense(dense, value);
    self.copy_(dense);
    return self;
  }
  auto iter = at::TensorIteratorConfig()
                  .set_check_mem_overlap(false)
                  .check_all_same_dtype(false)
                  .add_output(self)
                  .resize_outputs(false)
                  .build();
  launch_elementwise(k_fill, iter, self.scalar_type(), {to_dlprim_scalar(value)});
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  return fill_scalar(self, value.item());
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fill_.Scalar", TORCH_FN(fill_scalar));
  m.impl("fill_.Tensor", TORCH_FN(fill_tensor));
  m.impl("zero_", TORCH_FN(zero_));
}

} // namespace pytorch_ocl
