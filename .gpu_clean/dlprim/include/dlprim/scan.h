// Inclusive scans along one dim, described by a ReduceOp whose merge(a, b) folds the later
// state b into the earlier prefix a (it need not be commutative, e.g. cummax's last-index
// tie rule); finalize writes each element's result from its inclusive prefix state.
#pragma once
#include <dlprim/reduce.h>
#include <dlprim/rows.h>

#include <array>
#include <vector>

namespace dlprim {

// shape's tensors are (input, output 0, output 1); outs has op.n_outputs entries.
void scan(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc, const RowsShape& shape,
          const RowsTensor& in, const std::vector<RowsTensor>& outs, std::array<double, 2> params);

} // namespace dlprim
