// grid_sample (2-D and 3-D; bilinear / nearest / bicubic; zeros / border / reflection padding)
// forward and backward: kernels/grid_sample.cl. 2-D calls set D = OD = 1 and dims = 2.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

struct GridSampleShape {
  int N = 1, C = 1, D = 1, H = 1, W = 1;  // input
  int OD = 1, OH = 1, OW = 1;             // grid / output locations
  int dims = 2;                           // 2 or 3 coordinates
  int mode = 0;                           // 0 bilinear, 1 nearest, 2 bicubic (2-D)
  int pad = 0;                            // 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
};

// A strided operand: input / output / output gradient strides over (N, C, D, H, W), the grid's
// over (N, OD, OH, OW, coordinate). Offsets and strides in elements.
struct GridOperand {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
  int64_t s[5] = {0, 0, 0, 0, 0};
};

void grid_sample_forward(const Context& ctx, cl_command_queue q, DType t, const GridSampleShape& g,
                         const GridOperand& x, const GridOperand& grid, const GridOperand& y);

// grad_input_acc: zeroed contiguous [N, C, D, H, W] in the accumulation type (float32 for 16-bit
// dtypes), summed into with atomics; grad_grid: contiguous [N, OD, OH, OW, dims] of type t.
// float64 needs cl_khr_int64_base_atomics when want_input (grid_sample_backward_supported).
void grid_sample_backward(const Context& ctx, cl_command_queue q, DType t, const GridSampleShape& g, bool want_input,
                          bool want_grid, const GridOperand& grad_y, const GridOperand& x, const GridOperand& grid,
                          Buffer grad_input_acc, Buffer grad_grid);
bool grid_sample_backward_supported(const Context& ctx, DType t);

} // namespace dlprim
