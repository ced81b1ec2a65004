// _efficientzerotensor: autograd's zero gradients (e.g. sgn's backward on real inputs). The CPU
// builds a storage-less ZeroTensor; a plain zero-filled ocl tensor gives the same results.
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <optional>

namespace pytorch_ocl {

namespace {

at::Tensor efficient_zero_tensor(c10::SymIntArrayRef size, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory) {
  return at::zeros_symint(size, at::TensorOptions().dtype(dtype).layout(layout).device(device).pinned_memory(pin_memory));
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_efficientzerotensor", TORCH_FN(efficient_zero_tensor));
}

} // namespace pytorch_ocl
