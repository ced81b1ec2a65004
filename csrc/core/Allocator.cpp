#include "core/Allocator.h"

#include "core/Device.h"
#include "core/Stream.h"
#include "core/TorchCompat.h"

#include <c10/util/Exception.h>
#include <dlprim/thread_memo.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace pytorch_ocl {

namespace {

using c10::CachingDeviceAllocator::DeviceStats;

constexpr size_t kAlign = 512;                // every block starts on this boundary
constexpr size_t kSmallSize = 1 << 20;        // requests up to 1 MiB share 2 MiB segments
constexpr size_t kSmallSegment = 2 << 20;
constexpr size_t kLargeRound = 2 << 20;       // large segments are multiples of 2 MiB
constexpr size_t kMinLargeSplit = 1 << 20;    // leftover worth keeping as its own block
constexpr uintptr_t kVirtualBase = uintptr_t(1) << 44;

struct Segment;

struct Block {
  Segment* seg;
  size_t offset, size, requested = 0;
  bool allocated = false;
  Block *prev = nullptr, *next = nullptr;
  std::set<c10::StreamId> stream_uses;
  std::vector<cl_event> pending;  // frees waiting for other streams
  uintptr_t addr() const;
};

struct Segment {
  cl_mem mem;
  uintptr_t vbase;
  size_t size;
  int device;
  c10::StreamId stream;
  bool small;
  Block* head = nullptr;  // block at offset 0; blocks chain through next (for snapshots)
};

uintptr_t Block::addr() const { return seg->vbase + offset; }

struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->seg->stream != b->seg->stream) return a->seg->stream < b->seg->stream;
    if (a->size != b->size) return a->size < b->size;
    return a->addr() < b->addr();
  }
};

std::atomic<uintptr_t> g_next_vbase{kVirtualBase};
std::atomic<bool> g_caching{true};  // torch.ocl.caching_allocator_enable
std::mutex g_segments_mutex;
std::map<uintptr_t, Segment*> g_segments;  // by vbase, for lookups by address
// Buffers the allocator did not make (memory imported from another API, ExternalMemory.cpp): addresses in the
// same range, found by lookups, never cached, freed or listed in snapshots.
std::map<uintptr_t, Segment*> g_external;

void free_block_ptr(void* ctx);

void add_stat(c10::CachingAllocator::StatArray& s, bool small, int64_t delta) {
  for (size_t t : {size_t(0), small ? size_t(1) : size_t(2)}) {
    if (delta >= 0)
      s[t].increase(static_cast<size_t>(delta));
    else
      s[t].decrease(static_cast<size_t>(-delta));
  }
}

uint64_t memory_limit_from_env() {
  const char* v = std::getenv("PYTORCH_OCL_MEMORY_LIMIT");
  if (!v || !*v) return 0;
  try {
    return std::stoull(v);
  } catch (...) {
    TORCH_CHECK(false, "PYTORCH_OCL_MEMORY_LIMIT must be a number of bytes, got '", v, "'");
  }
}

// PYTORCH_OCL_ALLOC_EXACT=1 (memory checkers, scripts/oclgrind.sh; tiny tests only): every tensor
// gets a cl_mem of exactly its size, never reused or released, so an access past a tensor's end
// leaves its buffer and the checker reports it (in a shared segment it would hit a neighbour).
bool exact_allocations() {
  static const bool on = [] {
    const char* v = std::getenv("PYTORCH_OCL_ALLOC_EXACT");
    return v && std::string(v) == "1";
  }();
  return on;
}

std::string mib(uint64_t bytes) { return std::to_string(bytes / double(1 << 20)).substr(0, 10) + " MiB"; }

class DeviceCache {
public:
  explicit DeviceCache(int device) : device_(device) {}

  Block* malloc(size_t request, c10::StreamId stream) {
    std::lock_guard<std::mutex> lock(m_);
    // A stream capturing a graph allocates from the graph's private pool (a pseudo stream id < 0).
    for (const auto& [capture_stream, pool] : capturing_)
      if (capture_stream == stream) stream = pool;
    size_t size = request < kAlign ? kAlign : (request + kAlign - 1) / kAlign * kAlign;
    if (exact_allocations()) size = request > 0 ? request : 1;
    bool small = size <= kSmallSize;
    Block* b = exact_allocations() ? nullptr : find_free(size, stream, small);
    if (!b && !exact_allocations()) {
      process_pending();
      b = find_free(size, stream, small);
    }
    if (!b) b = new_segment(size, stream, small, request);
    b = split(b, size);
    b->allocated = true;
    b->requested = request;
    add_stat(stats_.allocation, small, 1);
    add_stat(stats_.active, small, 1);
    add_stat(stats_.allocated_bytes, small, b->size);
    add_stat(stats_.active_bytes, small, b->size);
    add_stat(stats_.requested_bytes, small, request);
    return b;
  }

  void free(Block* b) {
    std::lock_guard<std::mutex> lock(m_);
    bool small = b->seg->small;
    add_stat(stats_.allocation, small, -1);
    add_stat(stats_.allocated_bytes, small, -int64_t(b->size));
    add_stat(stats_.requested_bytes, small, -int64_t(b->requested));
    b->allocated = false;
    // Never reused nor released: a later tensor gets a buffer of its own, and Oclgrind's checker
    // mistracks a cl_mem whose slot held a released one (false uninitialized-value reports).
    if (exact_allocations()) return;
    if (!b->stream_uses.empty()) {
      // Kernels queued on other streams may still use the memory: reuse waits for them.
      for (c10::StreamId id : b->stream_uses) {
        cl_command_queue q = queue_of(c10::Stream(c10::Stream::UNSAFE, ocl_device(device_), id));
        cl_event ev = nullptr;
        DLPRIM_CL_CHECK(clEnqueueMarkerWithWaitList(q, 0, nullptr, &ev));
        clFlush(q);
        b->pending.push_back(ev);
      }
      b->stream_uses.clear();
      pending_.push_back(b);
    } else {
      release_to_pool(b);
      // The last blocks of a released graph pool give its segments back as soon as they are free.
      if (b->seg->stream < 0 && !pool_refs_.count(b->seg->stream) && !b->prev && !b->next)
        release_whole([](const Segment* s) { return s->stream < 0; });
    }
    // Caching off: every segment with nothing in use goes back to the driver now (waiting for
    // the streams that still use freed blocks), so the next request allocates afresh.
    if (!g_caching.load(std::memory_order_relaxed)) release_cached();
  }

  void record_stream(Block* b, c10::StreamId stream) {
    std::lock_guard<std::mutex> lock(m_);
    if (stream != b->seg->stream) b->stream_uses.insert(stream);
  }

  void empty_cache() {
    std::lock_guard<std::mutex> lock(m_);
    release_cached();
  }

  DeviceStats stats() {
    std::lock_guard<std::mutex> lock(m_);
    return stats_;
  }

  void reset_peak() {
    std::lock_guard<std::mutex> lock(m_);
    for (c10::CachingAllocator::StatArray* a : stat_arrays()) for (auto& s : *a) s.reset_peak();
  }

  void reset_accumulated() {
    std::lock_guard<std::mutex> lock(m_);
    for (c10::CachingAllocator::StatArray* a : stat_arrays()) for (auto& s : *a) s.reset_accumulated();
    stats_.num_alloc_retries = stats_.num_ooms = 0;
  }

  void set_fraction(double f) {
    std::lock_guard<std::mutex> lock(m_);
    fraction_ = f;
  }

  double fraction() {
    std::lock_guard<std::mutex> lock(m_);
    return fraction_;
  }

  std::vector<SegmentSnapshot> snapshot() {
    std::lock_guard<std::mutex> lock(m_);  // before g_segments_mutex, as in release_cached
    std::lock_guard<std::mutex> seg_lock(g_segments_mutex);
    std::vector<SegmentSnapshot> out;
    for (const auto& [vbase, s] : g_segments) {
      if (s->device != device_) continue;
      SegmentSnapshot seg{device_, vbase, s->size, s->stream, s->small, {}};
      for (Block* b = s->head; b; b = b->next) {
        const char* state = b->allocated ? "active_allocated" : !b->pending.empty() ? "active_pending_free" : "inactive";
        seg.blocks.push_back({b->addr(), b->size, b->allocated ? b->requested : 0, state});
      }
      out.push_back(std::move(seg));
    }
    return out;
  }

private:
  std::vector<c10::CachingAllocator::StatArray*> stat_arrays() {
    return {&stats_.allocation, &stats_.segment, &stats_.active, &stats_.inactive_split,
            &stats_.allocated_bytes, &stats_.reserved_bytes, &stats_.active_bytes,
            &stats_.inactive_split_bytes, &stats_.requested_bytes};
  }

  Block* find_free(size_t size, c10::StreamId stream, bool small) {
    auto& pool = small ? small_pool_ : large_pool_;
    Segment key_seg{nullptr, 0, 0, device_, stream, small};
    Block key{&key_seg, 0, size};
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->seg->stream != stream) return nullptr;
    Block* b = *it;
    pool.erase(it);
    if (b->prev || b->next) {
      add_stat(stats_.inactive_split, small, -1);
      add_stat(stats_.inactive_split_bytes, small, -int64_t(b->size));
    }
    return b;
  }

  Block* split(Block* b, size_t size) {
    size_t rest = b->size - size;
    bool small = b->seg->small;
    if (rest < (small ? kAlign : kMinLargeSplit)) return b;
    auto* r = new Block{b->seg, b->offset + size, rest};
    r->prev = b;
    r->next = b->next;
    if (b->next) b->next->prev = r;
    b->next = r;
    b->size = size;
    insert_free(r);
    return b;
  }

  void insert_free(Block* b) {
    (b->seg->small ? small_pool_ : large_pool_).insert(b);
    if (b->prev || b->next) {
      add_stat(stats_.inactive_split, b->seg->small, 1);
      add_stat(stats_.inactive_split_bytes, b->seg->small, b->size);
    }
  }

  void remove_free(Block* b) {
    (b->seg->small ? small_pool_ : large_pool_).erase(b);
    if (b->prev || b->next) {
      add_stat(stats_.inactive_split, b->seg->small, -1);
      add_stat(stats_.inactive_split_bytes, b->seg->small, -int64_t(b->size));
    }
  }

  void release_to_pool(Block* b) {
    bool small = b->seg->small;
    add_stat(stats_.active, small, -1);
    add_stat(stats_.active_bytes, small, -int64_t(b->size));
    for (Block* n : {b->prev, b->next}) {
      if (!n || n->allocated || !n->pending.empty() || is_pending(n)) continue;
      remove_free(n);
      if (n == b->prev) {
        b->offset = n->offset;
        b->prev = n->prev;
        if (b->prev) b->prev->next = b;
      } else {
        b->next = n->next;
        if (b->next) b->next->prev = b;
      }
      b->size += n->size;
      delete n;
    }
    if (!b->prev) b->seg->head = b;
    insert_free(b);
  }

  bool is_pending(Block* b) {
    for (Block* p : pending_)
      if (p == b) return true;
    return false;
  }

  void process_pending() {
    std::vector<Block*> still;
    for (Block* b : pending_) {
      bool done = true;
      for (cl_event ev : b->pending) {
        cl_int status = CL_QUEUED;
        clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, nullptr);
        if (status != CL_COMPLETE && status >= 0) done = false;
      }
      if (!done) {
        still.push_back(b);
        continue;
      }
      for (cl_event ev : b->pending) clReleaseEvent(ev);
      b->pending.clear();
      release_to_pool(b);
    }
    pending_.swap(still);
  }

  // Frees every segment with no block in use, except those of live graph pools (replays use them).
  void release_cached() {
    for (Block* b : pending_) {
      clWaitForEvents(static_cast<cl_uint>(b->pending.size()), b->pending.data());
    }
    process_pending();
    release_whole([](const Segment*) { return true; });
  }

  template <class Pred>
  void release_whole(Pred pred) {
    for (auto* pool : {&small_pool_, &large_pool_}) {
      std::vector<Block*> whole;
      for (Block* b : *pool)
        if (!b->prev && !b->next && pred(b->seg) && !pool_refs_.count(b->seg->stream)) whole.push_back(b);
      for (Block* b : whole) {
        pool->erase(b);
        Segment* s = b->seg;
        add_stat(stats_.segment, s->small, -1);
        add_stat(stats_.reserved_bytes, s->small, -int64_t(s->size));
        reserved_ -= s->size;
        {
          std::lock_guard<std::mutex> lock(g_segments_mutex);
          g_segments.erase(s->vbase);
        }
        clReleaseMemObject(s->mem);
        delete s;
        delete b;
      }
    }
  }

  Block* new_segment(size_t size, c10::StreamId stream, bool small, size_t request) {
    const dlprim::DeviceInfo& info = device_info(device_);
    size_t seg_size = exact_allocations() ? size
                      : small               ? kSmallSegment
                                            : (size + kLargeRound - 1) / kLargeRound * kLargeRound;
    TORCH_CHECK_WITH(OutOfMemoryError, seg_size <= info.max_alloc_size,
                     "ocl: out of memory: tried to allocate ", mib(request), " on device ", device_,
                     " (", info.name, "), larger than the device's maximum single allocation of ",
                     mib(info.max_alloc_size));
    uint64_t limit = info.global_mem_size;
    uint64_t env_limit = memory_limit_from_env();
    if (env_limit && env_limit < limit) limit = env_limit;
    const uint64_t fraction_limit = static_cast<uint64_t>(fraction_ * double(info.global_mem_size));
    const bool by_fraction = fraction_limit < limit;
    if (by_fraction) limit = fraction_limit;
    cl_mem mem = nullptr;
    for (int attempt = 0; attempt < 2 && !mem; ++attempt) {
      if (attempt == 1) {
        ++stats_.num_alloc_retries;
        release_cached();
      }
      if (reserved_ + seg_size > limit) continue;
      cl_int err = CL_SUCCESS;
      mem = clCreateBuffer(context(device_).context(), CL_MEM_READ_WRITE, seg_size, nullptr, &err);
      if (err != CL_SUCCESS) mem = nullptr;
    }
    if (!mem) {
      ++stats_.num_ooms;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "ocl: out of memory: tried to allocate ", mib(request),
                       " on device ", device_, " (", info.name, "); ", mib(reserved_),
                       " reserved by pytorch_ocl, ", mib(stats_.allocated_bytes[0].current),
                       " allocated, limit ", mib(limit),
                       by_fraction  ? " (set_per_process_memory_fraction(" + std::to_string(fraction_) + "))"
                       : env_limit  ? std::string(" (PYTORCH_OCL_MEMORY_LIMIT)")
                                    : std::string(" (device global memory)"));
    }
    auto* s = new Segment{mem, g_next_vbase.fetch_add(seg_size + kLargeRound), seg_size, device_, stream, small};
    {
      std::lock_guard<std::mutex> lock(g_segments_mutex);
      g_segments[s->vbase] = s;
    }
    reserved_ += seg_size;
    add_stat(stats_.segment, small, 1);
    add_stat(stats_.reserved_bytes, small, seg_size);
    s->head = new Block{s, 0, seg_size};
    return s->head;
  }

public:
  // Graph pools: `pool` (< 0) is the pseudo stream id of the pool's segments and free lists.
  void begin_capture(c10::StreamId stream, c10::StreamId pool) {
    std::lock_guard<std::mutex> lock(m_);
    for (const auto& c : capturing_)
      TORCH_CHECK(c.first != stream, "ocl: stream ", stream, " is already capturing a graph");
    capturing_.emplace_back(stream, pool);
    ++pool_refs_[pool];
  }
  void end_capture(c10::StreamId stream) {
    std::lock_guard<std::mutex> lock(m_);
    for (size_t i = 0; i < capturing_.size(); ++i)
      if (capturing_[i].first == stream) {
        capturing_.erase(capturing_.begin() + i);
        return;
      }
  }
  void retain_pool(c10::StreamId pool) {
    std::lock_guard<std::mutex> lock(m_);
    ++pool_refs_[pool];
  }
  void release_pool(c10::StreamId pool) {
    std::lock_guard<std::mutex> lock(m_);
    auto it = pool_refs_.find(pool);
    if (it == pool_refs_.end() || --it->second > 0) return;
    pool_refs_.erase(it);
    process_pending();
    release_whole([pool](const Segment* s) { return s->stream == pool; });
  }

private:
  int device_;
  std::vector<std::pair<c10::StreamId, c10::StreamId>> capturing_;  // (capturing stream, its pool)
  std::map<c10::StreamId, int> pool_refs_;  // live graph pools: graphs (and captures) using each
  std::mutex m_;
  std::set<Block*, BlockLess> small_pool_, large_pool_;
  std::vector<Block*> pending_;
  uint64_t reserved_ = 0;
  double fraction_ = 1.0;
  DeviceStats stats_;
};

DeviceCache& cache_of(int device) {
  // Every allocation and free comes here: a per-thread memo skips the lock (caches are created once and never
  // destroyed before exit).
  thread_local dlprim::ThreadMemo<int, DeviceCache, 1> memo;
  return memo.get(device, [device] {
    static std::mutex m;
    static std::vector<std::unique_ptr<DeviceCache>> caches;
    std::lock_guard<std::mutex> lock(m);
    if (caches.empty()) caches.resize(std::max(1, device_count()));
    check_device_index(device);
    if (!caches[device]) caches[device] = std::make_unique<DeviceCache>(device);
    return caches[device].get();
  });
}

void free_block_ptr(void* ctx) {
  if (!ctx) return;
  auto* b = static_cast<Block*>(ctx);
  cache_of(b->seg->device).free(b);
}

class OclAllocator final : public c10::DeviceAllocator {
public:
  c10::DataPtr allocate(size_t n) override {
    int device = current_device();
    if (n == 0) return c10::DataPtr(nullptr, nullptr, &free_block_ptr, ocl_device(device));
    c10::StreamId stream = current_stream(device).id();
    Block* b = cache_of(device).malloc(n, stream);
    return c10::DataPtr(reinterpret_cast<void*>(b->addr()), b, &free_block_ptr, ocl_device(device));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void*, const void*, std::size_t) const override {
    TORCH_CHECK(false, "ocl: Allocator::copy_data is not supported; use tensor.copy_()");
  }
  bool initialized() override { return true; }
  void emptyCache(c10::MempoolId_t) override { pytorch_ocl::empty_cache(); }
  void recordStream(const c10::DataPtr& ptr, c10::Stream stream) override {
    if (!ptr.get() || ptr.get_deleter() != &free_block_ptr) return;
    auto* b = static_cast<Block*>(ptr.get_context());
    cache_of(b->seg->device).record_stream(b, stream.id());
  }
  DeviceStats getDeviceStats(c10::DeviceIndex device) override { return device_stats(device); }
  void resetAccumulatedStats(c10::DeviceIndex device) override { reset_accumulated_stats(device); }
  void resetPeakStats(c10::DeviceIndex device) override { reset_peak_stats(device); }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    const auto& info = device_info(device);
    uint64_t used = device_stats(device).reserved_bytes[0].current;
    return {info.global_mem_size > used ? info.global_mem_size - used : 0, info.global_mem_size};
  }
};

OclAllocator g_allocator;

} // namespace

BufferRef buffer_from_ptr(const void* ptr, const c10::DataPtr* owner) {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  const Segment* s = nullptr;
  if (owner && owner->get_deleter() == &free_block_ptr && owner->get_context()) {
    s = static_cast<const Block*>(owner->get_context())->seg;
  } else {
    std::lock_guard<std::mutex> lock(g_segments_mutex);
    for (const auto* map : {&g_segments, &g_external}) {
      auto it = map->upper_bound(addr);
      if (it != map->begin() && addr <= std::prev(it)->second->vbase + std::prev(it)->second->size) {
        s = std::prev(it)->second;
        break;
      }
    }
  }
  TORCH_CHECK(s && addr >= s->vbase && addr <= s->vbase + s->size,
              "ocl: pointer ", ptr, " is not in memory allocated by pytorch_ocl");
  return {s->mem, addr - s->vbase, s->device};
}

uintptr_t register_external_buffer(cl_mem mem, size_t size, int device) {
  auto* s = new Segment{mem, g_next_vbase.fetch_add(size + kLargeRound), size, device, 0, false};
  std::lock_guard<std::mutex> lock(g_segments_mutex);
  g_external[s->vbase] = s;
  return s->vbase;
}

void unregister_external_buffer(uintptr_t vbase) {
  std::lock_guard<std::mutex> lock(g_segments_mutex);
  auto it = g_external.find(vbase);
  if (it == g_external.end()) return;
  delete it->second;
  g_external.erase(it);
}

c10::DeviceAllocator* device_allocator() { return &g_allocator; }

DeviceStats device_stats(int device) { return cache_of(device).stats(); }
void reset_peak_stats(int device) { cache_of(device).reset_peak(); }
void reset_accumulated_stats(int device) { cache_of(device).reset_accumulated(); }

void set_memory_fraction(int device, double fraction) {
  TORCH_CHECK(fraction >= 0.0 && fraction <= 1.0, "ocl: invalid memory fraction ", fraction,
              ": it must be between 0 and 1");
  cache_of(device).set_fraction(fraction);
}
void set_caching_enabled(bool enabled) { g_caching = enabled; }
bool caching_enabled() { return g_caching; }
double memory_fraction(int device) { return cache_of(device).fraction(); }
std::vector<SegmentSnapshot> snapshot(int device) { return cache_of(device).snapshot(); }

int64_t new_graph_pool() {
  static std::atomic<int64_t> next{1};
  return -next++;
}
void begin_pool_capture(int device, c10::StreamId stream, int64_t pool) { cache_of(device).begin_capture(stream, pool); }
void end_pool_capture(int device, c10::StreamId stream) { cache_of(device).end_capture(stream); }
void retain_graph_pool(int device, int64_t pool) { cache_of(device).retain_pool(pool); }
void release_graph_pool(int device, int64_t pool) { cache_of(device).release_pool(pool); }

void empty_cache() {
  for (int d = 0; d < device_count(); ++d)
    if (has_context(d)) cache_of(d).empty_cache();
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator);

} // namespace pytorch_ocl
