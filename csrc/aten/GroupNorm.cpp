// Group norm (native_group_norm / native_group_norm_backward). A group of one sample is a
// contiguous row of C/G * HxW elements, so the row kernels of layer norm (without affine)
// do the statistics, the normalization and the input gradient; batch norm's apply kernel the
// per-channel affine; the parameter gradients are native elementwise ops and sums.
#include "LayerUtils.h"
#include "core/Errors.h"
#include "core/Trace.h"

#include <ATen/ops/mul.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/norm.h>
#include <torch/library.h>

#include <tuple>

namespace pytorch_ocl {

namespace {

c10::ScalarType acc_type(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

at::Tensor defined_or_empty(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? *t : at::Tensor();
}

void check_shapes(const char* op, const at::Tensor& x, int64_t N, int64_t C, int64_t HxW, int64_t group) {
  check_ocl(x, op, "input");
  TORCH_CHECK(group > 0 && C % group == 0, op, ": expected the number of channels (", C,
              ") to be divisible by the number of groups (", group, ")");
  TORCH_CHECK(x.numel() == N * C * HxW, op, ": expected input with ", N * C * HxW, " elements, got ", x.sizes());
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm(const at::Tensor& input,
                                                          const std::optional<at::Tensor>& weight_opt,
                                                          const std::optional<at::Tensor>& bias_opt, int64_t N,
                                                          int64_t C, int64_t HxW, int64_t group, double eps) {
  const char* op = "native_group_norm";
  check_shapes(op, input, N, C, HxW, group);
  c10::DeviceGuard guard(input.device());
  auto t = floating_dtype(input, op);
  at::Tensor x = input.contiguous();
  at::Tensor w = defined_or_empty(weight_opt), b = defined_or_empty(bias_opt);
  for (const at::Tensor* p : {&w, &b})
    TORCH_CHECK(!p->defined() || p->numel() == C, op, ": weight and bias must have ", C, " elements");
  int64_t rows = N * group, n = C / group * HxW;
  at::Tensor y = at::empty(x.sizes(), x.options());
  at::Tensor stats = at::empty({2, rows}, x.options().dtype(acc_type(x.scalar_type())));
  at::Tensor mean = stats[0], rstd = stats[1];
  if (rows > 0 && n > 0) {
    int dev = x.device().index();
    OCL_TRACE(op, " rows=", rows, " n=", n, " ", x.scalar_type());
    OCL_DLPRIM_CALL(op, dlprim::layer_norm_forward(context(dev), current_queue(dev), t, rows, n, eps, layer_buf(x),
                                                   layer_buf(y), {}, {}, layer_buf(mean), layer_buf(rstd)));
    note_enqueued(current_queue(dev));
  }
  if ((w.defined() || b.defined()) && rows > 0 && n > 0) {
    // The affine step from x again, in the accumulate type and rounded once, as CUDA's group norm does:
    // scaling the already rounded 16-bit y doubled the CPU's error against float64. Batch norm's apply
    // kernel does it with one "channel" per (sample, channel) row of HxW elements, the group's statistics
    // and the channel's weight and bias repeated over those rows (N * C values each; contiguous copies: with
    // N * group == 1, reshape would give a stride-0 view the kernel cannot read).
    auto acc = acc_type(x.scalar_type());
    auto per_row = [&](const at::Tensor& stat) {
      return stat.view({N, group, 1}).expand({N, group, C / group}).contiguous().view({N * C});
    };
    auto per_channel = [&](const at::Tensor& p) {
      return p.defined() ? p.to(acc).view({1, C}).expand({N, C}).contiguous().view({N * C}) : at::Tensor();
    };
    at::Tensor m = per_row(mean), r = per_row(rstd), wr = per_channel(w), br = per_channel(b);
    int dev = x.device().index();
    dlprim::BatchNormShape s{1, static_cast<uint64_t>(N * C), static_cast<uint64_t>(HxW)};
    OCL_DLPRIM_CALL(op, dlprim::batch_norm_apply(context(dev), current_queue(dev), t, s, layer_buf(x), layer_buf(y),
                                                 layer_buf(m), layer_buf(r), false, eps, layer_buf(wr),
                                                 layer_buf(br)));
    note_enqueued(current_queue(dev));
  }
  return {y, mean.view({N, group}).to(x.scalar_type()), rstd.view({N, group}).to(x.scalar_type())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> group_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                                                   const at::Tensor& mean, const at::Tensor& rstd,
                                                                   const std::optional<at::Tensor>& weight_opt,
                                                                   int64_t N, int64_t C, int64_t HxW, int64_t group,
                                                                   std::array<bool, 3> mask) {
  const char* op = "native_group_norm_backward";
  check_shapes(op, input, N, C, HxW, group);
  c10::DeviceGuard guard(input.device());
  auto t = floating_dtype(input, op);
  auto acc = acc_type(input.scalar_type());
  at::Tensor x = input.contiguous(), g = grad_out.contiguous(), w = defined_or_empty(weight_opt);
  at::Tensor m = mean.to(acc).contiguous(), r = rstd.to(acc).contiguous();
  int64_t rows = N * group, n = C / group * HxW;
  at::Tensor dx, dw, db;
  if (mask[0]) {
    dx = at::empty(x.sizes(), x.options());
    // The weight scales whole channels: fold it into the incoming gradient.
    at::Tensor gw = w.defined() ? at::mul(g.view({N, C, HxW}), w.view({1, C, 1})).view(x.sizes()) : g;
    if (rows > 0 && n > 0) {
      int dev = x.device().index();
      OCL_DLPRIM_CALL(op, dlprim::layer_norm_backward_input(context(dev), current_queue(dev), t, rows, n,
                                                            layer_buf(gw), layer_buf(x), {}, layer_buf(m),
                                                            layer_buf(r), layer_buf(dx)));
      note_enqueued(current_queue(dev));
    }
  }
  at::Tensor g3 = g.view({N, C, HxW});
  if (mask[1]) {
    at::Tensor xhat = at::mul(at::sub(x.view({N, group, n}), m.view({N, group, 1})), r.view({N, group, 1}));
    dw = at::sum(at::mul(g3, xhat.view({N, C, HxW})), at::IntArrayRef{0, 2}, false, acc).to(x.scalar_type());
  }
  if (mask[2]) db = at::sum(g3, at::IntArrayRef{0, 2}, false, acc).to(x.scalar_type());
  return {dx, dw, db};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_group_norm", TORCH_FN(group_norm));
  m.impl("native_group_norm_backward", TORCH_FN(group_norm_backward));
}

} // namespace pytorch_ocl
