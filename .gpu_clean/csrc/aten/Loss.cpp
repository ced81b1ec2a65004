// nll_loss (1-D/2-D targets, class weights, ignore_index, every reduction), forward and backward.
// cross_entropy decomposes into log_softmax + these.
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Reduction.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/loss.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

using Opt = std::optional<at::Tensor>;

dlprim::Buffer buf(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

// (B, C, S) of an input (C), (N, C) or (N, C, d1, ...), checked against the target.
dlprim::NllShape nll_shape(const char* op, const at::Tensor& self, const at::Tensor& target) {
  check_ocl(self, op, "self");
  check_ocl(target, op, "target");
  TORCH_CHECK_TYPE(target.scalar_type() == c10::kLong, op, ": expected target of dtype Long, got ",
                   target.scalar_type());
  TORCH_CHECK_TYPE(c10::isFloatingType(self.scalar_type()), op, ": expected a floating point input, got ",
                   self.scalar_type());
  if (self.dim() == 1) {
    TORCH_CHECK(target.dim() == 0, op, ": 1-D input expects a 0-D target, got ", target.sizes());
    return {1, uint64_t(self.size(0)), 1};
  }
  TORCH_CHECK(target.dim() == self.dim() - 1 && target.size(0) == self.size(0), op, ": input ", self.sizes(),
              " and target ", target.sizes(), " do not match");
  uint64_t S = 1;
  for (int64_t d = 2; d < self.dim(); ++d) {
    TORCH_CHECK(target.size(d - 1) == self.size(d), op, ": input ", self.sizes(), " and target ", target.sizes(),
                " do not match");
    S *= self.size(d);
  }
  return {uint64_t(self.size(0)), uint64_t(self.size(1)), S};
}

at::Tensor checked_weight(const char* op, const Opt& weight, const at::Tensor& self, uint64_t C) {
  if (!weight.has_value() || !weight->defined()) return {};
  TORCH_CHECK(weight->numel() == int64_t(C), op, ": weight must have ", C, " elements, got ", weight->numel());
  return weight->to(self.scalar_type()).contiguous();
}

std::tuple<at::Tensor&, at::Tensor&> nll_forward(const char* op, const at::Tensor& self, const at::Tensor& target,
                                                 const Opt& weight, int64_t reduction, int64_t ignore_index,
                                                 at::Tensor& output, at::Tensor& total_weight) {
  auto s = nll_shape(op, self, target);
  c10::DeviceGuard guard(self.device());
  at::Tensor x = self.contiguous(), t = target.contiguous(), w = checked_weight(op, weight, self, s.C);
  c10::ScalarType acc = x.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  at::Tensor loss = at::empty(t.sizes(), x.options().dtype(acc));
  at::Tensor used = at::empty(t.sizes(), x.options().dtype(acc));
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " reduction=", reduction);
  OCL_DLPRIM_CALL(op, dlprim::nll_loss_per_sample(context(dev), current_queue(dev), to_dlprim(x.scalar_type(), op), s,
                                                  buf(x), buf(t), buf(w), buf(loss), buf(used), ignore_index));
  note_enqueued(current_queue(dev));
  at::native::resize_output(total_weight, {});
  total_weight.copy_(at::sum(used));
  if (reduction == at::Reduction::None) {
    at::native::resize_output(output, t.sizes());
    output.copy_(loss);
  } else {
    at::native::resize_output(output, {});
    at::Tensor total = at::sum(loss);
    output.copy_(reduction == at::Reduction::Mean ? at::div(total, at::sum(used)) : total);
  }
  return {output, total_weight};
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                          const Opt& weight, int64_t reduction, int64_t ignore_index,
                                                          at::Tensor& output, at::Tensor& total_weight) {
  return nll_forward("nll_loss", self, target, weight, reduction, ignore_index, output, total_weight);
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                            const Opt& weight, int64_t reduction, int64_t ignore_index,
                                                            at::Tensor& output, at::Tensor& total_weight) {
  return nll_forward("nll_loss2d", self, target, weight, reduction, ignore_index, output, total_weight);
}

at::Tensor& nll_backward(const char* op, const at::Tensor& grad_output, const at::Tensor& self,
                         const at::Tensor& target, const Opt& weight, int64_t reduction, int64_t ignore_index,
                         const at::Tensor& total_weight, at::Tensor& grad_input) {
  auto s = nll_shape(op, self, target);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(grad_input, self.sizes());
  at::Tensor gx = grad_input.is_contiguous() ? grad_input : at::empty(self.sizes(), self.options());
  gx.zero_();
  at::Tensor g = grad_output.to(self.scalar_type()).contiguous(), t = target.contiguous();
  at::Tensor w = checked_weight(op, weight, self, s.C);
  bool per_sample = reduction == at::Reduction::None;
  at::Tensor tw = reduction == at::Reduction::Mean ? total_weight.to(self.scalar_type()).contiguous() : at::Tensor();
  int dev = self.device().index();
  OCL_DLPRIM_CALL(op, dlprim::nll_loss_backward(context(dev), current_queue(dev), to_dlprim(self.scalar_type(), op), s,
                                                buf(g), per_sample, buf(tw), buf(t), buf(w), buf(gx), ignore_index));
  note_enqueued(current_queue(dev));
  if (!gx.is_same(grad_input)) grad_input.copy_(gx);
  return grad_input;
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  const Opt& weight, int64_t reduction, int64_t ignore_index,
                                  const at::Tensor& total_weight, at::Tensor& grad_input) {
  return nll_backward("nll_loss_backward", grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      grad_input);
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    const Opt& weight, int64_t reduction, int64_t ignore_index,
                                    const at::Tensor& total_weight, at::Tensor& grad_input) {
  return nll_backward("nll_loss2d_backward", grad_output, self, target, weight, reduction, ignore_index, total_weight,
                      grad_input);
}

// nll_loss2d is not structured: its functional forms need their own kernels.
std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const Opt& weight, int64_t reduction, int64_t ignore_index) {
  at::Tensor output = at::empty({0}, self.options()), total_weight = at::empty({0}, self.options());
  nll_loss2d_forward_out(self, target, weight, reduction, ignore_index, output, total_weight);
  return {output, total_weight};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const Opt& weight, int64_t reduction, int64_t ignore_index,
                               const at::Tensor& total_weight) {
  at::Tensor grad_input = at::empty({0}, self.options());
  return nll_loss2d_backward_out(grad_output, self, target, weight, reduction, ignore_index, total_weight, grad_input);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nll_loss_forward.output", TORCH_FN(nll_loss_forward_out));
  m.impl("nll_loss_backward.grad_input", TORCH_FN(nll_loss_backward_out));
  m.impl("nll_loss2d_forward.output", TORCH_FN(nll_loss2d_forward_out));
  m.impl("nll_loss2d_backward.grad_input", TORCH_FN(nll_loss2d_backward_out));
  m.impl("nll_loss2d_forward", TORCH_FN(nll_loss2d_forward));
  m.impl("nll_loss2d_backward", TORCH_FN(nll_loss2d_backward));
}

} // namespace pytorch_ocl
