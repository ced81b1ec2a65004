// ctc_loss (_ctc_loss, _ctc_loss_backward; list and tensor length overloads) composed of native
// ops: the CPU's alpha / beta recursions in log space over the extended label sequence
// l' = (blank, l1, blank, l2, ..., blank), one step per time frame for the whole batch (a host loop
// of T steps, each a handful of elementwise launches over [batch, 2 * max_target + 1]), with the
// CPU's per-sample input / target lengths, checks and edge cases (empty inputs or targets,
// zero_infinity in the backward). The gradient is exp(lp) - exp(logsumexp_{s: l'_s = c}(alpha +
// beta) + nll - lp), zero past each input length (the log-sum accumulated in the CPU's order). Lengths are read on the host, as the CPU and
// CUDA kernels do. float32 and float64.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full.h>
#include <ATen/ops/log.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>

namespace pytorch_ocl {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Ctc {
  int64_t T, B, C, S, L;          // frames, batch, classes, max target length, 2 * S + 1
  std::vector<int64_t> in_len, tgt_len;
  at::Tensor in_len_d, tgt_len_d;  // long [B] on the device
  at::Tensor lab;                  // long [B, L]: the extended labels
  at::Tensor allow_skip;           // bool [B, L]: s may be reached from s - 2
  at::Tensor lp_ext;               // [T, B, L]: log_probs of each extended label
};

Ctc prepare(const at::Tensor& log_probs, const at::Tensor& targets, at::IntArrayRef input_lengths,
            at::IntArrayRef target_lengths, int64_t blank, const char* op) {
  check_ocl(log_probs, op, "log_probs");
  check_ocl(targets, op, "targets");
  TORCH_CHECK_NOT_IMPLEMENTED(log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble, "\"",
                              op, "\" not implemented for '", c10::toString(log_probs.scalar_type()), "'");
  TORCH_CHECK(log_probs.dim() == 3, op, ": expected log_probs to have 3 dimensions, got ", log_probs.dim());
  Ctc c;
  c.T = log_probs.size(0);
  c.B = log_probs.size(1);
  c.C = log_probs.size(2);
  TORCH_CHECK(blank < c.C && blank >= 0, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == c.B, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == c.B, "target_lengths must be of size batch_size");
  c.in_len = input_lengths.vec();
  c.tgt_len = target_lengths.vec();
  c.S = 0;
  std::vector<int64_t> offsets(c.B);
  int64_t pos = 0;
  for (int64_t b = 0; b < c.B; ++b) {
    TORCH_CHECK(c.in_len[b] >= 0 && c.in_len[b] <= c.T, "Expected input_lengths to have value at most ", c.T,
                ", but got value ", c.in_len[b], " (while checking arguments for ctc_loss_cpu)");
    TORCH_CHECK(c.tgt_len[b] >= 0, "Expected target_lengths to be non-negative, but got ", c.tgt_len[b]);
    c.S = std::max(c.S, c.tgt_len[b]);
    if (targets.dim() == 1) {
      offsets[b] = pos;
      pos += c.tgt_len[b];
    } else {
      offsets[b] = b * (targets.dim() == 2 ? targets.size(1) : 0);
    }
  }
  if (targets.dim() == 1) {
    TORCH_CHECK(targets.size(0) >= pos, "Expected tensor to have size at least ", pos, " at dimension 1, but got size ",
                targets.size(0), " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
  } else {
    TORCH_CHECK(targets.dim() == 2 && targets.size(0) == c.B, op, ": expected targets of shape [batch, S] or 1-D");
    TORCH_CHECK(targets.size(1) >= c.S, "Expected tensor to have size at least ", c.S,
                " at dimension 1, but got size ", targets.size(1),
                " for argument #2 'targets' (while checking arguments for ctc_loss_cpu)");
  }
  c.L = 2 * c.S + 1;
  at::TensorOptions lopt = log_probs.options().dtype(at::kLong);
  c.in_len_d = at::tensor(c.in_len, at::kLong).to(log_probs.device());
  c.tgt_len_d = at::tensor(c.tgt_len, at::kLong).to(log_probs.device());
  // Padded targets [B, S]: positions past a target's length read element 0 (never reached).
  at::Tensor flat = targets.reshape({-1}).to(at::kLong);
  at::Tensor s = at::arange(c.S, lopt).unsqueeze(0);
  at::Tensor off = at::tensor(offsets, at::kLong).to(log_probs.device()).unsqueeze(1);
  at::Tensor valid = s < c.tgt_len_d.unsqueeze(1);
  at::Tensor idx = at::where(valid, off + s, at::zeros({}, lopt));
  at::Tensor tg = flat.numel() ? flat.index_select(0, idx.reshape({-1})).reshape({c.B, c.S})
                               : at::zeros({c.B, c.S}, lopt);
  tg = at::where(valid, tg, at::full({}, blank, lopt));
  at::Tensor lab = at::full({c.B, c.L}, blank, lopt);
  if (c.S > 0) lab.narrow(1, 1, 2 * c.S).view({c.B, c.S, 2}).select(2, 0).copy_(tg);
  c.lab = lab;
  at::Tensor prev2 = at::cat({at::full({c.B, 2}, -1, lopt), lab.narrow(1, 0, c.L - 2 > 0 ? c.L - 2 : 0)}, 1)
                         .narrow(1, 0, c.L);
  c.allow_skip = (lab != blank).logical_and(lab != prev2).logical_and(at::arange(c.L, lopt).unsqueeze(0) >= 2);
  c.lp_ext = log_probs.gather(2, lab.unsqueeze(0).expand({c.T, c.B, c.L}));
  return c;
}

// log(exp(a) + exp(b) + exp(c)) with -inf handled.
at::Tensor lse3(const at::Tensor& a, const at::Tensor& b, const at::Tensor& c) {
  at::Tensor m = at::maximum(at::maximum(a, b), c);
  at::Tensor ms = at::where(m == -kInf, at::zeros({}, m.options()), m);
  return at::log(at::exp(a - ms) + at::exp(b - ms) + at::exp(c - ms)) + ms;
}

// x shifted right along dim 1 by k, filled with -inf.
at::Tensor shift(const at::Tensor& x, int64_t k) {
  int64_t L = x.size(1);
  at::Tensor pad = at::full({x.size(0), std::min(k, L)}, -kInf, x.options());
  return k >= L ? pad : at::cat({pad, x.narrow(1, 0, L - k)}, 1);
}
// x shifted left along dim 1 by k, filled with -inf.
at::Tensor shift_left(const at::Tensor& x, int64_t k) {
  int64_t L = x.size(1);
  at::Tensor pad = at::full({x.size(0), std::min(k, L)}, -kInf, x.options());
  return k >= L ? pad : at::cat({x.narrow(1, k, L - k), pad}, 1);
}

// The last frame's log-probability of each sample's two admissible end states.
at::Tensor end_states(const Ctc& c, const at::Tensor& la /*[T, B, L]*/) {
  at::Tensor t_last = (c.in_len_d - 1).clamp_min(0);
  at::Tensor rows = la.permute({1, 0, 2}).gather(1, t_last.view({c.B, 1, 1}).expand({c.B, 1, c.L})).squeeze(1);
  at::Tensor s_end = 2 * c.tgt_len_d;
  at::Tensor a = rows.gather(1, s_end.unsqueeze(1)).squeeze(1);
  at::Tensor b = rows.gather(1, (s_end - 1).clamp_min(0).unsqueeze(1)).squeeze(1);
  b = at::where(c.tgt_len_d > 0, b, at::full({}, -kInf, b.options()));
  return lse3(a, b, at::full({}, -kInf, a.options()));
}

std::tuple<at::Tensor, at::Tensor> ctc_loss(const at::Tensor& log_probs, const at::Tensor& targets,
                                            at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                                            int64_t blank, bool zero_infinity) {
  c10::DeviceGuard guard(log_probs.device());
  Ctc c = prepare(log_probs, targets, input_lengths, target_lengths, blank, "ctc_loss");
  at::Tensor la = at::full({c.T, c.B, c.L}, -kInf, log_probs.options());
  if (c.T > 0) {
    at::Tensor pos = at::arange(c.L, c.lab.options()).unsqueeze(0);
    at::Tensor start = (pos == 0).logical_or((pos == 1).logical_and(c.tgt_len_d.unsqueeze(1) > 0));
    la.select(0, 0).copy_(at::where(start, c.lp_ext.select(0, 0), at::full({}, -kInf, la.options())));
    at::Tensor ninf = at::full({}, -kInf, la.options());
    for (int64_t t = 1; t < c.T; ++t) {
      at::Tensor prev = la.select(0, t - 1);
      at::Tensor skip = at::where(c.allow_skip, shift(prev, 2), ninf);
      la.select(0, t).copy_(lse3(prev, shift(prev, 1), skip) + c.lp_ext.select(0, t));
    }
  }
  at::Tensor nll = c.T > 0 ? -end_states(c, la) : at::full({c.B}, kInf, log_probs.options());
  // An empty input: likelihood 1 for an empty target, 0 otherwise.
  at::Tensor empty_in = c.in_len_d == 0;
  nll = at::where(empty_in, at::where(c.tgt_len_d == 0, at::zeros({}, nll.options()),
                                      at::full({}, kInf, nll.options())), nll);
  return {nll, la.permute({1, 0, 2}).contiguous()};
}

at::Tensor ctc_loss_backward(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                             at::IntArrayRef input_lengths, at::IntArrayRef target_lengths,
                             const at::Tensor& nll, const at::Tensor& log_alpha, int64_t blank, bool zero_infinity) {
  c10::DeviceGuard guard(log_probs.device());
  Ctc c = prepare(log_probs, targets, input_lengths, target_lengths, blank, "ctc_loss_backward");
  check_ocl(log_alpha, "ctc_loss_backward", "log_alpha");
  if (c.T == 0 || c.B == 0) return at::zeros_like(log_probs);
  at::Tensor la = log_alpha.permute({1, 0, 2});  // [T, B, L]
  at::Tensor ninf = at::full({}, -kInf, log_probs.options());
  at::Tensor beta = at::full({c.T, c.B, c.L}, -kInf, log_probs.options());
  // beta at each sample's last frame: its two end states; earlier frames by the recursion.
  at::Tensor pos = at::arange(c.L, c.lab.options()).unsqueeze(0);
  at::Tensor s_end = (2 * c.tgt_len_d).unsqueeze(1);
  at::Tensor end_mask = (pos == s_end).logical_or((pos == s_end - 1).logical_and(c.tgt_len_d.unsqueeze(1) > 0));
  at::Tensor last = (c.in_len_d - 1).unsqueeze(1);
  // s + 2 reachable from s: allow_skip moved left by two.
  at::Tensor allow_from = c.L > 2 ? at::cat({c.allow_skip.narrow(1, 2, c.L - 2),
                                             at::zeros({c.B, 2}, c.allow_skip.options())}, 1)
                                  : at::zeros({c.B, c.L}, c.allow_skip.options());
  for (int64_t t = c.T - 1; t >= 0; --t) {
    at::Tensor lp = c.lp_ext.select(0, t);
    at::Tensor init = at::where(end_mask, lp, ninf);
    at::Tensor rec = ninf.expand({c.B, c.L});
    if (t + 1 < c.T) {
      at::Tensor next = beta.select(0, t + 1);
      rec = lse3(next, shift_left(next, 1), at::where(allow_from, shift_left(next, 2), ninf)) + lp;
    }
    beta.select(0, t).copy_(at::where(last == t, init, at::where(last > t, rec, ninf)));
  }
  // log-sum of alpha * beta over the extended positions carrying each class, added position by
  // position in the CPU's order and form (one pairwise log-add per position: sums of 2 * S + 1
  // terms that cancel in the gradient, so their rounding shows).
  at::Tensor ab = la + beta;
  at::Tensor lcab = at::full({c.T, c.B, c.C}, -kInf, log_probs.options());
  for (int64_t s = 0; s < c.L; ++s) {
    at::Tensor idx = c.lab.select(1, s).view({1, c.B, 1}).expand({c.T, c.B, 1});
    at::Tensor v = ab.select(2, s).unsqueeze(2), cur = lcab.gather(2, idx);
    at::Tensor mx = at::maximum(cur, v);
    lcab.scatter_(2, idx, at::where(cur == -kInf, v, at::log(at::exp(cur - mx) + at::exp(v - mx)) + mx));
  }
  at::Tensor n = nll.view({1, c.B, 1}), g = grad.view({1, c.B, 1});
  at::Tensor res = (at::exp(log_probs) - at::exp(lcab + n - log_probs)) * g;
  at::Tensor live = at::arange(c.T, c.lab.options()).view({c.T, 1, 1}) < c.in_len_d.view({1, c.B, 1});
  at::Tensor zero = at::zeros({}, res.options());
  res = at::where(live, res, zero);
  if (zero_infinity) res = at::where((n == kInf).expand_as(res), zero, res);
  return res;
}

std::vector<int64_t> host_lengths(const at::Tensor& t) {
  at::Tensor h = t.to(at::kLong).cpu().contiguous();
  return std::vector<int64_t>(h.data_ptr<int64_t>(), h.data_ptr<int64_t>() + h.numel());
}

std::tuple<at::Tensor, at::Tensor> ctc_loss_tensor(const at::Tensor& log_probs, const at::Tensor& targets,
                                                   const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                                   int64_t blank, bool zero_infinity) {
  return ctc_loss(log_probs, targets, host_lengths(input_lengths), host_lengths(target_lengths), blank, zero_infinity);
}

at::Tensor ctc_loss_backward_tensor(const at::Tensor& grad, const at::Tensor& log_probs, const at::Tensor& targets,
                                    const at::Tensor& input_lengths, const at::Tensor& target_lengths,
                                    const at::Tensor& nll, const at::Tensor& log_alpha, int64_t blank,
                                    bool zero_infinity) {
  return ctc_loss_backward(grad, log_probs, targets, host_lengths(input_lengths), host_lengths(target_lengths), nll,
                           log_alpha, blank, zero_infinity);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_ctc_loss", TORCH_FN(ctc_loss));
  m.impl("_ctc_loss.Tensor", TORCH_FN(ctc_loss_tensor));
  m.impl("_ctc_loss_backward", TORCH_FN(ctc_loss_backward));
  m.impl("_ctc_loss_backward.Tensor", TORCH_FN(ctc_loss_backward_tensor));
}

} // namespace pytorch_ocl
