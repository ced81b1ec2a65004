// uint8 bilinear / bicubic interpolation (plain and antialiased) with the CPU's fixed-point arithmetic,
// so an image resized on ocl equals the CPU's bit for bit. The CPU (UpSampleKernel.cpp, after Pillow's
// Resample.c) resizes separably, width first then height, each pass skipped when that size is
// unchanged; per pass and output position the taps' weights are computed in double, scaled by
// 2^precision (the largest precision keeping the biggest weight under 2^15) and rounded to int16;
// the pass sums pixel * weight in int32 from 2^(precision-1), shifts right by precision and clamps to
// 0..255, so the intermediate image is uint8 too. The weights are host tables (small: output size x
// taps); the passes are gathers, products and sums of ATen ops on ocl, no kernel of our own.
#include "aten/UpsampleUint8.h"

#include <ATen/native/UpSample.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pytorch_ocl {

namespace {

// Per output position: the first input index, and `taps` int16 weights (0 past the used ones).
struct Taps {
  std::vector<int64_t> index;  // [out * taps], clamped into the input
  std::vector<int32_t> weight;  // [out * taps]
  int64_t taps = 0;
  int precision = 0;
};

double filter(double x, bool cubic, bool antialias) {
  x = std::abs(x);
  if (!cubic) return x < 1.0 ? 1.0 - x : 0.0;
  // Keys' a = -0.5 with antialias (Pillow's), -0.75 without (OpenCV's, the float path's).
  const double a = antialias ? -0.5 : -0.75;
  if (x < 1.0) return at::native::cubic_convolution1<double>(x, a);
  if (x < 2.0) return at::native::cubic_convolution2<double>(x, a);
  return 0.0;
}

Taps make_taps(int64_t in, int64_t out, bool align, std::optional<double> opt_scale, bool cubic, bool antialias) {
  const double scale = at::native::area_pixel_compute_scale<double>(in, out, align, opt_scale);
  const int interp = cubic ? 4 : 2;
  double support = interp * 0.5;
  int64_t k = interp;
  if (antialias) {
    support = scale >= 1.0 ? interp * 0.5 * scale : interp * 0.5;
    k = int64_t(std::ceil(support)) * 2 + 1;
  }
  std::vector<double> w(out * k, 0.0);
  std::vector<int64_t> first(out);
  double wmax = 0.0;
  for (int64_t i = 0; i < out; ++i) {
    double* wi = w.data() + i * k;
    int64_t xmin, xsize;
    if (antialias) {
      // Pillow's footprint: the input pixels within support of the output pixel's centre, the
      // filter stretched by the scale when shrinking, weights normalised to sum 1.
      const double center = scale * (i + 0.5), invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
      xmin = std::max<int64_t>(int64_t(center - support + 0.5), 0);
      xsize = std::clamp<int64_t>(std::min<int64_t>(int64_t(center + support + 0.5), in) - xmin, 0, k);
      double total = 0.0;
      for (int64_t j = 0; j < xsize; ++j) total += (wi[j] = filter((j + xmin - center + 0.5) * invscale, cubic, true));
      if (total != 0.0)
        for (int64_t j = 0; j < xsize; ++j) wmax = std::max(wmax, wi[j] /= total);
    } else {
      // The float path's taps (source index, lambda) with out-of-range taps folded onto the edge
      // pixels, as the float path reads them clamped.
      const double real = at::native::area_pixel_compute_source_index<double>(scale, i, align, cubic);
      int64_t idx;
      double lambda;
      at::native::guard_index_and_lambda(real, in, idx, lambda);
      const int64_t half = int64_t(k * 0.5), umin = idx - half + 1, umax = idx + half + 1;
      xmin = std::max<int64_t>(umin, 0);
      xsize = std::clamp<int64_t>(std::min(umax, in) - xmin, 0, k);
      int64_t slot = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double f = filter(double(j + 1 - half) - lambda, cubic, false);
        if (umin + j <= 0) slot = 0;
        else if (umin + j >= in - 1) slot = xsize - 1;
        wi[slot] += f;
        wmax = std::max(wmax, wi[slot]);
        ++slot;
      }
    }
    first[i] = xmin;
  }
  Taps t;
  t.taps = k;
  for (t.precision = 0; t.precision < 22; ++t.precision)
    if (int(0.5 + wmax * (1 << (t.precision + 1))) >= (1 << 15)) break;
  t.index.resize(out * k);
  t.weight.resize(out * k);
  for (int64_t i = 0; i < out; ++i)
    for (int64_t j = 0; j < k; ++j) {
      const double v = w[i * k + j] * (1 << t.precision);
      t.weight[i * k + j] = v < 0 ? int(-0.5 + v) : int(0.5 + v);  // int16 range by the precision's choice
      t.index[i * k + j] = std::min(first[i] + j, in - 1);  // taps past the used ones weigh 0
    }
  return t;
}

// One pass along `dim` (-1: width, -2: height) of uint8 x to `out` positions.
at::Tensor pass(const at::Tensor& x, int64_t dim, int64_t out, bool align, std::optional<double> scale, bool cubic,
                bool antialias) {
  Taps t = make_taps(x.size(dim), out, align, scale, cubic, antialias);
  const int64_t k = t.taps;
  at::Tensor idx = at::tensor(t.index, at::kLong).to(x.device());
  at::Tensor w = at::tensor(t.weight, at::kInt).to(x.device());
  at::Tensor g = x.to(at::kInt).index_select(dim, idx);  // [.., out * k (, W)]
  at::Tensor acc;
  if (dim == -1) {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 1);
    shape.push_back(out);
    shape.push_back(k);
    acc = g.view(shape).mul(w.view({out, k})).sum(-1, false, at::kInt);
  } else {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end() - 2);
    shape.insert(shape.end(), {out, k, x.size(-1)});
    acc = g.view(shape).mul(w.view({out, k, 1})).sum(-2, false, at::kInt);
  }
  // + 2^(p-1), >> p (arithmetic: floor for negative sums), clamp to uint8.
  return acc.add_(1 << (t.precision - 1)).bitwise_right_shift_(t.precision).clamp_(0, 255).to(at::kByte);
}

} // namespace

at::Tensor upsample2d_uint8(const at::Tensor& self, c10::IntArrayRef output_size, bool align_corners,
                            const std::vector<std::optional<double>>& scales, bool cubic, bool antialias) {
  at::Tensor x = self.contiguous();
  if (x.size(-1) != output_size[1]) x = pass(x, -1, output_size[1], align_corners, scales[1], cubic, antialias);
  if (x.size(-2) != output_size[0]) x = pass(x, -2, output_size[0], align_corners, scales[0], cubic, antialias);
  return x;
}

} // namespace pytorch_ocl
