// The whole-layer LSTM's and GRU's fused steps (dlprim/kernels/lstm.cl, gru.cl): one launch per time step for
// the recurrent GEMM and the cell, forward and backward, instead of a GEMM and a cell launch each.
#pragma once
#include <ATen/core/Tensor.h>

namespace pytorch_ocl {

// Whether a layer of this shape runs on the fused steps: PYTORCH_OCL_LSTM_FUSED=1 forces them
// (where the device runs them at all), 0 the GEMM + cell path; unset, small recurrences on GPUs
// do (hidden <= 1024, batch <= 64: there the per-step GEMM is too small to fill a GPU and launch
// overhead dominates). PYTORCH_OCL_TUNE=random:SEED (unset here) draws either per layer shape. x, h0, c0, w_hh: the layer's operands (float32 / float64, one dtype).
bool lstm_fused_applies(const at::Tensor& x, const at::Tensor& h0, const at::Tensor& c0, const at::Tensor& w_hh);

// gates [B, 4H] contiguous (pre-activations in, activated out), h, c, w_hh contiguous; y, cy
// contiguous [B, H] outputs.
void lstm_fused_forward_step(const at::Tensor& w_hh, const at::Tensor& gates, const at::Tensor& h,
                             const at::Tensor& c, const at::Tensor& y, const at::Tensor& cy);

// dh = dh_add + dg_next w_hh (undefined: absent), then the cell backward into dg and dc (from
// dc_in, undefined: zero). All contiguous but dh_add, whose rows may be strided (stride(1) == 1).
void lstm_fused_backward_step(const at::Tensor& w_hh, const at::Tensor& dg_next, const at::Tensor& dh_add,
                              const at::Tensor& gates, const at::Tensor& cy, const at::Tensor& cx,
                              const at::Tensor& dc_in, const at::Tensor& dg, const at::Tensor& dc);

// The GRU's: PYTORCH_OCL_GRU_FUSED as PYTORCH_OCL_LSTM_FUSED above, same heuristic. x, h0, w_hh as above.
bool gru_fused_applies(const at::Tensor& x, const at::Tensor& h0, const at::Tensor& w_hh);

// xg [B, 3H] the input gates, b_hh [3H] (undefined: no bias), h, w_hh contiguous; y [B, H] and ws [B, 4H]
// (r, z, n, hn + b_hn) contiguous outputs.
void gru_fused_forward_step(const at::Tensor& w_hh, const at::Tensor& b_hh, const at::Tensor& xg,
                            const at::Tensor& h, const at::Tensor& y, const at::Tensor& ws);

// The step's h gradient (dh_in + dhg_next w_hh) + dh_add (undefined: absent), then the cell backward into dhg
// [B, 3H], dxg [B, 3H] (r and z: dhg's) and dh (the cell part of the previous h's gradient; dh_in may be dh). All contiguous
// but dh_add, whose rows may be strided (stride(1) == 1).
void gru_fused_backward_step(const at::Tensor& w_hh, const at::Tensor& dhg_next, const at::Tensor& dh_add,
                             const at::Tensor& ws, const at::Tensor& h_prev, const at::Tensor& dh_in,
                             const at::Tensor& dhg, const at::Tensor& dxg, const at::Tensor& dh);

} // namespace pytorch_ocl
