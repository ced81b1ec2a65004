// Pieces of the pytorch_ocl._C module defined outside Module.cpp.
#pragma once
#include <pybind11/pybind11.h>

namespace pytorch_ocl {
void bind_user_kernels(pybind11::module& m);
void bind_profiler(pybind11::module& m);
void bind_graphs(pybind11::module& m);
void bind_autograd_exit(pybind11::module& m);
void bind_external_memory(pybind11::module& m);
} // namespace pytorch_ocl
