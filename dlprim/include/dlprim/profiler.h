// Per-kernel device times from OpenCL event profiling. While recording is on, every
// launch through dlprim's launch helpers keeps its event; collect() waits for them and
// returns (label, start, end) in device nanoseconds. Off by default: no events, no cost.
#pragma once
#include <dlprim/cl.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

struct KernelRecord {
  std::string label;
  uint64_t start_ns = 0, end_ns = 0;
};

namespace profiler {
void start();
// Stops recording and returns what was recorded since start(), in launch order.
std::vector<KernelRecord> stop();
bool recording();
// Called by the launch helpers: keeps `event` (takes ownership) under `label`.
void record(const std::string& label, cl_event event);
// Kernel launches (and buffer copies/fills) through the launch helpers since the process started (recorded or not,
// captured launches excluded): one relaxed increment per launch, read by host-overhead tools.
inline std::atomic<uint64_t> g_launches{0};
} // namespace profiler

} // namespace dlprim
