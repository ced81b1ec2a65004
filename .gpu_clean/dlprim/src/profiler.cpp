#include <dlprim/profiler.h>

#include <atomic>
#include <mutex>
#include <utility>

namespace dlprim {
namespace profiler {

namespace {
std::atomic<bool> g_on{false};
std::mutex g_mutex;
std::vector<std::pair<std::string, cl_event>> g_events;
} // namespace

void start() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (auto& e : g_events) clReleaseEvent(e.second);
  g_events.clear();
  g_on = true;
}

bool recording() { return g_on.load(std::memory_order_relaxed); }

void record(const std::string& label, cl_event event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_events.emplace_back(label, event);
}

std::vector<KernelRecord> stop() {
  std::vector<std::pair<std::string, cl_event>> events;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_on = false;
    events.swap(g_events);
  }
  std::vector<KernelRecord> out;
  for (auto& e : events) {
    KernelRecord r;
    r.label = e.first;
    if (clWaitForEvents(1, &e.second) == CL_SUCCESS) {
      cl_ulong t0 = 0, t1 = 0;
      clGetEventProfilingInfo(e.second, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
      clGetEventProfilingInfo(e.second, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
      r.start_ns = t0;
      r.end_ns = t1;
    }
    clReleaseEvent(e.second);
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace profiler
} // namespace dlprim
