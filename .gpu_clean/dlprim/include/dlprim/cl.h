// OpenCL C API for the whole library. We target the 1.2 API because the devices we
// care about (PoCL, NVIDIA) report OpenCL C 1.2 even when the platform says 3.0.
#pragma once
#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#include <CL/cl.h>

#include <stdexcept>
#include <string>

namespace dlprim {

// Every failure inside dlprim is reported as this exception; the torch layer turns
// it into a PyTorch error that names the op.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Raised when the device cannot provide memory; the torch layer maps it to
// torch.OutOfMemoryError after freeing its cache and retrying.
class OutOfMemory : public Error {
public:
  explicit OutOfMemory(const std::string& msg) : Error(msg) {}
};

const char* cl_error_name(cl_int err);
[[noreturn]] void throw_cl_error(cl_int err, const char* call, const char* file, int line);

} // namespace dlprim

#define DLPRIM_CL_CHECK(expr)                                              \
  do {                                                                     \
    cl_int dlprim_err_ = (expr);                                           \
    if (dlprim_err_ != CL_SUCCESS)                                         \
      ::dlprim::throw_cl_error(dlprim_err_, #expr, __FILE__, __LINE__);    \
  } while (0)
