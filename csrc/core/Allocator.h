// Caching device allocator. Memory model: the allocator hands out addresses in a private
// virtual range; each segment (one cl_mem) owns [vbase, vbase + size), so data_ptr()
// arithmetic stays meaningful and any pointer maps back to (cl_mem, byte offset).
#pragma once
#include <dlprim/cl.h>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

#include <cstdint>
#include <vector>

namespace pytorch_ocl {

struct BufferRef {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // bytes
  int device = -1;
};

// The buffer holding virtual address `addr`, which lies in the allocation `owner`
// (O(1) when `owner` was made by this allocator, else a lookup by address).
BufferRef buffer_from_ptr(const void* addr, const c10::DataPtr* owner = nullptr);

// A buffer made outside the allocator (imported memory): an address range of its own that buffer_from_ptr maps
// back to `mem`; the caller keeps `mem` alive until unregister_external_buffer.
uintptr_t register_external_buffer(cl_mem mem, size_t size, int device);
void unregister_external_buffer(uintptr_t vbase);

c10::DeviceAllocator* device_allocator();

// Stats of one device in the layout of torch.cuda.memory_stats().
c10::CachingDeviceAllocator::DeviceStats device_stats(int device);
void reset_peak_stats(int device);
void reset_accumulated_stats(int device);
void empty_cache();

// Caps what the device's cache may reserve at `fraction` of the device's global memory (as
// torch.cuda.set_per_process_memory_fraction; PYTORCH_OCL_MEMORY_LIMIT still applies if lower).
void set_memory_fraction(int device, double fraction);
double memory_fraction(int device);

// torch.ocl.caching_allocator_enable(False): frees return unused segments to the driver at once.
void set_caching_enabled(bool enabled);
bool caching_enabled();

// The device's segments and their blocks, for torch.ocl.memory_snapshot().
struct BlockSnapshot {
  uint64_t address, size, requested;
  const char* state;  // "active_allocated", "active_pending_free" or "inactive", as CUDA's
};
struct SegmentSnapshot {
  int device;
  uint64_t address, total_size;
  int64_t stream;
  bool small;
  std::vector<BlockSnapshot> blocks;
};
std::vector<SegmentSnapshot> snapshot(int device);

// Graph memory pools (torch.ocl.graph): a pool id is < 0 and names the pseudo stream under which
// the pool's segments and free blocks are kept, apart from the general cache. While `stream`
// captures, its allocations come from `pool`; the pool's memory stays reserved (never reused by
// others, never released by empty_cache) until its last user releases it.
int64_t new_graph_pool();
void begin_pool_capture(int device, c10::StreamId stream, int64_t pool);  // also retains the pool
void end_pool_capture(int device, c10::StreamId stream);
void retain_graph_pool(int device, int64_t pool);
void release_graph_pool(int device, int64_t pool);

} // namespace pytorch_ocl
