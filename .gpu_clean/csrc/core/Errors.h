// Turns dlprim exceptions into PyTorch errors that name the op.
#pragma once
#include <dlprim/cl.h>

#include <c10/util/Exception.h>

#define OCL_DLPRIM_CALL(opname, ...)                                                        \
  do {                                                                                     \
    try {                                                                                  \
      __VA_ARGS__;                                                                         \
    } catch (const ::dlprim::OutOfMemory& e_) {                                            \
      TORCH_CHECK_WITH(OutOfMemoryError, false, opname, ": out of device memory: ", e_.what()); \
    } catch (const ::dlprim::Error& e_) {                                                  \
      TORCH_CHECK(false, opname, ": ", e_.what());                                         \
    }                                                                                      \
  } while (0)

// For raw OpenCL calls in the torch layer.
#define OCL_CHECK(expr) DLPRIM_CL_CHECK(expr)
