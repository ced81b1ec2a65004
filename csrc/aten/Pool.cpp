// 2-D pooling (max with indices, average, adaptive average), forward and backward.
// Inputs are made contiguous NCHW (channels_last inputs are copied); 3-D (C, H, W) inputs
// are one image.
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Pool.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/pool.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

dlprim::Buffer buf(const at::Tensor& t) {
  if (t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

int64_t pick(c10::IntArrayRef v, size_t i, int64_t fallback) { return v.empty() ? fallback : v[v.size() == 1 ? 0 : i]; }

struct Pool {
  dlprim::PoolGeometry g{};
  int64_t planes = 0;
  std::vector<int64_t> out_shape;
};

Pool geometry(const char* op, const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef stride,
              c10::IntArrayRef padding, c10::IntArrayRef dilation, bool ceil_mode) {
  check_ocl(self, op, "self");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, op, ": expected a 3-D or 4-D input, got ", self.dim(), "-D");
  TORCH_CHECK((kernel.size() == 1 || kernel.size() == 2) && (stride.size() <= 2) && (padding.size() == 1 || padding.size() == 2) &&
                  (dilation.size() == 1 || dilation.size() == 2),
              op, ": kernel_size, stride, padding and dilation must have 1 or 2 values");
  Pool p;
  int64_t kh = pick(kernel, 0, 1), kw = pick(kernel, 1, 1);
  int64_t sh = pick(stride, 0, kh), sw = pick(stride, 1, kw);
  int64_t ph = pick(padding, 0, 0), pw = pick(padding, 1, 0), dh = pick(dilation, 0, 1), dw = pick(dilation, 1, 1);
  int64_t H = self.size(-2), W = self.size(-1);
  int64_t OH = at::native::pooling_output_shape<int64_t>(H, kh, ph, sh, dh, ceil_mode);
  int64_t OW = at::native::pooling_output_shape<int64_t>(W, kw, pw, sw, dw, ceil_mode);
  at::native::pool2d_shape_check(self, kh, kw, sh, sw, ph, pw, dh, dw, self.size(-3), H, W, OH, OW,
                                 self.suggest_memory_format());
  p.g = {int(H), int(W), int(OH), int(OW), int(kh), int(kw), int(sh), int(sw), int(ph), int(pw), int(dh), int(dw)};
  p.planes = self.numel() / std::max<int64_t>(1, H * W);
  p.out_shape.assign(self.sizes().begin(), self.sizes().end() - 2);
  p.out_shape.push_back(OH);
  p.out_shape.push_back(OW);
  return p;
}

// Runs `fill(out_contiguous)` and copies into `out` when `out` cannot be written directly.
template <class F>
void into(at::Tensor& out, F&& fill) {
  if (out.is_contiguous()) return fill(out);
  at::Tensor tmp = at::empty(out.sizes(), out.options());
  fill(tmp);
  out.copy_(tmp);
}

dlprim::DType dtype_of(const at::Tensor& t, const char* op) {
  TORCH_CHECK_TYPE(c10::isFloatingType(t.scalar_type()), op, ": expected a floating point input, got ", t.scalar_type());
  return to_dlprim(t.scalar_type(), op);
}

void max_pool_out(const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef stride, c10::IntArrayRef padding,
                  c10::IntArrayRef dilation, bool ceil_mode, at::Tensor& out, at::Tensor& indices) {
  const char* op = "max_pool2d";
  Pool p = geometry(op, self, kernel, stride, padding, dilation, ceil_mode);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, p.out_shape);
  at::native::resize_output(indices, p.out_shape);
  at::Tensor x = self.contiguous();
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " -> ", p.out_shape);
  into(out, [&](at::Tensor& y) {
    into(indices, [&](at::Tensor& idx) {
      OCL_DLPRIM_CALL(op, dlprim::max_pool_forward(context(dev), current_queue(dev), dtype_of(x, op), p.planes, p.g,
                                                   buf(x), buf(y), buf(idx)));
    });
  });
  note_enqueued(current_queue(dev));
}

std::tuple<at::Tensor&, at::Tensor&> max_pool2d_with_indices_out(const at::Tensor& self, c10::IntArrayRef kernel,
                                                                  c10::IntArrayRef stride, c10::IntArrayRef padding,
                                                                  c10::IntArrayRef dilation, bool ceil_mode,
                                                                  at::Tensor& out, at::Tensor& indices) {
  max_pool_out(self, kernel, stride, padding, dilation, ceil_mode, out, indices);
  return {out, indices};
}

at::Tensor& max_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef kernel,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding, c10::IntArrayRef dilation,
                                    bool ceil_mode, const at::Tensor& indices, at::Tensor& grad_input) {
  const char* op = "max_pool2d_backward";
  Pool p = geometry(op, self, kernel, stride, padding, dilation, ceil_mode);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor gy = grad_output.contiguous(), idx = indices.contiguous();
  int dev = self.device().index();
  into(grad_input, [&](at::Tensor& gx) {
    OCL_DLPRIM_CALL(op, dlprim::max_pool_backward(context(dev), current_queue(dev), dtype_of(self, op), p.planes, p.g,
                                                  buf(gy), buf(idx), buf(gx)));
  });
  note_enqueued(current_queue(dev));
  return grad_input;
}

at::Tensor& avg_pool2d_out(const at::Tensor& self, c10::IntArrayRef kernel, c10::IntArrayRef stride,
                           c10::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                           std::optional<int64_t> divisor_override, at::Tensor& out) {
  const char* op = "avg_pool2d";
  TORCH_CHECK(!divisor_override || *divisor_override != 0, op, ": divisor must be not zero");
  Pool p = geometry(op, self, kernel, stride, padding, {1}, ceil_mode);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, p.out_shape);
  at::Tensor x = self.contiguous();
  int dev = self.device().index();
  into(out, [&](at::Tensor& y) {
    OCL_DLPRIM_CALL(op, dlprim::avg_pool_forward(context(dev), current_queue(dev), dtype_of(x, op), p.planes, p.g,
                                                 count_include_pad, int(divisor_override.value_or(0)), buf(x), buf(y)));
  });
  note_enqueued(current_queue(dev));
  return out;
}

at::Tensor& avg_pool2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef kernel,
                                    c10::IntArrayRef stride, c10::IntArrayRef padding, bool ceil_mode,
                                    bool count_include_pad, std::optional<int64_t> divisor_override,
                                    at::Tensor& grad_input) {
  const char* op = "avg_pool2d_backward";
  Pool p = geometry(op, self, kernel, stride, padding, {1}, ceil_mode);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor gy = grad_output.contiguous();
  int dev = self.device().index();
  into(grad_input, [&](at::Tensor& gx) {
    OCL_DLPRIM_CALL(op, dlprim::avg_pool_backward(context(dev), current_queue(dev), dtype_of(self, op), p.planes, p.g,
                                                  count_include_pad, int(divisor_override.value_or(0)), buf(gy),
                                                  buf(gx)));
  });
  note_enqueued(current_queue(dev));
  return grad_input;
}

dlprim::PoolGeometry adaptive_geometry(const at::Tensor& x, int64_t OH, int64_t OW) {
  dlprim::PoolGeometry g{};
  g.H = int(x.size(-2));
  g.W = int(x.size(-1));
  g.OH = int(OH);
  g.OW = int(OW);
  return g;
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, c10::IntArrayRef output_size) {
  const char* op = "adaptive_avg_pool2d";
  check_ocl(self, op, "self");
  TORCH_CHECK(output_size.size() == 2, op, ": output_size must have 2 values");
  TORCH_CHECK(self.dim() == 3 || self.dim() == 4, op, ": expected a 3-D or 4-D input, got ", self.dim(), "-D");
  for (int64_t d = 1; d < self.dim(); ++d)
    TORCH_CHECK(self.size(d) > 0, op, ": expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                self.sizes());
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().end() - 2);
  shape.push_back(output_size[0]);
  shape.push_back(output_size[1]);
  at::Tensor x = self.contiguous();
  at::Tensor y = at::empty(shape, x.options());
  auto g = adaptive_geometry(x, output_size[0], output_size[1]);
  int dev = self.device().index();
  int64_t planes = x.numel() / std::max<int64_t>(1, x.size(-1) * x.size(-2));
  OCL_DLPRIM_CALL(op, dlprim::adaptive_avg_pool_forward(context(dev), current_queue(dev), dtype_of(x, op), planes, g,
                                                        buf(x), buf(y)));
  note_enqueued(current_queue(dev));
  return y;
}

at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& grad_output, const at::Tensor& self) {
  const char* op = "adaptive_avg_pool2d_backward";
  c10::DeviceGuard guard(self.device());
  at::Tensor gy = grad_output.contiguous();
  at::Tensor gx = at::empty(self.sizes(), self.options().memory_format(c10::MemoryFormat::Contiguous));
  auto g = adaptive_geometry(self, gy.size(-2), gy.size(-1));
  int dev = self.device().index();
  int64_t planes = self.numel() / std::max<int64_t>(1, self.size(-1) * self.size(-2));
  OCL_DLPRIM_CALL(op, dlprim::adaptive_avg_pool_backward(context(dev), current_queue(dev), dtype_of(self, op), planes,
                                                         g, buf(gy), buf(gx)));
  note_enqueued(current_queue(dev));
  return gx;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices.out", TORCH_FN(max_pool2d_with_indices_out));
  m.impl("max_pool2d_with_indices_backward.grad_input", TORCH_FN(max_pool2d_backward_out));
  m.impl("avg_pool2d.out", TORCH_FN(avg_pool2d_out));
  m.impl("avg_pool2d_backward.grad_input", TORCH_FN(avg_pool2d_backward_out));
  m.impl("_adaptive_avg_pool2d", TORCH_FN(adaptive_avg_pool2d));
  m.impl("_adaptive_avg_pool2d_backward", TORCH_FN(adaptive_avg_pool2d_backward));
}

} // namespace pytorch_ocl
