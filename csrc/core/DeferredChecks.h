// Device-side checks reported when the host next waits for the device, as CUDA's device-side
// asserts are: a kernel sets an int32 flag on the device instead of the host reading it back
// after every op (one blocking round trip per index op, which dominates batch-1 decoding).
//
// The flags are slots of one small buffer per queue, zero when free. An op takes a slot
// (acquire), passes it to its kernels, and on success hands it over with the function that
// raises its error (commit). The host looks at the committed slots of a queue, with one read of
// the buffer, wherever it waits for that queue anyway: a blocking copy to the host (item(),
// .cpu(), printing), Stream/Event.synchronize and torch.ocl.synchronize (all queues of the
// device). A set slot raises its op's error there, before the copied data is returned, so a value
// computed from a bad index never reaches the user unreported; the other set slots of that read
// are dropped (one error per synchronisation, as CUDA). A queue runs out of slots after
// kSlots checks without a wait: then the op that needs one waits and checks first.
//
// PYTORCH_OCL_INDEX_CHECK: unset/"1"/"deferred" = the above; "sync" = check right after the op
// (a blocking read per op, the error raised at the op and every tensor left untouched);
// "0" = no check (bad indices read zeros and write nothing). Inside a graph capture nothing is
// read: ops keep private flags (the caller's business) and bad rows are skipped.
#pragma once
#include <dlprim/cl.h>

#include <functional>

namespace pytorch_ocl {

enum class IndexCheckMode { Off, Deferred, Sync };
IndexCheckMode index_check_mode();

struct DeviceFlag {
  cl_mem mem = nullptr;
  int64_t offset = 0;  // in int32 elements
  int slot = -1;       // -1: the discard slot (never read)
};

// A zeroed slot on queue `q` of `device`; with `discard`, the shared slot nobody reads (checks off).
DeviceFlag acquire_flag(int device, cl_command_queue q, bool discard = false);
// Hands the slot over: `raise` runs (and should throw) at the wait that finds it set. Must follow
// the enqueue of every kernel that writes the slot.
void commit_flag(int device, cl_command_queue q, const DeviceFlag& f, std::function<void()> raise);
// Before the host waits for `q` (a blocking copy, clFinish) or before an asynchronous copy to
// the host: enqueues one non-blocking read of q's committed slots (nothing when none).
void enqueue_check(int device, cl_command_queue q);
// After a wait: looks at the reads enqueued so far, of `q` (waited for: complete) or, with
// q == nullptr, of every queue of `device` (-1: every device) whose read has completed, and
// raises the first set slot's error. No OpenCL call when nothing is pending.
void collect_checks(int device, cl_command_queue q);
// After a commit: with PYTORCH_OCL_INDEX_CHECK=sync, reads q's committed slots now (one blocking read, counted as a
// host wait) and raises a set one; otherwise nothing (the host's next wait looks).
void check_now_if_sync(int device, cl_command_queue q);
// Committed checks not yet read (tests and tools).
int64_t pending_checks();

} // namespace pytorch_ocl
