// Tensor creation: the allocations every other op goes through.
#include "core/Allocator.h"
#include "core/Device.h"
#include "core/TensorUtils.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

c10::Device target_device(std::optional<c10::Device> device) {
  int index = (device && device->has_index()) ? device->index() : current_device();
  check_device_index(index);
  return ocl_device(index);
}

void check_options(std::optional<c10::Layout> layout, std::optional<bool> pin_memory, const char* op) {
  TORCH_CHECK(!layout || *layout == c10::kStrided, op, ": only strided tensors are supported on ocl, got ",
              *layout);
  TORCH_CHECK(!pin_memory || !*pin_memory, op, ": only CPU tensors can be pinned");
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<c10::ScalarType> dtype,
                               std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                               std::optional<bool> pin_memory, std::optional<c10::MemoryFormat> memory_format) {
  check_options(layout, pin_memory, "empty");
  c10::DeviceGuard guard(target_device(device));
  auto st = c10::dtype_or_default(dtype);
  return at::detail::empty_generic(size, device_allocator(), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   st, memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  check_options(layout, pin_memory, "empty_strided");
  c10::DeviceGuard guard(target_device(device));
  auto st = c10::dtype_or_default(dtype);
  return at::detail::empty_strided_generic(size, stride, device_allocator(),
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), st);
}

} // namespace

// The memory of `self` is also used by work queued on `stream`: its reuse waits for that work.
void record_stream(at::Tensor& self, c10::Stream stream) {
  device_allocator()->recordStream(self.storage().data_ptr(), stream);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("record_stream", TORCH_FN(record_stream));
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
}

} // namespace pytorch_ocl
