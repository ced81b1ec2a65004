// Caching device allocator. Memory model: the allocator hands out addresses in a private
// virtual range; each segment (one cl_mem) owns [vbase, vbase + size), so data_ptr()
// arithmetic stays meaningful and any pointer maps back to (cl_mem, byte offset).
#pragma once
#include <dlprim/cl.h>

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/core/Stream.h>

#include <cstdint>

namespace pytorch_ocl {

struct BufferRef {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // bytes
  int device = -1;
};

// The buffer holding virtual address `addr`, which lies in the allocation `owner`
// (O(1) when `owner` was made by this allocator, else a lookup by address).
BufferRef buffer_from_ptr(const void* addr, const c10::DataPtr* owner = nullptr);

c10::DeviceAllocator* device_allocator();

// Stats of one device in the layout of torch.cuda.memory_stats().
c10::CachingDeviceAllocator::DeviceStats device_stats(int device);
void reset_peak_stats(int device);
void reset_accumulated_stats(int device);
void empty_cache();

} // namespace pytorch_ocl
