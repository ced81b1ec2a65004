// Shared by the random ops: generator offsets and launches of dlprim's distribution table.
#pragma once
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <dlprim/random.h>

#include <optional>
#include <utility>
#include <vector>

namespace pytorch_ocl {

// (seed, Philox offset) for one op on `device`, from `gen` or the device's default generator;
// reserves `increment` offsets under the generator's lock.
std::pair<uint64_t, uint64_t> next_philox(const std::optional<at::Generator>& gen, int device,
                                          uint64_t increment = dlprim::random_offset_increment());

// Writes `outputs` (same sizes, any strides) from distribution `dist`, reading `input` (and `input2`, broadcast
// to their sizes) where the distribution has them.
void launch_random(dlprim::Distribution dist, const std::vector<at::Tensor>& outputs, const at::Tensor* input,
                   const dlprim::RandomParams& params, const std::optional<at::Generator>& gen, const char* op,
                   const at::Tensor* input2 = nullptr);

} // namespace pytorch_ocl
