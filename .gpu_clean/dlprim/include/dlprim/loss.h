// Loss kernels that need more than elementwise + reduction building blocks.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

// Shape of nll_loss inputs: B samples (batch), C classes, S spatial positions per sample.
struct NllShape {
  uint64_t B, C, S;
};

// loss[i] = -w[t_i] * x[b, t_i, s] and weight_used[i] = w[t_i] (0 for ignored targets),
// both in the accumulate type, one entry per (b, s).
void nll_loss_per_sample(const Context& ctx, cl_command_queue q, DType t, NllShape s, Buffer x, Buffer target,
                         Buffer w, Buffer loss, Buffer weight_used, int64_t ignore_index);
// grad_x[b, t_i, s] = -w[t_i] * g [/ total_weight] on a zero-filled grad_x; `total_weight`
// (one element, same dtype) divides when its mem is set (mean reduction).
void nll_loss_backward(const Context& ctx, cl_command_queue q, DType t, NllShape s, Buffer grad, bool per_sample,
                       Buffer total_weight, Buffer target, Buffer w, Buffer grad_x, int64_t ignore_index);

} // namespace dlprim
