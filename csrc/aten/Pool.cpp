// Pooling, 2-D and 3-D: max with indices, average, adaptive average, adaptive max, max
// unpooling; forward and backward. One set of kernels works on (D, H, W) planes, 2-D ops use
// D = 1. Inputs are made contiguous (channels_last inputs are copied); unbatched inputs
// (C, spatial...) are one image. The 1-D ops are CompositeImplicit over the 2-D ones.
#include "LayerUtils.h"
#include "core/Errors.h"
#include "core/Trace.h"

#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/pool.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

using IA = c10::IntArrayRef;
using T = at::Tensor;

// v[i] of a 1-or-k-valued argument (empty: fallback).
int64_t pick(IA v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[v.size() == 1 ? 0 : i]; }

struct Pool {
  dlprim::PoolGeometry g{};
  int64_t planes = 0;
  std::vector<int64_t> out_shape;
};

void check_rank(const char* op, const T& self, size_t k) {
  check_ocl(self, op, "self");
  TORCH_CHECK(self.dim() == int64_t(k) + 1 || self.dim() == int64_t(k) + 2, op, ": expected a ", k + 1, "-D or ",
              k + 2, "-D input, got ", self.dim(), "-D");
}

// Fills the planes count and output shape from the (possibly 1-deep) output sizes.
void finish(Pool& p, const T& self, size_t k) {
  int64_t in_plane = int64_t(p.g.D) * p.g.H * p.g.W;
  p.planes = in_plane == 0 ? 0 : self.numel() / in_plane;
  p.out_shape.assign(self.sizes().begin(), self.sizes().end() - k);
  if (k == 3) p.out_shape.push_back(p.g.OD);
  p.out_shape.push_back(p.g.OH);
  p.out_shape.push_back(p.g.OW);
}

// Windowed pooling geometry over the last k (2 or 3) dims, checked as PyTorch does.
Pool geometry(const char* op, size_t k, const T& self, IA kernel, IA stride, IA padding, IA dilation, bool ceil_mode) {
  check_rank(op, self, k);
  for (IA a : {kernel, padding, dilation})
    TORCH_CHECK(a.size() == 1 || a.size() == k, op, ": kernel_size, padding and dilation must have 1 or ", k, " values");
  TORCH_CHECK(stride.size() <= 1 || stride.size() == k, op, ": stride must be empty or have 1 or ", k, " values");
  int64_t ks[3] = {1, 1, 1}, ss[3] = {1, 1, 1}, ps[3] = {0, 0, 0}, ds[3] = {1, 1, 1}, is[3] = {1, 1, 1}, os[3] = {1, 1, 1};
  for (size_t a = 3 - k, i = 0; a < 3; ++a, ++i) {
    ks[a] = pick(kernel, i, 1);
    ss[a] = pick(stride, i, ks[a]);
    ps[a] = pick(padding, i, 0);
    ds[a] = pick(dilation, i, 1);
    is[a] = self.size(self.dim() - int64_t(k) + int64_t(i));
    TORCH_CHECK(ss[a] > 0, op, ": stride should be greater than zero");
    os[a] = at::native::pooling_output_shape<int64_t>(is[a], ks[a], ps[a], ss[a], ds[a], ceil_mode);
  }
  int64_t channels = self.size(self.dim() - int64_t(k) - 1);
  if (k == 2)
    at::native::pool2d_shape_check(self, ks[1], ks[2], ss[1], ss[2], ps[1], ps[2], ds[1], ds[2], channels, is[1], is[2],
                                   os[1], os[2], self.suggest_memory_format());
  else
    at::native::pool3d_shape_check(self, channels, ks[0], ks[1], ks[2], ss[0], ss[1], ss[2], ps[0], ps[1], ps[2], ds[0],
                                   ds[1], ds[2], is[0], is[1], is[2], os[0], os[1], os[2], op);
  Pool p;
  auto i = [](int64_t v) { return int(v); };
  p.g = {i(is[0]), i(is[1]), i(is[2]), i(os[0]), i(os[1]), i(os[2]), i(ks[0]), i(ks[1]), i(ks[2]), i(ss[0]), i(ss[1]),
         i(ss[2]), i(ps[0]), i(ps[1]), i(ps[2]), i(ds[0]), i(ds[1]), i(ds[2])};
  finish(p, self, k);
  return p;
}

// Adaptive geometry: input sizes of the last k dims and the requested output sizes.
Pool adaptive_geometry(const char* op, size_t k, const T& self, IA output_size) {
  check_rank(op, self, k);
  TORCH_CHECK(output_size.size() == k, op, ": output_size must have ", k, " values");
  for (int64_t d = self.dim() - int64_t(k) - 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, op, ": expected input to have non-zero size for non-batch dimensions, but input has ",
                "sizes ", self.sizes());
  for (int64_t s : output_size) TORCH_CHECK(s >= 0, op, ": output_size must be non-negative, got ", output_size);
  Pool p;
  int* in[3] = {&p.g.D, &p.g.H, &p.g.W};
  int* out[3] = {&p.g.OD, &p.g.OH, &p.g.OW};
  for (size_t a = 0; a < 3; ++a) *in[a] = *out[a] = 1;
  for (size_t a = 3 - k, i = 0; a < 3; ++a, ++i) {
    *in[a] = int(self.size(self.dim() - int64_t(k) + int64_t(i)));
    *out[a] = int(output_size[i]);
  }
  finish(p, self, k);
  return p;
}

// The input dtypes beyond the floating ones that the CPU's kernels take: integers for max pooling
// (max_pool2d/3d), int64 for average pooling (its integer division truncates, as the CPU's).
enum class Ints { None, Long, All };

// Common launch frame: device guard, contiguous input, output written through write_contiguous.
template <class F>
void launch(const char* op, const T& self, F&& body, Ints ints = Ints::None) {
  c10::DeviceGuard guard(self.device());
  int dev = self.device().index();
  c10::ScalarType st = self.scalar_type();
  bool int_ok = (ints == Ints::All && c10::isIntegralType(st, /*includeBool=*/false)) ||
                (ints == Ints::Long && st == at::kLong);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(st) || int_ok || ints == Ints::None, "\"", op,
                              "\" not implemented for '", st, "'");
  body(context(dev), current_queue(dev), int_ok ? to_dlprim(st, op) : floating_dtype(self, op));
  note_enqueued(current_queue(dev));
}

// ---- max pooling with indices ----

template <size_t K>
std::tuple<T&, T&> max_pool_out(const T& self, IA kernel, IA stride, IA padding, IA dilation, bool ceil_mode, T& out,
                                T& indices) {
  const char* op = K == 2 ? "max_pool2d_with_indices" : "max_pool3d_with_indices";
  Pool p = geometry(op, K, self, kernel, stride, padding, dilation, ceil_mode);
  at::native::resize_output(out, p.out_shape);
  at::native::resize_output(indices, p.out_shape);
  T x = self.contiguous();
  OCL_TRACE(op, " ", self.sizes(), " -> ", p.out_shape);
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(out, [&](T& y) {
      write_contiguous(indices, [&](T& idx) {
        OCL_DLPRIM_CALL(op, dlprim::max_pool_forward(ctx, q, t, p.planes, p.g, layer_buf(x), layer_buf(y),
                                                     layer_buf(idx)));
      });
    });
   }, Ints::All);
  return {out, indices};
}

template <size_t K>
std::tuple<T, T> max_pool(const T& self, IA kernel, IA stride, IA padding, IA dilation, bool ceil_mode) {
  T out = at::empty({0}, self.options()), idx = at::empty({0}, self.options().dtype(at::kLong));
  max_pool_out<K>(self, kernel, stride, padding, dilation, ceil_mode, out, idx);
  return {out, idx};
}

template <size_t K>
T& max_pool_backward_out(const T& grad_output, const T& self, IA kernel, IA stride, IA padding, IA dilation,
                         bool ceil_mode, const T& indices, T& grad_input) {
  const char* op = K == 2 ? "max_pool2d_with_indices_backward" : "max_pool3d_with_indices_backward";
  Pool p = geometry(op, K, self, kernel, stride, padding, dilation, ceil_mode);
  TORCH_CHECK(grad_output.sizes().equals(p.out_shape) && indices.sizes().equals(p.out_shape), op,
              ": grad_output and indices must have the output's sizes ", p.out_shape);
  at::native::resize_output(grad_input, self.sizes());
  T gy = grad_output.contiguous(), idx = indices.contiguous();
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(grad_input, [&](T& gx) {
      OCL_DLPRIM_CALL(op, dlprim::max_pool_backward(ctx, q, t, p.planes, p.g, layer_buf(gy), layer_buf(idx),
                                                    layer_buf(gx)));
    });
  });
  return grad_input;
}

template <size_t K>
T max_pool_backward(const T& grad_output, const T& self, IA kernel, IA stride, IA padding, IA dilation, bool ceil_mode,
                    const T& indices) {
  T gi = at::empty({0}, self.options());
  return max_pool_backward_out<K>(grad_output, self, kernel, stride, padding, dilation, ceil_mode, indices, gi);
}

// ---- average pooling ----

template <size_t K>
T& avg_pool_out(const T& self, IA kernel, IA stride, IA padding, bool ceil_mode, bool count_include_pad,
                std::optional<int64_t> divisor_override, T& out) {
  const char* op = K == 2 ? "avg_pool2d" : "avg_pool3d";
  TORCH_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  Pool p = geometry(op, K, self, kernel, stride, padding, {1}, ceil_mode);
  at::native::resize_output(out, p.out_shape);
  T x = self.contiguous();
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(out, [&](T& y) {
      OCL_DLPRIM_CALL(op, dlprim::avg_pool_forward(ctx, q, t, p.planes, p.g, count_include_pad,
                                                   int(divisor_override.value_or(0)), layer_buf(x), layer_buf(y)));
    });
   }, Ints::Long);
  return out;
}

template <size_t K>
T& avg_pool_backward_out(const T& grad_output, const T& self, IA kernel, IA stride, IA padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override, T& grad_input) {
  const char* op = K == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward";
  TORCH_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  Pool p = geometry(op, K, self, kernel, stride, padding, {1}, ceil_mode);
  TORCH_CHECK(grad_output.sizes().equals(p.out_shape), op, ": expected grad_output of sizes ", p.out_shape);
  at::native::resize_output(grad_input, self.sizes());
  T gy = grad_output.contiguous();
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(grad_input, [&](T& gx) {
      OCL_DLPRIM_CALL(op, dlprim::avg_pool_backward(ctx, q, t, p.planes, p.g, count_include_pad,
                                                    int(divisor_override.value_or(0)), layer_buf(gy), layer_buf(gx)));
    });
  });
  return grad_input;
}

// ---- adaptive pooling ----

// Adaptive forward (average: indices undefined; max: indices written).
template <size_t K>
void adaptive_forward(const char* op, bool with_max, const T& self, IA output_size, T& out, T* indices) {
  Pool p = adaptive_geometry(op, K, self, output_size);
  at::native::resize_output(out, p.out_shape);
  if (indices) at::native::resize_output(*indices, p.out_shape);
  T x = self.contiguous();
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(out, [&](T& y) {
      if (!indices) {
        OCL_DLPRIM_CALL(op, dlprim::adaptive_pool_forward(ctx, q, t, p.planes, p.g, false, layer_buf(x), layer_buf(y),
                                                          {}));
        return;
      }
      write_contiguous(*indices, [&](T& idx) {
        OCL_DLPRIM_CALL(op, dlprim::adaptive_pool_forward(ctx, q, t, p.planes, p.g, true, layer_buf(x), layer_buf(y),
                                                          layer_buf(idx)));
      });
    });
  });
}

template <size_t K>
void adaptive_backward(const char* op, bool with_max, const T& grad_output, const T& self, const T* indices,
                       T& grad_input) {
  IA osz = grad_output.sizes().slice(grad_output.dim() - int64_t(K));
  Pool p = adaptive_geometry(op, K, self, osz);
  TORCH_CHECK(grad_output.sizes().equals(p.out_shape), op, ": grad_output sizes ", grad_output.sizes(),
              " do not match the input ", self.sizes());
  at::native::resize_output(grad_input, self.sizes());
  T gy = grad_output.contiguous(), idx = indices ? indices->contiguous() : T();
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(grad_input, [&](T& gx) {
      OCL_DLPRIM_CALL(op, dlprim::adaptive_pool_backward(ctx, q, t, p.planes, p.g, with_max, layer_buf(gy),
                                                         layer_buf(idx), layer_buf(gx)));
    });
  });
}

template <size_t K>
T adaptive_avg(const T& self, IA output_size) {
  T out = at::empty({0}, self.options());
  adaptive_forward<K>(K == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d", false, self, output_size, out, nullptr);
  return out;
}

template <size_t K>
T adaptive_avg_backward(const T& grad_output, const T& self) {
  T gi = at::empty({0}, self.options());
  adaptive_backward<K>(K == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward", false, grad_output,
                       self, nullptr, gi);
  return gi;
}

template <size_t K>
std::tuple<T&, T&> adaptive_max_out(const T& self, IA output_size, T& out, T& indices) {
  adaptive_forward<K>(K == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d", true, self, output_size, out, &indices);
  return {out, indices};
}

template <size_t K>
T& adaptive_max_backward_out(const T& grad_output, const T& self, const T& indices, T& grad_input) {
  adaptive_backward<K>(K == 2 ? "adaptive_max_pool2d_backward" : "adaptive_max_pool3d_backward", true, grad_output,
                       self, &indices, grad_input);
  return grad_input;
}

// ---- max unpooling ----

template <size_t K>
T& max_unpool_out(const T& self, const T& indices, IA output_size, T& out) {
  const char* op = K == 2 ? "max_unpool2d" : "max_unpool3d";
  check_rank(op, self, K);
  check_ocl(indices, op, "indices");
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected indices to have dtype int64, got ",
              indices.scalar_type());
  TORCH_CHECK(self.sizes().equals(indices.sizes()), op, ": expected shape of indices to be same as that of the input, ",
              "got ", indices.sizes(), " and ", self.sizes());
  TORCH_CHECK(output_size.size() == K, op, ": output_size must have ", K, " values");
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - K);
  int64_t out_plane = 1, in_plane = 1;
  for (size_t i = 0; i < K; ++i) {
    shape.push_back(output_size[i]);
    out_plane *= output_size[i];
    in_plane *= self.size(self.dim() - int64_t(K) + int64_t(i));
  }
  at::native::resize_output(out, shape);
  if (self.numel() > 0) {
    // Indices index each output plane; out-of-range ones are an error, as on the CPU.
    auto [lo, hi] = at::aminmax(indices);
    int64_t lo_v = lo.item<int64_t>(), hi_v = hi.item<int64_t>();
    TORCH_CHECK(lo_v >= 0 && hi_v < out_plane, op, ": found an invalid max index ", lo_v < 0 ? lo_v : hi_v,
                " (output volumes are of size ", out_plane, ")");
  }
  T x = self.contiguous(), idx = indices.contiguous();
  int64_t planes = in_plane == 0 ? 0 : self.numel() / in_plane;
  launch(op, self, [&](const dlprim::Context& ctx, cl_command_queue q, dlprim::DType t) {
    write_contiguous(out, [&](T& y) {
      y.zero_();
      OCL_DLPRIM_CALL(op, dlprim::max_unpool_forward(ctx, q, t, planes, in_plane, out_plane, layer_buf(x),
                                                     layer_buf(idx), layer_buf(y)));
    });
  });
  return out;
}

T max_unpool2d(const T& self, const T& indices, IA output_size) {
  T out = at::empty({0}, self.options());
  return max_unpool_out<2>(self, indices, output_size, out);
}

T& max_unpool3d_out(const T& self, const T& indices, IA output_size, IA stride, IA padding, T& out) {
  TORCH_CHECK(stride.size() == 3 && padding.size() == 3, "max_unpool3d: stride and padding must have 3 values");
  for (size_t i = 0; i < 3; ++i) TORCH_CHECK(stride[i] > 0, "max_unpool3d: strides should be greater than zero");
  return max_unpool_out<3>(self, indices, output_size, out);
}

T max_unpool3d(const T& self, const T& indices, IA output_size, IA stride, IA padding) {
  T out = at::empty({0}, self.options());
  return max_unpool3d_out(self, indices, output_size, stride, padding, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool_out<2>));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool_backward_out<2>));
  m.impl("max_pool3d_with_indices", TORCH_FN(max_pool<3>));
  m.impl("max_pool3d_with_indices.out", TORCH_FN(max_pool_out<3>));
  m.impl("max_pool3d_with_indices_backward", TORCH_FN(max_pool_backward<3>));
  m.impl("max_pool3d_with_indices_backward.grad_input", TORCH_FN(max_pool_backward_out<3>));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool_out<2>));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool_backward_out<2>));
  m.impl("avg_pool3d.out", TORCH_FN(avg_pool_out<3>));
  m.impl("avg_pool3d_backward.grad_input", TORCH_FN(avg_pool_backward_out<3>));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg<2>));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_backward<2>));
  m.impl("_adaptive_avg_pool3d", TORCH_FN(adaptive_avg<3>));
  m.impl("_adaptive_avg_pool3d_backward", TORCH_FN(adaptive_avg_backward<3>));
  m.impl("adaptive_max_pool2d.out", TORCH_FN(adaptive_max_out<2>));
  m.impl("adaptive_max_pool2d_backward.grad_input", TORCH_FN(adaptive_max_backward_out<2>));
  m.impl("adaptive_max_pool3d.out", TORCH_FN(adaptive_max_out<3>));
  m.impl("adaptive_max_pool3d_backward.grad_input", TORCH_FN(adaptive_max_backward_out<3>));
  m.impl("max_unpool2d", TORCH_FN(max_unpool2d));
  m.impl("max_unpool2d.out", TORCH_FN(max_unpool_out<2>));
  m.impl("max_unpool3d", TORCH_FN(max_unpool3d));
  m.impl("max_unpool3d.out", TORCH_FN(max_unpool3d_out));
}

} // namespace pytorch_ocl
