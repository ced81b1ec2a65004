// Batch norm: training (batch statistics, running-stat update) and evaluation, forward and
// backward. Input is made contiguous NCHW; per-channel tensors work in float (double for float64).
#include "aten/Launch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mul.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/norm.h>
#include <torch/library.h>

#include <tuple>

namespace pytorch_ocl {

namespace {

using Opt = std::optional<at::Tensor>;

const dlprim::ElementwiseOp k_invstd{"batch_norm_invstd", "y0 = 1 / sqrt(x0 + w0);", "", 1, 1, 1};

dlprim::Buffer buf(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

c10::ScalarType acc_type(const at::Tensor& x) { return x.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat; }

// A per-channel tensor in the accumulate type, contiguous (a copy only when needed).
at::Tensor channel(const Opt& t, c10::ScalarType acc) {
  if (!t.has_value() || !t->defined()) return {};
  return t->to(acc).contiguous();
}

// Scratch for the split per-channel sums on GPUs (an undefined tensor when none is needed).
at::Tensor workspace(const dlprim::Context& ctx, dlprim::DType t, dlprim::BatchNormShape s, const at::Tensor& x,
                     c10::ScalarType acc) {
  uint64_t bytes = dlprim::batch_norm_workspace_bytes(ctx, t, s);
  if (bytes == 0) return {};
  return at::empty({static_cast<int64_t>(bytes / c10::elementSize(acc))}, x.options().dtype(acc));
}

dlprim::BatchNormShape shape_of(const at::Tensor& x, const char* op) {
  TORCH_CHECK(x.dim() >= 2, op, ": expected at least a 2-D input (N, C, ...), got ", x.sizes());
  uint64_t N = x.size(0), C = x.size(1);
  return {N, C, N * C == 0 ? 0 : static_cast<uint64_t>(x.numel()) / (N * C)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm(const at::Tensor& input, const Opt& weight, const Opt& bias,
                                                          const Opt& running_mean, const Opt& running_var,
                                                          bool training, double momentum, double eps) {
  const char* op = "batch_norm";
  check_ocl(input, op, "input");
  TORCH_CHECK_TYPE(c10::isFloatingType(input.scalar_type()), op, ": expected a floating point input, got ",
                   input.scalar_type());
  c10::DeviceGuard guard(input.device());
  auto s = shape_of(input, op);
  c10::ScalarType acc = acc_type(input);
  at::Tensor x = input.contiguous();
  at::Tensor y = at::empty(x.sizes(), x.options());
  at::Tensor w = channel(weight, acc), b = channel(bias, acc);
  bool has_running = running_mean.has_value() && running_mean->defined();
  TORCH_CHECK(training || has_running, op, ": running_mean and running_var are required in evaluation mode");
  at::Tensor rm = channel(running_mean, acc), rv = channel(running_var, acc);
  int dev = input.device().index();
  dlprim::Context& ctx = context(dev);
  cl_command_queue q = current_queue(dev);
  dlprim::DType t = to_dlprim(x.scalar_type(), op);
  OCL_TRACE(op, " ", x.sizes(), " training=", training);
  at::Tensor save_mean, save_invstd;
  if (training) {
    TORCH_CHECK(s.N * s.HW > 1 || s.C == 0, op, ": expected more than 1 value per channel when training, got input size ",
                input.sizes());
    save_mean = at::empty({int64_t(s.C)}, x.options().dtype(acc));
    save_invstd = at::empty({int64_t(s.C)}, x.options().dtype(acc));
    at::Tensor ws = workspace(ctx, t, s, x, acc);
    OCL_DLPRIM_CALL(op, dlprim::batch_norm_stats(ctx, q, t, s, buf(x), eps, momentum, buf(save_mean), buf(save_invstd),
                                                 buf(rm), buf(rv), buf(ws)));
    OCL_DLPRIM_CALL(op, dlprim::batch_norm_apply(ctx, q, t, s, buf(x), buf(y), buf(save_mean), buf(save_invstd), false,
                                                 eps, buf(w), buf(b)));
    // The running statistics were updated in converted copies: write them back.
    if (has_running && !rm.is_same(*running_mean)) running_mean->copy_(rm);
    if (has_running && running_var.has_value() && !rv.is_same(*running_var)) running_var->copy_(rv);
  } else {
    save_mean = at::empty({0}, x.options().dtype(acc));
    save_invstd = at::empty({0}, x.options().dtype(acc));
    OCL_DLPRIM_CALL(op, dlprim::batch_norm_apply(ctx, q, t, s, buf(x), buf(y), buf(rm), buf(rv), true, eps, buf(w),
                                                 buf(b)));
  }
  note_enqueued(q);
  // The saved statistics have the CPU's (and CUDA's) dtype: the input's, or float32 when a 16-bit input comes
  // with float32 parameters (mixed precision). The backward reads them in the accumulation type either way.
  c10::ScalarType stat = input.scalar_type();
  for (const Opt* p : {&weight, &bias, &running_mean, &running_var})
    if (p->has_value() && (*p)->defined() && (*p)->scalar_type() == c10::kFloat) stat = acc;
  if (stat != acc) return {y, save_mean.to(stat), save_invstd.to(stat)};
  return {y, save_mean, save_invstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const Opt& weight, const Opt& running_mean,
    const Opt& running_var, const Opt& save_mean, const Opt& save_invstd, bool train, double eps,
    std::array<bool, 3> mask) {
  const char* op = "batch_norm_backward";
  c10::DeviceGuard guard(input.device());
  auto s = shape_of(input, op);
  c10::ScalarType acc = acc_type(input);
  at::Tensor x = input.contiguous(), g = grad_out.contiguous();
  at::Tensor w = channel(weight, acc);
  at::Tensor mean, invstd;
  if (train) {
    mean = channel(save_mean, acc);
    invstd = channel(save_invstd, acc);
  } else {
    mean = channel(running_mean, acc);
    at::Tensor var = channel(running_var, acc);
    invstd = at::empty_like(var);
    auto iter = at::TensorIterator::unary_op(invstd, var);
    launch_elementwise(k_invstd, iter, acc, {dlprim::Scalar::floating(eps)});
  }
  int dev = input.device().index();
  dlprim::Context& ctx = context(dev);
  cl_command_queue q = current_queue(dev);
  dlprim::DType t = to_dlprim(x.scalar_type(), op);
  at::Tensor sum_g = at::empty({int64_t(s.C)}, x.options().dtype(acc));
  at::Tensor sum_gx = at::empty({int64_t(s.C)}, x.options().dtype(acc));
  at::Tensor ws = workspace(ctx, t, s, x, acc);
  c10::ScalarType wtype = weight.has_value() && weight->defined() ? weight->scalar_type() : x.scalar_type();
  // The weight gradient comes out of the reduction's own launch when it is stored in the compute type.
  at::Tensor gw = mask[1] && wtype == acc ? at::empty({int64_t(s.C)}, x.options().dtype(acc)) : at::Tensor();
  OCL_DLPRIM_CALL(op, dlprim::batch_norm_backward_reduce(ctx, q, t, s, buf(g), buf(x), buf(mean), buf(sum_g),
                                                         buf(sum_gx), buf(ws), buf(invstd), buf(gw)));
  at::Tensor gx, gb;
  if (mask[0]) {
    gx = at::empty(x.sizes(), x.options());
    OCL_DLPRIM_CALL(op, dlprim::batch_norm_backward_input(ctx, q, t, s, buf(g), buf(x), buf(mean), buf(invstd), buf(w),
                                                          buf(sum_g), buf(sum_gx), train, buf(gx)));
  }
  note_enqueued(q);
  if (mask[1] && !gw.defined()) gw = at::mul(sum_gx, invstd).to(wtype);
  if (mask[2]) gb = sum_g.to(wtype);
  return {gx, gw, gb};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> legit(const at::Tensor& input, const Opt& weight, const Opt& bias,
                                                     at::Tensor& running_mean, at::Tensor& running_var, bool training,
                                                     double momentum, double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> legit_no_stats(const at::Tensor& input, const Opt& weight,
                                                              const Opt& bias, bool training, double momentum,
                                                              double eps) {
  return batch_norm(input, weight, bias, std::nullopt, std::nullopt, training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> legit_no_training(const at::Tensor& input, const Opt& weight,
                                                                 const Opt& bias, const at::Tensor& running_mean,
                                                                 const at::Tensor& running_var, double momentum,
                                                                 double eps) {
  return batch_norm(input, weight, bias, running_mean, running_var, false, momentum, eps);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", TORCH_FN(batch_norm));
  m.impl("native_batch_norm_backward", TORCH_FN(batch_norm_backward));
  m.impl("_native_batch_norm_legit", TORCH_FN(legit));
  m.impl("_native_batch_norm_legit.no_stats", TORCH_FN(legit_no_stats));
  m.impl("_native_batch_norm_legit_no_training", TORCH_FN(legit_no_training));
}

} // namespace pytorch_ocl
