// The convolution entry points, also called by the pytorch_ocl.ops bindings.
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/gemm.h>

#include <array>
#include <optional>
#include <tuple>

namespace pytorch_ocl {

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups);

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

// How float32 convolutions may use the matrix engine: TF32 when torch.backends.cudnn.allow_tf32 (CUDA's
// switch, default on; torch.backends.cudnn.conv.fp32_precision on torch >= 2.9) allows it, as CUDA does.
dlprim::Fp32Math conv_fp32_math();

} // namespace pytorch_ocl
