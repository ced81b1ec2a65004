// Pinned (page-locked) host memory: OpenCL buffers made with CL_MEM_ALLOC_HOST_PTR and
// mapped once. Copies from/to it can run asynchronously; a block is reused only after
// the copies recorded on it have finished.
#pragma once
#include <dlprim/cl.h>

#include <c10/core/Allocator.h>

#include <cstdint>
#include <map>
#include <string>

namespace pytorch_ocl {

c10::Allocator* host_allocator();
bool is_pinned(const void* ptr);
// Keeps the pinned block holding `ptr` from reuse until `event` completes (retains it).
void record_host_use(const void* ptr, cl_event event);

// torch.ocl.host_memory_stats(): torch.cuda's flat keys (allocations/allocated_bytes/active_requests/
// active_bytes .current/.peak/.allocated/.freed, num_host_alloc/free, host_alloc/free_time.*, in us).
std::map<std::string, int64_t> host_memory_stats();
void reset_peak_host_memory_stats();
void reset_accumulated_host_memory_stats();

} // namespace pytorch_ocl
