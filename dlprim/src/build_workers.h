// Program builds in helper processes (tools/ocl_build_worker.cpp) for devices whose compiler serializes
// the builds of one process (NVIDIA). parallel_builds gives each of its threads a WorkerScope; while it
// lives, get_program sends that thread's builds from source to the thread's own worker process and loads
// the binary it returns. Anything that goes wrong (no worker executable, a worker that will not start or
// dies, a failed build) returns false, and the build happens in this process as before.
#pragma once
#include <dlprim/device.h>

#include <string>
#include <vector>

namespace dlprim {
namespace detail {

// Build processes for `dev`: PYTORCH_OCL_BUILD_PROCESSES (0: none) or, unset, 8 on NVIDIA and 0 elsewhere;
// 0 too when the worker executable is missing.
int build_processes(const DeviceInfo& dev);

// Whether the build worker executable is there; for jobs that want a worker regardless of build_processes (the
// binaries of CPU devices' programs for the disk cache).
bool worker_available();

class WorkerScope {
public:
  explicit WorkerScope(const DeviceInfo& dev);
  ~WorkerScope();
  WorkerScope(const WorkerScope&) = delete;
  WorkerScope& operator=(const WorkerScope&) = delete;

private:
  void* prev_;  // a scope nested in another (parallel_builds inside a background job) restores the outer one's worker
};

// Inside a WorkerScope: the program built by the thread's worker, as a binary for clCreateProgramWithBinary.
bool remote_build(const std::string& source, const std::string& options, std::vector<unsigned char>* binary);

uint64_t remote_builds();
bool has_worker();  // inside a WorkerScope on this thread  // programs built by workers in this process

} // namespace detail
} // namespace dlprim
