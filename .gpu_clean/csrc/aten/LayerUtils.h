// Helpers shared by the layer ops that run dlprim kernels over contiguous planes
// (pooling, upsampling, padding, group norm).
#pragma once
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <dlprim/typed_kernels.h>

namespace pytorch_ocl {

// Storage view (element offset) of a tensor for a dlprim kernel; empty for no elements.
inline dlprim::Buffer layer_buf(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

// Runs `fill(out_contiguous)`, through a temporary copied into `out` when `out` is not contiguous
// (channels_last outputs, strided out= arguments).
template <class F>
void write_contiguous(at::Tensor& out, F&& fill) {
  if (out.is_contiguous()) return fill(out);
  at::Tensor tmp = at::empty(out.sizes(), out.options().memory_format(c10::MemoryFormat::Contiguous));
  fill(tmp);
  out.copy_(tmp);
}

// The dlprim type of a floating input; a clear error otherwise.
inline dlprim::DType floating_dtype(const at::Tensor& t, const char* op) {
  TORCH_CHECK_TYPE(c10::isFloatingType(t.scalar_type()), op, ": expected a floating point input, got ", t.scalar_type());
  return to_dlprim(t.scalar_type(), op);
}

} // namespace pytorch_ocl
