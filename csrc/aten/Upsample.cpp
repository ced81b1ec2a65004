// Upsampling: nearest / nearest-exact (1-D, 2-D, 3-D), linear, bilinear, trilinear, bicubic,
// antialiased bilinear / bicubic;
// forward (.out) and backward (.grad_input). Every op is one call of the shared upsample
// kernels with a mode and the number of spatial dims; the *.vec overloads are
// CompositeImplicit and reach these. Inputs are made contiguous (channels_last copied).
#include "LayerUtils.h"
#include "aten/UpsampleUint8.h"
#include "core/Errors.h"
#include "core/Trace.h"

#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/upsample.h>
#include <torch/library.h>

#include <vector>

namespace pytorch_ocl {

namespace {

using Scales = std::vector<std::optional<double>>;
using dlprim::UpsampleMode;

const char* mode_name(UpsampleMode m, size_t k) {
  static const char* names[6][3] = {{"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"},
                                    {"_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d"},
                                    {"upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d"},
                                    {"upsample_bicubic1d", "upsample_bicubic2d", "upsample_bicubic3d"},
                                    {"", "_upsample_bilinear2d_aa", ""},
                                    {"", "_upsample_bicubic2d_aa", ""}};
  return names[int(m)][k - 1];
}

// Geometry of the last k dims; leading (unused) axes are 1 -> 1.
dlprim::UpsampleGeometry geometry(UpsampleMode mode, bool align, c10::IntArrayRef in, c10::IntArrayRef out,
                                  const Scales& scales) {
  dlprim::UpsampleGeometry g{};
  g.mode = mode;
  g.align_corners = align;
  size_t k = out.size(), lead = 3 - k;
  for (size_t a = 0; a < 3; ++a) {
    g.in[a] = a < lead ? 1 : int(in[in.size() - k + a - lead]);
    g.out[a] = a < lead ? 1 : int(out[a - lead]);
    std::optional<double> s = a < lead ? std::nullopt : scales[a - lead];
    int64_t I = g.in[a], O = g.out[a];
    bool given = s.has_value() && *s > 0;
    if (mode == UpsampleMode::Nearest || mode == UpsampleMode::NearestExact)
      g.scale[a] = given ? double(float(1.0 / *s)) : double(float(I) / float(O));  // float, as the CPU
    else if (align)
      g.scale[a] = O > 1 ? double(I - 1) / double(O - 1) : 0.0;
    else
      g.scale[a] = given ? 1.0 / *s : double(I) / double(O);
  }
  return g;
}

void check_sizes(const char* op, size_t k, c10::IntArrayRef input, c10::IntArrayRef output_size) {
  TORCH_CHECK(output_size.size() == k, op, ": expected output_size to have ", k, " elements, got ", output_size.size());
  TORCH_CHECK(input.size() == k + 2, op, ": expected a ", k + 2, "-D input (batch, channels, spatial), got sizes ", input);
  for (size_t d = 1; d < input.size(); ++d)
    TORCH_CHECK(input[d] > 0, op, ": input sizes should be greater than 0 except for the batch dim, got ", input);
  for (int64_t s : output_size)
    TORCH_CHECK(s > 0, op, ": output sizes should be greater than 0, got ", output_size);
}

at::Tensor& forward(UpsampleMode mode, bool align, const at::Tensor& self, c10::IntArrayRef output_size,
                    const Scales& scales, at::Tensor& out) {
  const char* op = mode_name(mode, scales.size());
  check_ocl(self, op, "self");
  check_sizes(op, scales.size(), self.sizes(), output_size);
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> shape{self.size(0), self.size(1)};
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::native::resize_output(out, shape);
  // uint8 images, nearest modes: elements only move, so float32 is exact. 2-D bilinear / bicubic (plain and
  // antialiased) follow the CPU's fixed-point passes (UpsampleUint8.cpp); uint8 linear / trilinear raise, as
  // on the CPU.
  if (self.scalar_type() == at::kByte && (mode == UpsampleMode::Nearest || mode == UpsampleMode::NearestExact)) {
    at::Tensor r = at::empty({0}, self.options().dtype(at::kFloat));
    forward(mode, align, self.to(at::kFloat), output_size, scales, r);
    return out.copy_(r);
  }
  if (self.scalar_type() == at::kByte && scales.size() == 2 && mode != UpsampleMode::Nearest &&
      mode != UpsampleMode::NearestExact) {
    OCL_TRACE(op, " uint8 ", self.sizes(), " -> ", output_size);
    bool cubic = mode == UpsampleMode::Cubic || mode == UpsampleMode::AntialiasCubic;
    bool aa = mode == UpsampleMode::AntialiasLinear || mode == UpsampleMode::AntialiasCubic;
    return out.copy_(upsample2d_uint8(self, output_size, align, scales, cubic, aa));
  }
  auto t = floating_dtype(self, op);
  at::Tensor x = self.contiguous();
  auto g = geometry(mode, align, x.sizes(), output_size, scales);
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " -> ", output_size);
  write_contiguous(out, [&](at::Tensor& y) {
    OCL_DLPRIM_CALL(op, dlprim::upsample_forward(context(dev), current_queue(dev), t, x.size(0) * x.size(1), g,
                                                 layer_buf(x), layer_buf(y)));
  });
  note_enqueued(current_queue(dev));
  return out;
}

at::Tensor& backward(UpsampleMode mode, bool align, const at::Tensor& grad_output, c10::IntArrayRef output_size,
                     c10::IntArrayRef input_size, const Scales& scales, at::Tensor& grad_input) {
  const char* op = mode_name(mode, scales.size());
  check_ocl(grad_output, op, "grad_output");
  check_sizes(op, scales.size(), input_size, output_size);
  std::vector<int64_t> expect{input_size[0], input_size[1]};
  expect.insert(expect.end(), output_size.begin(), output_size.end());
  TORCH_CHECK(grad_output.sizes().equals(expect), op, "_backward: expected grad_output of sizes ", expect, ", got ",
              grad_output.sizes());
  c10::DeviceGuard guard(grad_output.device());
  at::native::resize_output(grad_input, input_size);
  auto t = floating_dtype(grad_output, op);
  at::Tensor gy = grad_output.contiguous();
  auto g = geometry(mode, align, input_size, output_size, scales);
  int dev = grad_output.device().index();
  write_contiguous(grad_input, [&](at::Tensor& gx) {
    OCL_DLPRIM_CALL(op, dlprim::upsample_backward(context(dev), current_queue(dev), t, input_size[0] * input_size[1],
                                                  g, layer_buf(gy), layer_buf(gx)));
  });
  note_enqueued(current_queue(dev));
  return grad_input;
}

using OD = std::optional<double>;
using IA = c10::IntArrayRef;
using T = at::Tensor;
constexpr auto N = UpsampleMode::Nearest;
constexpr auto E = UpsampleMode::NearestExact;
constexpr auto L = UpsampleMode::Linear;
constexpr auto C = UpsampleMode::Cubic;
constexpr auto AL = UpsampleMode::AntialiasLinear;
constexpr auto AC = UpsampleMode::AntialiasCubic;

// Nearest modes (no align_corners argument), one wrapper per spatial rank.
template <UpsampleMode M>
T& near1(const T& x, IA o, OD s, T& out) { return forward(M, false, x, o, {s}, out); }
template <UpsampleMode M>
T& near2(const T& x, IA o, OD h, OD w, T& out) { return forward(M, false, x, o, {h, w}, out); }
template <UpsampleMode M>
T& near3(const T& x, IA o, OD d, OD h, OD w, T& out) { return forward(M, false, x, o, {d, h, w}, out); }
template <UpsampleMode M>
T& near1_bw(const T& g, IA o, IA i, OD s, T& gi) { return backward(M, false, g, o, i, {s}, gi); }
template <UpsampleMode M>
T& near2_bw(const T& g, IA o, IA i, OD h, OD w, T& gi) { return backward(M, false, g, o, i, {h, w}, gi); }
template <UpsampleMode M>
T& near3_bw(const T& g, IA o, IA i, OD d, OD h, OD w, T& gi) { return backward(M, false, g, o, i, {d, h, w}, gi); }

// Interpolating modes take align_corners.
template <UpsampleMode M>
T& interp1(const T& x, IA o, bool a, OD s, T& out) { return forward(M, a, x, o, {s}, out); }
template <UpsampleMode M>
T& interp2(const T& x, IA o, bool a, OD h, OD w, T& out) { return forward(M, a, x, o, {h, w}, out); }
template <UpsampleMode M>
T& interp3(const T& x, IA o, bool a, OD d, OD h, OD w, T& out) { return forward(M, a, x, o, {d, h, w}, out); }
template <UpsampleMode M>
T& interp1_bw(const T& g, IA o, IA i, bool a, OD s, T& gi) { return backward(M, a, g, o, i, {s}, gi); }
template <UpsampleMode M>
T& interp2_bw(const T& g, IA o, IA i, bool a, OD h, OD w, T& gi) { return backward(M, a, g, o, i, {h, w}, gi); }
template <UpsampleMode M>
T& interp3_bw(const T& g, IA o, IA i, bool a, OD d, OD h, OD w, T& gi) { return backward(M, a, g, o, i, {d, h, w}, gi); }

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("upsample_nearest1d.out", TORCH_FN(near1<N>));
  m.impl("upsample_nearest2d.out", TORCH_FN(near2<N>));
  m.impl("upsample_nearest3d.out", TORCH_FN(near3<N>));
  m.impl("_upsample_nearest_exact1d.out", TORCH_FN(near1<E>));
  m.impl("_upsample_nearest_exact2d.out", TORCH_FN(near2<E>));
  m.impl("_upsample_nearest_exact3d.out", TORCH_FN(near3<E>));
  m.impl("upsample_nearest1d_backward.grad_input", TORCH_FN(near1_bw<N>));
  m.impl("upsample_nearest2d_backward.grad_input", TORCH_FN(near2_bw<N>));
  m.impl("upsample_nearest3d_backward.grad_input", TORCH_FN(near3_bw<N>));
  m.impl("_upsample_nearest_exact1d_backward.grad_input", TORCH_FN(near1_bw<E>));
  m.impl("_upsample_nearest_exact2d_backward.grad_input", TORCH_FN(near2_bw<E>));
  m.impl("_upsample_nearest_exact3d_backward.grad_input", TORCH_FN(near3_bw<E>));
  m.impl("upsample_linear1d.out", TORCH_FN(interp1<L>));
  m.impl("upsample_bilinear2d.out", TORCH_FN(interp2<L>));
  m.impl("upsample_trilinear3d.out", TORCH_FN(interp3<L>));
  m.impl("upsample_bicubic2d.out", TORCH_FN(interp2<C>));
  m.impl("upsample_linear1d_backward.grad_input", TORCH_FN(interp1_bw<L>));
  m.impl("upsample_bilinear2d_backward.grad_input", TORCH_FN(interp2_bw<L>));
  m.impl("upsample_trilinear3d_backward.grad_input", TORCH_FN(interp3_bw<L>));
  m.impl("upsample_bicubic2d_backward.grad_input", TORCH_FN(interp2_bw<C>));
  m.impl("_upsample_bilinear2d_aa.out", TORCH_FN(interp2<AL>));
  m.impl("_upsample_bicubic2d_aa.out", TORCH_FN(interp2<AC>));
  m.impl("_upsample_bilinear2d_aa_backward.grad_input", TORCH_FN(interp2_bw<AL>));
  m.impl("_upsample_bicubic2d_aa_backward.grad_input", TORCH_FN(interp2_bw<AC>));
}

} // namespace pytorch_ocl
