// Elementwise ops whose value depends on where an element is (arange, linspace, eye, tril,
// flip, ...): the body sees the element's coordinates in a row-major shape and writes y0.
#pragma once
#include <dlprim/context.h>
#include <dlprim/strided.h>

#include <array>
#include <string>

namespace dlprim {

// The body is OpenCL C that assigns y0 (of the compute type `ct`) from:
//   c[d]    coordinate of dim d (long), d < rank      idx   the row-major index (ulong)
//   x0      the input element at the same coordinates (ops with an input), of type ct
//   k0..k3  integer parameters (long)                 f0..f3  parameters of type ct
// The compute type is also available as `dl_ct`; DL_ROUND(v) rounds v to the precision of a
// 16-bit floating output (identity otherwise), for ops whose CPU version computes in that type.
// An op object must outlive every launch of it (ops live in static tables).
struct PositionalOp {
  std::string name;
  std::string body;
  bool has_input = false;
};

struct PositionalParams {
  std::array<int64_t, 4> k{};
  std::array<Scalar, 4> f{};  // converted to the compute type (integers stay exact)
};

void positional(const Context& ctx, cl_command_queue q, const PositionalOp& op, DType compute,
                const RowMajorShape& shape, const StridedOperand& out, const StridedOperand* in,
                const PositionalParams& params);

} // namespace dlprim
