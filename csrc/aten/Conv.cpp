// Convolutions (1-D through 3-D, transposed included; 3-D in Conv3d.cpp) via convolution_overrideable and
// convolution_backward_overrideable: the dlprim conv2d passes. A transposed convolution's
// forward is the input gradient of the convolution it transposes, and vice versa.
#include "aten/Conv.h"

#include "core/Errors.h"
#include <dlprim/conv.h>
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

int64_t param(at::IntArrayRef v, size_t i, const char* what) {
  TORCH_CHECK(!v.empty(), "convolution: ", what, " must not be empty");
  return v.size() == 1 ? v[0] : v[i];
}

// GEMM-based passes want height and width to form one pixel index with a unit stride along
// pixels or channels; anything else (expanded gradients, odd views) is made contiguous.
at::Tensor activation_operand(const at::Tensor& t) {
  bool linear = t.size(2) == 1 || t.stride(2) == t.size(3) * t.stride(3);
  if (linear && (t.stride(3) == 1 || t.stride(1) == 1)) return t;
  return t.contiguous(t.suggest_memory_format());
}

dlprim::ConvTensor conv_tensor(const at::Tensor& t) {
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize(), t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

dlprim::ConvBuffer conv_buffer(const at::Tensor& t) {
  if (!t.defined()) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

at::Tensor workspace(const at::Tensor& like, uint64_t bytes) {
  if (!bytes) return at::Tensor();
  return at::empty({static_cast<int64_t>(bytes)}, like.options().dtype(at::kByte));
}

// The convolution as dlprim sees it: x [N, C, H, W] -> y [N, K, OH, OW]. For a transposed
// convolution this is the convolution whose input gradient it computes (its input is `y`).
struct Geometry {
  dlprim::ConvShape s;
  bool one_d = false;
};

Geometry make_geometry(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                       at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  TORCH_CHECK(input.dim() == 3 || input.dim() == 4, "ocl convolution supports 1-D to 3-D convolutions; got input of ",
              input.dim(), " dims");
  TORCH_CHECK(weight.dim() == input.dim(), "convolution: expected weight to have ", input.dim(), " dims, got ",
              weight.dim());
  TORCH_CHECK(groups >= 1, "convolution: non-positive groups is not supported");
  Geometry g;
  g.one_d = input.dim() == 3;
  dlprim::ConvShape& s = g.s;
  s.fp32_math = conv_fp32_math();
  const size_t ih = 0, iw = 1;  // positions in the per-dim parameter lists (1-D lists use entry 0)
  auto p = [&](at::IntArrayRef v, size_t i, const char* what) { return g.one_d ? param(v, 0, what) : param(v, i, what); };
  int64_t in_h = g.one_d ? 1 : input.size(2), in_w = input.size(input.dim() - 1);
  int64_t k_h = g.one_d ? 1 : weight.size(2), k_w = weight.size(weight.dim() - 1);
  s.groups = groups;
  s.KH = k_h;
  s.KW = k_w;
  s.sh = g.one_d ? 1 : p(stride, ih, "stride");
  s.sw = p(stride, iw, "stride");
  s.ph = g.one_d ? 0 : p(padding, ih, "padding");
  s.pw = p(padding, iw, "padding");
  s.dh = g.one_d ? 1 : p(dilation, ih, "dilation");
  s.dw = p(dilation, iw, "dilation");
  TORCH_CHECK(s.sh > 0 && s.sw > 0, "convolution: non-positive stride is not supported");
  TORCH_CHECK(s.dh > 0 && s.dw > 0, "convolution: dilation should be greater than zero");
  TORCH_CHECK(s.ph >= 0 && s.pw >= 0, "convolution: negative padding is not supported");
  s.N = input.size(0);
  if (!transposed) {
    s.C = input.size(1);
    s.K = weight.size(0);
    TORCH_CHECK(s.C == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
                ", expected input", input.sizes(), " to have ", weight.size(1) * groups,
                " channels, but got ", s.C, " channels instead");
    TORCH_CHECK(s.K % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", weight.sizes(), " instead");
    s.H = in_h;
    s.W = in_w;
    s.OH = dlprim::conv_output_size(s.H, s.KH, s.sh, s.ph, s.dh);
    s.OW = dlprim::conv_output_size(s.W, s.KW, s.sw, s.pw, s.dw);
    TORCH_CHECK(s.OH > 0 && s.OW > 0, "Calculated output size: (", s.OH, "x", s.OW,
                "). Output size is too small for input of size ", input.sizes(), " and kernel ", weight.sizes());
  } else {
    TORCH_CHECK(input.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(),
                ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ",
                input.size(1), " channels instead");
    TORCH_CHECK(weight.size(0) % groups == 0, "convolution: weight size 0 must be divisible by groups");
    s.K = weight.size(0);
    s.C = weight.size(1) * groups;
    s.OH = in_h;
    s.OW = in_w;
    int64_t oph = g.one_d ? 0 : p(output_padding, ih, "output_padding"), opw = p(output_padding, iw, "output_padding");
    s.H = (s.OH - 1) * s.sh - 2 * s.ph + s.dh * (s.KH - 1) + oph + 1;
    s.W = (s.OW - 1) * s.sw - 2 * s.pw + s.dw * (s.KW - 1) + opw + 1;
    TORCH_CHECK(s.H > 0 && s.W > 0, "conv_transpose: output size is too small (", s.H, "x", s.W, ")");
  }
  return g;
}

at::Tensor as4d(const at::Tensor& t, bool one_d) { return one_d ? t.unsqueeze(2) : t; }

} // namespace

void check_conv_operands(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias) {
  check_ocl(input, "convolution", "input");
  check_ocl(weight, "convolution", "weight");
  TORCH_CHECK(input.scalar_type() == weight.scalar_type(), "Input type (", input.scalar_type(),
              ") and weight type (", weight.scalar_type(), ") should be the same");
  TORCH_CHECK(input.device() == weight.device(), "convolution: input and weight are on different devices");
  TORCH_CHECK_TYPE(c10::isFloatingType(input.scalar_type()), "convolution: dtype ", input.scalar_type(),
                   " is not supported on the ocl device");
  if (bias && bias->defined()) {
    check_ocl(*bias, "convolution", "bias");
    TORCH_CHECK(bias->scalar_type() == input.scalar_type(), "Input type (", input.scalar_type(),
                ") and bias type (", bias->scalar_type(), ") should be the same");
  }
}

at::Tensor conv2d_pass_forward(const dlprim::ConvShape& s, const at::Tensor& x4, const at::Tensor& w, const at::Tensor& bias) {
  at::Tensor x = activation_operand(x4);
  at::Tensor y = at::empty({s.N, s.K, s.OH, s.OW}, x.options().memory_format(x.suggest_memory_format()));
  if (y.numel() == 0) return y;
  dlprim::DType dt = to_dlprim(x.scalar_type(), "convolution");
  int device = x.device().index();
  dlprim::Context& ctx = context(device);
  dlprim::ConvTensor xt = conv_tensor(x), yt = conv_tensor(y);
  uint64_t bytes = 0;
  OCL_DLPRIM_CALL("convolution", bytes = dlprim::conv2d_workspace_bytes(ctx, dlprim::ConvPass::Forward, s, dt, xt, yt));
  at::Tensor ws = workspace(x, bytes);
  BufferRef wb = ws.defined() ? buffer_of(ws) : BufferRef{};
  OCL_TRACE("convolution fwd ", x.sizes(), " w=", w.sizes(), " path=", dlprim::conv2d_path(s), " ws=", bytes);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("convolution", dlprim::conv2d_forward(ctx, q, s, dt, xt, conv_buffer(w), conv_buffer(bias), yt,
                                                        wb.mem, wb.offset));
  note_enqueued(q);
  return y;
}

at::Tensor conv2d_pass_backward_data(const dlprim::ConvShape& s, const at::Tensor& dy4, const at::Tensor& w,
                             c10::MemoryFormat format) {
  at::Tensor dy = activation_operand(dy4);
  at::Tensor dx = at::empty({s.N, s.C, s.H, s.W}, dy.options().memory_format(format));
  if (dx.numel() == 0) return dx;
  dlprim::DType dt = to_dlprim(dy.scalar_type(), "convolution_backward");
  int device = dy.device().index();
  dlprim::Context& ctx = context(device);
  dlprim::ConvTensor dyt = conv_tensor(dy), dxt = conv_tensor(dx);
  uint64_t bytes = 0;
  OCL_DLPRIM_CALL("convolution_backward",
                  bytes = dlprim::conv2d_workspace_bytes(ctx, dlprim::ConvPass::BackwardData, s, dt, dxt, dyt));
  at::Tensor ws = workspace(dy, bytes);
  BufferRef wb = ws.defined() ? buffer_of(ws) : BufferRef{};
  OCL_TRACE("convolution bwd data ", dy.sizes(), " path=", dlprim::conv2d_path(s), " ws=", bytes);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("convolution_backward",
                  dlprim::conv2d_backward_data(ctx, q, s, dt, dyt, conv_buffer(w), dxt, wb.mem, wb.offset));
  note_enqueued(q);
  return dx;
}

at::Tensor conv2d_pass_backward_weight(const dlprim::ConvShape& s, const at::Tensor& x4, const at::Tensor& dy4) {
  at::Tensor x = activation_operand(x4), dy = activation_operand(dy4);
  at::Tensor dw = at::empty({s.K, s.C / s.groups, s.KH, s.KW}, x.options());
  if (dw.numel() == 0) return dw;
  dlprim::DType dt = to_dlprim(x.scalar_type(), "convolution_backward");
  int device = x.device().index();
  dlprim::Context& ctx = context(device);
  dlprim::ConvTensor xt = conv_tensor(x), dyt = conv_tensor(dy);
  uint64_t bytes = 0;
  OCL_DLPRIM_CALL("convolution_backward",
                  bytes = dlprim::conv2d_workspace_bytes(ctx, dlprim::ConvPass::BackwardWeight, s, dt, xt, dyt));
  at::Tensor ws = workspace(x, bytes);
  BufferRef wb = ws.defined() ? buffer_of(ws) : BufferRef{};
  OCL_TRACE("convolution bwd weight ", x.sizes(), " path=", dlprim::conv2d_path(s), " ws=", bytes);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("convolution_backward",
                  dlprim::conv2d_backward_weight(ctx, q, s, dt, xt, dyt, conv_buffer(dw), wb.mem, wb.offset));
  note_enqueued(q);
  return dw;
}

at::Tensor convolution(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias_opt,
                       at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                       at::IntArrayRef output_padding, int64_t groups) {
  at::Tensor bias = bias_opt.has_value() ? *bias_opt : at::Tensor();
  if (input.scalar_type() == at::kLong && weight.scalar_type() == at::kLong &&
      (!bias.defined() || bias.scalar_type() == at::kLong)) {  // int64, as op_db's CPU dtypes (ConvInteger.cpp)
    check_ocl(input, "convolution", "input");
    check_ocl(weight, "convolution", "weight");
    if (bias.defined()) check_ocl(bias, "convolution", "bias");
    c10::DeviceGuard guard(input.device());
    return integer_convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  }
  check_conv_operands(input, weight, &bias);
  c10::DeviceGuard guard(input.device());
  if (input.dim() == 5)
    return convolution3d(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  Geometry g = make_geometry(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor x = as4d(input, g.one_d), w = as4d(weight, g.one_d).contiguous();
  at::Tensor out;
  if (!transposed) {
    TORCH_CHECK(!bias.defined() || bias.numel() == g.s.K, "convolution: expected bias of ", g.s.K, " elements, got ",
                bias.numel());
    out = conv2d_pass_forward(g.s, x, w, bias.defined() ? bias.contiguous() : bias);
  } else {
    TORCH_CHECK(!bias.defined() || bias.numel() == g.s.C, "conv_transpose: expected bias of ", g.s.C,
                " elements, got ", bias.numel());
    // 16-bit with a bias: the pass and the bias add in float32, rounded once, as the CPU and the 3-D path
    // (Conv3d.cpp) do. Adding the bias to the rounded output (cuDNN's way) rounds twice, which near
    // cancellation cost op_db's bfloat16 conv_transpose1d 15 times the CPU's error against float64.
    bool narrow = bias.defined() && (x.scalar_type() == c10::kHalf || x.scalar_type() == c10::kBFloat16);
    out = conv2d_pass_backward_data(g.s, narrow ? x.to(c10::kFloat) : x, narrow ? w.to(c10::kFloat) : w,
                                    x.suggest_memory_format());
    if (bias.defined() && out.numel()) out.add_(bias.view({1, -1, 1, 1}));
    if (narrow) out = out.to(x.scalar_type());
  }
  return g.one_d ? out.squeeze(2) : out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  check_conv_operands(input, weight, nullptr);
  check_ocl(grad_output, "convolution_backward", "grad_output");
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "convolution_backward: grad_output has dtype ",
              grad_output.scalar_type(), ", expected ", input.scalar_type());
  c10::DeviceGuard guard(input.device());
  if (input.dim() == 5)
    return convolution3d_backward(grad_output, input, weight, stride, padding, dilation, transposed, output_padding,
                                  groups, output_mask);
  Geometry g = make_geometry(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor x = as4d(input, g.one_d), w = as4d(weight, g.one_d).contiguous(), gy = as4d(grad_output, g.one_d);
  at::Tensor grad_input, grad_weight, grad_bias;
  if (!transposed) {
    if (output_mask[0]) grad_input = conv2d_pass_backward_data(g.s, gy, w, x.suggest_memory_format());
    if (output_mask[1]) grad_weight = conv2d_pass_backward_weight(g.s, x, gy);
  } else {
    // input plays the convolution's output gradient, grad_output its input.
    if (output_mask[0]) grad_input = conv2d_pass_forward(g.s, gy, w, at::Tensor());
    if (output_mask[1]) grad_weight = conv2d_pass_backward_weight(g.s, gy, x);
  }
  if (output_mask[2]) grad_bias = at::sum(gy, {0, 2, 3});
  if (g.one_d) {
    if (grad_input.defined()) grad_input = grad_input.squeeze(2);
    if (grad_weight.defined()) grad_weight = grad_weight.squeeze(2);
  }
  return {grad_input, grad_weight, grad_bias};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", TORCH_FN(convolution));
  m.impl("convolution_backward_overrideable", TORCH_FN(convolution_backward));
}

dlprim::Fp32Math conv_fp32_math() {
  return at::globalContext().allowTF32CuDNN(at::Float32Op::CONV) ? dlprim::Fp32Math::Tf32 : dlprim::Fp32Math::Exact;
}

} // namespace pytorch_ocl
