// Runs a dlprim ReduceOp over chosen dims of a tensor: output shapes, resizing, strides,
// aliasing and the scratch workspace. Shared by the reduction op files.
#pragma once
#include <ATen/core/Tensor.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <c10/util/OptionalArrayRef.h>
#include <dlprim/reduce.h>

#include <array>
#include <bitset>
#include <vector>

namespace pytorch_ocl {

using DimMask = std::bitset<at::dim_bitset_size>;

// Reduced dims of a `ndim`-dim tensor: every dim when `dims` is absent or empty.
DimMask reduction_mask(at::OptionalIntArrayRef dims, int64_t ndim);
DimMask single_dim_mask(int64_t dim, int64_t ndim);

// Shape of a reduction's result.
std::vector<int64_t> reduced_shape(const at::Tensor& self, const DimMask& mask, bool keepdim);

// The accumulate dtype of sums and products producing `out`: float for 16-bit floats,
// int64 for integers and bool.
c10::ScalarType sum_acc_type(c10::ScalarType out);

// Reduces `self` over `mask` into `outs` (resized to the reduced shape, any strides,
// may alias `self`), converting values to `acc` on load. params are w0, w1 of the op.
void launch_reduction(const dlprim::ReduceOp& op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                      const std::vector<at::Tensor>& outs, c10::ScalarType acc, std::array<double, 2> params,
                      const char* name);

// Raises CPU's error when a reduction without identity meets an empty reduced extent.
void check_nonempty_reduction(const at::Tensor& self, const DimMask& mask, bool all_dims, const char* name);

} // namespace pytorch_ocl
