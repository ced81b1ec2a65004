// One LSTM time step per launch: the recurrent GEMM fused with the cell, forward and backward
// (kernels/lstm.cl). Buffers are contiguous row-major views (element offsets).
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

// Whether the fused step kernels can run on this device (their 64-item groups, local memory).
bool lstm_step_supported(const Context& ctx);

// gates [B, 4H]: pre-activations in, activated i, f, g, o out; h, c the previous [B, H]; w W_hh
// [4H, H]; y, cy this step's h and c.
struct LstmStepForward {
  Buffer w, gates, h, c, y, cy;
  int batch = 0, hidden = 0;
};
void lstm_step_forward(const Context& ctx, cl_command_queue q, DType t, const LstmStepForward& a);

// dh = dh_add + dg_next W_hh (either may be absent: mem null), then the cell backward into dg
// [B, 4H] and dc [B, H] (from dc_in, absent: zero; dc_in may be dc).
struct LstmStepBackward {
  Buffer w, dg_next, dh_add, gates, cy, cx, dc_in, dg, dc;
  uint64_t dh_add_ld = 0;  // dh_add's row stride (elements)
  int batch = 0, hidden = 0;
};
void lstm_step_backward(const Context& ctx, cl_command_queue q, DType t, const LstmStepBackward& a);

} // namespace dlprim
