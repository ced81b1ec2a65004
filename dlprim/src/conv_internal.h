// Shared by conv.cpp (paths, im2col), conv_implicit.cpp (implicit-GEMM forward + tuning),
// conv_winograd.cpp (Winograd F(4x4, 3x3)) and conv_tune.cpp (timing on scratch tensors).
#pragma once
#include <dlprim/conv.h>

#include "gemm_internal.h"

#include <functional>
#include <string>

namespace dlprim {
namespace detail {

// A kernel of conv.cl for `dtype`, built once per context.
LockedKernel& conv_kernel(const Context& ctx, DType dtype, const char* name);
// The CONV_GEOMETRY arguments of conv.cl.
void add_geometry(KernelArgs& a, const ConvShape& s);
// Buffer, offset (moved `batch_offset` images on) and the four strides of `t`.
void add_tensor(KernelArgs& a, const ConvTensor& t, int64_t batch_offset = 0);

// Depthwise convolution (conv_depthwise.cpp): direct kernels; `dy` gives the gradient's strides.
uint64_t depthwise_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& dy);
void depthwise_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                       const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y);
void depthwise_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                             const ConvTensor& dy, const ConvBuffer& w, const ConvTensor& dx);
void depthwise_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                               const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                               uint64_t ws_offset);

// The im2col + GEMM forward and its workspace (conv.cpp).
uint64_t im2col_forward_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                  const ConvTensor& y);
// Build (without running) the program of the im2col kernel / of the Winograd transforms: a deferred
// tuning's background job (the im2col path's GEMM is tuned on its own when timed).
void im2col_prepare(const Context& ctx, DType dtype);
void winograd_prepare(const Context& ctx, DType dtype);
void im2col_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                    const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset);

// The GEMM + col2im input gradient (conv.cpp) and its workspace; `dx` / `dy` give strides.
uint64_t gemm_backward_data_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& dx,
                                      const ConvTensor& dy);
void gemm_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& dy,
                        const ConvBuffer& w, const ConvTensor& dx, cl_mem ws, uint64_t ws_offset);

// The im2col + GEMM weight gradient (conv.cpp) and its workspace.
uint64_t gemm_backward_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                        const ConvTensor& dy);
void gemm_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                          const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws, uint64_t ws_offset);

// Autotuning class buckets: sizes by powers of 4 from 16, batches 1, 2-4, 5-16, 17-64, ...
std::string shape_bucket(int64_t v);
std::string batch_bucket(int64_t z);

// Scratch tensors of a layer's shape (batch capped) on a private queue, for timing candidates.
class ConvScratch {
public:
  ConvScratch(const Context& ctx, const ConvShape& s, DType dtype);
  ~ConvScratch();
  ConvScratch(const ConvScratch&) = delete;
  ConvScratch& operator=(const ConvScratch&) = delete;
  const ConvShape& shape() const { return s_; }
  ConvTensor x();  // [N, C, H, W] contiguous
  ConvTensor y();  // [N, K, OH, OW] contiguous
  ConvBuffer w();
  // Best wall-clock time of 3 runs of `run(queue, workspace)` after a warm-up, in microseconds.
  double time_us(uint64_t ws_bytes, const std::function<void(cl_command_queue, cl_mem)>& run);

private:
  cl_mem alloc(uint64_t bytes);
  void setup();
  const Context& ctx_;
  ConvShape s_;
  DType dtype_;
  cl_command_queue q_ = nullptr;
  cl_mem x_ = nullptr, w_ = nullptr, y_ = nullptr, ws_ = nullptr;
  uint64_t ws_bytes_ = 0;
};

// Winograd F(4x4, 3x3): a 3x3 stride-1 convolution of `Cin` -> `Cout` channels, input H x W,
// output OH x OW, with weight element (o, i, r, s) at w.offset + o * w_so + i * w_si + r * 3 + s
// (rotated by 180 degrees when `flip`).
struct WinoConv {
  int64_t N = 0, Cin = 0, H = 0, W = 0, Cout = 0, OH = 0, OW = 0, ph = 0, pw = 0;
  int64_t w_so = 0, w_si = 0;
  bool flip = false;
  Fp32Math fp32_math = Fp32Math::Exact;  // of the 36 products
};
// 3x3, stride 1, dilation 1, one group.
bool winograd_eligible(const ConvShape& s);
// PYTORCH_OCL_CONV_WINOGRAD: 1 forces Winograd where eligible, 0 disables it, -1 unset (timed).
int winograd_env();
WinoConv winograd_forward_conv(const ConvShape& s);
WinoConv winograd_backward_data_conv(const ConvShape& s);  // dx = conv(dy, rotated w^T)
uint64_t winograd_workspace(const Context& ctx, const WinoConv& c, DType dtype);
void winograd_run(const Context& ctx, cl_command_queue q, const WinoConv& c, DType dtype, const ConvTensor& x,
                  const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y, cl_mem ws, uint64_t ws_offset);
// The weight gradient (dw contiguous [K, C, 3, 3]) through Winograd, and its workspace.
uint64_t winograd_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype);
void winograd_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                              const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                              uint64_t ws_offset);
// Whether the weight gradient of `s` runs through Winograd (forced, or timed faster than im2col + GEMM).
bool winograd_backward_weight_chosen(const Context& ctx, const ConvShape& s, DType dtype);
// Whether the input gradient of `s` runs through Winograd (forced, or timed faster than GEMM + col2im).
bool winograd_backward_data_chosen(const Context& ctx, const ConvShape& s, DType dtype);

// How a forward convolution of the im2col family runs on this device: Winograd (eligible
// layers where timed faster, or forced), the implicit-GEMM kernel (GPUs, when the autotuner
// finds it faster than im2col) or im2col.
struct ImplicitPlan {
  bool winograd = false;
  bool use = false;
  TileConfig cfg;
  SplitPlan split;
};
ImplicitPlan implicit_forward_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                   const ConvTensor& y);
void implicit_forward(const Context& ctx, cl_command_queue q, const ImplicitPlan& plan, const ConvShape& s,
                      DType dtype, const ConvTensor& x, const ConvBuffer& w, const ConvBuffer& bias,
                      const ConvTensor& y, cl_mem ws, uint64_t ws_offset);

} // namespace detail
} // namespace dlprim
