// Graph capture (torch.ocl.graph): while a queue is being captured, every kernel launch, buffer
// copy and buffer fill enqueued on it through dlprim is recorded instead of run; replay enqueues
// the recorded work again, with no argument setting, dispatcher or allocator work.
//
// Each recorded launch gets a kernel object of its own (clCreateKernel of the same program and
// function: OpenCL 1.2, no clCloneKernel) with its arguments set once at capture time, because
// the shared kernel objects of the library have their arguments reset by every launch.
// Arguments are known from KernelArgs, which remembers them per kernel while any capture is on.
#pragma once
#include <dlprim/cl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dlprim {

class CapturedWork;  // the recorded list of one capture

namespace capture {

// Number of captures in progress (all queues): the only cost launches pay when it is 0.
extern std::atomic<int> g_active;

inline bool any_active() { return g_active.load(std::memory_order_relaxed) != 0; }

// Starts recording what is enqueued on `q` into a new list; throws Error if `q` is already capturing.
void begin(cl_command_queue q);
// Stops recording on `q` and returns the list (throws Error if `q` is not capturing).
std::shared_ptr<CapturedWork> end(cl_command_queue q);
// Stops recording on `q`, dropping what was recorded (capture failed); no-op if not capturing.
void abort(cl_command_queue q);
bool capturing(cl_command_queue q);

// Throws Error "<what> is not permitted while a stream is capturing ..." when `q` is capturing:
// for operations that make the host wait for the device or read device data on the host.
void forbid(cl_command_queue q, const char* what);

// Hooks of the enqueue paths: each returns true when `q` is capturing and the work was recorded
// (the caller then enqueues nothing).
bool record_kernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global,
                   const size_t* local, const char* label);
bool record_copy(cl_command_queue q, cl_mem src, cl_mem dst, uint64_t src_off, uint64_t dst_off, uint64_t bytes);
bool record_fill(cl_command_queue q, cl_mem buf, const void* pattern, size_t pattern_size, uint64_t off,
                 uint64_t bytes);
// KernelArgs::set reports each argument here while a capture is on.
void note_arg(cl_kernel k, cl_uint index, size_t bytes, const void* value);

// A random op drew Philox (seed, offset) for its next launch on `q`: the recorded launch whose
// arguments hold the two values next to each other (two ulongs) gets `redraw`, called at every
// replay for fresh ones, so each replay draws new random numbers and advances the generator as
// eager calls would (CUDA's graph-safe RNG). end() fails if no launch took them.
using PhiloxRedraw = std::function<std::pair<uint64_t, uint64_t>()>;
void note_philox(cl_command_queue q, uint64_t seed, uint64_t offset, PhiloxRedraw redraw);

} // namespace capture

// clEnqueueCopyBuffer / clEnqueueFillBuffer that a capture records.
void enqueue_copy_buffer(cl_command_queue q, cl_mem src, cl_mem dst, uint64_t src_off, uint64_t dst_off,
                         uint64_t bytes);
void enqueue_fill_buffer(cl_command_queue q, cl_mem buf, const void* pattern, size_t pattern_size, uint64_t off,
                         uint64_t bytes);

class CapturedWork {
public:
  ~CapturedWork();
  // Enqueues the recorded work on `q` in capture order (throws Error if `q` is capturing).
  void replay(cl_command_queue q);
  size_t size() const { return items_.size(); }
  // One line per recorded item (kernel name, sizes; copy/fill sizes): debug_dump().
  std::string describe() const;

  struct Item {
    enum Kind { Kernel, Copy, Fill } kind;
    cl_kernel kernel = nullptr;  // owned
    cl_uint dims = 0;
    size_t offset[3] = {0, 0, 0}, global[3] = {0, 0, 0}, local[3] = {0, 0, 0};
    bool has_offset = false, has_local = false;
    std::string label;
    cl_mem src = nullptr, dst = nullptr;  // Copy: src -> dst; Fill: dst
    uint64_t src_off = 0, dst_off = 0, bytes = 0;
    std::vector<unsigned char> pattern;
    int seed_arg = -1;  // Philox arguments redrawn per replay (random ops)
    capture::PhiloxRedraw redraw;
  };
  std::vector<Item> items_;
};

} // namespace dlprim
