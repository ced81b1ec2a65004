// Reflection and replication padding, 1-D / 2-D / 3-D, forward and backward, through the
// shared pad kernels (the mode is an index mapping). constant_pad_nd and circular padding
// are composite (empty + fill + copy, and slices + cat) and need nothing here. Complex tensors
// pad their real and imaginary planes as twice the planes (complex64 forward as 64-bit moves).
#include "LayerUtils.h"
#include "aten/ComplexOps.h"
#include "core/Errors.h"
#include "core/Trace.h"

#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/pad.h>
#include <torch/library.h>

#include <vector>

namespace pytorch_ocl {

namespace {

using dlprim::PadMode;

struct Padded {
  dlprim::PadGeometry g{};
  int64_t planes = 1;
  std::vector<int64_t> out_shape;
};

// k spatial dims; padding is (last-dim before, last-dim after, previous dim before, ...).
Padded geometry(const char* op, PadMode mode, size_t k, const at::Tensor& self, c10::IntArrayRef padding) {
  TORCH_CHECK(padding.size() == 2 * k, op, ": expected padding of ", 2 * k, " values, got ", padding.size());
  int64_t dim = self.dim();
  TORCH_CHECK(dim == int64_t(k) + 1 || dim == int64_t(k) + 2, op, ": expected a ", k + 1, "-D or ", k + 2,
              "-D input, got ", dim, "-D");
  for (int64_t d = dim == int64_t(k) + 2 ? 1 : 0; d < dim; ++d)
    TORCH_CHECK(self.size(d) > 0, op, ": expected non-empty non-batch dimensions, got input of sizes ", self.sizes());
  Padded p;
  p.g.mode = mode;
  p.out_shape.assign(self.sizes().begin(), self.sizes().end());
  size_t lead = 3 - k;
  for (size_t a = 0; a < 3; ++a) {
    if (a < lead) {
      p.g.in[a] = p.g.out[a] = 1;
      continue;
    }
    size_t axis = a - lead;                     // 0..k-1 among the spatial dims
    int64_t d = dim - int64_t(k) + int64_t(axis);
    int64_t I = self.size(d), before = padding[2 * (k - 1 - axis)], after = padding[2 * (k - 1 - axis) + 1];
    if (mode == PadMode::Reflect)
      TORCH_CHECK(before < I && after < I, op, ": padding size should be less than the corresponding input dimension, ",
                  "but got padding (", before, ", ", after, ") at dimension ", d, " of input ", self.sizes());
    int64_t O = I + before + after;
    TORCH_CHECK(O >= 1, op, ": input size ", I, " at dimension ", d, " is too small for padding (", before, ", ", after,
                ")");
    p.g.in[a] = int(I);
    p.g.out[a] = int(O);
    p.g.before[a] = int(before);
    p.out_shape[d] = O;
  }
  for (int64_t d = 0; d < dim - int64_t(k); ++d) p.planes *= self.size(d);
  return p;
}

const char* pad_name(PadMode mode, size_t k) {
  static const char* names[2][3] = {{"reflection_pad1d", "reflection_pad2d", "reflection_pad3d"},
                                    {"replication_pad1d", "replication_pad2d", "replication_pad3d"}};
  return names[int(mode)][k - 1];
}

template <PadMode M, size_t K>
at::Tensor& pad_out(const at::Tensor& self, c10::IntArrayRef padding, at::Tensor& out) {
  const char* op = pad_name(M, K);
  check_ocl(self, op, "self");
  Padded p = geometry(op, M, K, self, padding);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, p.out_shape);
  if (self.scalar_type() == c10::kComplexFloat) {  // padding only moves elements: as 64-bit integers
    at::Tensor bits = out.view(c10::kLong);
    pad_out<M, K>(self.resolve_conj().view(c10::kLong), padding, bits);
    return out;
  }
  if (self.is_complex()) {
    at::Tensor x = complex_planes(self);
    std::vector<int64_t> shape{2};
    shape.insert(shape.end(), p.out_shape.begin(), p.out_shape.end());
    at::Tensor y = at::empty(shape, x.options());
    int dev = self.device().index();
    p.planes *= 2;
    OCL_DLPRIM_CALL(op, dlprim::pad_forward(context(dev), current_queue(dev), to_dlprim(x.scalar_type(), op),
                                            p.planes, p.g, layer_buf(x), layer_buf(y)));
    note_enqueued(current_queue(dev));
    out.copy_(from_complex_planes(y));
    return out;
  }
  auto t = to_dlprim(self.scalar_type(), op);
  at::Tensor x = self.contiguous();
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " -> ", p.out_shape);
  write_contiguous(out, [&](at::Tensor& y) {
    OCL_DLPRIM_CALL(op, dlprim::pad_forward(context(dev), current_queue(dev), t, p.planes, p.g, layer_buf(x),
                                            layer_buf(y)));
  });
  note_enqueued(current_queue(dev));
  return out;
}

template <PadMode M, size_t K>
at::Tensor& pad_backward_out(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef padding,
                             at::Tensor& grad_input) {
  const char* op = pad_name(M, K);
  check_ocl(grad_output, op, "grad_output");
  Padded p = geometry(op, M, K, self, padding);
  TORCH_CHECK(grad_output.sizes().equals(p.out_shape), op, "_backward: expected grad_output of sizes ",
              p.out_shape, ", got ", grad_output.sizes());
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  if (grad_output.is_complex()) {
    at::Tensor gy = complex_planes(grad_output);
    std::vector<int64_t> shape{2};
    shape.insert(shape.end(), self.sizes().begin(), self.sizes().end());
    at::Tensor gx = at::empty(shape, gy.options());
    int dev = self.device().index();
    OCL_DLPRIM_CALL(op, dlprim::pad_backward(context(dev), current_queue(dev), to_dlprim(gy.scalar_type(), op),
                                             p.planes * 2, p.g, layer_buf(gy), layer_buf(gx)));
    note_enqueued(current_queue(dev));
    grad_input.copy_(from_complex_planes(gx));
    return grad_input;
  }
  auto t = floating_dtype(grad_output, op);
  at::Tensor gy = grad_output.contiguous();
  int dev = self.device().index();
  write_contiguous(grad_input, [&](at::Tensor& gx) {
    OCL_DLPRIM_CALL(op, dlprim::pad_backward(context(dev), current_queue(dev), t, p.planes, p.g, layer_buf(gy),
                                             layer_buf(gx)));
  });
  note_enqueued(current_queue(dev));
  return grad_input;
}

// Functional forms for the ops whose functional variant has only backend kernels in PyTorch.
template <PadMode M, size_t K>
at::Tensor pad(const at::Tensor& self, c10::IntArrayRef padding) {
  at::Tensor out = at::empty({0}, self.options());
  return pad_out<M, K>(self, padding, out);
}

template <PadMode M, size_t K>
at::Tensor pad_backward(const at::Tensor& grad_output, const at::Tensor& self, c10::IntArrayRef padding) {
  at::Tensor gi = at::empty({0}, grad_output.options());
  return pad_backward_out<M, K>(grad_output, self, padding, gi);
}

constexpr auto RF = PadMode::Reflect;
constexpr auto RP = PadMode::Replicate;

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("reflection_pad1d.out", TORCH_FN((pad_out<RF, 1>)));
  m.impl("reflection_pad2d.out", TORCH_FN((pad_out<RF, 2>)));
  m.impl("reflection_pad2d", TORCH_FN((pad<RF, 2>)));
  m.impl("reflection_pad3d.out", TORCH_FN((pad_out<RF, 3>)));
  m.impl("replication_pad1d.out", TORCH_FN((pad_out<RP, 1>)));
  m.impl("replication_pad2d.out", TORCH_FN((pad_out<RP, 2>)));
  m.impl("replication_pad3d.out", TORCH_FN((pad_out<RP, 3>)));
  m.impl("reflection_pad1d_backward.grad_input", TORCH_FN((pad_backward_out<RF, 1>)));
  m.impl("reflection_pad2d_backward.grad_input", TORCH_FN((pad_backward_out<RF, 2>)));
  m.impl("reflection_pad2d_backward", TORCH_FN((pad_backward<RF, 2>)));
  m.impl("reflection_pad3d_backward.grad_input", TORCH_FN((pad_backward_out<RF, 3>)));
  m.impl("replication_pad1d_backward.grad_input", TORCH_FN((pad_backward_out<RP, 1>)));
  m.impl("replication_pad2d_backward.grad_input", TORCH_FN((pad_backward_out<RP, 2>)));
  m.impl("replication_pad2d_backward", TORCH_FN((pad_backward<RP, 2>)));
  m.impl("replication_pad3d_backward.grad_input", TORCH_FN((pad_backward_out<RP, 3>)));
  m.impl("replication_pad3d_backward", TORCH_FN((pad_backward<RP, 3>)));
}

} // namespace pytorch_ocl
