// Complex arithmetic on ocl: complex tensors are computed on their components. A complex operand
// becomes two strided float operands (the real and imaginary slices of its view_as_real), a real
// operand becomes (itself, 0), and one table of elementwise bodies over those components
// (ComplexPointwise.cpp, with the complex math of kernels/complex.cl on float2/double2 values)
// gives the complex forms of the pointwise rows: the real kernel generator runs them, no copies.
#pragma once
#include "aten/PointwiseTable.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>

#include <vector>

namespace pytorch_ocl {

// Whether pointwise row `id` has a complex form (the runners ask before pw_check_dtype).
bool pw_has_complex(PwId id);

// The complex form of unary row `id` (abs and angle give real results): `out` undefined allocates.
at::Tensor pw_complex_unary(PwId id, const at::Tensor& out, const at::Tensor& self);

// The complex form of binary row `id` over a built iterator whose common dtype is complex (the
// iterator did broadcasting, promotion checks and allocated the output); alpha for add/sub.
void pw_complex_binary(PwId id, at::TensorIteratorBase& iter, const c10::Scalar& alpha = 1);

// Runs complex row `id` over `ins` (broadcast to `out`, which the caller sized; complex, or
// real/bool for the predicates) computing in complex dtype `compute`; `param` is the row's
// complex parameter (alpha, value) where it has one.
void pw_complex_launch(PwId id, const at::Tensor& out, const std::vector<at::Tensor>& ins, c10::ScalarType compute,
                       const c10::Scalar& param = 1);

// True when a runner must take the complex path for its operands' common dtype.
inline bool pw_is_complex(c10::ScalarType t) { return c10::isComplexType(t); }

// A complex tensor as its real and imaginary planes, real (2, *z.shape) contiguous, and back:
// ops that only move or add elements (padding, im2col/col2im) run their real kernels on twice
// the planes / batch.
inline at::Tensor complex_planes(const at::Tensor& z) {
  return at::view_as_real(z.resolve_conj()).movedim(-1, 0).contiguous();
}
inline at::Tensor from_complex_planes(const at::Tensor& planes) {
  at::Tensor moved = planes.movedim(0, -1);  // into fresh strides (contiguous() keeps a zero-size tensor's)
  return at::view_as_complex(at::empty(moved.sizes(), moved.options()).copy_(moved));
}

} // namespace pytorch_ocl
