// Layer norm forward and backward (native_layer_norm / native_layer_norm_backward).
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/strides.h>
#include <dlprim/norm.h>
#include <torch/library.h>

#include <tuple>

namespace pytorch_ocl {

namespace {

dlprim::Buffer buf(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

// (rows, N): the normalized trailing dims are N, everything before them are rows.
std::pair<int64_t, int64_t> rows_and_n(const at::Tensor& x, c10::IntArrayRef normalized_shape) {
  int64_t axis = x.dim() - static_cast<int64_t>(normalized_shape.size());
  TORCH_CHECK(axis >= 0 && x.sizes().slice(axis).equals(normalized_shape), "layer_norm: normalized_shape ",
              normalized_shape, " does not match the trailing dims of the input of shape ", x.sizes());
  int64_t n = 1;
  for (auto s : normalized_shape) n *= s;
  return {n == 0 ? 0 : x.numel() / n, n};
}

std::vector<int64_t> stat_shape(const at::Tensor& x, size_t normalized_dims) {
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  for (size_t i = shape.size() - normalized_dims; i < shape.size(); ++i) shape[i] = 1;
  return shape;
}

c10::ScalarType acc_type(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm(const at::Tensor& input, c10::IntArrayRef normalized_shape,
                                                          const std::optional<at::Tensor>& weight_opt,
                                                          const std::optional<at::Tensor>& bias_opt, double eps) {
  check_ocl(input, "layer_norm", "input");
  c10::DeviceGuard guard(input.device());
  auto [rows, n] = rows_and_n(input, normalized_shape);
  at::Tensor x = input.contiguous();
  at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? weight_opt->contiguous() : at::Tensor();
  at::Tensor b = bias_opt.has_value() && bias_opt->defined() ? bias_opt->contiguous() : at::Tensor();
  for (const at::Tensor* p : {&w, &b})
    TORCH_CHECK(!p->defined() || (p->numel() == n && p->scalar_type() == x.scalar_type()),
                "layer_norm: weight and bias must have ", n, " elements of dtype ", x.scalar_type());
  at::Tensor y = at::empty(x.sizes(), x.options());
  // mean and rstd share one allocation: [2, rows], each viewed in the stats' shape by one as_strided (not a
  // select then a view: two dispatcher calls fewer each, on every layer norm of a decode step).
  at::Tensor stats = at::empty({2, rows}, x.options().dtype(acc_type(x.scalar_type())));
  const std::vector<int64_t> shape = stat_shape(x, normalized_shape.size());
  const c10::DimVector strides = c10::contiguous_strides(shape);
  at::Tensor mean = stats.as_strided(shape, strides, stats.storage_offset());
  at::Tensor rstd = stats.as_strided(shape, strides, stats.storage_offset() + rows);
  if (rows > 0 && n > 0) {
    int device = x.device().index();
    cl_command_queue q = current_queue(device);
    OCL_TRACE("layer_norm rows=", rows, " n=", n, " ", x.scalar_type());
    OCL_DLPRIM_CALL("layer_norm", dlprim::layer_norm_forward(context(device), q, to_dlprim(x.scalar_type(), "layer_norm"),
                                                             rows, n, eps, buf(x), buf(y), buf(w), buf(b), buf(mean),
                                                             buf(rstd)));
    note_enqueued(q);
  }
  return {y, mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::IntArrayRef normalized_shape, const at::Tensor& mean,
    const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt, const std::optional<at::Tensor>& bias_opt,
    std::array<bool, 3> mask) {
  c10::DeviceGuard guard(input.device());
  auto [rows, n] = rows_and_n(input, normalized_shape);
  at::Tensor x = input.contiguous(), g = grad_out.contiguous();
  at::Tensor w = weight_opt.has_value() && weight_opt->defined() ? weight_opt->contiguous() : at::Tensor();
  at::Tensor m = mean.contiguous(), r = rstd.contiguous();
  at::Tensor dx, dw, db;
  if (mask[0]) {
    dx = at::empty(x.sizes(), x.options());
    if (rows > 0 && n > 0) {
      int device = x.device().index();
      cl_command_queue q = current_queue(device);
      OCL_DLPRIM_CALL("layer_norm_backward",
                      dlprim::layer_norm_backward_input(context(device), q, to_dlprim(x.scalar_type(), "layer_norm"),
                                                        rows, n, buf(g), buf(x), buf(w), buf(m), buf(r), buf(dx)));
      note_enqueued(q);
    }
  }
  // Parameter gradients are column sums over rows: built from native elementwise ops and sum.
  at::Tensor g2 = g.view({rows, n});
  if (mask[1] && w.defined()) {
    at::Tensor xhat = at::mul(at::sub(x.view({rows, n}), m.view({rows, 1})), r.view({rows, 1}));
    dw = at::sum(at::mul(g2, xhat), {0}).to(x.scalar_type()).view(normalized_shape);
  }
  if (mask[2] && bias_opt.has_value() && bias_opt->defined())
    db = at::sum(g2, {0}, false, acc_type(x.scalar_type())).to(x.scalar_type()).view(normalized_shape);
  return {dx, dw, db};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_layer_norm", TORCH_FN(layer_norm));
  m.impl("native_layer_norm_backward", TORCH_FN(layer_norm_backward));
}

} // namespace pytorch_ocl
