#include <cstdlib>
#include <dlprim/env.h>
#include <dlprim/capture.h>
#include <dlprim/context.h>
#include <dlprim/profiler.h>
#include <dlprim/program_cache.h>

#include <algorithm>
#include <string>

namespace dlprim {

Context::Context(const DeviceInfo& info) : info_(info) {
  // Settings read later on build threads, where an error would end the process, are checked here: a context is
  // made on the thread of the first op that needs the device, which reports the Error.
  env_int("PYTORCH_OCL_BUILD_THREADS", 1, 1024, 0);
  env_int("PYTORCH_OCL_BUILD_PROCESSES", 0, 1024, 0);
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(info.platform), 0};
  ctx_ = clCreateContext(props, 1, &info_.id, nullptr, nullptr, &err);
  DLPRIM_CL_CHECK(err);
}

Context::~Context() {
  if (ctx_) clReleaseContext(ctx_);
}

cl_command_queue Context::create_queue() const {
  cl_int err = CL_SUCCESS;
  cl_command_queue q = clCreateCommandQueue(ctx_, info_.id, CL_QUEUE_PROFILING_ENABLE, &err);
  DLPRIM_CL_CHECK(err);
  return q;
}

cl_program Context::program(const std::string& source, const std::string& options) const {
  // PYTORCH_OCL_EXTRA_BUILD_OPTIONS is appended to every build (the test suite passes
  // -cl-opt-disable on PoCL, whose optimizer is most of a cold run's time).
  const char* extra = env_value("PYTORCH_OCL_EXTRA_BUILD_OPTIONS");
  if (extra && *extra) return get_program(ctx_, info_, source, options.empty() ? extra : options + " " + extra);
  return get_program(ctx_, info_, source, options);
}

size_t Context::work_group_size(size_t preferred) const {
  return std::max<size_t>(1, std::min(preferred, info_.max_work_group_size));
}

void KernelArgs::set(size_t bytes, const void* p) {
  if (capture::any_active()) capture::note_arg(k_, index_, bytes, p);
  cl_int err = clSetKernelArg(k_, index_, bytes, p);
  if (err != CL_SUCCESS)
    throw Error("clSetKernelArg(" + std::to_string(index_) + ", " + std::to_string(bytes) +
                " bytes) failed: " + cl_error_name(err));
  ++index_;
}

cl_kernel create_kernel(cl_program program, const char* name) {
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, name, &err);
  if (err != CL_SUCCESS)
    throw Error(std::string("clCreateKernel(") + name + ") failed: " + cl_error_name(err));
  if (in_background_build()) detail::note_background_kernel(k);
  return k;
}

void launch_nd_events(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global,
                      const size_t* local, std::vector<cl_event>* events, const char* label) {
  detail::note_launch(k);
  if (capture::any_active()) {
    if (events) capture::forbid(q, "a timed launch (autotuning)");
    if (capture::record_kernel(q, k, dims, offset, global, local, label)) return;
  }
  profiler::g_launches.fetch_add(1, std::memory_order_relaxed);
  const bool rec = profiler::recording();
  if (!rec && !events) {
    DLPRIM_CL_CHECK(clEnqueueNDRangeKernel(q, k, dims, offset, global, local, 0, nullptr, nullptr));
    return;
  }
  cl_event ev = nullptr;
  DLPRIM_CL_CHECK(clEnqueueNDRangeKernel(q, k, dims, offset, global, local, 0, nullptr, &ev));
  if (events) events->push_back(ev);
  if (!rec) return;
  if (events) clRetainEvent(ev);  // both the caller and the profiler release it
  std::string name;
  if (label) {
    name = label;
  } else {
    size_t n = 0;
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n);
    name.resize(n);
    if (n) clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, &name[0], nullptr);
    while (!name.empty() && name.back() == '\0') name.pop_back();
  }
  profiler::record(name, ev);
}

void launch_nd(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* global, const size_t* local,
               const char* label) {
  launch_nd_events(q, k, dims, nullptr, global, local, nullptr, label);
}

void launch_1d(cl_command_queue q, cl_kernel k, uint64_t global, size_t local, const char* label) {
  if (global == 0) return;
  size_t g = static_cast<size_t>((global + local - 1) / local * local);
  launch_nd(q, k, 1, &g, &local, label);
}

} // namespace dlprim
