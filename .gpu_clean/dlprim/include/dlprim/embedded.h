// OpenCL C sources compiled into the binary at build time (no file lookups at run time).
#pragma once
#include <string>

namespace dlprim {
// Source of dlprim/kernels/<name>.cl; throws Error for an unknown name.
const std::string& kernel_source(const std::string& name);
} // namespace dlprim
