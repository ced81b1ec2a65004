#include "core/Stream.h"
#include "core/DeferredChecks.h"
#include "core/SyncDebug.h"

#include "core/Device.h"
#include "core/Graph.h"

#include <c10/util/Exception.h>

#include <array>
#include <atomic>
#include <chrono>
#include <thread>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace pytorch_ocl {

namespace {

constexpr int kMaxDevices = 64;
constexpr unsigned kFlushEvery = 16;

// `uses` counts handings-out of the queue to code that may enqueue on it (current_queue, queue_of);
// `idle_at` is the count a synchronize or a completed query saw before finding the queue empty. Equal
// counts mean nothing can have been enqueued since, so query() answers true without a marker (a marker
// on a busy shared GPU can take longer to retire than query() may block). Overcounting is safe. Missed:
// another thread that took the queue before a synchronize and enqueues after it finished (ops enqueue
// right after taking the queue; a marker poll would race with that thread the same way).
struct Queue {
  cl_command_queue q = nullptr;
  std::atomic<uint64_t> uses{0};
  std::atomic<uint64_t> idle_at{~uint64_t(0)};
};

struct DeviceQueues {
  std::mutex m;
  std::deque<Queue> queues;  // deque: addresses stay valid while it grows
  std::atomic<unsigned> pool_next{0};
};

DeviceQueues& queues_of(int device) {
  static std::array<DeviceQueues, kMaxDevices> all;
  check_device_index(device);
  TORCH_CHECK(device < kMaxDevices, "ocl: at most ", kMaxDevices, " devices are supported");
  return all[device];
}

Queue& queue_entry(int device, c10::StreamId id) {
  check_not_forked();
  DeviceQueues& dq = queues_of(device);
  std::lock_guard<std::mutex> lock(dq.m);
  if (dq.queues.empty()) {
    dlprim::Context& ctx = context(device);
    for (int i = 0; i <= kStreamPoolSize; ++i) dq.queues.emplace_back();  // atomics: no resize
    dq.queues[0].q = ctx.create_queue();
  }
  TORCH_CHECK(id >= 0 && static_cast<size_t>(id) < dq.queues.size(), "ocl: unknown stream id ", id,
              " on device ", device);
  Queue& e = dq.queues[id];
  if (!e.q) e.q = context(device).create_queue();  // pool queues are made on first use
  return e;
}

thread_local std::array<c10::StreamId, kMaxDevices> t_current{};

c10::Stream make_stream(int device, c10::StreamId id) {
  return c10::Stream(c10::Stream::UNSAFE, ocl_device(device), id);
}

} // namespace

cl_command_queue queue_of(const c10::Stream& stream) {
  Queue& e = queue_entry(stream.device_index(), stream.id());
  e.uses.fetch_add(1, std::memory_order_relaxed);
  return e.q;
}

c10::Stream current_stream(int device) {
  check_device_index(device);
  return make_stream(device, t_current[device]);
}

c10::Stream default_stream(int device) {
  check_device_index(device);
  return make_stream(device, 0);
}

c10::Stream stream_from_pool(int device) {
  DeviceQueues& dq = queues_of(device);
  c10::StreamId id = 1 + (dq.pool_next++ % kStreamPoolSize);
  queue_entry(device, id);
  return make_stream(device, id);
}

c10::Stream new_stream(int device) {
  queue_entry(device, 0);  // creates the table
  DeviceQueues& dq = queues_of(device);
  cl_command_queue q = context(device).create_queue();
  std::lock_guard<std::mutex> lock(dq.m);
  dq.queues.emplace_back();
  dq.queues.back().q = q;
  return make_stream(device, static_cast<c10::StreamId>(dq.queues.size() - 1));
}

c10::Stream exchange_stream(const c10::Stream& stream) {
  int device = stream.device_index();
  c10::Stream old = current_stream(device);
  queue_entry(device, stream.id());  // validates the id
  t_current[device] = stream.id();
  return old;
}

cl_command_queue current_queue(int device) {
  // Per-op hot path: remember the last lookup (queues are never destroyed).
  thread_local int last_device = -1;
  thread_local c10::StreamId last_id = -1;
  thread_local Queue* last_entry = nullptr;
  check_not_forked();
  if (device == last_device && device >= 0 && t_current[device] == last_id) {
    last_entry->uses.fetch_add(1, std::memory_order_relaxed);
    return last_entry->q;
  }
  Queue& e = queue_entry(device, t_current[device]);
  last_device = device;
  last_id = t_current[device];
  last_entry = &e;
  e.uses.fetch_add(1, std::memory_order_relaxed);
  return e.q;
}

void note_enqueued(cl_command_queue q) {
  // Cheap path: most calls only count. The queue pointer is looked up only to flush.
  thread_local unsigned count = 0;
  if (++count % kFlushEvery == 0) clFlush(q);
}

void flush(cl_command_queue q) { clFlush(q); }

bool query_stream(const c10::Stream& stream) {
  Queue& e = queue_entry(stream.device_index(), stream.id());
  cl_command_queue q = e.q;
  check_not_capturing(q, "querying the stream (Stream.query)");
  uint64_t uses = e.uses.load();
  if (e.idle_at.load() == uses) return true;
  cl_event ev = nullptr;
  DLPRIM_CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev));
  clFlush(q);
  // The marker completes as soon as the queue reaches it: poll briefly so that an idle
  // queue answers true, without blocking long on a busy one. PoCL's scheduler thread can take
  // a few milliseconds to retire a marker on an idle queue (2 ms was seen to miss on CI).
  cl_int status = CL_QUEUED;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
  do {
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
    if (status == CL_COMPLETE || status < 0) break;
    std::this_thread::yield();
  } while (std::chrono::steady_clock::now() < deadline);
  clReleaseEvent(ev);
  if (status != CL_COMPLETE) return false;
  e.idle_at.store(uses);
  return true;
}

void synchronize_stream(const c10::Stream& stream) {
  Queue& e = queue_entry(stream.device_index(), stream.id());
  cl_command_queue q = e.q;
  check_not_capturing(q, "synchronizing the stream (Stream.synchronize)");
  count_wait(g_host_waits.finishes);
  enqueue_check(stream.device_index(), q);
  uint64_t uses = e.uses.load();
  DLPRIM_CL_CHECK(clFinish(q));
  e.idle_at.store(uses);
  collect_checks(stream.device_index(), q);
}

void finish_queues_of(const dlprim::Context& ctx) {
  for (int d = 0; d < device_count(); ++d) {
    if (!has_context(d) || &context(d) != &ctx) continue;
    DeviceQueues& dq = queues_of(d);
    std::vector<cl_command_queue> qs;
    {
      std::lock_guard<std::mutex> lock(dq.m);
      for (auto& e : dq.queues)
        if (e.q) qs.push_back(e.q);
    }
    for (cl_command_queue q : qs) clFinish(q);  // an error here meets the op's own wait later
  }
}

void synchronize_device(int device) {
  if (device < 0) {
    for (int d = 0; d < device_count(); ++d)
      if (has_context(d)) synchronize_device(d);
    return;
  }
  if (!has_context(device)) return;
  DeviceQueues& dq = queues_of(device);
  std::vector<Queue*> qs;
  {
    std::lock_guard<std::mutex> lock(dq.m);
    for (auto& e : dq.queues)
      if (e.q) qs.push_back(&e);
  }
  for (auto e : qs) check_not_capturing(e->q, "synchronizing the device (torch.ocl.synchronize)");
  count_wait(g_host_waits.finishes);
  for (auto e : qs) enqueue_check(device, e->q);
  std::vector<uint64_t> uses;
  for (auto e : qs) uses.push_back(e->uses.load());
  for (size_t i = 0; i < qs.size(); ++i) {
    DLPRIM_CL_CHECK(clFinish(qs[i]->q));
    qs[i]->idle_at.store(uses[i]);
  }
  collect_checks(device, nullptr);
}

} // namespace pytorch_ocl
