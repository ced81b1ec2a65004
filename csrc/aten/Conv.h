// The convolution entry points, also called by the pytorch_ocl.ops bindings.
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/conv.h>
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

// The passes of a 2-D convolution (4-D tensors, geometry `s`), for the 3-D convolutions built on them:
// y = conv(x, w) + bias in x's memory format; dx of conv(x, w) from dy in `format`; dw of conv(x, w) as a
// contiguous [K, C / groups, KH, KW]. w is contiguous [K, C / groups, KH, KW].
void check_conv_operands(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias);
at::Tensor conv2d_pass_forward(const dlprim::ConvShape& s, const at::Tensor& x, const at::Tensor& w,
                               const at::Tensor& bias);
at::Tensor conv2d_pass_backward_data(const dlprim::ConvShape& s, const at::Tensor& dy, const at::Tensor& w,
                                     c10::MemoryFormat format);
at::Tensor conv2d_pass_backward_weight(const dlprim::ConvShape& s, const at::Tensor& x, const at::Tensor& dy);

// int64 convolutions of any rank on the native integer ops (ConvInteger.cpp); no backward (integers).
at::Tensor integer_convolution(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                               at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                               bool transposed, at::IntArrayRef output_padding, int64_t groups);

// 3-D convolutions (Conv3d.cpp): the depth dimension folded into the batch and channels of one 2-D pass.
at::Tensor convolution3d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                         at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                         at::IntArrayRef output_padding, int64_t groups);
std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution3d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask);

// How float32 convolutions may use the matrix engine: TF32 when torch.backends.cudnn.allow_tf32 (CUDA's
// switch, default on; torch.backends.cudnn.conv.fp32_precision on torch >= 2.9) allows it, as CUDA does.
dlprim::Fp32Math conv_fp32_math();

} // namespace pytorch_ocl
