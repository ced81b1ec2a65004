// One OpenCL context per device, plus the helpers every kernel launch needs.
#pragma once
#include <dlprim/cl.h>
#include <dlprim/device.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

class Context {
public:
  explicit Context(const DeviceInfo& info);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  cl_context context() const { return ctx_; }
  cl_device_id device() const { return info_.id; }
  const DeviceInfo& info() const { return info_; }

  // In-order queue with profiling enabled (event timings, the kernel profiler).
  cl_command_queue create_queue() const;
  // Builds (or fetches from the caches) a program for this device.
  cl_program program(const std::string& source, const std::string& options = "") const;
  // Work-group size for 1-D launches: `preferred`, clamped to the device limit.
  size_t work_group_size(size_t preferred = 256) const;

private:
  DeviceInfo info_;
  cl_context ctx_ = nullptr;
};

// Sets kernel arguments in order; keeps launch code short and type-safe.
class KernelArgs {
public:
  explicit KernelArgs(cl_kernel k) : k_(k) {}
  template <class T>
  KernelArgs& add(const T& value) {
    set(sizeof(T), &value);
    return *this;
  }
  KernelArgs& add_local(size_t bytes) {
    set(bytes, nullptr);
    return *this;
  }
  KernelArgs& add_raw(size_t bytes, const void* p) {
    set(bytes, p);
    return *this;
  }

private:
  void set(size_t bytes, const void* p);
  cl_kernel k_;
  cl_uint index_ = 0;
};

// Creates kernel `name` of `program`; throws Error naming the kernel on failure.
cl_kernel create_kernel(cl_program program, const char* name);
// 1-D launch of ceil(global / local) groups of `local` items. `label` names the launch in
// the kernel profiler (default: the kernel's function name).
void launch_1d(cl_command_queue q, cl_kernel k, uint64_t global, size_t local, const char* label = nullptr);
// N-D launch (1 <= dims <= 3); `local` may be null (the driver chooses). Every launch of
// the library goes through here or launch_1d, which is where the profiler hooks in.
void launch_nd(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* global, const size_t* local,
               const char* label = nullptr);
// launch_nd with a global offset; when `events` is given, the launch's event is appended to it
// (the caller owns it: autotuning times launches this way).
void launch_nd_events(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global,
                      const size_t* local, std::vector<cl_event>* events, const char* label = nullptr);

} // namespace dlprim

namespace dlprim {
// Host cost of one launch of an empty kernel with `n_args` arguments, in microseconds,
// on a fresh queue with or without profiling: a probe for per-op overhead. With
// set_args_each_launch false the arguments are set once (separates clSetKernelArg cost).
// `n_args` buffer arguments, then `n_scalar_args` ulong ones.
double measure_launch_us(const Context& ctx, int launches, bool profiling, int n_args, unsigned flush_every,
                         bool set_args_each_launch = true, int n_scalar_args = 0);
} // namespace dlprim
