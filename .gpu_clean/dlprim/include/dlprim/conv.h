// 2-D convolution (cross-correlation, as in PyTorch): batched, strided, dilated, zero-padded,
// grouped (depthwise included), with bias; forward, gradient w.r.t. the input (which is also
// the transposed convolution's forward) and w.r.t. the weight.
//
// Paths: depthwise (one input channel per group) uses direct kernels; 1x1 stride-1 unpadded
// convolutions are one GEMM on the input; the rest stage image patches (im2col) in the
// workspace a few images at a time and run the tuned GEMM on them (col2im for the input
// gradient), or on GPUs gather the patches inside the GEMM (implicit GEMM). 3x3 stride-1
// ungrouped layers may run as Winograd F(4x4, 3x3) (forward and input gradient) where it is
// timed faster (PYTORCH_OCL_CONV_WINOGRAD=0/1 disables/forces it). Weights are
// [K, C / groups, KH, KW] contiguous.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/gemm.h>  // Fp32Math

#include <cstdint>
#include <string>

namespace dlprim {

struct ConvShape {
  int64_t N = 1, C = 1, H = 1, W = 1;  // input: batch, channels, height, width
  int64_t K = 1, KH = 1, KW = 1;       // output channels, kernel size
  int64_t OH = 1, OW = 1;              // output size
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t groups = 1;
  // How float32 layers may use a matrix engine (gemm.h): the GEMM-based paths (1x1, im2col, Winograd's
  // products) follow it; torch's side sets Tf32 from torch.backends.cudnn.allow_tf32 as CUDA does.
  Fp32Math fp32_math = Fp32Math::Exact;
};
// The dtype and float32 math of a layer as one name / number, for tuning classes and plan keys
// ("float32" or "float32+tf32"; 16-bit dtypes ignore the math).
std::string conv_arith_name(const ConvShape& s, DType dtype);
int64_t conv_arith_key(const ConvShape& s, DType dtype);

// A 4-D activation [N, C, H, W]: element strides in that order (any layout, channels-last
// included). The GEMM-based paths need height and width to form one linear pixel index
// (stride_h == W * stride_w, or H == 1), which NCHW- and channels-last-contiguous tensors meet.
struct ConvTensor {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // elements
  int64_t sn = 0, sc = 0, sh = 0, sw = 0;
};

struct ConvBuffer {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // elements
};

// The output size along one dim (PyTorch's formula); may be <= 0 for invalid parameters.
int64_t conv_output_size(int64_t in, int64_t k, int64_t stride, int64_t pad, int64_t dil);

enum class ConvPass { Forward, BackwardData, BackwardWeight };
// Scratch bytes the pass needs (0 for the direct paths). `in` and `out` describe the strides
// of the input-shaped and output-shaped tensors of the pass (x / dx and y / dy); buffers unused.
uint64_t conv2d_workspace_bytes(const Context& ctx, ConvPass pass, const ConvShape& s, DType dtype,
                                const ConvTensor& in, const ConvTensor& out);

// y = conv(x, w) + bias (bias.mem may be null).
void conv2d_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                    const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset);
// dx = d(loss)/dx from dy (overwrites dx).
void conv2d_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& dy,
                          const ConvBuffer& w, const ConvTensor& dx, cl_mem ws, uint64_t ws_offset);
// dw = d(loss)/dw from x and dy (overwrites dw, contiguous [K, C / groups, KH, KW]).
void conv2d_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                            const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                            uint64_t ws_offset);

// Which path a convolution of this shape takes ("depthwise", "gemm1x1", "im2col"); for tests.
const char* conv2d_path(const ConvShape& s);
// The algorithm `pass` runs for this layer on this device (tuning it first if needed), e.g.
// "winograd", "implicit 128x64x16 t16x16 v4x4 local splits=1", "im2col", "col2im", "gemm1x1",
// "depthwise"; for benchmarks and tests. `in` / `out` give the strides as in conv2d_workspace_bytes.
std::string conv2d_algorithm(const Context& ctx, ConvPass pass, const ConvShape& s, DType dtype, const ConvTensor& in,
                             const ConvTensor& out);

// aten's im2col / col2im (F.unfold / F.fold), the conv patch kernels with groups 1 (K unused):
// cols = [N, C * KH * KW, OH * OW] contiguous, patch rows ordered (c, kh, kw) as torch's; x / dx
// any strides. col2im sums every entry that reads a pixel; its cols hold the accumulation type
// of dtype (float32 for 16-bit floats).
void conv_im2col(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                 cl_mem cols, uint64_t cols_offset);
void conv_col2im(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, cl_mem cols,
                 uint64_t cols_offset, const ConvTensor& dx);

} // namespace dlprim
