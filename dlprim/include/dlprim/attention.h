// Fused scaled-dot-product attention (flash-attention style), forward and backward.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/gemm.h>  // Fp32Math

#include <cstdint>

namespace dlprim {

// A [B, H, rows, dim] tensor: buffer, element offset and element strides (any layout; a
// broadcast mask has zero strides).
struct AttnTensor {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
  int64_t sb = 0, sh = 0, sl = 0, sd = 0;
};

struct AttnShape {
  int64_t B = 0, Hq = 0, Hk = 0, L = 0, S = 0, D = 0, DV = 0;
  double scale = 1.0;
  bool causal = false;   // top-left aligned: query i sees keys j <= i
  bool has_mask = false; // additive mask of dtype `dtype`, indexed [b, hq, i, j]
  double dropout = 0;     // probability of dropping a probability; drawn from Philox (seed, offset)
  uint64_t seed = 0, offset = 0;
  // float32 inputs on a matrix engine (attention_mma.cl): Exact runs 3xTF32 (fp32 accuracy), Tf32 plain
  // TF32 (torch's float32 matmul precision 'high' / 'medium', as for matmul).
  Fp32Math fp32_math = Fp32Math::Exact;
};

// Largest head dim the kernels take (registers per thread grow with it).
constexpr int64_t kAttnMaxHeadDim = 512;

// o = softmax(q k^T * scale + mask) v, lse[b, hq, i] (compute type, contiguous [B, Hq, L]).
void attention_forward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                       const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& O,
                       cl_mem lse, uint64_t lse_offset);

// dq, dk, dv from grad_out, the forward's lse and delta[b, hq, i] = dO_i . O_i (both compute
// type, contiguous [B, Hq, L]). dk/dv are per key head (GQA groups summed in the kernel).
void attention_backward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                        const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& dO,
                        cl_mem lse, uint64_t lse_offset, cl_mem delta, uint64_t delta_offset, const AttnTensor& dQ,
                        const AttnTensor& dK, const AttnTensor& dV);

// Starts building, in the background, the programs attention_backward will need for `s` (called after
// a forward whose inputs require grad, so the builds overlap the rest of the forward pass), for a
// gradient laid out like Q.
void attention_prepare_backward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                const AttnTensor& K, const AttnTensor& V);

// The dropout keep mask (1 / 0 in `dtype`) the kernels draw for s, [B, Hq, L, S] contiguous at `out`.
void attention_dropout_mask(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, cl_mem out,
                            uint64_t out_offset);

} // namespace dlprim
