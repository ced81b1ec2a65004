// uint8 bilinear / bicubic (plain and antialiased) 2-D interpolation with the CPU's fixed-point
// arithmetic (see UpsampleUint8.cpp); returns a new contiguous uint8 tensor.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

namespace pytorch_ocl {

at::Tensor upsample2d_uint8(const at::Tensor& self, c10::IntArrayRef output_size, bool align_corners,
                            const std::vector<std::optional<double>>& scales, bool cubic, bool antialias);

} // namespace pytorch_ocl
