// The matrix-engine attention forward (kernels/attention_mma.cl): which calls it takes and its kernel.
#pragma once
#include <dlprim/attention.h>

#include <mutex>

namespace dlprim {
namespace detail {

struct AttnMmaKernel {
  cl_kernel kernel = nullptr;  // nullptr: the call stays on attention.cpp's FMA kernels
  std::mutex* m = nullptr;     // held while the kernel's arguments are set and it is enqueued
  size_t threads = 0;          // work-items per group (32 per warp)
  int64_t rows = 0;            // queries per work-group
};

// The mma forward for s, when the device (or PYTORCH_OCL_MMA=emulate) has the kind dtype and
// s.fp32_math need and the kernel covers the shape; attn_fwd_tiled's arguments.
AttnMmaKernel attention_mma_forward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& K,
                                    const AttnTensor& V);

// The backward's dq pass on the matrix engine (kernels/attention_mma_bwd.cl; attn_bwd_dq_tiled's arguments),
// where the kind and the head dims allow it (fp32 kinds up to 64, 16-bit up to 128).
AttnMmaKernel attention_mma_backward_dq(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& K,
                                        const AttnTensor& V);

} // namespace detail
} // namespace dlprim
