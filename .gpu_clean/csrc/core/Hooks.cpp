// PrivateUse1 hooks: what torch asks a backend outside of op dispatch (generators,
// pinned memory, device of a pointer, storage resize, availability).
#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Generator.h"
#include "core/HostAllocator.h"
#include "core/Storage.h"
#include "core/TorchCompat.h"

#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>

namespace pytorch_ocl {

namespace {

struct OclHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return device_count() > 0; }
  bool hasPrimaryContext(c10::DeviceIndex d) const override { return has_context(d); }
  void init() const override {}
  c10::DeviceIndex deviceCount() const override { return static_cast<c10::DeviceIndex>(device_count()); }
  void setCurrentDevice(c10::DeviceIndex d) const override { set_current_device(d); }
  c10::DeviceIndex getCurrentDevice() const override { return static_cast<c10::DeviceIndex>(current_device()); }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex d) const override {
    auto old = getCurrentDevice();
    if (d >= 0) set_current_device(d);
    return old;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex d) const override { return exchangeDevice(d); }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex d) const override { return default_generator(d); }
  at::Generator getNewGenerator(c10::DeviceIndex d) const override { return new_generator(d); }

  at::Device getDeviceFromPtr(void* data) const override { return ocl_device(buffer_from_ptr(data).device); }
  bool isPinnedPtr(const void* data) const override {
    // On CUDA builds torch.empty(pin_memory=True) pins through CUDA's allocator even with
    // ocl registered; that memory is page-locked too, so report it as such.
    return is_pinned(data) || (at::globalContext().hasCUDA() && at::detail::getCUDAHooks().isPinnedPtr(data));
  }
  at::Allocator* getPinnedMemoryAllocator() const override { return host_allocator(); }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t nbytes) const override {
    resize_storage_bytes(storage.unsafeGetStorageImpl(), nbytes);
  }
};

struct Registrar {
  Registrar() { at::RegisterPrivateUse1HooksInterface(new OclHooks()); }
} g_registrar;

} // namespace
} // namespace pytorch_ocl
