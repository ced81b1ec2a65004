// fractional_max_pool2d / fractional_max_pool3d and their backward (structured: the .output and
// .grad_input overloads) composed of native ops. The pooling windows come from random_samples
// (F.fractional_max_pool* draws them with torch.rand, natively) by the CPU's generate_intervals
// in the input dtype, each step a separate op so it rounds as the CPU's scalar arithmetic does:
// start[i] = int((i + u) * alpha) - int(u * alpha), alpha = (in - k) / (out - 1), the last
// window flush with the end; sample 0 drives the width in 2-D and the time axis in 3-D (then
// height, width), as on the CPU. Every window's elements are gathered and the first maximum wins
// (argmax; a NaN wins too, the CPU taking a window's last NaN where argmax takes the first); indices
// are flat offsets into each plane. The backward scatter-adds the gradient at those offsets
// (in float32 for 16-bit dtypes).
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// (in - k) / (out - 1) as the CPU computes it in scalar_t.
double alpha_in(c10::ScalarType t, int64_t in, int64_t k, int64_t out) {
  switch (t) {
    case c10::kHalf: return static_cast<float>(c10::Half(static_cast<float>(in - k) / static_cast<float>(out - 1)));
    case c10::kBFloat16:
      return static_cast<float>(c10::BFloat16(static_cast<float>(in - k) / static_cast<float>(out - 1)));
    case c10::kFloat: return static_cast<float>(in - k) / static_cast<float>(out - 1);
    default: return static_cast<double>(in - k) / static_cast<double>(out - 1);
  }
}

// Window starts [P, out] along one axis from the planes' samples u [P] (input dtype).
at::Tensor interval_starts(const at::Tensor& u, int64_t in, int64_t k, int64_t out) {
  at::Tensor last = at::full({u.size(0), 1}, in - k, u.options().dtype(at::kLong));
  if (out <= 1) return last.narrow(1, 0, out);
  double alpha = alpha_in(u.scalar_type(), in, k, out);
  at::Tensor i = at::arange(out - 1, u.options()).unsqueeze(0);
  at::Tensor uu = u.unsqueeze(1);
  at::Tensor a = ((i + uu) * alpha).to(at::kLong), b = (uu * alpha).to(at::kLong);
  return at::cat({a - b, last}, 1);
}

struct Pool {
  int nd;             // 2 or 3 spatial dims
  bool batched;
  int64_t N, C;
  std::vector<int64_t> in, k, out;
};

Pool check_pool(const at::Tensor& self, at::IntArrayRef kernel, at::IntArrayRef output_size, int nd,
                const char* op) {
  check_ocl(self, op, "self");
  TORCH_CHECK(kernel.size() == static_cast<size_t>(nd), op, ": kernel_size must either be a single Int or tuple of ",
              nd == 2 ? "Ints" : "three Ints");
  TORCH_CHECK(output_size.size() == static_cast<size_t>(nd), op, ": output_size must either be a single Int or tuple "
              "of ", nd == 2 ? "Ints" : "three Ints");
  int64_t dims = self.dim();
  TORCH_CHECK(dims == nd + 1 || dims == nd + 2, op, "(): Expected ", nd + 1, "D or ", nd + 2,
              "D tensor, but got: ", self.sizes());
  for (int64_t d = dims - nd - 1 + 1; d < dims; ++d)
    TORCH_CHECK(self.size(d) > 0, op, "(): Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", d, " being empty.");
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "' on ocl");
  Pool p;
  p.nd = nd;
  p.batched = dims == nd + 2;
  p.N = p.batched ? self.size(0) : 1;
  p.C = self.size(dims - nd - 1);
  static const char* names[3] = {"time", "height", "width"};
  for (int d = 0; d < nd; ++d) {
    p.in.push_back(self.size(dims - nd + d));
    p.k.push_back(kernel[d]);
    p.out.push_back(output_size[d]);
    const char* name = names[3 - nd + d];
    // The CPU's bounds and wording: 3-D demands one more input element than 2-D does.
    bool fits = nd == 2 ? p.out[d] + p.k[d] - 1 <= p.in[d] : p.out[d] + p.k[d] - 1 < p.in[d];
    TORCH_CHECK(fits, nd == 2 ? "fractional_max_pool2d" : "fractional_max_pool3d_out", "(): pool ", name, " ", p.k[d],
                " too large relative to input ", name, " ", p.in[d]);
  }
  return p;
}

void pool_forward(const at::Tensor& self, const Pool& p, const at::Tensor& samples, at::Tensor& output,
                  at::Tensor& indices, const char* op) {
  check_ocl(samples, op, "random_samples");
  TORCH_CHECK(samples.dim() == 3 && samples.size(0) == p.N && samples.size(1) == p.C && samples.size(2) == p.nd, op,
              "(): Expected random_samples of shape [", p.N, ", ", p.C, ", ", p.nd, "], got ", samples.sizes());
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> out_shape;
  if (p.batched) out_shape.push_back(p.N);
  out_shape.push_back(p.C);
  for (int64_t o : p.out) out_shape.push_back(o);
  at::native::resize_output(output, out_shape);
  at::native::resize_output(indices, out_shape);
  int64_t P = p.N * p.C, plane = 1, outs = 1, win = 1;
  for (int d = 0; d < p.nd; ++d) plane *= p.in[d], outs *= p.out[d], win *= p.k[d];
  if (P * outs == 0) return;
  at::Tensor u = samples.to(self.scalar_type()).reshape({P, p.nd});
  // The flat plane offset of every (window, tap) [P, windows, taps], built axis by axis (earlier
  // axes major, so taps run in the CPU's scan order): (start + tap) * stride summed over axes.
  at::Tensor offsets = at::zeros({P, 1, 1}, self.options().dtype(at::kLong));
  int64_t stride = plane;
  for (int d = 0; d < p.nd; ++d) {
    stride /= p.in[d];
    int sample = p.nd == 2 ? 1 - d : d;  // 2-D: sample 0 is the width's; 3-D: time, height, width
    at::Tensor start = interval_starts(u.select(1, sample).contiguous(), p.in[d], p.k[d], p.out[d]);  // [P, out_d]
    at::Tensor pos = (start.unsqueeze(2) + at::arange(p.k[d], start.options()).view({1, 1, -1})) * stride;
    int64_t windows = offsets.size(1), taps = offsets.size(2);
    offsets = (offsets.view({P, windows, 1, taps, 1}) + pos.view({P, 1, p.out[d], 1, p.k[d]}))
                  .reshape({P, windows * p.out[d], taps * p.k[d]});
  }
  at::Tensor offs = offsets.reshape({P, outs, win});
  at::Tensor x = self.reshape({P, plane});
  at::Tensor vals = x.gather(1, offs.reshape({P, outs * win})).reshape({P, outs, win});
  at::Tensor best = vals.argmax(2, true);
  output.copy_(vals.gather(2, best).reshape(out_shape));
  indices.copy_(offs.gather(2, best).reshape(out_shape));
}

at::Tensor& pool_backward(const at::Tensor& grad_output, const at::Tensor& self, const Pool& p,
                          const at::Tensor& indices, at::Tensor& grad_input, const char* op) {
  check_ocl(grad_output, op, "grad_output");
  check_ocl(indices, op, "indices");
  TORCH_CHECK(grad_output.sizes() == indices.sizes(), op, ": grad_output ", grad_output.sizes(),
              " and indices ", indices.sizes(), " differ in shape");
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  int64_t P = p.N * p.C, plane = 1;
  for (int d = 0; d < p.nd; ++d) plane *= p.in[d];
  c10::ScalarType acc = self.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  at::Tensor g = at::zeros({P, plane}, self.options().dtype(acc));
  if (grad_output.numel())
    g = g.scatter_add(1, indices.reshape({P, -1}).to(at::kLong), grad_output.reshape({P, -1}).to(acc));
  grad_input.copy_(g.reshape(self.sizes()));
  return grad_input;
}

std::tuple<at::Tensor&, at::Tensor&> fmp2d_out(const at::Tensor& self, at::IntArrayRef kernel,
                                               at::IntArrayRef output_size, const at::Tensor& samples,
                                               at::Tensor& output, at::Tensor& indices) {
  Pool p = check_pool(self, kernel, output_size, 2, "fractional_max_pool2d");
  pool_forward(self, p, samples, output, indices, "fractional_max_pool2d");
  return {output, indices};
}

std::tuple<at::Tensor&, at::Tensor&> fmp3d_out(const at::Tensor& self, at::IntArrayRef kernel,
                                               at::IntArrayRef output_size, const at::Tensor& samples,
                                               at::Tensor& output, at::Tensor& indices) {
  Pool p = check_pool(self, kernel, output_size, 3, "fractional_max_pool3d");
  pool_forward(self, p, samples, output, indices, "fractional_max_pool3d");
  return {output, indices};
}

at::Tensor& fmp2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,
                               at::IntArrayRef output_size, const at::Tensor& indices, at::Tensor& grad_input) {
  Pool p = check_pool(self, kernel, output_size, 2, "fractional_max_pool2d_backward");
  return pool_backward(grad_output, self, p, indices, grad_input, "fractional_max_pool2d_backward");
}

at::Tensor& fmp3d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,
                               at::IntArrayRef output_size, const at::Tensor& indices, at::Tensor& grad_input) {
  Pool p = check_pool(self, kernel, output_size, 3, "fractional_max_pool3d_backward");
  return pool_backward(grad_output, self, p, indices, grad_input, "fractional_max_pool3d_backward");
}

// fractional_max_pool3d_backward is not structured: its functional form needs its own kernel.
at::Tensor fmp3d_backward(const at::Tensor& grad_output, const at::Tensor& self, at::IntArrayRef kernel,
                          at::IntArrayRef output_size, const at::Tensor& indices) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return fmp3d_backward_out(grad_output, self, kernel, output_size, indices, grad_input);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("fractional_max_pool2d.output", TORCH_FN(fmp2d_out));
  m.impl("fractional_max_pool3d.output", TORCH_FN(fmp3d_out));
  m.impl("fractional_max_pool2d_backward.grad_input", TORCH_FN(fmp2d_backward_out));
  m.impl("fractional_max_pool3d_backward.grad_input", TORCH_FN(fmp3d_backward_out));
  m.impl("fractional_max_pool3d_backward", TORCH_FN(fmp3d_backward));
}

} // namespace pytorch_ocl
