// torch._assert_async(t[, msg]) as on CUDA: no blocking read. Whether t's one value is zero is copied (one byte of
// `t == 0`, little-endian) into a device-side check slot (DeferredChecks.h), and the assertion's error is raised
// where the host next waits for the queue (`PYTORCH_OCL_INDEX_CHECK=sync`: at the call). Inside a graph capture,
// or with the checks off, nothing is checked, as for the index ops.
#include "core/DeferredChecks.h"
#include "core/Errors.h"
#include "core/Stream.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/eq.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/capture.h>
#include <torch/library.h>

#include <string>
#include <string_view>

namespace pytorch_ocl {

namespace {

void assert_nonzero_later(const at::Tensor& self, std::string message) {
  // The CPU's checks of the tensor's size (torch.is_nonzero): metadata, raised now
  TORCH_CHECK(self.numel() != 0, "Boolean value of Tensor with no values is ambiguous");
  TORCH_CHECK(self.numel() < 2, "Boolean value of Tensor with more than one value is ambiguous");
  c10::DeviceGuard guard(self.device());
  const int device = self.device().index();
  cl_command_queue q = current_queue(device);
  if (index_check_mode() == IndexCheckMode::Off || (dlprim::capture::any_active() && dlprim::capture::capturing(q)))
    return;
  at::Tensor zero = at::eq(self, 0).contiguous();  // bool: one byte, 1 where the assertion fails
  DeviceFlag slot = acquire_flag(device, q);
  BufferRef src = buffer_of(zero);
  cl_int err = clEnqueueCopyBuffer(q, src.mem, slot.mem, src.offset, static_cast<size_t>(slot.offset) * 4, 1, 0,
                                   nullptr, nullptr);
  commit_flag(device, q, slot, [message = std::move(message)] { TORCH_CHECK(false, message); });
  OCL_CHECK(err);
  note_enqueued(q);
  check_now_if_sync(device, q);
}

void assert_async(const at::Tensor& self) {
  assert_nonzero_later(self, "Expected Tensor with single nonzero value, but got zero");
}

void assert_async_msg(const at::Tensor& self, std::string_view message) {
  assert_nonzero_later(self, message.empty() ? std::string("Assertion is failed") : std::string(message));
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_assert_async", TORCH_FN(assert_async));
  m.impl("_assert_async.msg", TORCH_FN(assert_async_msg));
}

} // namespace pytorch_ocl
