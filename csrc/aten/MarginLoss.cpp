// multi_margin_loss and multilabel_margin_loss (forward and backward) composed of native ops
// (gather, scatter, clamp, sums), following the CPU's loops (LossMultiMargin.cpp,
// LossMultiLabelMargin.cpp) term by term: the same hinge, the same 1 / C scaling, the weight
// applied after the power, and the CPU's shape and target checks and messages. multilabel's
// targets are read up to each row's first negative label; its hinge is materialised as
// [N, labels, C] (C is a class count, so this stays small). float16/bfloat16 (which CUDA
// accepts) compute in float32.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

c10::ScalarType acc_type(const at::Tensor& t) {
  return t.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
}

void check_floating(const at::Tensor& t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "' on ocl");
}

// ----------------------------------------------------------------------------- multi_margin
struct MultiMargin {
  int64_t nframe, dim;
};

MultiMargin multi_margin_check(const at::Tensor& input, const at::Tensor& target, const at::Scalar& p,
                               const std::optional<at::Tensor>& weight) {
  check_ocl(input, "multi_margin_loss", "self");
  check_ocl(target, "multi_margin_loss", "target");
  check_floating(input, "multi_margin_loss");
  TORCH_CHECK(p.toDouble() == 1 || p.toDouble() == 2, "only p == 1 and p == 2 supported");
  int64_t nd = input.dim();
  TORCH_CHECK((input.numel() > 0 && nd <= 2) || (nd == 2 && input.size(1) != 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", input.sizes());
  MultiMargin m;
  m.nframe = nd <= 1 ? 1 : input.size(0);
  m.dim = nd <= 1 ? input.numel() : input.size(1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == m.nframe,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch "
              "size). Expected target size [", m.nframe, "], but got ", target.sizes(), ". Input has shape ",
              input.sizes(), ".");
  if (weight && weight->defined()) {
    check_ocl(*weight, "multi_margin_loss", "weight");
    TORCH_CHECK(weight->dim() <= 1 && weight->numel() == m.dim, "inconsistent weight size, expected ", m.dim,
                " but got ", weight->sizes());
  }
  if (target.numel() > 0) {
    at::Tensor bad = (target < 0).logical_or(target >= m.dim).any();
    TORCH_CHECK(!bad.item<bool>(), "target out of range");
  }
  return m;
}

// The hinge terms z = margin - x[y] + x [N, C] in the accumulation type, and the target column.
std::pair<at::Tensor, at::Tensor> multi_margin_terms(const MultiMargin& m, const at::Tensor& input,
                                                     const at::Tensor& target, double margin) {
  at::Tensor x = input.reshape({m.nframe, m.dim}).to(acc_type(input));
  at::Tensor idx = target.reshape({m.nframe, 1}).to(at::kLong);
  return {(x - x.gather(1, idx)) + margin, idx};
}

at::Tensor multi_margin_loss(const at::Tensor& input, const at::Tensor& target, const at::Scalar& p,
                             const at::Scalar& margin, const std::optional<at::Tensor>& weight, int64_t reduction) {
  MultiMargin m = multi_margin_check(input, target, p, weight);
  c10::DeviceGuard guard(input.device());
  auto [z, idx] = multi_margin_terms(m, input, target, margin.toDouble());
  at::Tensor h = z.clamp_min(0);
  if (p.toDouble() == 2) h = h * h;
  if (weight && weight->defined())
    h = h * weight->reshape({-1}).to(h.scalar_type()).index_select(0, idx.reshape({-1})).unsqueeze(1);
  h = h.scatter(1, idx, 0.0);  // the target's own column is not a margin
  at::Tensor loss = h.sum(1) / static_cast<double>(m.dim);
  if (reduction == at::Reduction::Mean) loss = loss.mean();
  else if (reduction == at::Reduction::Sum) loss = loss.sum();
  else loss = target.dim() == 0 ? loss.reshape({}) : loss;
  return loss.to(input.scalar_type());
}

at::Tensor multi_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& target,
                                      const at::Scalar& p, const at::Scalar& margin,
                                      const std::optional<at::Tensor>& weight, int64_t reduction) {
  MultiMargin m = multi_margin_check(input, target, p, weight);
  check_ocl(grad_output, "multi_margin_loss_backward", "grad_output");
  c10::DeviceGuard guard(input.device());
  auto [z, idx] = multi_margin_terms(m, input, target, margin.toDouble());
  double g = reduction == at::Reduction::Mean ? 1.0 / (m.nframe * m.dim) : 1.0 / m.dim;
  at::Tensor active = (z > 0).to(z.scalar_type());
  at::Tensor h = p.toDouble() == 2 ? active * (z * (2 * g)) : active * g;
  if (weight && weight->defined())
    h = h * weight->reshape({-1}).to(h.scalar_type()).index_select(0, idx.reshape({-1})).unsqueeze(1);
  h = h.scatter(1, idx, 0.0);
  h = h.scatter(1, idx, -h.sum(1, true));  // the target column gets minus the others' sum
  at::Tensor go = grad_output.to(h.scalar_type());
  h = reduction == at::Reduction::None && target.dim() > 0 ? h * go.reshape({m.nframe, 1}) : h * go.reshape({});
  return h.reshape(input.sizes()).to(input.scalar_type()).contiguous();
}

// ------------------------------------------------------------------------- multilabel_margin
struct MultiLabel {
  int64_t nframe, dim;
  at::Tensor x, y, valid, yc;  // [N, C] input (acc type), labels, label-slot validity (acc type), clamped labels
};

MultiLabel multilabel_prepare(const at::Tensor& input, const at::Tensor& target, const char* op) {
  check_ocl(input, op, "self");
  check_ocl(target, op, "target");
  check_floating(input, op);
  int64_t nd = input.dim();
  TORCH_CHECK((nd == 2 && input.size(1) != 0) || (nd == 1 && input.size(0) != 0) || nd == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", input.sizes());
  MultiLabel l;
  if (nd <= 1) {
    l.nframe = 1;
    l.dim = nd == 0 ? 1 : input.size(0);
    TORCH_CHECK(target.dim() <= 1 && target.numel() == l.dim, "inconsistent target size: ", target.sizes(),
                " for input of size: ", input.sizes());
  } else {
    l.nframe = input.size(0);
    l.dim = input.size(1);
    TORCH_CHECK(target.dim() == 2 && target.size(0) == l.nframe && target.size(1) == l.dim,
                "inconsistent target size: ", target.sizes(), " for input of size: ", input.sizes());
  }
  c10::ScalarType acc = acc_type(input);
  l.x = input.reshape({l.nframe, l.dim}).to(acc);
  l.y = target.reshape({l.nframe, l.dim}).to(at::kLong);
  // A row's labels end at its first negative entry.
  l.valid = (l.y >= 0).to(acc).cumprod(1);
  if (l.y.numel() > 0) {
    at::Tensor bad = (l.y >= l.dim).to(acc).mul(l.valid).any();
    TORCH_CHECK(!bad.item<bool>(), "argument #2 'target' is out of range");
  }
  l.yc = l.y.clamp(0, l.dim - 1);
  return l;
}

// [N, labels, C]: 1 where label slot j of row n is valid, class k is no target and the hinge
// 1 - x[y_j] + x[k] is positive (with the hinge values in `hinge`).
at::Tensor multilabel_active(const MultiLabel& l, const at::Tensor& is_target, at::Tensor* hinge) {
  at::Tensor z = (l.x.unsqueeze(1) - l.x.gather(1, l.yc).unsqueeze(2)) + 1.0;
  at::Tensor mask = l.valid.unsqueeze(2) * (1 - is_target.to(z.scalar_type())).unsqueeze(1);
  if (hinge) *hinge = z.clamp_min(0) * mask;
  return (z > 0).to(z.scalar_type()) * mask;
}

std::tuple<at::Tensor, at::Tensor> multilabel_margin_loss_forward(const at::Tensor& input, const at::Tensor& target,
                                                                  int64_t reduction) {
  MultiLabel l = multilabel_prepare(input, target, "multilabel_margin_loss_forward");
  c10::DeviceGuard guard(input.device());
  at::Tensor is_target = at::zeros({l.nframe, l.dim}, l.x.options()).scatter_reduce(1, l.yc, l.valid, "amax");
  at::Tensor hinge;
  multilabel_active(l, is_target, &hinge);
  at::Tensor loss = hinge.sum({1, 2}) / static_cast<double>(l.dim);
  if (reduction == at::Reduction::Mean) loss = loss.mean();
  else if (reduction == at::Reduction::Sum) loss = loss.sum();
  else if (input.dim() <= 1) loss = loss.reshape({});
  return {loss.to(input.scalar_type()), is_target.reshape(input.sizes()).to(input.scalar_type())};
}

at::Tensor multilabel_margin_loss_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                           const at::Tensor& target, int64_t reduction, const at::Tensor& is_target) {
  MultiLabel l = multilabel_prepare(input, target, "multilabel_margin_loss_backward");
  check_ocl(grad_output, "multilabel_margin_loss_backward", "grad_output");
  check_ocl(is_target, "multilabel_margin_loss_backward", "is_target");
  TORCH_CHECK(is_target.sizes() == input.sizes(), "inconsistent is_target size: ", is_target.sizes(),
              " for input of size: ", input.sizes());
  c10::DeviceGuard guard(input.device());
  at::Tensor h = multilabel_active(l, is_target.reshape({l.nframe, l.dim}), nullptr);
  double g = reduction == at::Reduction::Mean ? 1.0 / (l.nframe * l.dim) : 1.0 / l.dim;
  // Every active (label, class) pair adds g to the class and takes g from the label.
  at::Tensor grad = (h.sum(1) * g).scatter_add(1, l.yc, h.sum(2) * -g);
  at::Tensor go = grad_output.to(grad.scalar_type());
  grad = reduction == at::Reduction::None && input.dim() > 1 ? grad * go.reshape({l.nframe, 1}) : grad * go.reshape({});
  return grad.reshape(input.sizes()).to(input.scalar_type()).contiguous();
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_loss));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel_margin_loss_forward));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_margin_loss_backward));
}

} // namespace pytorch_ocl
