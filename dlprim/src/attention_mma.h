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
  int64_t rows = 0;            // queries (dk/dv pass: keys) per work-group
  int64_t tile = 0;            // the backward passes' inner tile (dk/dv, one-pass: queries per step)
  bool emulated = false;       // the matrix engine emulated (PYTORCH_OCL_MMA=emulate)
  bool atomic = false;         // the one-pass backward adding dq with float atomics (ONEPASS_ATOMIC)
};

// The mma forward for s, when the device (or PYTORCH_OCL_MMA=emulate) has the kind dtype and
// s.fp32_math need and the kernel covers the shape; attn_fwd_tiled's arguments.
AttnMmaKernel attention_mma_forward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                    const AttnTensor& K, const AttnTensor& V);

// A backward pass on the matrix engine (kernels/attention_mma_bwd.cl): the dq pass (attn_bwd_dq_tiled's
// arguments and grid) or, dkdv, the dk/dv pass (attn_bwd_dkdv_tiled's; rows = keys per work-group), where
// the kind and the head dims allow it (up to 128; see attention_mma.cpp).
AttnMmaKernel attention_mma_backward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                     const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO, bool dkdv);

// The one-pass backward (kernels/attention_mma_onepass.cl: the dk/dv pass also adding dq, in a fixed order or with
// float atomics), or no
// kernel where it does not apply (PYTORCH_OCL_ATTN_BWD_ONEPASS=0, heads over 64, no dk/dv mma kernel, S = 0, or
// its local memory does not fit). Arguments: attn_bwd_dkdv_mma's, then dQ, the counters and the accumulator.
AttnMmaKernel attention_mma_onepass(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                    const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO);

} // namespace detail
} // namespace dlprim
