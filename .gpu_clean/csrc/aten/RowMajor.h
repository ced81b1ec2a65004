// Describes same-shaped tensors as dlprim row-major launches (random numbers, index-based
// factories): the logical element order is kept, so results do not depend on memory layout.
#pragma once
#include <ATen/core/TensorBase.h>
#include <dlprim/strided.h>

#include <vector>

namespace pytorch_ocl {

// Fills `shape` and one operand per tensor (all of size `sizes`; inputs may be expanded views).
// Size-1 dims are dropped and adjacent dims merged where every tensor allows it; the last
// `keep_trailing` dims are kept as they are (their coordinates matter, e.g. rows and columns).
// False when more than dlprim::kMaxDims dims remain.
bool describe_row_major(c10::IntArrayRef sizes, const std::vector<at::TensorBase>& tensors, int keep_trailing,
                        dlprim::RowMajorShape& shape, std::vector<dlprim::StridedOperand>& operands,
                        const char* op);

} // namespace pytorch_ocl

#include <ATen/core/Tensor.h>
#include <dlprim/positional.h>

namespace pytorch_ocl {

// Runs a positional op writing `out` (reading `in`, of the same sizes, when the op has an input),
// computing in `compute`; the last `keep_trailing` dims keep their coordinates (see above).
void launch_positional(const dlprim::PositionalOp& op, c10::ScalarType compute, const at::Tensor& out,
                       const at::Tensor* in, int keep_trailing, const dlprim::PositionalParams& params);

} // namespace pytorch_ocl
