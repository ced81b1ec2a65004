// One GRU time step per launch: the recurrent GEMM fused with the cell, forward and backward
// (kernels/gru.cl; the LSTM's are lstm.h). Buffers are contiguous row-major views (element offsets).
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

// Whether the fused step kernels can run on this device (their 64-item groups, local memory).
bool gru_step_supported(const Context& ctx);

// xg [B, 3H]: the input gates (x W_ih^T + b_ih); bias: b_hh [3H] (absent: mem null); h the previous [B, H];
// w W_hh [3H, H]; y this step's h; ws [B, 4H] its workspace: r, z, n, hn + b_hn.
struct GruStepForward {
  Buffer w, bias, xg, h, y, ws;
  int batch = 0, hidden = 0;
};
void gru_step_forward(const Context& ctx, cl_command_queue q, DType t, const GruStepForward& a);

// The gradient of this step's h = (dh_in + dhg_next W_hh) + dh_add (each may be absent: mem null), then the
// cell backward into the hidden-gate gradients dhg [B, 3H], the input-gate gradients dxg [B, 3H] (its r and z
// parts equal dhg's) and the cell part of the previous h's gradient dh [B, H] (dh_in may be
// dh). ws: this step's workspace, h_prev the h it started from.
struct GruStepBackward {
  Buffer w, dhg_next, dh_add, ws, h_prev, dh_in, dhg, dxg, dh;
  uint64_t dh_add_ld = 0;  // dh_add's row stride (elements)
  int batch = 0, hidden = 0;
};
void gru_step_backward(const Context& ctx, cl_command_queue q, DType t, const GruStepBackward& a);

} // namespace dlprim
