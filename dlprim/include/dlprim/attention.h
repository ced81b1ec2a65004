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
  // torch.use_deterministic_algorithms: no backward whose result depends on the order of float atomics.
  bool deterministic = false;
};

// Largest head dim the kernels take (registers per thread grow with it).
constexpr int64_t kAttnMaxHeadDim = 512;

// Mask block flags (kernels/attention_mask_blocks.cl): one byte per kAttnMaskBlock x kAttnMaskBlock block
// (queries x keys) of the mask, per batch and query head of the mask (a dimension the mask broadcasts has one
// block): 0 every element visible (0), 1 every element masked (-inf), 2 mixed. The kernels skip the tiles whose
// blocks are all masked and read no mask in those whose blocks are all visible. The host keeps them in a
// device buffer (attention_mask_blocks fills it, no host sync) and passes them with the mask.
constexpr int64_t kAttnMaskBlock = 16;

// The flag grid of mask M (a [B, Hq, L, S] view, broadcast dims with stride 0) for s: its strides (b, h, query
// block, key block; 0 where one block covers the dimension) with mem / offset unset, and its size in bytes.
AttnTensor attention_mask_block_grid(const AttnShape& s, const AttnTensor& M, uint64_t& bytes);

// Fills F (attention_mask_block_grid's layout, at F.mem / F.offset bytes) from M. PYTORCH_OCL_ATTN_MASK_BLOCKS=0
// fills every flag with 2 instead (the kernels then read the whole mask: comparisons, timing).
void attention_mask_blocks(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype,
                           const AttnTensor& M, const AttnTensor& F);

// o = softmax(q k^T * scale + mask) v, lse[b, hq, i] (compute type, contiguous [B, Hq, L]). With a mask, MF
// holds its block flags (attention_mask_blocks); unread without.
void attention_forward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                       const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& MF,
                       const AttnTensor& O, cl_mem lse, uint64_t lse_offset);

// The one-pass backward's scratch (the matrix engine's dk/dv pass adding dq in a fixed order,
// kernels/attention_mma_onepass.cl): `counters` uint32 that must be 0 when attention_backward runs (a fill on the
// queue), `acc` float32 of any contents; offsets in elements.
struct AttnBwdWork {
  cl_mem counters = nullptr;
  uint64_t counters_offset = 0;
  cl_mem acc = nullptr;
  uint64_t acc_offset = 0;
};

// How many counters and accumulator floats attention_backward's one-pass kernel needs for s (dQ laid out like
// dO: the gradient of Q); both 0 where it runs two passes instead (PYTORCH_OCL_ATTN_BWD_ONEPASS=0, no matrix
// engine, heads over 64, ...); acc_fill: how the accumulator starts: 0 any, 1 NaN (the ordered kernel on the
// emulated engine: see attention_mma_onepass.cl), 2 zero (the atomic kernel).
// Builds the kernel's program.
void attention_backward_work(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                             const AttnTensor& K, const AttnTensor& V, const AttnTensor& dO, uint64_t& counters,
                             uint64_t& acc_floats, int& acc_fill);

// dq, dk, dv from grad_out, the forward's lse and delta[b, hq, i] = dO_i . O_i (both compute
// type, contiguous [B, Hq, L]). dk/dv are per key head (GQA groups summed in the kernel). With `work`
// (attention_backward_work's sizes, all three gradients wanted) one kernel computes them all; else two passes.
void attention_backward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                        const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& MF,
                        const AttnTensor& dO,
                        cl_mem lse, uint64_t lse_offset, cl_mem delta, uint64_t delta_offset, const AttnTensor& dQ,
                        const AttnTensor& dK, const AttnTensor& dV, const AttnBwdWork& work = AttnBwdWork());

// Starts building, in the background, the programs attention_backward will need for `s` (called after
// a forward whose inputs require grad, so the builds overlap the rest of the forward pass), for a
// gradient laid out like Q.
void attention_prepare_backward(const Context& ctx, const AttnShape& s, DType dtype, const AttnTensor& Q,
                                const AttnTensor& K, const AttnTensor& V);

// The dropout keep mask (1 / 0 in `dtype`) the kernels draw for s, [B, Hq, L, S] contiguous at `out`.
void attention_dropout_mask(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, cl_mem out,
                            uint64_t out_offset);

} // namespace dlprim
