// torch.ocl.set_sync_debug_mode: report operations that make the host wait for the device
// (blocking copies between host and device; item() and printing go through them), as CUDA's
// sync debug mode does. Explicit waits (synchronize, Stream/Event.synchronize) are not reported.
#pragma once
#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>

namespace pytorch_ocl {

// 0 = default (silent), 1 = warn, 2 = error; read on every blocking copy, so one relaxed load.
inline std::atomic<int> g_sync_debug_mode{0};

// Host waits for the device since the process started, by kind (torch.ocl-level counters for
// host-overhead tools such as benchmarks/decode_overhead.py): blocking copies to / from the host,
// queue finishes (synchronize), event waits.
struct HostWaitCounters {
  std::atomic<uint64_t> reads{0}, writes{0}, finishes{0}, event_waits{0};
};
inline HostWaitCounters g_host_waits;
inline void count_wait(std::atomic<uint64_t>& c) { c.fetch_add(1, std::memory_order_relaxed); }

inline void warn_or_error_on_sync(const char* what) {
  const int mode = g_sync_debug_mode.load(std::memory_order_relaxed);
  if (mode == 0) return;
  TORCH_CHECK(mode != 2, "ocl: called a synchronizing operation (", what, ") with sync debug mode 'error'");
  TORCH_WARN("ocl: called a synchronizing operation (", what, ")");
}

} // namespace pytorch_ocl
