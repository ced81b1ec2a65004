// torch.ocl.OCLGraph: capture of the work enqueued on a (non-default) stream into a recorded
// list (dlprim/capture.h) plus a private memory pool (Allocator.h) that keeps the capture's
// allocations reserved, so the tensors made during capture stay valid across replays.
#pragma once
#include <dlprim/capture.h>

#include <c10/core/Stream.h>

#include <cstdint>
#include <memory>
#include <string>

namespace pytorch_ocl {

class Graph {
public:
  Graph() = default;
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Starts capturing the current stream of the current device; `pool` (< 0) shares another graph's
  // pool (graph_pool_handle / other_graph.pool()), 0 makes a new one.
  void capture_begin(int64_t pool);
  void capture_end();
  // Drops the capture that failed (exception inside the captured region).
  void capture_abort();
  // Enqueues the captured work on the current stream of the graph's device.
  void replay();
  // Waits for the device, frees the recorded work and releases the pool.
  void reset();
  int64_t pool() const { return pool_; }
  size_t num_items() const { return work_ ? work_->size() : 0; }
  std::string describe() const { return work_ ? work_->describe() : std::string(); }

private:
  int device_ = -1;
  int64_t pool_ = 0;
  bool capturing_ = false;
  c10::StreamId stream_ = 0;
  cl_command_queue queue_ = nullptr;
  std::shared_ptr<dlprim::CapturedWork> work_;
};

// TORCH_CHECK-style error when `q` is capturing: `what` names the operation that waits for the
// device or reads its memory on the host.
void check_not_capturing(cl_command_queue q, const char* what);

} // namespace pytorch_ocl
