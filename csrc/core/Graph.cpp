#include "core/Graph.h"

#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/Stream.h"

#include <c10/util/Exception.h>

namespace pytorch_ocl {

void check_not_capturing(cl_command_queue q, const char* what) {
  if (!dlprim::capture::any_active()) return;
  OCL_DLPRIM_CALL("ocl", dlprim::capture::forbid(q, what));
}

Graph::~Graph() {
  try {
    if (capturing_) capture_abort();
    reset();
  } catch (...) {
    // destructors must not throw; the device may already be gone at exit
  }
}

void Graph::capture_begin(int64_t pool) {
  TORCH_CHECK(!capturing_ && !work_, "OCLGraph: this graph was already captured; call reset() before capturing again");
  TORCH_CHECK(pool <= 0, "OCLGraph: invalid pool handle");
  const int device = current_device();
  const c10::Stream stream = current_stream(device);
  TORCH_CHECK(stream.id() != 0,
              "OCL graphs must be captured on a non-default stream. (However, after capture, it's ok to replay them "
              "on the default stream.) Use torch.ocl.graph(g), which captures on a side stream.");
  cl_command_queue q = queue_of(stream);
  const int64_t p = pool < 0 ? pool : new_graph_pool();
  begin_pool_capture(device, stream.id(), p);
  try {
    OCL_DLPRIM_CALL("OCLGraph.capture_begin", dlprim::capture::begin(q));
  } catch (...) {
    end_pool_capture(device, stream.id());
    release_graph_pool(device, p);
    throw;
  }
  device_ = device;
  pool_ = p;
  stream_ = stream.id();
  queue_ = q;
  capturing_ = true;
}

void Graph::capture_end() {
  TORCH_CHECK(capturing_, "OCLGraph.capture_end: the graph is not capturing");
  capturing_ = false;
  end_pool_capture(device_, stream_);
  OCL_DLPRIM_CALL("OCLGraph.capture_end", work_ = dlprim::capture::end(queue_));
  if (work_->size() == 0)
    TORCH_WARN("OCLGraph: the captured graph is empty (no device work was enqueued on the capturing stream)");
}

void Graph::capture_abort() {
  if (!capturing_) return;
  capturing_ = false;
  end_pool_capture(device_, stream_);
  dlprim::capture::abort(queue_);
  reset();
}

void Graph::replay() {
  TORCH_CHECK(!capturing_, "OCLGraph.replay: the graph is still capturing");
  TORCH_CHECK(work_, "OCLGraph.replay: nothing was captured (call capture_begin/capture_end or use torch.ocl.graph)");
  cl_command_queue q = current_queue(device_);
  OCL_DLPRIM_CALL("OCLGraph.replay", work_->replay(q));
}

void Graph::reset() {
  TORCH_CHECK(!capturing_, "OCLGraph.reset: the graph is capturing");
  if (work_ || pool_) {
    // Replays in flight still use the recorded kernels and the pool's memory.
    synchronize_device(device_);
  }
  work_.reset();
  if (pool_) {
    release_graph_pool(device_, pool_);
    pool_ = 0;
  }
}

} // namespace pytorch_ocl
