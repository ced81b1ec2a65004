// Index-driven copies: gather along a dimension and masked compaction (masked_select).
#pragma once
#include <dlprim/typed_kernels.h>

#include <cstdint>

namespace dlprim {

constexpr int kGatherMaxDims = 8;

// out (contiguous, the index's shape `sizes`) = src gathered along `dim` by index (contiguous
// int64, in range); src is read through `src_strides` (elements). rank <= kGatherMaxDims.
void gather_dim(const Context& ctx, cl_command_queue q, DType t, Buffer src, Buffer index, Buffer out, int rank, int dim,
                const int64_t* sizes, const int64_t* src_strides);

// out[pos[i] - 1] = src[i] wherever mask[i] (bool); src, mask, pos (inclusive prefix sum of
// mask, int64) contiguous with n elements.
void masked_compact(const Context& ctx, cl_command_queue q, DType t, Buffer src, Buffer mask, Buffer pos, Buffer out,
                    uint64_t n);

} // namespace dlprim
