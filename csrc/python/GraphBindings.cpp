// pytorch_ocl._C._Graph: the C++ half of torch.ocl.OCLGraph (python/pytorch_ocl/graphs.py).
#include "python/Bindings.h"

#include "core/Allocator.h"
#include "core/Graph.h"

namespace py = pybind11;

namespace pytorch_ocl {

void bind_graphs(py::module& m) {
  py::class_<Graph>(m, "_Graph")
      .def(py::init<>())
      .def("capture_begin", &Graph::capture_begin, py::arg("pool") = 0)
      .def("capture_end", &Graph::capture_end)
      .def("capture_abort", &Graph::capture_abort)
      // Replay releases the GIL: it only enqueues, but a long list on a slow driver should not block Python threads.
      .def("replay", &Graph::replay, py::call_guard<py::gil_scoped_release>())
      .def("reset", &Graph::reset)
      .def("pool", &Graph::pool)
      .def("num_items", &Graph::num_items)
      .def("describe", &Graph::describe);
  m.def("_new_graph_pool", &new_graph_pool);
}

} // namespace pytorch_ocl
