#include "core/Device.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <vector>

namespace pytorch_ocl {

namespace {

struct Devices {
  std::vector<dlprim::DeviceInfo> infos;
  std::vector<std::unique_ptr<dlprim::Context>> contexts;
  std::vector<std::once_flag> created;
  std::string error;
};

}  // namespace

bool g_bad_fork = false;

namespace {
thread_local int t_current_device = 0;

void mark_bad_fork() { g_bad_fork = true; }

Devices& devices() {
  static Devices* d = [] {
    auto* d = new Devices();  // never destroyed: contexts live until process exit
    // Drivers start threads and open device files as soon as they are enumerated, and
    // neither survives fork(): a child of a process that touched OpenCL must not use it.
    pthread_atfork(nullptr, nullptr, mark_bad_fork);
    const char* filter = std::getenv("PYTORCH_OCL_DEVICES");
    try {
      d->infos = dlprim::enumerate_devices(filter ? filter : "", &d->error);
    } catch (const std::exception& e) {
      d->error = e.what();
    }
    if (d->infos.empty() && d->error.empty())
      d->error = filter ? std::string("PYTORCH_OCL_DEVICES='") + filter + "' matches no device" : "no OpenCL device";
    d->contexts.resize(d->infos.size());
    d->created = std::vector<std::once_flag>(d->infos.size());
    return d;
  }();
  return *d;
}

} // namespace

int device_count() noexcept {
  try {
    return static_cast<int>(devices().infos.size());
  } catch (...) {
    return 0;
  }
}

std::string enumeration_error() { return devices().error; }

void check_device_index(int index) {
  int n = device_count();
  TORCH_CHECK_INDEX(index >= 0 && index < n, "ocl: device index ", index, " is out of range: ",
                    n, " OpenCL device(s) available", n == 0 ? " (" + enumeration_error() + ")" : "");
}

const dlprim::DeviceInfo& device_info(int index) {
  check_device_index(index);
  return devices().infos[index];
}

dlprim::Context& context(int index) {
  check_device_index(index);
  Devices& d = devices();
  check_not_forked();
  std::call_once(d.created[index], [&] {
    try {
      d.contexts[index] = std::make_unique<dlprim::Context>(d.infos[index]);
    } catch (const std::exception& e) {
      TORCH_CHECK(false, "ocl: cannot create an OpenCL context for device ", index, " (",
                  d.infos[index].name, "): ", e.what());
    }
  });
  TORCH_CHECK(d.contexts[index], "ocl: the OpenCL context of device ", index, " failed to initialize");
  return *d.contexts[index];
}

bool has_context(int index) {
  if (index < 0 || index >= device_count()) return false;
  return devices().contexts[index] != nullptr;
}

int current_device() { return t_current_device; }

void set_current_device(int index) {
  check_device_index(index);
  t_current_device = index;
}

bool in_bad_fork() { return g_bad_fork; }

void fail_forked() {
  TORCH_CHECK(false,
              "ocl: cannot use OpenCL in a forked subprocess: the parent process had already initialized "
              "OpenCL. Use the 'spawn' start method for multiprocessing.");
}

} // namespace pytorch_ocl
