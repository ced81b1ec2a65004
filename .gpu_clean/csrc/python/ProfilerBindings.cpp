// Kernel profiler entry points: start/stop recording of OpenCL event times.
#include "python/Bindings.h"

#include "core/Stream.h"

#include <dlprim/profiler.h>
#include <pybind11/stl.h>

#include <tuple>
#include <vector>

namespace py = pybind11;

namespace pytorch_ocl {

void bind_profiler(py::module& m) {
  m.def("profiler_start", [] { dlprim::profiler::start(); });
  // Waits for the device, then returns [(label, start_ns, end_ns)] in launch order.
  m.def("profiler_stop", [] {
    synchronize_device(-1);
    std::vector<std::tuple<std::string, uint64_t, uint64_t>> out;
    for (auto& r : dlprim::profiler::stop()) out.emplace_back(r.label, r.start_ns, r.end_ns);
    return out;
  });
}

} // namespace pytorch_ocl
