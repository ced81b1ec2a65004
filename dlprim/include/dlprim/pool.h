// 2-D pooling over contiguous NCHW planes (planes = N*C): max (with int64 argmax indices
// into each H*W plane, as PyTorch), average, adaptive average; forward and backward.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

struct PoolGeometry {
  int H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw;
};

void max_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      Buffer x, Buffer y, Buffer indices);
void max_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       Buffer grad_y, Buffer indices, Buffer grad_x);
void avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      bool count_include_pad, int divisor_override, Buffer x, Buffer y);
void avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       bool count_include_pad, int divisor_override, Buffer grad_y, Buffer grad_x);
// Adaptive: only H, W, OH, OW of the geometry are used.
void adaptive_avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes,
                               const PoolGeometry& g, Buffer x, Buffer y);
void adaptive_avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes,
                                const PoolGeometry& g, Buffer grad_y, Buffer grad_x);

} // namespace dlprim
