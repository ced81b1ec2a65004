// Lazily built OpenCL programs, cached in memory and on disk.
#pragma once
#include <dlprim/cl.h>
#include <dlprim/device.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace dlprim {

struct CacheStats {
  uint64_t builds = 0;       // programs compiled from source in this process
  uint64_t disk_hits = 0;    // programs created from binaries stored on disk
  uint64_t worker_builds = 0; // programs compiled by helper processes (parallel_builds on NVIDIA; the binaries
                              // of CPU devices' programs for the disk cache, counted apart in worker_binaries)
  uint64_t worker_binaries = 0;  // binaries stored in the disk cache that a helper process made (CPU devices)
  double build_seconds = 0;  // wall time inside those compiles (summed over threads)
  double load_seconds = 0;   // wall time creating programs from stored binaries
  double binary_seconds = 0; // wall time fetching built binaries for the disk cache (PoCL compiles its kernels
                             // then), on the background writer thread
  // Of `builds`: on the threads of the op that needed the program (the critical path, tuning build threads
  // included) vs in background jobs (build_in_background: speculative builds of programs needed soon).
  uint64_t critical_builds = 0, background_builds = 0;
  uint64_t background_used = 0;   // kernels created by background jobs that an op (or a tuning) then launched
  uint64_t background_waits = 0;  // requests that waited for a background build under way
  // Wall seconds an op's own thread waited: for single programs (built there, loaded, or waited for while another
  // thread built them) and in parallel_builds calls (a tuning's candidates, side by side). A cold step's critical
  // path in builds; background jobs and the build threads a parallel_builds call starts are not counted.
  double wait_program_seconds = 0, wait_parallel_seconds = 0;
};

// Returns the built program for (device, source, options). Compiles from source at most
// once per process; with the disk cache enabled a later process loads the binary.
// A failed build throws Error with the build log in the message (and again, without
// rebuilding, for every later request of the same program).
// Thread-safe: distinct programs build concurrently (clBuildProgram is thread-safe for
// distinct program objects); a second request for a program being built waits for it.
cl_program get_program(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& options);

// Runs fn(0) .. fn(n - 1) on up to build_threads() threads (the calling one included) and
// returns when all are done. For independent program builds: an exception thrown by fn is
// swallowed (the caller meets the error again when it asks for that program).
// Devices whose compiler does not build in parallel get one thread unless PYTORCH_OCL_BUILD_THREADS asks for more;
// on them (NVIDIA) the threads send their builds to helper processes instead (PYTORCH_OCL_BUILD_PROCESSES,
// build_workers.h), which do build in parallel.
void parallel_builds(const DeviceInfo& dev, size_t n, const std::function<void(size_t)>& fn);
// PYTORCH_OCL_BUILD_THREADS (1: build on the calling thread only), else the hardware threads, at most 16.
int build_threads();
// build_threads() for `dev`: 1 by default on NVIDIA, whose OpenCL compiler serializes concurrent builds (H200,
// resnet18's first step on an empty cache: 61 s on one thread, 77 s on 16, each build ~8x slower).
int build_threads(const DeviceInfo& dev);

// Runs `job` (typically: get_program / kernel creation for programs the caller will need soon, such
// as a backward pass's after its forward) on a background thread, so that the build overlaps the
// work in between; the later request then finds the program built, or waits for the build under way
// (the program cache's per-program lock). Errors are dropped (met again by that request). Does
// nothing when build_threads() is 1. On devices with build processes (build_workers.h) the job's builds
// run in one.
void build_in_background(const DeviceInfo& dev, std::function<void()> job);
// True on the threads of a background job: speculation is not repeated from there (no chains of guesses).
bool in_background_build();
// Whether an op should queue speculative builds (programs it knows the step needs next) now: background builds
// on (build_threads() > 1), not on a background thread, and PYTORCH_OCL_SPECULATIVE_BUILDS 1, or unset and `dev`
// not a CPU (whose cores a background build takes from the builds and kernels the step waits for).
bool speculative_builds(const DeviceInfo& dev);

namespace detail {
// The driver's build log of `prog` for `dev` (trailing newlines and NULs removed).
std::string program_build_log(cl_program prog, cl_device_id dev);

// CacheStats::background_used: create_kernel notes background kernels, launches claim them
extern std::atomic<uint32_t> g_background_kernels;
void note_background_kernel(cl_kernel k);
void claim_background_kernel(cl_kernel k);
inline void note_launch(cl_kernel k) {
  if (g_background_kernels.load(std::memory_order_relaxed)) claim_background_kernel(k);
}
} // namespace detail

// Waits until background builds are done and the binaries of the programs built so far are in the disk cache (they are stored by
// a background thread when build_threads() > 1). Called at exit and before a cache export.
void flush_program_cache();

// PYTORCH_OCL_TRACE_BUILDS=1: builds and tunings print a line each to stderr (a cold start taken apart).
bool trace_builds();

CacheStats cache_stats();
// Where binaries are stored, and whether the disk cache is usable ("" when compiled without SQLite).
std::string disk_cache_path();
bool disk_cache_compiled();
bool disk_cache_usable();
// A warning for the last problem with the disk cache (corrupt, read-only), or "".
std::string disk_cache_warning();
// Receives warnings about the disk cache (the torch layer turns them into Python warnings).
using WarningHandler = void (*)(const std::string&);
void set_warning_handler(WarningHandler handler);

} // namespace dlprim
