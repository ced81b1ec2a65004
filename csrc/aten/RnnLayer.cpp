// nn.LSTM and nn.GRU on ocl a whole layer at a time (aten::lstm.input, aten::gru.input), as cuDNN
// does for CUDA. torch's generic recurrence (aten/native/RNN.cpp) gives a non-CPU device two GEMMs,
// a gate sum and a cell per time step forward and about ten launches per step backward, each small;
// here a layer is:
//   forward:  one GEMM for every step's input projection (biases folded in), then per step one
//             GEMM for h W_hh^T and one cell launch;
//   backward: per step the cell backward and one GEMM for the previous h's gradient (the output
//             gradient folded in), then one GEMM each for the weight gradients and the input's over
//             every step at once.
// The cells are Rnn.cpp's (RnnCells.h), with the same operation order and workspace layout, so
// results match the per-step path to rounding. Small LSTM and GRU recurrences on GPUs (RnnFused.h:
// hidden <= 1024, batch <= 64; PYTORCH_OCL_LSTM_FUSED / PYTORCH_OCL_GRU_FUSED=1 on any device, =0
// never) fuse each step's GEMM with its cell: one launch per step forward (h W_hh^T + the cell) and
// one backward (the h gradient's GEMM over the next step's gate gradients, then the cell backward),
// same saved tensors. LSTM with proj_size, 16-bit dtypes and empty sequences take torch's generic path
// (whose cells run natively too); so does PYTORCH_OCL_RNN=steps.
#include "aten/RnnCells.h"
#include "aten/RnnFused.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/add.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gru_native.h>
#include <ATen/ops/lstm_native.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include <cstdlib>
#include <cstring>
#include <tuple>
#include <vector>

namespace pytorch_ocl {

namespace {

using T = at::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

T gate(const T& t, int64_t k, int64_t h) { return t.narrow(t.dim() - 1, k * h, h); }

// A CPU scalar zero standing in for an absent gradient of the last c.
T zero_scalar(c10::ScalarType st) {
  T z = at::scalar_tensor(0.0, at::TensorOptions().dtype(st));
  z.unsafeGetTensorImpl()->set_wrapped_number(true);
  return z;
}

// The h each step started from, in time order ([steps, batch, hidden]): h0 enters the first step the
// direction runs, each later step the output of the one before it.
T previous_h(const T& y, const T& h0, bool reverse) {
  const int64_t steps = y.size(0);
  if (steps == 1) return h0.unsqueeze(0);
  return reverse ? at::cat({y.narrow(0, 1, steps - 1), h0.unsqueeze(0)}, 0)
                 : at::cat({h0.unsqueeze(0), y.narrow(0, 0, steps - 1)}, 0);
}

// One direction of one LSTM layer. x [steps, batch, in] contiguous, h0 / c0 [batch, hidden];
// returns y [steps, batch, hidden], h_n, c_n. reverse: the steps run from the last to the first.
// No bias: b_ih and b_hh are empty tensors (apply needs defined tensors to place its node).
struct LstmLayer : public torch::autograd::Function<LstmLayer> {
  static variable_list forward(AutogradContext* ctx, const T& x, const T& h0, const T& c0, const T& w_ih,
                               const T& w_hh, const T& b_ih, const T& b_hh, bool reverse) {
    const int64_t steps = x.size(0), batch = x.size(1), hidden = w_hh.size(1);
    const c10::ScalarType st = x.scalar_type();
    T x2 = x.view({steps * batch, x.size(2)});
    // The gates' pre-activations of every step; the cell launches overwrite each step's with the
    // activated gates, element for element (the workspace the backward reads).
    T gates = at::empty({steps, batch, 4 * hidden}, x.options());
    T g2 = gates.view({steps * batch, 4 * hidden});
    const bool bias = b_ih.numel() > 0;
    if (bias)
      at::addmm_out(g2, at::add(b_ih, b_hh), x2, w_ih.t());
    else
      at::mm_out(g2, x2, w_ih.t());
    T y = at::empty({steps, batch, hidden}, x.options());
    T cs = at::empty({steps, batch, hidden}, x.options());
    const T w_hh_t = w_hh.t();
    T h = h0, c = c0;
    const bool fused = lstm_fused_applies(x, h0, c0, w_hh);
    if (fused) {
      const T w = w_hh.contiguous();
      h = h0.contiguous();
      c = c0.contiguous();
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = reverse ? steps - 1 - k : k;
        T yt = y.select(0, t), ct = cs.select(0, t);
        lstm_fused_forward_step(w, gates.select(0, t), h, c, yt, ct);
        h = yt;
        c = ct;
      }
    } else {
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = reverse ? steps - 1 - k : k;
        T gt = gates.select(0, t);
        gt.addmm_(h, w_hh_t);
        T yt = y.select(0, t), ct = cs.select(0, t);
        rnn_launch(R_lstm_cell,
                   {yt, ct, gate(gt, 0, hidden), gate(gt, 1, hidden), gate(gt, 2, hidden), gate(gt, 3, hidden)},
                   {gate(gt, 0, hidden), gate(gt, 1, hidden), gate(gt, 2, hidden), gate(gt, 3, hidden), c}, st);
        h = yt;
        c = ct;
      }
    }
    ctx->save_for_backward({x, h0, c0, w_ih, w_hh, y, cs, gates});
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["bias"] = bias;
    ctx->saved_data["fused"] = fused;
    // h_n and c_n are views of y and cs: copies, so autograd sees three independent outputs.
    return {y, h.clone(), c.clone()};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const T &x = s[0], &h0 = s[1], &c0 = s[2], &w_ih = s[3], &w_hh = s[4], &y = s[5], &cs = s[6], &gates = s[7];
    const bool reverse = ctx->saved_data["reverse"].toBool(), bias = ctx->saved_data["bias"].toBool();
    const bool fused = ctx->saved_data["fused"].toBool();
    const T &dy = grads[0], &dhn = grads[1], &dcn = grads[2];
    const int64_t steps = x.size(0), batch = x.size(1), hidden = w_hh.size(1);
    const c10::ScalarType st = x.scalar_type();
    auto time_of = [&](int64_t k) { return reverse ? steps - 1 - k : k; };
    T dgates = at::empty_like(gates);
    T dc = at::empty({batch, hidden}, x.options());  // the running gradient of c, updated in place
    // Gradient of the last step's h: its output's and h_n's.
    const int64_t t_last = time_of(steps - 1);
    T dh;
    if (dy.defined() && dhn.defined())
      dh = at::add(dy.select(0, t_last), dhn);
    else if (dy.defined())
      dh = dy.select(0, t_last);
    else if (dhn.defined())
      dh = dhn;
    else if (!fused)  // the fused step reads an absent dh as zero
      dh = at::zeros({batch, hidden}, x.options());
    T dh0;
    if (fused) {
      // One launch per step: the step's h gradient (dh_add + the next step's gate gradients
      // times W_hh) and the cell backward; h0's gradient is one GEMM after the loop.
      // dy: the kernel takes strided rows (a batch_first model's gradient), not strided units.
      const T w = w_hh.contiguous(), dyc = !dy.defined() ? T() : dy.stride(2) == 1 ? dy : dy.contiguous();
      const T c0c = c0.contiguous(), dcnc = dcn.defined() ? dcn.contiguous() : T();
      for (int64_t k = steps - 1; k >= 0; --k) {
        const int64_t t = time_of(k);
        const bool last = k == steps - 1;
        const T dh_add = last ? (!dh.defined() ? T() : dh.stride(1) == 1 ? dh : dh.contiguous())
                              : (dyc.defined() ? dyc.select(0, t) : T());
        lstm_fused_backward_step(w, last ? T() : dgates.select(0, time_of(k + 1)), dh_add, gates.select(0, t),
                                 cs.select(0, t), k == 0 ? c0c : cs.select(0, time_of(k - 1)), last ? dcnc : dc,
                                 dgates.select(0, t), dc);
      }
      dh0 = at::mm(dgates.select(0, time_of(0)), w_hh);
    } else {
      for (int64_t k = steps - 1; k >= 0; --k) {
        const int64_t t = time_of(k);
        const T ws = gates.select(0, t), dg = dgates.select(0, t);
        const T c_prev = k == 0 ? c0 : cs.select(0, time_of(k - 1));
        const T dc_in = k == steps - 1 ? (dcn.defined() ? dcn : zero_scalar(st)) : dc;
        rnn_launch(R_lstm_cell_backward,
                   {gate(dg, 0, hidden), gate(dg, 1, hidden), gate(dg, 2, hidden), gate(dg, 3, hidden), dc},
                   {gate(ws, 0, hidden), gate(ws, 1, hidden), gate(ws, 2, hidden), gate(ws, 3, hidden),
                    cs.select(0, t), dh, dc_in, c_prev},
                   st);
        if (k > 0)
          dh = dy.defined() ? at::addmm(dy.select(0, time_of(k - 1)), dg, w_hh) : at::mm(dg, w_hh);
        else
          dh0 = at::mm(dg, w_hh);
      }
    }
    T g2 = dgates.view({steps * batch, 4 * hidden});
    T dw_hh = at::mm(g2.t(), previous_h(y, h0, reverse).reshape({steps * batch, hidden}));
    T dw_ih = at::mm(g2.t(), x.view({steps * batch, x.size(2)}));
    T dx = at::mm(g2, w_ih).view(x.sizes());
    T db = bias ? g2.sum(0) : T();
    return {dx, dh0, dc, dw_ih, dw_hh, db, db, T()};
  }
};

// One direction of one GRU layer: x [steps, batch, in] contiguous, h0 [batch, hidden]; returns y,
// h_n. Per step: one GEMM for the hidden gates (b_hh folded in), one cell launch summing the r and
// z gates itself; backward per step: the cell backward (adding the output's gradient) and one GEMM
// accumulating into the previous h's gradient. The hidden gates' r and z gradients are the input
// gates'; one copy after the loop fills the input-gate matrix.
// Fused (RnnFused.h, PYTORCH_OCL_GRU_FUSED, the LSTM's heuristic): one launch per step each way
// (dlprim/kernels/gru.cl), same math, workspace and gradients, the input gates' r and z gradients
// written by the step itself (no copy); the cell part of the previous h's gradient (g z) is carried
// between the backward steps in one [batch, hidden] buffer.
struct GruLayer : public torch::autograd::Function<GruLayer> {
  static variable_list forward(AutogradContext* ctx, const T& x, const T& h0, const T& w_ih, const T& w_hh,
                               const T& b_ih, const T& b_hh, bool reverse) {
    const int64_t steps = x.size(0), batch = x.size(1), hidden = w_hh.size(1);
    const c10::ScalarType st = x.scalar_type();
    const bool bias = b_ih.numel() > 0;
    T x2 = x.view({steps * batch, x.size(2)});
    T xg = at::empty({steps, batch, 3 * hidden}, x.options());
    T xg2 = xg.view({steps * batch, 3 * hidden});
    if (bias)
      at::addmm_out(xg2, b_ih, x2, w_ih.t());
    else
      at::mm_out(xg2, x2, w_ih.t());
    T ws = at::empty({steps, batch, 4 * hidden}, x.options());  // r, z, n, hn + b_hn of every step
    T y = at::empty({steps, batch, hidden}, x.options());
    T h = h0;
    const bool fused = gru_fused_applies(x, h0, w_hh) && b_hh.scalar_type() == st;
    if (fused) {  // one launch per step: h W_hh^T + b_hh and the cell
      const T w = w_hh.contiguous(), bh = b_hh.contiguous();
      h = h0.contiguous();
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = reverse ? steps - 1 - k : k;
        T yt = y.select(0, t);
        gru_fused_forward_step(w, bh, xg.select(0, t), h, yt, ws.select(0, t));
        h = yt;
      }
    } else {
      T hg = at::empty({batch, 3 * hidden}, x.options());
      const T w_hh_t = w_hh.t();
      for (int64_t k = 0; k < steps; ++k) {
        const int64_t t = reverse ? steps - 1 - k : k;
        if (bias)
          at::addmm_out(hg, b_hh, h, w_hh_t);
        else
          at::mm_out(hg, h, w_hh_t);
        T xt = xg.select(0, t), wt = ws.select(0, t), yt = y.select(0, t);
        rnn_launch(R_gru_cell_sum,
                   {yt, gate(wt, 0, hidden), gate(wt, 1, hidden), gate(wt, 2, hidden), gate(wt, 3, hidden)},
                   {gate(xt, 0, hidden), gate(hg, 0, hidden), gate(xt, 1, hidden), gate(hg, 1, hidden),
                    gate(xt, 2, hidden), gate(hg, 2, hidden), h},
                   st);
        h = yt;
      }
    }
    ctx->save_for_backward({x, h0, w_ih, w_hh, y, ws});
    ctx->saved_data["reverse"] = reverse;
    ctx->saved_data["bias"] = bias;
    ctx->saved_data["fused"] = fused;
    return {y, h.clone()};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list s = ctx->get_saved_variables();
    const T &x = s[0], &h0 = s[1], &w_ih = s[2], &w_hh = s[3], &y = s[4], &ws = s[5];
    const bool reverse = ctx->saved_data["reverse"].toBool(), bias = ctx->saved_data["bias"].toBool();
    const T &dy = grads[0], &dhn = grads[1];
    const int64_t steps = x.size(0), batch = x.size(1), hidden = w_hh.size(1);
    const c10::ScalarType st = x.scalar_type();
    auto time_of = [&](int64_t k) { return reverse ? steps - 1 - k : k; };
    T dxg = at::empty({steps, batch, 3 * hidden}, x.options());
    T dhg = at::empty({steps, batch, 3 * hidden}, x.options());
    T dh;
    if (ctx->saved_data["fused"].toBool()) {
      // One launch per step: the step's h gradient (the carried cell part g z + the next step's hidden-gate
      // gradients times W_hh + dy) and the cell backward; h0's gradient is one GEMM after the loop. dy: the
      // kernel takes strided rows (a batch_first model's gradient), not strided units.
      const T w = w_hh.contiguous(), h0c = h0.contiguous();
      const T dyc = !dy.defined() ? T() : dy.stride(2) == 1 ? dy : dy.contiguous();
      const int64_t t_last = time_of(steps - 1);
      T dh_last;  // the last step's h gradient: its output's and h_n's (undefined: none)
      if (dy.defined() && dhn.defined())
        dh_last = at::add(dyc.select(0, t_last), dhn);
      else if (dy.defined())
        dh_last = dyc.select(0, t_last);
      else if (dhn.defined())
        dh_last = dhn.stride(1) == 1 ? dhn : dhn.contiguous();
      dh = at::empty({batch, hidden}, x.options());  // the cell part of the running gradient, in place
      for (int64_t k = steps - 1; k >= 0; --k) {
        const int64_t t = time_of(k);
        const bool last = k == steps - 1;
        const T dh_add = last ? dh_last : dyc.defined() ? dyc.select(0, t) : T();
        gru_fused_backward_step(w, last ? T() : dhg.select(0, time_of(k + 1)), dh_add, ws.select(0, t),
                                k == 0 ? h0c : y.select(0, time_of(k - 1)), last ? T() : dh, dhg.select(0, t),
                                dxg.select(0, t), dh);
      }
      dh.addmm_(dhg.select(0, time_of(0)), w_hh);
    } else {
      // A launch takes at most one CPU scalar: the recurrent gradient is always a device tensor.
      dh = dhn.defined() ? dhn : at::zeros({batch, hidden}, x.options());
      for (int64_t k = steps - 1; k >= 0; --k) {
        const int64_t t = time_of(k);
        const T wt = ws.select(0, t), dx_t = dxg.select(0, t), dh_t = dhg.select(0, t);
        const T h_prev = k == 0 ? h0 : y.select(0, time_of(k - 1));
        T dh_prev = at::empty({batch, hidden}, x.options());
        rnn_launch(R_gru_cell_backward_sum,
                   {gate(dh_t, 0, hidden), gate(dh_t, 1, hidden), gate(dx_t, 2, hidden), gate(dh_t, 2, hidden),
                    dh_prev},
                   {gate(wt, 0, hidden), gate(wt, 1, hidden), gate(wt, 2, hidden), h_prev, gate(wt, 3, hidden), dh,
                    dy.defined() ? dy.select(0, t) : zero_scalar(st)},
                   st);
        dh = dh_prev.addmm_(dh_t, w_hh);
      }
      dxg.narrow(2, 0, 2 * hidden).copy_(dhg.narrow(2, 0, 2 * hidden));  // (the fused steps write them)
    }
    T dx2 = dxg.view({steps * batch, 3 * hidden}), dh2 = dhg.view({steps * batch, 3 * hidden});
    T dw_hh = at::mm(dh2.t(), previous_h(y, h0, reverse).reshape({steps * batch, hidden}));
    T dw_ih = at::mm(dx2.t(), x.view({steps * batch, x.size(2)}));
    T dx = at::mm(dx2, w_ih).view(x.sizes());
    return {dx, dh, dw_ih, dw_hh, bias ? dx2.sum(0) : T(), bias ? dh2.sum(0) : T(), T()};
  }
};

// PYTORCH_OCL_RNN=steps: torch's step-by-step recurrence (comparisons, debugging). Read per call.
bool generic_requested() {
  const char* v = std::getenv("PYTORCH_OCL_RNN");
  return v && std::strcmp(v, "steps") == 0;
}

std::tuple<T, T, T> lstm_layers(const T& input, at::TensorList hx, at::TensorList params, bool has_biases,
                                int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first) {
  const int64_t dirs = bidirectional ? 2 : 1;
  const size_t per = has_biases ? 4 : 2;
  const c10::ScalarType st = input.scalar_type();
  // proj_size > 0 adds a projection weight per layer and makes h narrower than c.
  const bool covered = input.dim() == 3 && hx.size() == 2 && params.size() == per * num_layers * dirs &&
                       (st == c10::kFloat || st == c10::kDouble) && hx[0].dim() == 3 &&
                       hx[0].sizes() == hx[1].sizes() && input.size(0) > 0 && input.size(1) > 0 && !generic_requested();
  if (!covered)
    return at::native::lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
  T x = (batch_first ? input.transpose(0, 1) : input).contiguous();
  const T none = at::empty({0}, input.options());
  std::vector<T> hn, cn;
  for (int64_t l = 0; l < num_layers; ++l) {
    std::vector<T> ys;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t idx = l * dirs + d;
      const T* p = &params[idx * per];
      variable_list out = LstmLayer::apply(x, hx[0].select(0, idx), hx[1].select(0, idx), p[0], p[1],
                                           has_biases ? p[2] : none, has_biases ? p[3] : none, d == 1);
      ys.push_back(out[0]);
      hn.push_back(out[1]);
      cn.push_back(out[2]);
    }
    x = dirs == 2 ? at::cat(ys, 2) : ys[0];
    if (dropout > 0 && train && l + 1 < num_layers) x = at::dropout(x, dropout, train);
  }
  return {batch_first ? x.transpose(0, 1) : x, at::stack(hn, 0), at::stack(cn, 0)};
}

std::tuple<T, T> gru_layers(const T& input, const T& hx, at::TensorList params, bool has_biases, int64_t num_layers,
                            double dropout, bool train, bool bidirectional, bool batch_first) {
  const int64_t dirs = bidirectional ? 2 : 1;
  const size_t per = has_biases ? 4 : 2;
  const c10::ScalarType st = input.scalar_type();
  const bool covered = input.dim() == 3 && hx.dim() == 3 && params.size() == per * num_layers * dirs &&
                       (st == c10::kFloat || st == c10::kDouble) && input.size(0) > 0 && input.size(1) > 0 &&
                       !generic_requested();
  if (!covered)
    return at::native::gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first);
  T x = (batch_first ? input.transpose(0, 1) : input).contiguous();
  const T none = at::empty({0}, input.options());
  std::vector<T> hn;
  for (int64_t l = 0; l < num_layers; ++l) {
    std::vector<T> ys;
    for (int64_t d = 0; d < dirs; ++d) {
      const int64_t idx = l * dirs + d;
      const T* p = &params[idx * per];
      variable_list out = GruLayer::apply(x, hx.select(0, idx), p[0], p[1], has_biases ? p[2] : none,
                                          has_biases ? p[3] : none, d == 1);
      ys.push_back(out[0]);
      hn.push_back(out[1]);
    }
    x = dirs == 2 ? at::cat(ys, 2) : ys[0];
    if (dropout > 0 && train && l + 1 < num_layers) x = at::dropout(x, dropout, train);
  }
  return {batch_first ? x.transpose(0, 1) : x, at::stack(hn, 0)};
}

} // namespace

// Autograd first (the layer records its own backward); PrivateUse1 serves inference mode, where
// the autograd keys are skipped and torch's composite would run step by step.
TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstm_layers));
  m.impl("gru.input", TORCH_FN(gru_layers));
}
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("lstm.input", TORCH_FN(lstm_layers));
  m.impl("gru.input", TORCH_FN(gru_layers));
}

} // namespace pytorch_ocl
