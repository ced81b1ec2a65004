// Pinned (page-locked) host memory: OpenCL buffers made with CL_MEM_ALLOC_HOST_PTR and
// mapped once. Copies from/to it can run asynchronously; a block is reused only after
// the copies recorded on it have finished.
#pragma once
#include <dlprim/cl.h>

#include <c10/core/Allocator.h>

namespace pytorch_ocl {

c10::Allocator* host_allocator();
bool is_pinned(const void* ptr);
// Keeps the pinned block holding `ptr` from reuse until `event` completes (retains it).
void record_host_use(const void* ptr, cl_event event);

} // namespace pytorch_ocl
