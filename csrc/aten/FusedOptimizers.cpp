// Fused optimizer steps: _fused_adam_, _fused_adamw_, _fused_sgd_, _fused_adagrad_ (the kernels behind
// torch.optim.Adam/AdamW/SGD/Adagrad(fused=True)), with torch's CUDA kernels' math: the gradient is unscaled
// by grad_scale (and written back unscaled), negated for maximize, the whole step is skipped where found_inf
// is 1, and state is stored in the param dtype while the math runs in float (double for float64).
//
// Each optimizer is one row of a table (its state lists and update statements); one generator turns a row
// into an elementwise op whose operands are one parameter tensor and its state. Per-tensor step counts,
// a tensor lr, grad_scale and found_inf are 0-dim device tensors the kernel reads itself (no host reads);
// an ElementwiseBatch runs several parameters per launch (dlprim::elementwise_multi).
#include "aten/Launch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

namespace pytorch_ocl {

namespace {

using at::TensorList;

// An optimizer's kernel: `states` are read and written along with the param (in list order after
// it); `extra` is the optional state list (amsgrad's max_exp_avg_sq, SGD's momentum buffer);
// `hyper` the by-value hyperparameters (the generator adds `maximize` after them). `update` is
// OpenCL C over these names and param, grad (unscaled, negated for maximize), lr, step_count (where
// `has_step`), in the compute type dl_t; FUSED_EXTRA says whether the extra state is there.
struct FusedRule {
  const char* name;
  std::vector<const char*> states;
  const char* extra;
  bool has_step;
  std::vector<const char*> hyper;
  const char* defines;
  const char* update;
};

// 1 - exp(x) for x <= 0, i.e. 1 - beta^step with x = step * log(beta) (log(beta) from the host in double), as
// accurate as torch's double pow after rounding to float: where it is small (beta2 = 0.999 early on)
// 1 - exp(x) would lose its digits to cancellation, so a series takes it (|x| < 1/8: 8 terms, error below
// x^9 / 9!); exp beyond. (expm1 and pow are as accurate but 20 to 80 times slower than exp on PoCL.)
const char* const kPrelude = R"(
inline dl_t fused_one_minus_exp(dl_t x) {
#if DL_IS_DOUBLE
  return -expm1(x);
#else
  if (fabs(x) < 0.125f)
    return -x * (1 + x / 2 * (1 + x / 3 * (1 + x / 4 * (1 + x / 5 * (1 + x / 6 * (1 + x / 7 * (1 + x / 8)))))));
  return 1 - exp(x);
#endif
}
)";

// torch's fused_adam_utils.cuh: bias corrections from the step count on the device.
const char* const kAdamUpdate = R"(
  if (weight_decay != 0) {
#if FUSED_DECOUPLED
    param -= lr * weight_decay * param;
#else
    grad += param * weight_decay;
#endif
  }
  exp_avg = beta1 * exp_avg + one_minus_beta1 * grad;
  exp_avg_sq = beta2 * exp_avg_sq + one_minus_beta2 * grad * grad;
  dl_t step_size = lr / fused_one_minus_exp(step_count * log_beta1);
  dl_t bias_correction2_sqrt = sqrt(fused_one_minus_exp(step_count * log_beta2));
#if FUSED_EXTRA
  max_exp_avg_sq = max_exp_avg_sq < exp_avg_sq ? exp_avg_sq : max_exp_avg_sq;
  dl_t denom = sqrt(max_exp_avg_sq) / bias_correction2_sqrt + eps;
#else
  dl_t denom = sqrt(exp_avg_sq) / bias_correction2_sqrt + eps;
#endif
  param -= step_size * exp_avg / denom;
)";

// torch's FusedSGDKernel.cpp (the momentum buffer is taken from the grad on the first step).
const char* const kSgdUpdate = R"(
  if (weight_decay != 0) grad += param * weight_decay;
#if FUSED_EXTRA
  momentum_buffer = first_step != 0 ? grad : momentum_buffer * momentum + grad * one_minus_dampening;
  if (nesterov != 0) grad += momentum_buffer * momentum;
  else grad = momentum_buffer;
#endif
  param = param - grad * lr;
)";

// torch's FusedAdagradKernel.cpp.
const char* const kAdagradUpdate = R"(
  if (weight_decay != 0) grad += param * weight_decay;
  state_sum += grad * grad;
  dl_t clr = lr / (1 + (step_count - 1) * lr_decay);
  param -= clr * grad / (sqrt(state_sum) + eps);
)";

enum RuleId { kAdam, kAdamW, kSgd, kAdagrad };
#define OCL_ADAM_HYPER \
  {"beta1", "one_minus_beta1", "log_beta1", "beta2", "one_minus_beta2", "log_beta2", "weight_decay", "eps"}
const FusedRule kRules[] = {
    {"_fused_adam_", {"exp_avg", "exp_avg_sq"}, "max_exp_avg_sq", true, OCL_ADAM_HYPER, "#define FUSED_DECOUPLED 0\n",
     kAdamUpdate},
    {"_fused_adamw_", {"exp_avg", "exp_avg_sq"}, "max_exp_avg_sq", true, OCL_ADAM_HYPER,
     "#define FUSED_DECOUPLED 1\n", kAdamUpdate},
    {"_fused_sgd_", {}, "momentum_buffer", false,
     {"weight_decay", "momentum", "one_minus_dampening", "nesterov", "first_step"}, "", kSgdUpdate},
    {"_fused_adagrad_", {"state_sum"}, nullptr, true, {"lr_decay", "weight_decay", "eps"}, "", kAdagradUpdate},
};
#undef OCL_ADAM_HYPER

// What a kernel variant reads: the optional state list, the grad write-back (where grad_scale is given), and
// for each of lr, grad_scale, found_inf whether it is a 0-dim device tensor (an input) or a number (a by-value
// parameter; grad_scale 1 and found_inf 0 where absent).
struct Variant {
  bool extra, write_grad, lr_dev, scale_dev, inf_dev;
  auto tie() const { return std::make_tuple(extra, write_grad, lr_dev, scale_dev, inf_dev); }
};

// Operands: outputs param, states..., [extra], [grad (unscaled)]; inputs param, grad, states..., [extra],
// [step_count], then the device ones of lr, grad_scale, found_inf; parameters: the rule's, maximize, then the
// by-value ones of lr, grad_scale, found_inf.
std::string fused_body(const FusedRule& r, const Variant& v) {
  std::ostringstream s;
  int x = 0, w = 0;
  auto in = [&](const char* name) { s << "  dl_t " << name << " = x" << x++ << ";\n"; };
  auto param = [&](const char* name) { s << "  dl_t " << name << " = w" << w++ << ";\n"; };
  in("param");
  in("grad");
  for (const char* st : r.states) in(st);
  if (v.extra) in(r.extra);
  if (r.has_step) in("step_count");
  if (v.lr_dev) in("lr");
  if (v.scale_dev) in("grad_scale");
  if (v.inf_dev) in("found_inf");
  for (const char* h : r.hyper) param(h);
  param("maximize");
  if (!v.lr_dev) param("lr");
  if (!v.scale_dev) param("grad_scale");
  if (!v.inf_dev) param("found_inf");
  // torch skips the step, grad write-back included, where found_inf is 1: the inputs go back unchanged.
  s << "  dl_t grad_out = grad;\n  if (found_inf != 1) {\n    grad = grad / grad_scale;\n    grad_out = grad;\n"
    << "    if (maximize != 0) grad = -grad;\n" << r.update << "\n  }\n";
  int y = 0;
  auto out = [&](const char* name) { s << "  y" << y++ << " = " << name << ";\n"; };
  out("param");
  for (const char* st : r.states) out(st);
  if (v.extra) out(r.extra);
  if (v.write_grad) out("grad_out");
  return s.str();
}

// The op of (rule, variant): built once, kept for the process (its address names its compiled programs).
const dlprim::ElementwiseOp& fused_op(RuleId id, const Variant& v) {
  static std::mutex m;
  static std::map<std::tuple<int, bool, bool, bool, bool, bool>, std::unique_ptr<dlprim::ElementwiseOp>> ops;
  std::lock_guard<std::mutex> lock(m);
  auto& op = ops[std::tuple_cat(std::make_tuple(static_cast<int>(id)), v.tie())];
  if (!op) {
    const FusedRule& r = kRules[id];
    int n_states = static_cast<int>(r.states.size()) + (v.extra ? 1 : 0);
    int n_dev = (v.lr_dev ? 1 : 0) + (v.scale_dev ? 1 : 0) + (v.inf_dev ? 1 : 0);
    op = std::make_unique<dlprim::ElementwiseOp>();
    op->name = r.name;
    op->body = fused_body(r, v);
    op->prelude = std::string(r.defines) + "#define FUSED_EXTRA " + (v.extra ? "1" : "0") + "\n" + kPrelude;
    op->n_outputs = 1 + n_states + (v.write_grad ? 1 : 0);
    op->n_inputs = 2 + n_states + (r.has_step ? 1 : 0) + n_dev;
    op->n_params = static_cast<int>(r.hyper.size()) + 1 + (3 - n_dev);
  }
  return *op;
}

// One value the kernel reads: a 0-dim ocl tensor stays on the device (read by the kernel, no host sync;
// converted once where its dtype is neither float nor the compute type, so float64 never reaches a float
// kernel); a CPU tensor (torch.optim passes a CPU lr tensor as is), a number or the default goes by value.
struct ScalarArg {
  at::Tensor device;  // undefined: by value
  double value = 0;
};

ScalarArg scalar_arg(const char* api, const char* what, const std::optional<at::Tensor>& t, double value,
                     c10::ScalarType compute, c10::Device device) {
  if (!t.has_value()) return {at::Tensor(), value};
  TORCH_CHECK(t->numel() == 1, api, ": expected ", what, " to hold one element, got ", t->numel());
  TORCH_CHECK(c10::isFloatingType(t->scalar_type()), api, ": expected ", what, " to be a floating point tensor, got ",
              t->scalar_type());
  if (t->is_cpu()) return {at::Tensor(), t->item<double>()};
  TORCH_CHECK(t->device() == device, api, ": expected ", what, " on ", device, ", got ", t->device());
  at::Tensor r = t->reshape({});
  if (r.scalar_type() != c10::kFloat && r.scalar_type() != compute) r = r.to(compute);
  return {r, 0};
}

void check_list(const char* api, const char* what, TensorList list, size_t n) {
  TORCH_CHECK(list.size() == n, api, ": expected ", what, " to hold ", n, " tensors (one per param), got ",
              list.size());
}

void check_like(const char* api, const char* what, size_t i, const at::Tensor& t, const at::Tensor& p) {
  TORCH_CHECK(t.device() == p.device(), api, ": ", what, "[", i, "] is on ", t.device(), " but param[", i, "] is on ",
              p.device());
  TORCH_CHECK(t.scalar_type() == p.scalar_type(), api, ": ", what, "[", i, "] has dtype ", t.scalar_type(),
              " but param[", i, "] has dtype ", p.scalar_type());
  TORCH_CHECK(t.sizes() == p.sizes(), api, ": ", what, "[", i, "] has shape ", t.sizes(), " but param[", i,
              "] has shape ", p.sizes());
}

struct FusedCall {
  RuleId rule;
  TensorList params, grads;
  std::vector<TensorList> states;
  bool use_extra;     // amsgrad, SGD's nonzero momentum
  TensorList extra;  // the rule's extra state list (ignored where !use_extra)
  TensorList steps;  // empty where the rule has no step count
  std::optional<at::Tensor> lr_tensor;
  double lr = 0;
  std::vector<double> hyper;  // the rule's, then maximize
  const std::optional<at::Tensor>& grad_scale;
  const std::optional<at::Tensor>& found_inf;
};

void fused_step(const FusedCall& c) {
  const FusedRule& r = kRules[c.rule];
  const char* api = r.name;
  const size_t n = c.params.size();
  const bool extra = c.use_extra;
  check_list(api, "grads", c.grads, n);
  for (size_t k = 0; k < c.states.size(); ++k) check_list(api, r.states[k], c.states[k], n);
  if (extra) check_list(api, r.extra, c.extra, n);
  if (r.has_step) check_list(api, "state_steps", c.steps, n);
  if (n == 0) return;
  const c10::Device device = c.params[0].device();
  TORCH_CHECK(device.type() == kOcl, api, ": expected params on ocl, got ", device);
  c10::DeviceGuard guard(device);

  // lr, grad_scale, found_inf per compute type (a call's params share one dtype in torch.optim); whether
  // each is on the device does not depend on the compute type, so one op serves the call.
  std::map<c10::ScalarType, std::array<ScalarArg, 3>> scalars;
  auto scalars_for = [&](c10::ScalarType compute) -> const std::array<ScalarArg, 3>& {
    auto found = scalars.find(compute);
    if (found == scalars.end())
      found = scalars.emplace(compute, std::array<ScalarArg, 3>{
                                           scalar_arg(api, "lr", c.lr_tensor, c.lr, compute, device),
                                           scalar_arg(api, "grad_scale", c.grad_scale, 1, compute, device),
                                           scalar_arg(api, "found_inf", c.found_inf, 0, compute, device)})
                  .first;
    return found->second;
  };
  const std::array<ScalarArg, 3>& first = scalars_for(c.params[0].scalar_type() == c10::kDouble ? c10::kDouble
                                                                                              : c10::kFloat);
  const Variant variant{extra, c.grad_scale.has_value(), first[0].device.defined(), first[1].device.defined(),
                        first[2].device.defined()};
  ElementwiseBatch batch(fused_op(c.rule, variant));
  std::vector<dlprim::Scalar> hyper;
  for (double h : c.hyper) hyper.push_back(dlprim::Scalar::floating(h));
  for (const ScalarArg& a : first)
    if (!a.device.defined()) hyper.push_back(dlprim::Scalar::floating(a.value));
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& p = c.params[i];
    TORCH_CHECK(p.device() == device, api, ": param[", i, "] is on ", p.device(), " but param[0] is on ", device,
                "; expected one device per call");
    c10::ScalarType st = p.scalar_type();
    TORCH_CHECK(st == c10::kFloat || st == c10::kHalf || st == c10::kBFloat16 || st == c10::kDouble, api,
                ": expected floating point params (float32, float16, bfloat16, float64), got ", st, " at param[", i,
                "]");
    check_like(api, "grads", i, c.grads[i], p);
    for (size_t k = 0; k < c.states.size(); ++k) check_like(api, r.states[k], i, c.states[k][i], p);
    if (extra) check_like(api, r.extra, i, c.extra[i], p);
    if (r.has_step) {
      const at::Tensor& s = c.steps[i];
      TORCH_CHECK(s.device() == device && s.numel() == 1 && c10::isFloatingType(s.scalar_type()), api,
                  ": expected state_steps[", i, "] to be a one-element floating point tensor on ", device, ", got ",
                  s.scalar_type(), " of ", s.numel(), " elements on ", s.device());
    }
    c10::ScalarType compute = st == c10::kDouble ? c10::kDouble : c10::kFloat;
    const std::array<ScalarArg, 3>& sc = scalars_for(compute);

    // The fast route (no TensorIterator) where every operand is contiguous and nothing aliases.
    std::vector<const at::Tensor*> outs{&p};
    for (TensorList st_list : c.states) outs.push_back(&st_list[i]);
    if (extra) outs.push_back(&c.extra[i]);
    if (variant.write_grad) outs.push_back(&c.grads[i]);
    std::vector<ElementwiseBatch::DenseInput> ins{{&p}, {&c.grads[i]}};
    for (TensorList st_list : c.states) ins.push_back({&st_list[i]});
    if (extra) ins.push_back({&c.extra[i]});
    at::Tensor step;
    if (r.has_step) {
      step = c.steps[i].reshape({});
      if (step.scalar_type() != c10::kFloat && step.scalar_type() != compute) step = step.to(compute);
      ins.push_back({&step});
    }
    for (const ScalarArg& a : sc)
      if (a.device.defined()) ins.push_back({&a.device});
    if (ElementwiseBatch::dense_route(p, outs, ins)) {
      batch.add_dense(outs, ins, compute, hyper);
      continue;
    }
    at::TensorIteratorConfig config;
    config.set_check_mem_overlap(true).check_all_same_dtype(false).resize_outputs(false);
    config.add_output(p);
    for (TensorList st_list : c.states) config.add_output(st_list[i]);
    if (extra) config.add_output(c.extra[i]);
    if (variant.write_grad) config.add_output(c.grads[i]);
    config.add_const_input(p).add_const_input(c.grads[i]);
    for (TensorList st_list : c.states) config.add_const_input(st_list[i]);
    if (extra) config.add_const_input(c.extra[i]);
    if (r.has_step) config.add_const_input(step);
    for (const ScalarArg& a : sc)
      if (a.device.defined()) config.add_const_input(a.device);
    auto iter = config.build();
    batch.add(iter, compute, hyper);
  }
  batch.flush();
}

// ---- entry points (the .default forms take lr as a number, the .tensor_lr forms as a tensor)
using OptT = std::optional<at::Tensor>;

void adam_impl(RuleId id, TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
               TensorList max_exp_avg_sqs, TensorList state_steps, const OptT& lr_t, double lr, double beta1,
               double beta2, double weight_decay, double eps, bool amsgrad, bool maximize, const OptT& grad_scale,
               const OptT& found_inf) {
  fused_step({id, self, grads, {exp_avgs, exp_avg_sqs}, amsgrad, max_exp_avg_sqs, state_steps, lr_t,
              lr, {beta1, 1 - beta1, std::log(beta1), beta2, 1 - beta2, std::log(beta2), weight_decay, eps,
               maximize ? 1.0 : 0.0}, grad_scale,
              found_inf});
}

template <RuleId Id>
void adam(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs, TensorList max_exp_avg_sqs,
          TensorList state_steps, double lr, double beta1, double beta2, double weight_decay, double eps, bool amsgrad,
          bool maximize, const OptT& grad_scale, const OptT& found_inf) {
  adam_impl(Id, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, std::nullopt, lr, beta1, beta2,
            weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

template <RuleId Id>
void adam_tensor_lr(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                    TensorList max_exp_avg_sqs, TensorList state_steps, const at::Tensor& lr, double beta1,
                    double beta2, double weight_decay, double eps, bool amsgrad, bool maximize, const OptT& grad_scale,
                    const OptT& found_inf) {
  adam_impl(Id, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, 0, beta1, beta2, weight_decay,
            eps, amsgrad, maximize, grad_scale, found_inf);
}

void sgd_impl(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
              double momentum, const OptT& lr_t, double lr, double dampening, bool nesterov, bool maximize,
              bool is_first_step, const OptT& grad_scale, const OptT& found_inf) {
  // As torch's kernels: the momentum buffers are read and written only where momentum is nonzero.
  fused_step({kSgd, self, grads, {}, momentum != 0, momentum_buffer_list, {}, lr_t, lr,
              {weight_decay, momentum, 1 - dampening, nesterov ? 1.0 : 0.0, is_first_step ? 1.0 : 0.0,
               maximize ? 1.0 : 0.0},
              grad_scale, found_inf});
}

void sgd(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay, double momentum,
         double lr, double dampening, bool nesterov, bool maximize, bool is_first_step, const OptT& grad_scale,
         const OptT& found_inf) {
  sgd_impl(self, grads, momentum_buffer_list, weight_decay, momentum, std::nullopt, lr, dampening, nesterov, maximize,
           is_first_step, grad_scale, found_inf);
}

void sgd_tensor_lr(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                   double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                   bool is_first_step, const OptT& grad_scale, const OptT& found_inf) {
  sgd_impl(self, grads, momentum_buffer_list, weight_decay, momentum, lr, 0, dampening, nesterov, maximize,
           is_first_step, grad_scale, found_inf);
}

void adagrad_impl(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps, const OptT& lr_t,
                  double lr, double lr_decay, double weight_decay, double eps, bool maximize, const OptT& grad_scale,
                  const OptT& found_inf) {
  fused_step({kAdagrad, self, grads, {state_sums}, false, {}, state_steps, lr_t, lr,
              {lr_decay, weight_decay, eps, maximize ? 1.0 : 0.0}, grad_scale, found_inf});
}

void adagrad(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
             double lr_decay, double weight_decay, double eps, bool maximize, const OptT& grad_scale,
             const OptT& found_inf) {
  adagrad_impl(self, grads, state_sums, state_steps, std::nullopt, lr, lr_decay, weight_decay, eps, maximize,
               grad_scale, found_inf);
}

void adagrad_tensor_lr(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps,
                       const at::Tensor& lr, double lr_decay, double weight_decay, double eps, bool maximize,
                       const OptT& grad_scale, const OptT& found_inf) {
  adagrad_impl(self, grads, state_sums, state_steps, lr, 0, lr_decay, weight_decay, eps, maximize, grad_scale,
               found_inf);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", TORCH_FN(adam<kAdam>));
  m.impl("_fused_adam_.tensor_lr", TORCH_FN(adam_tensor_lr<kAdam>));
  m.impl("_fused_adamw_", TORCH_FN(adam<kAdamW>));
  m.impl("_fused_adamw_.tensor_lr", TORCH_FN(adam_tensor_lr<kAdamW>));
  m.impl("_fused_sgd_", TORCH_FN(sgd));
  m.impl("_fused_sgd_.tensor_lr", TORCH_FN(sgd_tensor_lr));
  m.impl("_fused_adagrad_", TORCH_FN(adagrad));
  m.impl("_fused_adagrad_.tensor_lr", TORCH_FN(adagrad_tensor_lr));
}

} // namespace pytorch_ocl
