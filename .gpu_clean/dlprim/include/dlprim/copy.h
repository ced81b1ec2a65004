// Device-to-device byte copies within one context.
#pragma once
#include <dlprim/context.h>
#include <dlprim/typed_kernels.h>

#include <cstdint>

namespace dlprim {

// Copies `nbytes` from src to dst (offsets in bytes). On GPUs, copies of at least 1 MiB whose
// two addresses agree mod 16 run as a kernel of 16-byte vectors: NVIDIA's clEnqueueCopyBuffer
// reaches ~0.83 of CUDA's device-to-device bandwidth, this kernel 0.97-1.0 (H200, 16-256 MiB).
// The rest use clEnqueueCopyBuffer.
void copy_bytes(const Context& ctx, cl_command_queue q, Buffer dst, Buffer src, uint64_t nbytes);

} // namespace dlprim
