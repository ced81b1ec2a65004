// The process-wide list of OpenCL devices behind `ocl:N`, and their contexts.
#pragma once
#include <dlprim/context.h>
#include <dlprim/device.h>

#include <c10/core/Device.h>

#include <string>

namespace pytorch_ocl {

constexpr c10::DeviceType kOcl = c10::DeviceType::PrivateUse1;

// Never throws; 0 when there is no OpenCL platform or device.
int device_count() noexcept;
// Why no device was found ("" when some were).
std::string enumeration_error();
// Raises a torch IndexError-style error for an index out of range.
void check_device_index(int index);
const dlprim::DeviceInfo& device_info(int index);
// Creates the device's OpenCL context on first use (refused in a forked child).
dlprim::Context& context(int index);
bool has_context(int index);

int current_device();
void set_current_device(int index);

// True in a child forked after the parent initialized OpenCL: its state does not survive fork.
bool in_bad_fork();
extern bool g_bad_fork;
[[noreturn]] void fail_forked();
// Cheap enough for every op: raises in a forked child instead of hanging in the driver.
inline void check_not_forked() {
  if (g_bad_fork) fail_forked();
}

inline c10::Device ocl_device(int index) { return c10::Device(kOcl, static_cast<c10::DeviceIndex>(index)); }

} // namespace pytorch_ocl
