// Convolutions of integer tensors (1-D to 3-D, transposed, grouped, strided, dilated), which the CPU runs
// (slow_conv) and dlprim's floating kernels do not: exact products on the native ops, wrapping as the CPU's.
// Forward: the padded input's windows as strided views (Tensor::unfold per spatial dim, every dilation-th
// element), contracted with the weight by einsum (the integer batched GEMM). Transposed: the same
// convolution of the input with zeros stuffed between its elements (stride), padded by
// dilation * (kernel - 1) - padding (+ output_padding after), with the weight's in/out channels swapped
// per group and its window flipped. Integers have no autograd, so there is no backward.
#include "aten/Conv.h"

#include <ATen/ops/einsum.h>
#include <ATen/ops/zeros.h>
#include <c10/util/irange.h>

#include <string>
#include <vector>

namespace pytorch_ocl {

namespace {

// x with `lo[i]` zeros before and `hi[i]` after spatial dim i (negative: that many elements cut).
at::Tensor pad_spatial(const at::Tensor& x, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  at::Tensor src = x;
  for (size_t i = 0; i < lo.size(); ++i) {
    int64_t d = static_cast<int64_t>(i) + 2, cut_lo = std::max<int64_t>(0, -lo[i]), cut_hi = std::max<int64_t>(0, -hi[i]);
    int64_t keep = std::max<int64_t>(0, src.size(d) - cut_lo - cut_hi);
    src = src.narrow(d, std::min(cut_lo, src.size(d)), keep);
    shape[d] = keep + std::max<int64_t>(0, lo[i]) + std::max<int64_t>(0, hi[i]);
  }
  at::Tensor out = at::zeros(shape, x.options());
  at::Tensor dst = out;
  for (size_t i = 0; i < lo.size(); ++i)
    dst = dst.narrow(static_cast<int64_t>(i) + 2, std::max<int64_t>(0, lo[i]), src.size(static_cast<int64_t>(i) + 2));
  dst.copy_(src);
  return out;
}

at::Tensor forward(const at::Tensor& x, const at::Tensor& w, at::IntArrayRef stride, at::IntArrayRef padding,
                   at::IntArrayRef dilation, int64_t groups) {
  const int64_t k = x.dim() - 2, N = x.size(0), C = x.size(1), K = w.size(0);
  std::vector<int64_t> pad(padding.begin(), padding.end());
  at::Tensor p = pad_spatial(x, pad, pad);
  std::vector<int64_t> out_shape{N, K};
  for (const auto i : c10::irange(k)) {
    int64_t span = dilation[i] * (w.size(i + 2) - 1) + 1;
    int64_t o = p.size(i + 2) >= span ? (p.size(i + 2) - span) / stride[i] + 1 : 0;
    out_shape.push_back(o);
    if (o == 0) return at::zeros(out_shape, x.options());
  }
  for (const auto i : c10::irange(k)) {  // appends window dim i at the end, every dilation-th element kept
    int64_t span = dilation[i] * (w.size(i + 2) - 1) + 1;
    p = p.unfold(i + 2, span, stride[i]);
    p = p.slice(p.dim() - 1, 0, span, dilation[i]);
  }
  // p: [N, C, O..., kk...] -> [N, g, C/g, O..., kk...]; w: [K, C/g, kk...] -> [g, K/g, C/g, kk...]
  std::vector<int64_t> ps{N, groups, C / groups};
  ps.insert(ps.end(), p.sizes().begin() + 2, p.sizes().end());
  std::vector<int64_t> ws{groups, K / groups};
  ws.insert(ws.end(), w.sizes().begin() + 1, w.sizes().end());
  const std::string o = std::string("xyz").substr(0, k), kk = std::string("abd").substr(0, k);
  at::Tensor y = at::einsum("ngc" + o + kk + ",gec" + kk + "->nge" + o, {p.reshape(ps), w.reshape(ws)});
  return y.reshape(out_shape);
}

} // namespace

at::Tensor integer_convolution(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                               at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                               bool transposed, at::IntArrayRef output_padding, int64_t groups) {
  TORCH_CHECK(input.dim() >= 3 && input.dim() <= 5 && weight.dim() == input.dim(),
              "convolution: expected 3-D to 5-D input and weight of the same rank, got ", input.sizes(), " and ",
              weight.sizes());
  const int64_t k = input.dim() - 2;
  at::Tensor out;
  if (!transposed) {
    out = forward(input, weight, stride, padding, dilation, groups);
  } else {
    std::vector<int64_t> stuffed{input.size(0), input.size(1)}, lo, hi;
    for (const auto i : c10::irange(k)) {
      stuffed.push_back(input.size(i + 2) ? (input.size(i + 2) - 1) * stride[i] + 1 : 0);
      lo.push_back(dilation[i] * (weight.size(i + 2) - 1) - padding[i]);
      hi.push_back(lo.back() + output_padding[i]);
    }
    at::Tensor z = at::zeros(stuffed, input.options()), dst = z;
    for (const auto i : c10::irange(k)) dst = dst.slice(i + 2, 0, stuffed[i + 2], stride[i]);
    dst.copy_(input);
    // weight [C_in, C_out/g, kk...] -> [C_out, C_in/g, kk...], window flipped
    const int64_t cin = weight.size(0), cout_g = weight.size(1);
    std::vector<int64_t> wg{groups, cin / groups, cout_g};
    wg.insert(wg.end(), weight.sizes().begin() + 2, weight.sizes().end());
    std::vector<int64_t> wf{groups * cout_g, cin / groups};
    wf.insert(wf.end(), weight.sizes().begin() + 2, weight.sizes().end());
    std::vector<int64_t> flip_dims;
    for (const auto i : c10::irange(k)) flip_dims.push_back(i + 2);
    at::Tensor w = weight.reshape(wg).transpose(1, 2).reshape(wf).flip(flip_dims);
    std::vector<int64_t> ones(k, 1), zeros(k, 0);
    out = forward(pad_spatial(z, lo, hi), w, ones, zeros, dilation, groups);
  }
  if (bias.defined() && out.numel()) {
    std::vector<int64_t> bs(out.dim(), 1);
    bs[1] = -1;
    out.add_(bias.view(bs));
  }
  return out;
}

} // namespace pytorch_ocl
