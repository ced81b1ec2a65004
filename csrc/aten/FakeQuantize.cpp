// Fake quantization (quantization-aware training): per tensor with number qparams, per channel,
// per tensor with tensor qparams (torch.ao's FakeQuantize), and the learnable (LSQ) forms with their
// gradients. The rows are in PointwiseQuantOps.h; this file has the CPU's argument checks and
// builds the iterators. Scale and zero point are read on the device, never with .item(): the CPU's
// checks that need their values on the host (the per-channel zero point inside [quant_min,
// quant_max]) are left out, so a QAT step queues its kernels without waiting for the device.
#include "aten/PointwiseTable.h"
#include "core/Device.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/fake_quantize_per_channel_affine.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <c10/core/ScalarType.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <tuple>

namespace pytorch_ocl {

namespace {

dlprim::Scalar num(double v) { return pw_scalar(v); }
dlprim::Scalar num(int64_t v) { return pw_scalar(static_cast<double>(v)); }

bool device_has_fp64(const at::Tensor& t) { return context(t.device().index()).info().fp64; }

// The type the CPU kernel computes a `t` input in: double for double, float for the others.
c10::ScalarType compute_of(const at::Tensor& t) { return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat; }

// t.item() needs exactly one element; the message is the CPU's.
at::Tensor one_value(const at::Tensor& t) {
  TORCH_CHECK(t.numel() == 1, "a Tensor with ", t.numel(), " elements cannot be converted to Scalar");
  return t.reshape({});
}

// A 1-D qparam tensor viewed with size C at `axis` of a self of `dim` dims, 1 elsewhere.
at::Tensor along_axis(const at::Tensor& p, int64_t dim, int64_t axis) {
  c10::DimVector shape(dim, 1);
  shape[axis] = p.size(0);
  return p.view(shape);
}

// A fake-quantize row's outputs (out in self's dtype, the bool mask) and an iterator config over them and
// self, to which the caller adds the row's other inputs.
at::TensorIteratorConfig cachemask_config(const at::Tensor& self, at::Tensor& out, at::Tensor& mask) {
  out = at::empty_like(self, self.options(), at::MemoryFormat::Preserve);
  mask = at::empty_like(self, self.options().dtype(at::kBool), at::MemoryFormat::Preserve);
  at::TensorIteratorConfig config;
  config.add_output(out).add_output(mask).add_const_input(self).check_all_same_dtype(false);
  return config;
}

// fake_quantize_per_tensor_affine_cachemask (torch.fake_quantize_per_tensor_affine's kernel and its backward's
// mask): the CPU kernel's checks and math (scale taken as float, its inverse computed in float).
std::tuple<at::Tensor, at::Tensor> per_tensor_cachemask(const at::Tensor& self, double scale, int64_t zero_point,
                                                        int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.");
  TORCH_CHECK(zero_point >= quant_min && zero_point <= quant_max,
              "`zero_point` must be between `quant_min` and `quant_max`.");
  pw_check_dtype(PW_fake_quantize_cachemask, self.scalar_type());
  at::Tensor out, mask;
  auto iter = cachemask_config(self, out, mask).build();
  const float sc = static_cast<float>(scale);
  pw_launch(PW_fake_quantize_cachemask, iter, self.scalar_type(),
            {num(static_cast<double>(sc)), num(static_cast<double>(1.0f / sc)), num(zero_point), num(quant_min),
             num(quant_max)});
  return {out, mask};
}

std::tuple<at::Tensor, at::Tensor> per_channel_cachemask(const at::Tensor& self, const at::Tensor& scale,
                                                         const at::Tensor& zero_point, int64_t axis,
                                                         int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(scale.scalar_type() == at::kFloat || scale.scalar_type() == at::kBFloat16,
              "Scale must be Float or BFloat16, found ", scale.scalar_type());
  TORCH_CHECK(zero_point.scalar_type() == at::kInt || zero_point.scalar_type() == at::kFloat ||
                  zero_point.scalar_type() == at::kHalf,
              "Zero-point must be Int32, Float or Half, found ", zero_point.scalar_type());
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(scale.numel() == self.size(axis),
              "dimensions of scale and zero-point are not consistent with input tensor");
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.");
  TORCH_CHECK(axis >= 0 && axis <= self.dim(), "`axis` must be between 0 and number of dimensions of input");
  pw_check_dtype(PW_fake_quantize_per_channel, self.scalar_type());
  at::Tensor s = along_axis(scale, self.dim(), axis), z = along_axis(zero_point, self.dim(), axis);
  at::Tensor out, mask;
  auto iter = cachemask_config(self, out, mask).add_const_input(s).add_const_input(z).build();
  const bool zp_float = at::isFloatingType(zero_point.scalar_type());
  const bool dbl = self.scalar_type() == at::kDouble;
  // The CPU evaluates (q - zero point) * scale in double: exact in float for an integer zero point,
  // not for a float one (see the row). It fuses a float32 zero point + x * (1 / scale) into an fma, not
  // a float16 one (c10::Half's operator+ rounds the sum itself; found testing torch 2.13's x86-64 wheel).
  c10::ScalarType compute = zp_float && device_has_fp64(self) ? at::kDouble : compute_of(self);
  pw_launch(PW_fake_quantize_per_channel, iter, compute,
            {num(quant_min), num(quant_max), num(zp_float ? 1.0 : 0.0), num(dbl ? 1.0 : 0.0),
             num(zero_point.scalar_type() == at::kFloat ? 1.0 : 0.0)});
  return {out, mask};
}

// The tensor_qparams row over self; `learnable` rounds and clamps the zero point as the learnable
// op does (and `enabled` is then the CPU scalar 1).
std::tuple<at::Tensor, at::Tensor> tensor_qparams(const at::Tensor& self, const at::Tensor& scale,
                                                  const at::Tensor& zero_point, const at::Tensor& enabled,
                                                  int64_t quant_min, int64_t quant_max, bool learnable) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.");
  pw_check_dtype(PW_fake_quantize_tensor_qparams, self.scalar_type());
  at::Tensor out, mask;
  auto iter = cachemask_config(self, out, mask)
                  .add_const_input(scale)
                  .add_const_input(zero_point)
                  .add_const_input(enabled)
                  .allow_cpu_scalars(true)  // 0-dim CPU qparams are read by value, as the CPU's .item()
                  .build();
  pw_launch(PW_fake_quantize_tensor_qparams, iter, compute_of(self),
            {num(quant_min), num(quant_max), num(learnable ? 1.0 : 0.0)});
  return {out, mask};
}

std::tuple<at::Tensor, at::Tensor> per_tensor_cachemask_tensor_qparams(const at::Tensor& self,
                                                                       const at::Tensor& scale,
                                                                       const at::Tensor& zero_point,
                                                                       const at::Tensor& fake_quant_enabled,
                                                                       int64_t quant_min, int64_t quant_max) {
  TORCH_CHECK(quant_min <= quant_max, "`quant_min` should be less than or equal to `quant_max`.");
  return tensor_qparams(self, one_value(scale), one_value(zero_point), one_value(fake_quant_enabled), quant_min,
                        quant_max, false);
}

at::Tensor learnable_per_tensor(const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
                                int64_t quant_min, int64_t quant_max, double /*grad_factor*/) {
  // scale[0], zero_point[0] as the CPU reads them (its zero point, once rounded and clamped, is
  // always inside [quant_min, quant_max]).
  return std::get<0>(tensor_qparams(self, scale.select(0, 0), zero_point.select(0, 0),
                                    at::scalar_tensor(1, at::kLong), quant_min, quant_max, true));
}

// dX, dScale and dZeroPoint per element from the learnable_backward row, over x (float, or
// bfloat16 read as float) with scale / zero point views broadcast to it.
std::tuple<at::Tensor, at::Tensor, at::Tensor> learnable_grads(const at::Tensor& dY, const at::Tensor& X,
                                                               const at::Tensor& s, const at::Tensor& z,
                                                               int64_t quant_min, int64_t quant_max,
                                                               double grad_factor, bool per_channel) {
  auto opts = X.options().dtype(at::kFloat);
  at::Tensor dX = at::empty_like(X, opts, at::MemoryFormat::Preserve);
  at::Tensor dScale = at::empty_like(X, opts, at::MemoryFormat::Preserve);
  at::Tensor dZero = at::empty_like(X, opts, at::MemoryFormat::Preserve);
  auto iter = at::TensorIteratorConfig()
                  .add_output(dX)
                  .add_output(dScale)
                  .add_output(dZero)
                  .add_const_input(X)
                  .add_const_input(dY)
                  .add_const_input(s)
                  .add_const_input(z)
                  .check_all_same_dtype(false)
                  .allow_cpu_scalars(true)
                  .build();
  // grad_factor is a float in the CPU kernel.
  pw_launch(PW_fake_quantize_learnable_backward, iter, at::kFloat,
            {num(quant_min), num(quant_max), num(static_cast<double>(static_cast<float>(grad_factor))),
             num(per_channel ? 1.0 : 0.0)});
  return {dX, dScale, dZero};
}

// The CPU's dtype rule of the learnable backward ops: a bfloat16 X makes it convert the bfloat16
// operands to float (the row reads them as float); then everything must be float.
void check_learnable_dtypes(const at::Tensor& dY, const at::Tensor& X, const at::Tensor& scale,
                            const at::Tensor& zero_point) {
  const bool bf16 = X.scalar_type() == at::kBFloat16;
  auto as_float = [&](const at::Tensor& t) { return bf16 && t.scalar_type() == at::kBFloat16 ? at::kFloat : t.scalar_type(); };
  TORCH_CHECK(as_float(dY) == at::kFloat, "Expected dY_.scalar_type() == ScalarType::Float to be true, but got false.");
  TORCH_CHECK(as_float(X) == at::kFloat, "Expected X_.scalar_type() == ScalarType::Float to be true, but got false.");
  TORCH_CHECK(as_float(scale) == at::kFloat,
              "Expected scale_.scalar_type() == ScalarType::Float to be true, but got false.");
  TORCH_CHECK(as_float(zero_point) == at::kFloat,
              "Expected zero_point_.scalar_type() == ScalarType::Float to be true, but got false.");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> learnable_per_tensor_backward(
    const at::Tensor& dY, const at::Tensor& X, const at::Tensor& scale, const at::Tensor& zero_point,
    int64_t quant_min, int64_t quant_max, double grad_factor) {
  at::Tensor s = scale.select(0, 0), z = zero_point.select(0, 0);
  check_learnable_dtypes(dY, X, scale, zero_point);
  TORCH_CHECK(X.numel() == dY.numel(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0,
              "`quant_min` should be less than or equal to `quant_max`, and the quantization range should "
              "include 0.");
  if (X.numel() <= 0) return {X, scale, zero_point};
  auto [dX, dScale, dZero] = learnable_grads(dY, X, s, z, quant_min, quant_max, grad_factor, false);
  return {dX, dScale.sum().unsqueeze(0), dZero.sum().unsqueeze(0)};
}

at::Tensor learnable_per_channel(const at::Tensor& self, const at::Tensor& scale, const at::Tensor& zero_point,
                                 int64_t axis, int64_t quant_min, int64_t quant_max, double /*grad_factor*/) {
  // As the CPU: the zero point rounded, clamped and made int32 on the device, then the per-channel op.
  at::Tensor zp = zero_point.round().clamp_(quant_min, quant_max).to(at::kInt);
  return at::fake_quantize_per_channel_affine(self, scale, zp, axis, quant_min, quant_max);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> learnable_per_channel_backward(
    const at::Tensor& dY, const at::Tensor& X, const at::Tensor& scale, const at::Tensor& zero_point,
    int64_t axis, int64_t quant_min, int64_t quant_max, double grad_factor) {
  // The kernel rounds and clamps the zero point itself.
  check_learnable_dtypes(dY, X, scale, zero_point);
  TORCH_CHECK(X.sizes() == dY.sizes(), "`X` and `dY` are not the same size");
  TORCH_CHECK(quant_min <= 0 && quant_max >= 0, "Expecting `quant_min` <= 0 and `quant_max` >= 0");
  TORCH_CHECK(scale.dim() == 1, "scale should be a 1-D tensor");
  TORCH_CHECK(zero_point.dim() == 1, "zero point should be a 1-D tensor");
  TORCH_CHECK(scale.numel() == zero_point.numel(), "scale and zero-point need to have the same dimensions");
  TORCH_CHECK(scale.numel() == X.size(axis), "dimensions of scale and zero-point are not consistent with input tensor");
  TORCH_CHECK(axis >= 0 && axis < X.dim(), "`axis` must be between 0 and number of dimensions of input");
  if (X.numel() <= 0) return {X, scale, zero_point};
  auto [dX, dScale, dZero] =
      learnable_grads(dY, X, along_axis(scale, X.dim(), axis), along_axis(zero_point, X.dim(), axis), quant_min,
                      quant_max, grad_factor, true);
  // Summed over every dim but the axis (for a 1-D X that list is empty, which sums everything: the CPU's).
  c10::DimVector dims;
  for (const auto d : c10::irange(X.dim()))
    if (d != axis) dims.push_back(d);
  return {dX, dScale.sum(dims), dZero.sum(dims)};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  pw_impl(m, PW_fake_quantize_cachemask, "fake_quantize_per_tensor_affine_cachemask", TORCH_FN(per_tensor_cachemask));
  pw_impl(m, PW_fake_quantize_per_channel, "fake_quantize_per_channel_affine_cachemask",
          TORCH_FN(per_channel_cachemask));
  pw_impl(m, PW_fake_quantize_tensor_qparams, "_fake_quantize_per_tensor_affine_cachemask_tensor_qparams",
          TORCH_FN(per_tensor_cachemask_tensor_qparams));
  pw_impl(m, PW_fake_quantize_tensor_qparams, "_fake_quantize_learnable_per_tensor_affine",
          TORCH_FN(learnable_per_tensor));
  pw_impl(m, PW_fake_quantize_learnable_backward, "_fake_quantize_learnable_per_tensor_affine_backward",
          TORCH_FN(learnable_per_tensor_backward));
  pw_impl(m, PW_fake_quantize_learnable_backward, "_fake_quantize_learnable_per_channel_affine_backward",
          TORCH_FN(learnable_per_channel_backward));
  // A composition of device ops (round, clamp_, to, the per-channel row), as the CPU's.
  m.impl("_fake_quantize_learnable_per_channel_affine", TORCH_FN(learnable_per_channel));
}

} // namespace pytorch_ocl
