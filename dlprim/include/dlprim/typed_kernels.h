// Kernels of one .cl file specialised for a storage type: the file sees DL_T (storage),
// DL_ACC (float, or double for float64; DL_ACC_IS_DOUBLE 0/1), DL_LOAD(p, i) and DL_STORE(p, i, v). Built once per
// (context, file, type, prefix); each kernel object comes with the mutex that serialises its
// argument setting and launch.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <mutex>
#include <string>

namespace dlprim {

struct TypedKernel {
  cl_kernel kernel;
  std::mutex* mutex;
};

// `file` and `name` are usually string literals: lookups by the same pointers take a per-thread fast path.
// `prefix` (optional): a file whose text the program holds before `file`'s, shared by several files (as
// rnn_step_common for lstm and gru); part of the key.
TypedKernel typed_kernel(const Context& ctx, const char* file, DType t, const char* name,
                         const char* prefix = nullptr);

// Storage view of a buffer for kernel arguments.
struct Buffer {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements
};

} // namespace dlprim
