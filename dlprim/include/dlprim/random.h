// Counter-based random numbers (Philox 4x32-10): every (seed, offset, element) gives
// the same value on every device, so results are reproducible and need no state on the device.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <cstdint>

namespace dlprim {

enum class Distribution { Uniform, Normal };

// Fills `n` contiguous elements of `mem` starting at element `offset`:
// Uniform in [a, b), Normal with mean a and standard deviation b.
void fill_random(const Context& ctx, cl_command_queue q, Distribution dist, DType dtype,
                 cl_mem mem, uint64_t offset, uint64_t n, uint64_t seed, uint64_t philox_offset,
                 double a, double b);

// How many Philox counter increments one fill of `n` elements consumes.
uint64_t random_offset_increment(uint64_t n);

} // namespace dlprim
