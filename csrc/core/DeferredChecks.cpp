#include "core/DeferredChecks.h"

#include "core/Device.h"
#include "core/SyncDebug.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace pytorch_ocl {

namespace {

constexpr int kSlots = 1024;  // slot 0 is the discard slot

struct Committed {
  int slot;
  std::function<void()> raise;
};

struct InFlight {
  cl_event ev = nullptr;
  int lo = 0;
  std::unique_ptr<int32_t[]> host;  // slots [lo, lo + n)
  std::vector<Committed> entries;
};

struct QueueSlots {
  int device = 0;
  cl_mem mem = nullptr;  // never released: queues and contexts live until exit
  std::vector<int> free;
  std::vector<Committed> committed;
  std::vector<InFlight> inflight;
};

std::mutex g_mutex;
std::map<cl_command_queue, QueueSlots> g_queues;

QueueSlots& slots_of(int device, cl_command_queue q) {
  auto it = g_queues.find(q);
  if (it != g_queues.end()) return it->second;
  QueueSlots s;
  s.device = device;
  cl_int err = CL_SUCCESS;
  s.mem = clCreateBuffer(context(device).context(), CL_MEM_READ_WRITE, kSlots * sizeof(int32_t), nullptr, &err);
  TORCH_CHECK(err == CL_SUCCESS, "ocl: clCreateBuffer for the index check flags failed: ", dlprim::cl_error_name(err));
  const int32_t zero = 0;
  err = clEnqueueFillBuffer(q, s.mem, &zero, sizeof(zero), 0, kSlots * sizeof(int32_t), 0, nullptr, nullptr);
  TORCH_CHECK(err == CL_SUCCESS, "ocl: clearing the index check flags failed: ", dlprim::cl_error_name(err));
  for (int i = kSlots - 1; i >= 1; --i) s.free.push_back(i);
  return g_queues.emplace(q, std::move(s)).first->second;
}

// Needs g_mutex. Moves `s`'s committed slots into one non-blocking read.
void enqueue_locked(cl_command_queue q, QueueSlots& s) {
  if (s.committed.empty()) return;
  int lo = kSlots, hi = 0;
  for (const Committed& c : s.committed) {
    lo = std::min(lo, c.slot);
    hi = std::max(hi, c.slot);
  }
  InFlight f;
  f.lo = lo;
  f.host.reset(new int32_t[hi - lo + 1]);
  cl_int err = clEnqueueReadBuffer(q, s.mem, CL_FALSE, lo * sizeof(int32_t), (hi - lo + 1) * sizeof(int32_t),
                                   f.host.get(), 0, nullptr, &f.ev);
  TORCH_CHECK(err == CL_SUCCESS, "ocl: reading the index check flags failed: ", dlprim::cl_error_name(err));
  f.entries.swap(s.committed);
  s.inflight.push_back(std::move(f));
}

bool complete(cl_event ev) {
  cl_int st = CL_QUEUED;
  return clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, nullptr) == CL_SUCCESS &&
         st <= CL_COMPLETE;
}

// Needs g_mutex. Evaluates the finished reads of `s` (all of them when `waited`): frees clean
// slots, re-zeroes set ones, and returns the first error's raiser.
std::function<void()> collect_locked(cl_command_queue q, QueueSlots& s, bool waited) {
  std::function<void()> first;
  std::vector<InFlight> keep;
  for (InFlight& f : s.inflight) {
    if (waited ? clWaitForEvents(1, &f.ev) != CL_SUCCESS : !complete(f.ev)) {
      keep.push_back(std::move(f));
      continue;
    }
    clReleaseEvent(f.ev);
    for (Committed& c : f.entries) {
      if (f.host[c.slot - f.lo] != 0) {
        const int32_t zero = 0;  // the pattern is copied at the enqueue
        clEnqueueFillBuffer(q, s.mem, &zero, sizeof(zero), c.slot * sizeof(int32_t), sizeof(int32_t), 0, nullptr,
                            nullptr);
        if (!first) first = std::move(c.raise);
      }
      s.free.push_back(c.slot);
    }
  }
  s.inflight.swap(keep);
  return first;
}

} // namespace

IndexCheckMode index_check_mode() {
  static const IndexCheckMode mode = [] {
    const char* v = std::getenv("PYTORCH_OCL_INDEX_CHECK");
    if (!v || !*v || std::strcmp(v, "1") == 0 || std::strcmp(v, "deferred") == 0) return IndexCheckMode::Deferred;
    if (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0) return IndexCheckMode::Off;
    if (std::strcmp(v, "sync") == 0) return IndexCheckMode::Sync;
    TORCH_WARN("PYTORCH_OCL_INDEX_CHECK=", v, " is not one of deferred, sync, 0: using deferred");
    return IndexCheckMode::Deferred;
  }();
  return mode;
}

DeviceFlag acquire_flag(int device, cl_command_queue q, bool discard) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      QueueSlots& s = slots_of(device, q);
      if (discard) return {s.mem, 0, -1};
      if (!s.free.empty()) {
        int slot = s.free.back();
        s.free.pop_back();
        return {s.mem, slot, slot};
      }
    }
    // Every slot is in use: this op waits for the queue and looks at them first.
    enqueue_check(device, q);
    DLPRIM_CL_CHECK(clFinish(q));
    count_wait(g_host_waits.finishes);
    collect_checks(device, q);
  }
  TORCH_CHECK(false, "ocl: out of index check slots (", kSlots, " ops between two waits for the device)");
}

void commit_flag(int device, cl_command_queue q, const DeviceFlag& f, std::function<void()> raise) {
  if (f.slot < 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  slots_of(device, q).committed.push_back({f.slot, std::move(raise)});
}

void enqueue_check(int device, cl_command_queue q) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_queues.find(q);
  if (it != g_queues.end()) enqueue_locked(q, it->second);
}

void collect_checks(int device, cl_command_queue q) {
  std::function<void()> first;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (auto& [queue, s] : g_queues) {
      if (q ? queue != q : (device >= 0 && s.device != device)) continue;
      if (s.inflight.empty()) continue;
      auto f = collect_locked(queue, s, q != nullptr);
      if (f && !first) first = std::move(f);
    }
  }
  if (first) first();  // outside the lock: the raiser may copy to the host to name the index
}

void check_now_if_sync(int device, cl_command_queue q) {
  if (index_check_mode() != IndexCheckMode::Sync) return;
  count_wait(g_host_waits.reads);
  enqueue_check(device, q);
  collect_checks(device, q);
}

int64_t pending_checks() {
  std::lock_guard<std::mutex> lock(g_mutex);
  int64_t n = 0;
  for (auto& [queue, s] : g_queues) {
    n += static_cast<int64_t>(s.committed.size());
    for (auto& f : s.inflight) n += static_cast<int64_t>(f.entries.size());
  }
  return n;
}

} // namespace pytorch_ocl
