// Counter-based random numbers (Philox 4x32-10): the element with row-major index i of a
// launch gets word i % 4 of Philox(counter = (i / 4, philox_offset), key = seed), so every
// (seed, offset, shape) gives the same values on every device and for every memory layout,
// and the generator keeps no state on the device.
//
// Every distribution is one row of a table in random.cpp (an OpenCL expression of a uniform
// U, an open uniform UO, a standard normal Z or raw bits, and the parameters), compiled into
// one generated kernel per (distribution, operand dtypes).
#pragma once
#include <dlprim/context.h>
#include <dlprim/strided.h>

#include <cstdint>
#include <vector>

namespace dlprim {

enum class Distribution {
  Uniform,          // [a, b)
  Normal,           // mean a, standard deviation b
  Bernoulli,        // 1 with probability a
  BernoulliTensor,  // 1 with probability taken from the input (any dtype, any strides)
  Exponential,      // rate a
  Geometric,        // success probability a; values 1, 2, ...
  LogNormal,        // exp(Normal(a, b))
  Cauchy,           // median a, scale b
  IntegerRange,     // base + bits % range; range 0 means all 64 bits
  Dropout,          // outputs (x * keep * b, keep) with keep = 1 with probability a; input x
  Gamma,            // Gamma(x, 1) for the input's concentration x (random_rejection.cl)
  Poisson,          // Poisson(x) for the input's rate x, as a count (random_rejection.cl)
  Binomial,         // Binomial(x, x1): counts x and probabilities x1, the second input (random_rejection.cl)
};

struct RandomParams {
  double a = 0, b = 0;
  int64_t base = 0;
  uint64_t range = 0;
};

// Outputs: one (two for Dropout: result, mask). `input` is needed by BernoulliTensor, Dropout and the samplers
// with a parameter tensor, `input2` by Binomial. Values are computed in float (double when an operand is float64;
// 64-bit integers for IntegerRange) and converted to each output's dtype.
void random_generate(const Context& ctx, cl_command_queue q, Distribution dist, const RowMajorShape& shape,
                     const std::vector<StridedOperand>& outputs, const StridedOperand* input, uint64_t seed,
                     uint64_t philox_offset, const RandomParams& params, const StridedOperand* input2 = nullptr);

// How many Philox offsets one launch consumes (one: elements use distinct counters).
inline uint64_t random_offset_increment() { return 1; }

} // namespace dlprim
