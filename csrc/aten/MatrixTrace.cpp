// trace: the sum of a matrix's diagonal (a view) through the native sum, which also gives the CPU's
// result dtype (integers and bool sum to int64). The CPU's checks: a 2-D input, no bool.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor trace(const at::Tensor& self) {
  check_ocl(self, "trace", "self");
  TORCH_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != at::kBool, "\"trace\" not implemented for 'Bool'");
  c10::DeviceGuard guard(self.device());
  return self.diagonal().sum();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("trace", TORCH_FN(trace));
}

} // namespace pytorch_ocl
