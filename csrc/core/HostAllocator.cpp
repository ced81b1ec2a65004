#include "core/HostAllocator.h"

#include "core/Device.h"
#include "core/Stream.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <vector>

namespace pytorch_ocl {

namespace {

struct HostBlock {
  cl_mem mem;
  void* host;
  size_t size;
  bool in_use = false;
  std::vector<cl_event> uses;
};

// torch.cuda.host_memory_stats()'s counters (own struct: c10's Stat is not in every supported torch).
struct Counter {
  int64_t current = 0, peak = 0, allocated = 0, freed = 0;
  void add(int64_t n) {
    current += n;
    peak = std::max(peak, current);
    (n >= 0 ? allocated : freed) += n >= 0 ? n : -n;
  }
};
struct HostStats {
  Counter allocations, allocated_bytes, active_requests, active_bytes;
  int64_t alloc_us_total = 0, alloc_us_max = 0, alloc_count = 0;
  int64_t alloc_us_min = std::numeric_limits<int64_t>::max();  // none yet
};
HostStats g_stats;  // guarded by g_mutex

std::mutex g_mutex;
std::map<uintptr_t, HostBlock*> g_blocks;            // by host address
std::multimap<size_t, HostBlock*> g_free;            // by size

bool uses_done(HostBlock* b) {
  for (cl_event e : b->uses) {
    cl_int st = CL_QUEUED;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, nullptr);
    if (st != CL_COMPLETE && st >= 0) return false;
  }
  for (cl_event e : b->uses) clReleaseEvent(e);
  b->uses.clear();
  return true;
}

void free_host(void* ctx) {
  auto* b = static_cast<HostBlock*>(ctx);
  std::lock_guard<std::mutex> lock(g_mutex);
  b->in_use = false;
  g_stats.active_requests.add(-1);
  g_stats.active_bytes.add(-int64_t(b->size));
  g_free.emplace(b->size, b);
}

size_t size_class(size_t n) {
  size_t s = 4096;
  while (s < n) s *= 2;
  return s;
}

class PinnedAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
    size_t size = size_class(n);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      for (auto it = g_free.lower_bound(size); it != g_free.end() && it->first == size; ++it) {
        if (!uses_done(it->second)) continue;
        HostBlock* b = it->second;
        g_free.erase(it);
        b->in_use = true;
        g_stats.active_requests.add(1);
        g_stats.active_bytes.add(int64_t(size));
        return c10::DataPtr(b->host, b, &free_host, c10::Device(c10::kCPU));
      }
    }
    TORCH_CHECK(device_count() > 0, "ocl: pinned memory needs an OpenCL device: ", enumeration_error());
    int device = current_device();
    dlprim::Context& ctx = context(device);
    const auto start = std::chrono::steady_clock::now();
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &err);
    TORCH_CHECK_WITH(OutOfMemoryError, err == CL_SUCCESS, "ocl: cannot allocate ", size,
                     " bytes of pinned host memory: ", dlprim::cl_error_name(err));
    void* host = clEnqueueMapBuffer(default_queue(device), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    size, 0, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      clReleaseMemObject(mem);
      TORCH_CHECK(false, "ocl: cannot map pinned host memory: ", dlprim::cl_error_name(err));
    }
    auto* b = new HostBlock{mem, host, size, true, {}};
    const int64_t us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(g_mutex);
    g_blocks[reinterpret_cast<uintptr_t>(host)] = b;
    g_stats.allocations.add(1);
    g_stats.allocated_bytes.add(int64_t(size));
    g_stats.active_requests.add(1);
    g_stats.active_bytes.add(int64_t(size));
    g_stats.alloc_us_min = std::min(g_stats.alloc_us_min, us);
    g_stats.alloc_us_max = std::max(g_stats.alloc_us_max, us);
    g_stats.alloc_us_total += us;
    ++g_stats.alloc_count;
    return c10::DataPtr(host, b, &free_host, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

private:
  static cl_command_queue default_queue(int device) { return queue_of(default_stream(device)); }
};

PinnedAllocator g_pinned;

HostBlock* find_block(const void* ptr) {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  auto it = g_blocks.upper_bound(addr);
  if (it == g_blocks.begin()) return nullptr;
  HostBlock* b = std::prev(it)->second;
  return addr < reinterpret_cast<uintptr_t>(b->host) + b->size ? b : nullptr;
}

} // namespace

c10::Allocator* host_allocator() { return &g_pinned; }

bool is_pinned(const void* ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return find_block(ptr) != nullptr;
}

void record_host_use(const void* ptr, cl_event event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  HostBlock* b = find_block(ptr);
  if (!b) return;
  clRetainEvent(event);
  b->uses.push_back(event);
}

std::map<std::string, int64_t> host_memory_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::map<std::string, int64_t> out;
  auto put = [&](const std::string& name, const Counter& c) {
    out[name + ".current"] = c.current;
    out[name + ".peak"] = c.peak;
    out[name + ".allocated"] = c.allocated;
    out[name + ".freed"] = c.freed;
  };
  put("allocations", g_stats.allocations);
  put("allocated_bytes", g_stats.allocated_bytes);
  put("active_requests", g_stats.active_requests);
  put("active_bytes", g_stats.active_bytes);
  out["num_host_alloc"] = g_stats.alloc_count;
  out["num_host_free"] = 0;  // pinned blocks are kept for reuse, never returned
  out["host_alloc_time.total"] = g_stats.alloc_us_total;
  out["host_alloc_time.max"] = g_stats.alloc_us_max;
  out["host_alloc_time.min"] =
      g_stats.alloc_us_min == std::numeric_limits<int64_t>::max() ? 0 : g_stats.alloc_us_min;
  out["host_alloc_time.count"] = g_stats.alloc_count;
  out["host_alloc_time.avg"] = g_stats.alloc_count ? g_stats.alloc_us_total / g_stats.alloc_count : 0;
  for (const char* k : {"total", "max", "min", "count", "avg"}) out[std::string("host_free_time.") + k] = 0;
  return out;
}

void reset_peak_host_memory_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Counter* c : {&g_stats.allocations, &g_stats.allocated_bytes, &g_stats.active_requests, &g_stats.active_bytes})
    c->peak = c->current;
  g_stats.alloc_us_max = 0;
  g_stats.alloc_us_min = std::numeric_limits<int64_t>::max();
}

void reset_accumulated_host_memory_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Counter* c : {&g_stats.allocations, &g_stats.allocated_bytes, &g_stats.active_requests, &g_stats.active_bytes})
    c->allocated = c->freed = 0;
  g_stats.alloc_us_total = g_stats.alloc_count = 0;
}

} // namespace pytorch_ocl
