// 3-D convolutions (conv3d, conv_transpose3d) on the 2-D convolution passes of Conv.cpp, by
// folding the depth dimension away: output depth slice od of conv3d(x, w) reads the input depth
// slices od * sd + kd * dd (kd < KD) of the depth-padded input, so the input unfolded along depth
// as xu[N * OD, C * KD, H, W] (channel c * KD + kd) and the weight viewed as [K, C / g * KD, KH, KW]
// make one 2-D convolution whose output [N * OD, K, OH, OW] is the 3-D one with depth moved next
// to the batch. Channel c * KD + kd keeps each group's channels contiguous, so groups carry over.
// The input gradient comes back unfolded and is folded (summed over the KD depth taps) into the
// padded input. This costs one unfold copy of KD / sd times the input but reuses every tuned 2-D
// path (GEMM, Winograd, implicit GEMM) and their backward passes instead of new GEMM kernels.
#include "aten/Conv.h"

#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>

namespace pytorch_ocl {

namespace {

int64_t param3(at::IntArrayRef v, size_t i, const char* what) {
  TORCH_CHECK(!v.empty(), "conv3d: ", what, " must not be empty");
  return v.size() == 1 ? v[0] : v[i];
}

// The depth part of the geometry; s is the folded 2-D convolution x2 [N * OD, C * KD, H, W] ->
// y2 [N * OD, K, OH, OW]. For a transposed convolution this is the convolution it transposes:
// input is its y, the transposed output its x.
struct Geometry3d {
  int64_t N, C, D, K, KD, OD, sd, pd, dd;
  dlprim::ConvShape s;
};

Geometry3d make_geometry3d(const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
                           at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                           at::IntArrayRef output_padding, int64_t groups) {
  const char* op = transposed ? "conv_transpose3d" : "conv3d";
  TORCH_CHECK(weight.dim() == 5, op, ": expected weight to have 5 dims, got ", weight.dim());
  TORCH_CHECK(groups >= 1, op, ": non-positive groups is not supported");
  Geometry3d g;
  dlprim::ConvShape& s = g.s;
  s.fp32_math = conv_fp32_math();
  g.sd = param3(stride, 0, "stride");
  s.sh = param3(stride, 1, "stride");
  s.sw = param3(stride, 2, "stride");
  g.pd = param3(padding, 0, "padding");
  s.ph = param3(padding, 1, "padding");
  s.pw = param3(padding, 2, "padding");
  g.dd = param3(dilation, 0, "dilation");
  s.dh = param3(dilation, 1, "dilation");
  s.dw = param3(dilation, 2, "dilation");
  TORCH_CHECK(g.sd > 0 && s.sh > 0 && s.sw > 0, op, ": non-positive stride is not supported");
  TORCH_CHECK(g.dd > 0 && s.dh > 0 && s.dw > 0, op, ": dilation should be greater than zero");
  TORCH_CHECK(g.pd >= 0 && s.ph >= 0 && s.pw >= 0, op, ": negative padding is not supported");
  g.N = input.size(0);
  g.KD = weight.size(2);
  s.KH = weight.size(3);
  s.KW = weight.size(4);
  s.groups = groups;
  if (!transposed) {
    g.C = input.size(1);
    g.K = weight.size(0);
    TORCH_CHECK(g.C == weight.size(1) * groups, "Given groups=", groups, ", weight of size ", weight.sizes(),
                ", expected input", input.sizes(), " to have ", weight.size(1) * groups, " channels, but got ", g.C,
                " channels instead");
    TORCH_CHECK(g.K % groups == 0, "Given groups=", groups, ", expected weight to be divisible by ", groups,
                " at dimension 0, but got weight of size ", weight.sizes(), " instead");
    g.D = input.size(2);
    s.H = input.size(3);
    s.W = input.size(4);
    g.OD = dlprim::conv_output_size(g.D, g.KD, g.sd, g.pd, g.dd);
    s.OH = dlprim::conv_output_size(s.H, s.KH, s.sh, s.ph, s.dh);
    s.OW = dlprim::conv_output_size(s.W, s.KW, s.sw, s.pw, s.dw);
    TORCH_CHECK(g.OD > 0 && s.OH > 0 && s.OW > 0, "Calculated output size: (", g.OD, "x", s.OH, "x", s.OW,
                "). Output size is too small for input of size ", input.sizes(), " and kernel ", weight.sizes());
  } else {
    TORCH_CHECK(input.size(1) == weight.size(0), "Given transposed=1, weight of size ", weight.sizes(),
                ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ",
                input.size(1), " channels instead");
    TORCH_CHECK(weight.size(0) % groups == 0, op, ": weight size 0 must be divisible by groups");
    g.K = weight.size(0);
    g.C = weight.size(1) * groups;
    g.OD = input.size(2);
    s.OH = input.size(3);
    s.OW = input.size(4);
    int64_t opd = param3(output_padding, 0, "output_padding"), oph = param3(output_padding, 1, "output_padding"),
            opw = param3(output_padding, 2, "output_padding");
    g.D = (g.OD - 1) * g.sd - 2 * g.pd + g.dd * (g.KD - 1) + opd + 1;
    s.H = (s.OH - 1) * s.sh - 2 * s.ph + s.dh * (s.KH - 1) + oph + 1;
    s.W = (s.OW - 1) * s.sw - 2 * s.pw + s.dw * (s.KW - 1) + opw + 1;
    TORCH_CHECK(g.D > 0 && s.H > 0 && s.W > 0, op, ": output size is too small (", g.D, "x", s.H, "x", s.W, ")");
  }
  s.N = g.N * g.OD;
  s.C = g.C * g.KD;
  s.K = g.K;
  return g;
}

// x [N, C, D, H, W] -> xu [N * OD, C * KD, H, W]: depth-padded, then the KD taps of each output
// depth gathered next to the channel (one copy).
at::Tensor unfold_depth(const Geometry3d& g, const at::Tensor& x) {
  at::Tensor xp = g.pd ? at::constant_pad_nd(x, {0, 0, 0, 0, g.pd, g.pd}, 0) : x;
  at::Tensor v = xp.as_strided({g.N, g.OD, g.C, g.KD, xp.size(3), xp.size(4)},
                               {xp.stride(0), g.sd * xp.stride(2), xp.stride(1), g.dd * xp.stride(2), xp.stride(3),
                                xp.stride(4)},
                               xp.storage_offset());
  return v.reshape({g.N * g.OD, g.C * g.KD, xp.size(3), xp.size(4)});
}

// The inverse's adjoint: xu-shaped gradient [N * OD, C * KD, H, W] summed into [N, C, D, H, W].
at::Tensor fold_depth(const Geometry3d& g, const at::Tensor& gu) {
  int64_t H = gu.size(2), W = gu.size(3), Dp = g.D + 2 * g.pd;
  at::Tensor gp = at::zeros({g.N, g.C, Dp, H, W}, gu.options());
  at::Tensor u = gu.view({g.N, g.OD, g.C, g.KD, H, W});
  // One tap at a time: taps of different kd may hit the same depth slice (overlapping windows).
  for (int64_t kd = 0; kd < g.KD; ++kd) {
    at::Tensor dst = gp.as_strided({g.N, g.OD, g.C, H, W}, {gp.stride(0), g.sd * gp.stride(2), gp.stride(1),
                                                             gp.stride(3), gp.stride(4)},
                                   gp.storage_offset() + kd * g.dd * gp.stride(2));
    dst.add_(u.select(3, kd));
  }
  return g.pd ? gp.narrow(2, g.pd, g.D).contiguous() : gp;
}

// y2 [N * OD, K, OH, OW] <-> y [N, K, OD, OH, OW]
at::Tensor unfold_output(const Geometry3d& g, const at::Tensor& y) {
  return y.permute({0, 2, 1, 3, 4}).reshape({g.N * g.OD, g.K, y.size(3), y.size(4)});
}
at::Tensor fold_output(const Geometry3d& g, const at::Tensor& y2) {
  return y2.reshape({g.N, g.OD, g.K, y2.size(2), y2.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
}

at::Tensor weight2d(const Geometry3d& g, const at::Tensor& weight) {
  return weight.contiguous().view({weight.size(0), weight.size(1) * g.KD, g.s.KH, g.s.KW});
}

// The input gradient of the 3-D convolution from dy [N, K, OD, OH, OW]. Each element sums KD taps
// that come out of the 2-D pass separately: for 16-bit dtypes the pass and the sum run in float32
// and round once, as a 2-D convolution (which accumulates in float32) does; so does the bias of a
// transposed convolution, added before that rounding.
at::Tensor backward_data3d(const Geometry3d& g, const at::Tensor& dy, const at::Tensor& w2,
                           const at::Tensor& bias = at::Tensor()) {
  bool narrow = dy.scalar_type() == c10::kHalf || dy.scalar_type() == c10::kBFloat16;
  at::Tensor dy2 = unfold_output(g, narrow ? dy.to(c10::kFloat) : dy);
  at::Tensor gu = conv2d_pass_backward_data(g.s, dy2, narrow ? w2.to(c10::kFloat) : w2, c10::MemoryFormat::Contiguous);
  at::Tensor dx = fold_depth(g, gu);
  if (bias.defined() && dx.numel()) dx.add_(bias.view({1, -1, 1, 1, 1}));
  return narrow ? dx.to(dy.scalar_type()) : dx;
}

} // namespace

at::Tensor convolution3d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                         at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed,
                         at::IntArrayRef output_padding, int64_t groups) {
  Geometry3d g = make_geometry3d(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor w2 = weight2d(g, weight);
  if (!transposed) {
    TORCH_CHECK(!bias.defined() || bias.numel() == g.K, "conv3d: expected bias of ", g.K, " elements, got ",
                bias.numel());
    at::Tensor y2 = conv2d_pass_forward(g.s, unfold_depth(g, input), w2, bias.defined() ? bias.contiguous() : bias);
    return fold_output(g, y2);
  }
  TORCH_CHECK(!bias.defined() || bias.numel() == g.C, "conv_transpose3d: expected bias of ", g.C, " elements, got ",
              bias.numel());
  return backward_data3d(g, input, w2, bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution3d_backward(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, at::IntArrayRef stride,
    at::IntArrayRef padding, at::IntArrayRef dilation, bool transposed, at::IntArrayRef output_padding, int64_t groups,
    std::array<bool, 3> output_mask) {
  Geometry3d g = make_geometry3d(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  at::Tensor w2 = weight2d(g, weight);
  at::Tensor grad_input, grad_weight, grad_bias;
  // The convolution's x (unfolded) and dy (batch-folded): for a transposed one, grad_output and input.
  const at::Tensor& x = transposed ? grad_output : input;
  const at::Tensor& dy = transposed ? input : grad_output;
  at::Tensor xu = output_mask[1] || transposed ? unfold_depth(g, x) : at::Tensor();
  if (output_mask[0]) {
    grad_input = transposed ? fold_output(g, conv2d_pass_forward(g.s, xu, w2, at::Tensor()))
                            : backward_data3d(g, dy, w2);
  }
  if (output_mask[1])
    grad_weight = conv2d_pass_backward_weight(g.s, xu, unfold_output(g, dy)).view(weight.sizes());
  if (output_mask[2]) grad_bias = at::sum(grad_output, {0, 2, 3, 4});
  return {grad_input, grad_weight, grad_bias};
}

} // namespace pytorch_ocl
