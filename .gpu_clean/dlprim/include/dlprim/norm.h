// Row-wise normalizations (layer norm): one work-group per row of N contiguous elements.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/typed_kernels.h>

#include <cstdint>

namespace dlprim {

// y = (x - mean) * rstd [* w] [+ b] per row; mean/rstd (accumulate type: float, or double
// for float64) written per row. `w`/`b` with a null mem are absent.
void layer_norm_forward(const Context& ctx, cl_command_queue q, DType dtype, uint64_t rows, uint64_t N, double eps,
                        Buffer x, Buffer y, Buffer w, Buffer b, Buffer mean, Buffer rstd);

// Gradient with respect to x, from the saved mean/rstd.
void layer_norm_backward_input(const Context& ctx, cl_command_queue q, DType dtype, uint64_t rows, uint64_t N,
                               Buffer grad, Buffer x, Buffer w, Buffer mean, Buffer rstd, Buffer dx);

} // namespace dlprim

namespace dlprim {

// Batch norm over contiguous (N, C, HW) data; per-channel buffers have the accumulate type.
struct BatchNormShape {
  uint64_t N, C, HW;
};

// Device scratch that batch_norm_stats and batch_norm_backward_reduce need for shape `s` (0: none;
// otherwise pass a buffer of this many bytes as `ws`, element offset in the accumulate type).
uint64_t batch_norm_workspace_bytes(const Context& ctx, DType t, BatchNormShape s);

// save_mean / save_invstd per channel; running stats updated in place when `run_mean.mem` is set.
void batch_norm_stats(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer x, double eps,
                      double momentum, Buffer save_mean, Buffer save_invstd, Buffer run_mean, Buffer run_var,
                      Buffer ws);
// y = (x - mean) * invstd * w + b; when `invstd_is_var`, `invstd` holds a variance (eval mode).
void batch_norm_apply(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer x, Buffer y,
                      Buffer mean, Buffer invstd, bool invstd_is_var, double eps, Buffer w, Buffer b);
// sum_g[c] = sum(g), sum_gx[c] = sum(g * (x - mean)); with `grad_w` (compute-type storage) also the weight
// gradient grad_w[c] = sum_gx[c] * invstd[c], in the same launch.
void batch_norm_backward_reduce(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer g, Buffer x,
                                Buffer mean, Buffer sum_g, Buffer sum_gx, Buffer ws, Buffer invstd = {},
                                Buffer grad_w = {});
void batch_norm_backward_input(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer g, Buffer x,
                               Buffer mean, Buffer invstd, Buffer w, Buffer sum_g, Buffer sum_gx, bool training,
                               Buffer gx);

} // namespace dlprim
