// Pooling over contiguous planes of (D, H, W) (planes = N*C; 2-D pooling sets D = OD = kd =
// sd = dd = 1, pd = 0): max (with int64 argmax indices into each plane, as PyTorch), average,
// adaptive average / max, max unpooling; forward and gather-style backward.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

struct PoolGeometry {
  int D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw;
};

void max_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      Buffer x, Buffer y, Buffer indices);
void max_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       Buffer grad_y, Buffer indices, Buffer grad_x);
void avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      bool count_include_pad, int divisor_override, Buffer x, Buffer y);
void avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       bool count_include_pad, int divisor_override, Buffer grad_y, Buffer grad_x);
// Adaptive: only the sizes (D, H, W, OD, OH, OW) of the geometry are used; `indices` is
// written (max) or ignored (average, null mem).
void adaptive_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                           bool max, Buffer x, Buffer y, Buffer indices);
void adaptive_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                            bool max, Buffer grad_y, Buffer indices, Buffer grad_x);
// y (already zeroed, planes of out_plane elements) [plane, indices[e]] = x[e].
void max_unpool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, uint64_t in_plane,
                        uint64_t out_plane, Buffer x, Buffer indices, Buffer y);

} // namespace dlprim
