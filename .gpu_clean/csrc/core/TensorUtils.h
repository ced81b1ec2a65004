// Bridges between torch tensors and dlprim launch arguments.
#pragma once
#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Stream.h"

#include <ATen/core/TensorBase.h>
#include <dlprim/dtype.h>

namespace pytorch_ocl {

// The dlprim storage type of `t`; raises a TypeError naming `op` for dtypes the kernels lack.
dlprim::DType to_dlprim(c10::ScalarType t, const char* op);
bool has_dlprim_type(c10::ScalarType t);

// (cl_mem, byte offset of the tensor's first element) of an ocl tensor.
BufferRef buffer_of(const at::TensorBase& t);

// Checks that `t` lives on an ocl device, naming `op` and the argument otherwise.
void check_ocl(const at::TensorBase& t, const char* op, const char* arg);

// The queue the current stream of `t`'s device maps to.
inline cl_command_queue queue_for(const at::TensorBase& t) { return current_queue(t.device().index()); }

} // namespace pytorch_ocl
