// im2col / col2im (F.unfold / F.fold, each the other's gradient) on the convolution's patch
// kernels (dlprim::conv_im2col / conv_col2im, groups 1), with the CPU's argument and shape checks
// (ATen's own im2col_shape_check / col2im_shape_check) and its batched / unbatched shapes.
// Floating dtypes, and complex as twice the batch of real planes (both ops only move and add
// elements); im2col of bool runs in float16 (exact for 0/1). col2im of bool (the CPU takes it) raises here.
#include "aten/ComplexOps.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/im2col_shape_check.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/conv.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

struct Params {
  int64_t kh, kw, dh, dw, ph, pw, sh, sw;
};

Params params(at::IntArrayRef kernel_size, at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  TORCH_CHECK(kernel_size.size() == 2, "It is expected kernel_size equals to 2, but got size ", kernel_size.size());
  TORCH_CHECK(dilation.size() == 2, "It is expected dilation equals to 2, but got size ", dilation.size());
  TORCH_CHECK(padding.size() == 2, "It is expected padding equals to 2, but got size ", padding.size());
  TORCH_CHECK(stride.size() == 2, "It is expected stride equals to 2, but got size ", stride.size());
  return {kernel_size[0], kernel_size[1], dilation[0], dilation[1], padding[0], padding[1], stride[0], stride[1]};
}

void check_dtype(const at::Tensor& t, const char* cpu_name) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", cpu_name, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "' on ocl");
}

dlprim::ConvTensor image(const at::Tensor& t) {
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize(), t.stride(0), t.stride(1), t.stride(2), t.stride(3)};
}

// A complex (N, ...) batch as real (2N, ...): the planes of the result come back as complex.
template <class F>
at::Tensor& on_complex_planes(const at::Tensor& self, bool unbatched, at::Tensor& out, F&& real_op) {
  at::Tensor x = unbatched ? self.unsqueeze(0) : self;
  at::Tensor r = real_op(complex_planes(x).flatten(0, 1));
  std::vector<int64_t> shape{2, x.size(0)};
  shape.insert(shape.end(), r.sizes().begin() + 1, r.sizes().end());
  at::Tensor z = from_complex_planes(r.view(shape));
  if (unbatched) z = z.squeeze(0);
  at::native::resize_output(out, z.sizes());
  return out.copy_(z);
}

at::Tensor& im2col_out(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                       at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out) {
  check_ocl(self, "im2col", "self");
  Params p = params(kernel_size, dilation, padding, stride);
  at::native::im2col_shape_check(self, at::Tensor(), p.kh, p.kw, p.dh, p.dw, p.ph, p.pw, p.sh, p.sw);
  if (self.is_complex())
    return on_complex_planes(self, self.dim() == 3, out,
                             [&](const at::Tensor& x) {
      at::Tensor r = at::empty({0}, x.options());
      return im2col_out(x, kernel_size, dilation, padding, stride, r);
    });
  if (self.scalar_type() == at::kBool) {  // moves elements only: exact in float16 (dlprim's patch kernels are floating)
    at::Tensor r = at::empty({0}, self.options().dtype(at::kHalf));
    im2col_out(self.to(at::kHalf), kernel_size, dilation, padding, stride, r);
    at::native::resize_output(out, r.sizes());
    return out.copy_(r);
  }
  check_dtype(self, "im2col_out_cpu");
  at::Tensor x = self.dim() == 3 ? self.unsqueeze(0) : self;
  dlprim::ConvShape s;
  s.N = x.size(0), s.C = x.size(1), s.H = x.size(2), s.W = x.size(3);
  s.KH = p.kh, s.KW = p.kw, s.sh = p.sh, s.sw = p.sw, s.ph = p.ph, s.pw = p.pw, s.dh = p.dh, s.dw = p.dw;
  s.OH = dlprim::conv_output_size(s.H, s.KH, s.sh, s.ph, s.dh);
  s.OW = dlprim::conv_output_size(s.W, s.KW, s.sw, s.pw, s.dw);
  std::vector<int64_t> shape{s.N, s.C * s.KH * s.KW, s.OH * s.OW};
  if (self.dim() == 3) shape.erase(shape.begin());
  at::native::resize_output(out, shape);
  at::Tensor cols = out.is_contiguous() ? out : at::empty(shape, out.options());
  c10::DeviceGuard guard(self.device());
  BufferRef cb = buffer_of(cols);
  int device = self.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("im2col", dlprim::conv_im2col(context(device), q, s, to_dlprim(self.scalar_type(), "im2col"),
                                                image(x), cb.mem, cb.offset / cols.itemsize()));
  note_enqueued(q);
  if (!cols.is_same(out)) out.copy_(cols);
  return out;
}

at::Tensor im2col(const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef dilation,
                  at::IntArrayRef padding, at::IntArrayRef stride) {
  at::Tensor out = at::empty({0}, self.options());
  return im2col_out(self, kernel_size, dilation, padding, stride, out);
}

at::Tensor& col2im_out(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                       at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride, at::Tensor& out) {
  check_ocl(self, "col2im", "self");
  TORCH_CHECK(output_size.size() == 2, "It is expected output_size equals to 2, but got size ", output_size.size());
  Params p = params(kernel_size, dilation, padding, stride);
  int64_t oh = output_size[0], ow = output_size[1];
  at::native::col2im_shape_check(self, at::Tensor(), oh, ow, p.kh, p.kw, p.dh, p.dw, p.ph, p.pw, p.sh, p.sw);
  if (self.is_complex())
    return on_complex_planes(self, self.dim() == 2, out, [&](const at::Tensor& x) {
      at::Tensor r = at::empty({0}, x.options());
      return col2im_out(x, output_size, kernel_size, dilation, padding, stride, r);
    });
  check_dtype(self, "col2im_out_cpu");
  at::Tensor cols = self.dim() == 2 ? self.unsqueeze(0) : self;
  dlprim::ConvShape s;
  s.N = cols.size(0), s.C = cols.size(1) / (p.kh * p.kw), s.H = oh, s.W = ow;
  s.KH = p.kh, s.KW = p.kw, s.sh = p.sh, s.sw = p.sw, s.ph = p.ph, s.pw = p.pw, s.dh = p.dh, s.dw = p.dw;
  s.OH = dlprim::conv_output_size(s.H, s.KH, s.sh, s.ph, s.dh);
  s.OW = dlprim::conv_output_size(s.W, s.KW, s.sw, s.pw, s.dw);
  std::vector<int64_t> shape{s.N, s.C, oh, ow};
  if (self.dim() == 2) shape.erase(shape.begin());
  at::native::resize_output(out, shape);
  at::Tensor dx = out.dim() == 3 ? out.unsqueeze(0) : out;
  // The kernel reads the patches in the accumulation type: float32 for 16-bit floats.
  c10::ScalarType acc = self.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  at::Tensor src = cols.to(acc).contiguous();
  c10::DeviceGuard guard(self.device());
  BufferRef sb = buffer_of(src);
  int device = self.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("col2im", dlprim::conv_col2im(context(device), q, s, to_dlprim(self.scalar_type(), "col2im"),
                                                sb.mem, sb.offset / src.itemsize(), image(dx)));
  note_enqueued(q);
  return out;
}

at::Tensor col2im(const at::Tensor& self, at::IntArrayRef output_size, at::IntArrayRef kernel_size,
                  at::IntArrayRef dilation, at::IntArrayRef padding, at::IntArrayRef stride) {
  at::Tensor out = at::empty({0}, self.options());
  return col2im_out(self, output_size, kernel_size, dilation, padding, stride, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("im2col", TORCH_FN(im2col));
  m.impl("im2col.out", TORCH_FN(im2col_out));
  m.impl("col2im", TORCH_FN(col2im));
  m.impl("col2im.out", TORCH_FN(col2im_out));
}

} // namespace pytorch_ocl
