// Runs dlprim generators on operands described by ATen's TensorIterator.
#pragma once
#include <ATen/TensorIterator.h>
#include <dlprim/elementwise.h>

#include <vector>

namespace pytorch_ocl {

// Launches `op` over `iter` (outputs then inputs, CPU scalars passed by value) computing
// in `compute`, on the current stream of the iterator's device.
void launch_elementwise(const dlprim::ElementwiseOp& op, at::TensorIteratorBase& iter, c10::ScalarType compute,
                        const std::vector<dlprim::Scalar>& params = {});

dlprim::Scalar to_dlprim_scalar(const c10::Scalar& s);

} // namespace pytorch_ocl
