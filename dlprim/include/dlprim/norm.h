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
