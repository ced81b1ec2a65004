// Streams are in-order OpenCL command queues. Stream id 0 is the device's default queue,
// ids 1..kPoolSize the shared pool, higher ids queues made by getNewStream.
#pragma once
#include <dlprim/cl.h>

#include <c10/core/Stream.h>

namespace dlprim {
class Context;
}

namespace pytorch_ocl {

constexpr int kStreamPoolSize = 8;

cl_command_queue queue_of(const c10::Stream& stream);
c10::Stream current_stream(int device);
c10::Stream default_stream(int device);
c10::Stream stream_from_pool(int device);
c10::Stream new_stream(int device);
// Returns the previous current stream of the stream's device.
c10::Stream exchange_stream(const c10::Stream& stream);

// Queue of the current stream of `device`: where an op enqueues its work.
cl_command_queue current_queue(int device);
// Called after enqueueing an op's work: submits batches to the device now and then
// (a host wait submits everything anyway).
void note_enqueued(cl_command_queue q);
void flush(cl_command_queue q);

bool query_stream(const c10::Stream& stream);
void synchronize_stream(const c10::Stream& stream);
// Waits for every queue of `device` (all devices when -1).
void synchronize_device(int device);
// clFinish on every queue of the device whose context is `ctx` (none else: no checks collected, no host wait
// counted): before a deferred tuning times its candidates (dlprim::set_tune_idle_hook).
void finish_queues_of(const dlprim::Context& ctx);

} // namespace pytorch_ocl
