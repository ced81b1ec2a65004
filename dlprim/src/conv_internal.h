// Shared by conv.cpp (paths, im2col) and conv_implicit.cpp (implicit-GEMM forward + tuning).
#pragma once
#include <dlprim/conv.h>

#include "gemm_internal.h"

namespace dlprim {
namespace detail {

// The im2col + GEMM forward and its workspace (conv.cpp).
uint64_t im2col_forward_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                  const ConvTensor& y);
void im2col_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                    const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset);

// How a forward convolution of the im2col family runs on this device: the implicit-GEMM kernel
// (GPUs, when the autotuner finds it faster than im2col) or im2col.
struct ImplicitPlan {
  bool use = false;
  TileConfig cfg;
  SplitPlan split;
};
ImplicitPlan implicit_forward_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                   const ConvTensor& y);
void implicit_forward(const Context& ctx, cl_command_queue q, const ImplicitPlan& plan, const ConvShape& s,
                      DType dtype, const ConvTensor& x, const ConvBuffer& w, const ConvBuffer& bias,
                      const ConvTensor& y, cl_mem ws, uint64_t ws_offset);

} // namespace detail
} // namespace dlprim
