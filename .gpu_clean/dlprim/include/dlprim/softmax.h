// softmax / log_softmax along one dim, forward and backward (one work-group tile per rows).
#pragma once
#include <dlprim/context.h>
#include <dlprim/rows.h>

namespace dlprim {

enum class SoftmaxKind { Softmax = 0, LogSoftmax = 1, SoftmaxBackward = 2, LogSoftmaxBackward = 3 };

// Forward: x0 = input, y = output. Backward: x0 = grad_output, x1 = output, y = grad_input.
// shape's tensors are (x0, x1, y) in that order; `compute` is float or double.
void softmax(const Context& ctx, cl_command_queue q, SoftmaxKind kind, DType compute, const RowsShape& shape,
             const RowsTensor& x0, const RowsTensor& x1, const RowsTensor& y);

} // namespace dlprim
