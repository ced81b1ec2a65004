// The only place that knows which torch version we build against.
#pragma once
#include <torch/version.h>

#define PYTORCH_OCL_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if !PYTORCH_OCL_TORCH_AT_LEAST(2, 9)
#error "pytorch_ocl needs torch >= 2.9 (c10::DeviceAllocator, PrivateUse1 hooks with init())"
#endif
