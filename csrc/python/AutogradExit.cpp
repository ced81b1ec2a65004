// Interpreter exit vs the autograd engine's ocl device threads.
//
// A backward pass over ocl tensors runs on the autograd engine's thread for the device ("pt_autograd_N"). When
// the pass is done the caller wakes up and returns, and that thread drops its reference to the pass's GraphTask
// a moment later. The GraphTask can hold Python objects in the thread-local state it captures (torch 2.13 puts the
// caller's contextvars context there on every backward call), so whoever drops it last takes the GIL. If the device
// thread comes to it while the main thread is already finalizing the interpreter, CPython ends the thread with
// pthread_exit, whose unwinding through torch's noexcept destructors calls std::terminate: "terminate called
// without an active exception" and SIGABRT after the script's work was done (a short script ending with a backward
// pass aborted in 36 of 300 runs on a 2-core machine with one core kept busy; tests/test_exit.py).
//
// pytorch_ocl's Python atexit hook (run while the interpreter still works normally) calls this: each device in use
// gets one more autograd task, a no-op node fed a zero-size gradient. A device thread takes tasks one at a time
// and drops the previous task's references before taking the next one, so once it has run this one it is done
// with every earlier pass. The task is sent from a fresh C++ thread, whose thread-local state holds no Python
// objects: releasing this task's own GraphTask never needs the GIL, whenever the device thread gets to it. The wait
// is bounded (wait_limit_s): a device thread still busy with a pass run by another thread is left to itself.
#include "python/Bindings.h"

#include "core/Device.h"

#include <ATen/ATen.h>
#include <dlprim/env.h>
#include <torch/csrc/autograd/edge.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace py = pybind11;

namespace pytorch_ocl {

namespace {

struct ExitBarrierNode final : torch::autograd::Node {
  torch::autograd::variable_list apply(torch::autograd::variable_list&&) override { return {}; }
  std::string name() const override { return "pytorch_ocl::ExitBarrier"; }
};

// Autograd nodes are held by c10::intrusive_ptr in torch 2.13, by std::shared_ptr in earlier releases: NodePtr
// is whichever Edge holds.
template <class Ptr>
struct MakeNode;
template <class T>
struct MakeNode<std::shared_ptr<T>> {
  template <class N>
  static std::shared_ptr<T> make() { return std::make_shared<N>(); }
};
template <class T>
struct MakeNode<c10::intrusive_ptr<T>> {
  template <class N>
  static c10::intrusive_ptr<T> make() { return c10::make_intrusive<N>(); }
};
using NodePtr = decltype(torch::autograd::Edge::function);

// Runs one no-op task on the autograd thread of `device` and waits for it. No kernel, no allocation.
void pass_through_autograd_thread(int device) {
  at::Tensor grad = at::empty({0}, at::TensorOptions().device(ocl_device(device)).dtype(at::kFloat));
  NodePtr node = MakeNode<NodePtr>::make<ExitBarrierNode>();
  node->add_input_metadata(grad);
  torch::autograd::Engine::get_default_engine().execute({torch::autograd::Edge(node, 0)}, {grad},
                                                         /*keep_graph=*/false, /*create_graph=*/false,
                                                         /*accumulate_grad=*/true, /*outputs=*/{});
}

// How long to wait: TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT, the limit torch's engine puts on its own wait for these
// threads when it shuts down (seconds, default 10; 0: no wait). A thread still inside a backward pass (one run by a
// daemon thread, stuck in a hook) must not turn the exit into a hang.
double wait_limit_s() {
  const char* v = dlprim::env_value("TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT");
  return v && *v ? std::atof(v) : 10.0;
}

void finish_autograd_threads() {
  if (in_bad_fork()) return;  // a forked child: no OpenCL, and no autograd device threads of its own
  const double limit = wait_limit_s();
  if (!(limit > 0)) return;
  struct Done {  // shared with the thread, which outlives this call when the wait runs out
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    std::exception_ptr error;
  };
  auto state = std::make_shared<Done>();
  bool finished = false;
  {
    py::gil_scoped_release no_gil;  // the device threads take the GIL to drop earlier passes' Python objects
    std::thread t([state] {
      std::exception_ptr error;
      try {
        for (int d = 0; d < device_count(); ++d)
          if (has_context(d)) pass_through_autograd_thread(d);  // a device never used ran no backward pass
      } catch (...) {
        error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(state->m);
      state->error = error;
      state->done = true;
      state->cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(state->m);
    finished = state->cv.wait_for(lock, std::chrono::duration<double>(limit), [&] { return state->done; });
    lock.unlock();
    if (finished) {
      t.join();
    } else {
      t.detach();  // left blocked in the engine, as the device thread it waits for is; of ours it holds `state` only
      std::fprintf(stderr,
                   "pytorch_ocl: an autograd ocl device thread is still busy at exit (a backward pass running in "
                   "another thread?); not waiting for it beyond TORCH_AUTOGRAD_SHUTDOWN_WAIT_LIMIT=%g s\n",
                   limit);
    }
  }
  if (finished && state->error) std::rethrow_exception(state->error);
}

} // namespace

void bind_autograd_exit(py::module& m) {
  m.def("finish_autograd_threads", &finish_autograd_threads,
        "Waits until the autograd engine's ocl device threads are done with every backward pass run so far "
        "(called at exit, before the interpreter is finalized).");
}

} // namespace pytorch_ocl
