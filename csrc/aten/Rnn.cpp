// The fused LSTM/GRU cells nn.LSTM, nn.GRU, LSTMCell and GRUCell reach on ocl: torch's RNN
// code (aten/native/RNN.cpp) runs the two GEMMs itself and hands a non-CPU device the gate
// pre-activations through _thnn_fused_{lstm,gru}_cell, which have no CPU kernel to fall back to.
// Semantics, operation order and the saved `workspace` layout follow torch's CUDA kernels
// (aten/native/cuda/RNN.cu), so a workspace means the same thing on both devices:
//   LSTM: [B, 4H] = sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)
//   GRU:  [B, 5H] = sigmoid(r), sigmoid(z), n, hx, hn + b_hn
// Everything runs on the elementwise generator (one table of ops below). Its programs take at
// most 12 operands, so a cell is a gate-sum launch plus a cell launch (and a copy for GRU):
// the gate views are strided narrows of the [B, G*H] gate matrices, biases broadcast along the
// batch. 16-bit dtypes compute in float and keep the gate sums in a float temporary (CUDA keeps
// them in registers); float32/float64 write the sums into the workspace and the cell launch
// overwrites them element for element.
#include "aten/RnnCells.h"

#include "aten/Launch.h"
#include "core/TensorUtils.h"

#include <ATen/OpMathType.h>
#include <ATen/TensorIterator.h>
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

namespace pytorch_ocl {

namespace {

// clang-format off
// static: a plain C99 `inline` left un-inlined (-cl-opt-disable) has no external definition.
#define RNN_SIGMOID "static inline dl_t rnn_sigmoid(dl_t x) { return (dl_t)1 / ((dl_t)1 + exp(-x)); }\n"
#define OCL_GRU_CELL(B_IN, B_HN) \
  "dl_t rg = rnn_sigmoid(x0), ig = rnn_sigmoid(x1), hn = x3" B_HN ";" \
  "dl_t ng = tanh(x2" B_IN " + rg * hn);" \
  "y0 = ng + ig * (x4 - ng); y1 = rg; y2 = ig; y3 = ng; y4 = hn;"
#define OCL_GRU_CELL_BACKWARD(G) \
  "dl_t g = " G "; dl_t gin = g * ((dl_t)1 - x1) * ((dl_t)1 - x2 * x2);" \
  "y0 = gin * x4 * ((dl_t)1 - x0) * x0;" \
  "y1 = g * (x3 - x2) * ((dl_t)1 - x1) * x1;" \
  "y2 = gin; y3 = gin * x0; y4 = g * x1;"
// _(id, outputs, inputs, body): the CUDA kernels' expressions, in their order of operations.
// TensorIterator passes at most one CPU scalar to a device kernel, so absent biases have rows
// of their own; an absent grad_hy or grad_cy (never both) is a CPU scalar zero.
#define OCL_RNN_OPS(_) \
  /* x0 input gates, x1 hidden gates[, x2 input bias, x3 hidden bias] -> y0 pre-activation */ \
  _(rnn_gate_sum, 1, 4, "y0 = x0 + x1 + x2 + x3;") \
  _(rnn_gate_sum_nobias, 1, 2, "y0 = x0 + x1;") \
  /* x0..x3 i, f, g, o pre-activations, x4 cx -> y0 hy, y1 cy, y2..y5 workspace i, f, g, o */ \
  _(lstm_cell, 6, 5, \
    "dl_t ig = rnn_sigmoid(x0), fg = rnn_sigmoid(x1), cg = tanh(x2), og = rnn_sigmoid(x3);" \
    "dl_t cy = (fg * x4) + (ig * cg);" \
    "y0 = og * tanh(cy); y1 = cy; y2 = ig; y3 = fg; y4 = cg; y5 = og;") \
  /* x0..x3 i, f, g, o gates, x4 cy, x5 grad_hy, x6 grad_cy, x7 cx -> y0..y3 grads of i, f, g, o, \
     y4 grad_cx (one launch per step: the total gradient of cy stays in a register) */ \
  _(lstm_cell_backward, 5, 8, \
    "dl_t t = tanh(x4);" \
    "y3 = x5 * t * ((dl_t)1 - x3) * x3;" \
    "dl_t dcy = x5 * x3 * ((dl_t)1 - t * t) + x6;" \
    "y0 = dcy * x2 * ((dl_t)1 - x0) * x0;" \
    "y1 = dcy * x7 * ((dl_t)1 - x1) * x1;" \
    "y2 = dcy * x0 * ((dl_t)1 - x2 * x2);" \
    "y4 = dcy * x1;") \
  /* x0, x1 r, z pre-activations, x2 in, x3 hn, x4 hx[, x5 b_in, x6 b_hn] ->
     y0 hy, y1..y3 workspace r, z, n, y4 workspace hn + b_hn */ \
  _(gru_cell, 5, 7, OCL_GRU_CELL(" + x5", " + x6")) \
  _(gru_cell_nobias, 5, 5, OCL_GRU_CELL("", "")) \
  /* x0, x1 r input / hidden gates, x2, x3 z's, x4 in, x5 hn, x6 hx (biases inside the gates; \
     RnnLayer.cpp) -> as gru_cell */ \
  _(gru_cell_sum, 5, 7, \
    "dl_t rg = rnn_sigmoid(x0 + x1), ig = rnn_sigmoid(x2 + x3), hn = x5;" \
    "dl_t ng = tanh(x4 + rg * hn);" \
    "y0 = ng + ig * (x6 - ng); y1 = rg; y2 = ig; y3 = ng; y4 = hn;") \
  /* x0..x4 workspace r, z, n, hx, hn + b_hn, x5 grad_hy ->
     y0..y2 input-gate grads r, z, n, y3 hidden-gate grad of n, y4 grad_hx */ \
  _(gru_cell_backward, 5, 6, OCL_GRU_CELL_BACKWARD("x5")) \
  /* the same with the grad of hy given as two addends x5 + x6 (RnnLayer.cpp: the recurrence's and \
     the output's) */ \
  _(gru_cell_backward_sum, 5, 7, OCL_GRU_CELL_BACKWARD("(x5 + x6)"))
// clang-format on

// RnnCells.h's enum must list the table's rows in order.
constexpr RnnOp kRowOrder[] = {
#define OCL_RNN_ENUM(id, nout, nin, body) R_##id,
    OCL_RNN_OPS(OCL_RNN_ENUM)
#undef OCL_RNN_ENUM
};
constexpr bool rows_in_order() {
  for (int i = 0; i < static_cast<int>(sizeof(kRowOrder) / sizeof(kRowOrder[0])); ++i)
    if (kRowOrder[i] != i) return false;
  return true;
}
static_assert(rows_in_order(), "RnnCells.h's RnnOp must follow OCL_RNN_OPS");

const dlprim::ElementwiseOp& rnn_op(RnnOp id) {
  static const dlprim::ElementwiseOp table[] = {
#define OCL_RNN_ROW(id, nout, nin, body) {#id, body, RNN_SIGMOID, nout, nin, 0},
      OCL_RNN_OPS(OCL_RNN_ROW)
#undef OCL_RNN_ROW
  };
  return table[id];
}

using T = at::Tensor;
using Opt = std::optional<at::Tensor>;

const T* get(const Opt& t) { return t.has_value() && t->defined() ? &*t : nullptr; }

// Gate k of a [B, G*H] matrix (or a [G*H] bias): a strided view, no copy.
T gate(const T& t, int64_t k, int64_t h) { return t.narrow(t.dim() - 1, k * h, h); }

// A CPU scalar zero in the compute dtype, standing in for an absent grad_hy or grad_cy.
T zero(c10::ScalarType compute) {
  T z = at::scalar_tensor(0.0, at::TensorOptions().dtype(compute));
  z.unsafeGetTensorImpl()->set_wrapped_number(true);
  return z;
}

} // namespace

void rnn_launch(RnnOp id, const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& ins,
                c10::ScalarType compute) {
  at::TensorIteratorConfig cfg;
  cfg.set_check_mem_overlap(false)
      .check_all_same_dtype(false)
      .allow_cpu_scalars(true)
      .resize_outputs(false);
  for (const T& o : outs) cfg.add_output(o);
  for (const T& i : ins) cfg.add_const_input(i);
  auto iter = cfg.build();
  launch_elementwise(rnn_op(id), iter, compute);
}

namespace {

void launch(RnnOp id, const std::vector<T>& outs, const std::vector<T>& ins, c10::ScalarType compute) {
  rnn_launch(id, outs, ins, compute);
}

c10::ScalarType checked_compute(const T& t, const char* name) {
  c10::ScalarType st = t.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(st == c10::kFloat || st == c10::kDouble || st == c10::kHalf || st == c10::kBFloat16,
                              "\"", name, "\" not implemented for '", st, "'");
  return at::toOpMathType(st);
}

// CUDA's checkSizes: factor 4 for LSTM, 3 for GRU.
void check_sizes(at::CheckedFrom c, const T& ig, const T& hg, const T* ib, const T* hb, int64_t factor,
                 const T& prev) {
  at::TensorArg ig_a{ig, "input_gates", 1}, hg_a{hg, "hidden_gates", 2}, prev_a{prev, "prev_hidden", 5};
  at::checkDim(c, ig_a, 2);
  at::checkSameSize(c, ig_a, hg_a);
  int64_t gates = ig.size(1);
  TORCH_CHECK(gates % factor == 0, c, ": gates size ", gates, " is not a multiple of ", factor);
  if (ib) {
    TORCH_CHECK(hb, c, ": input_bias and hidden_bias must both be given or both be absent");
    at::TensorArg ib_a{*ib, "input_bias", 3}, hb_a{*hb, "hidden_bias", 4};
    at::checkDim(c, ib_a, 1);
    at::checkNumel(c, ib_a, gates);
    at::checkSameSize(c, ib_a, hb_a);
  }
  at::checkDim(c, prev_a, 2);
  at::checkNumel(c, prev_a, ig.size(0) * gates / factor);
  for (const T* t : {&ig, &hg, ib, hb, &prev}) {
    if (!t) continue;
    check_ocl(*t, c, "operand");
    TORCH_CHECK(t->device() == ig.device(), c, ": expected all tensors on ", ig.device(), ", got ", t->device());
    TORCH_CHECK(t->scalar_type() == ig.scalar_type(), c, ": expected all tensors of dtype ", ig.scalar_type(),
                ", got ", t->scalar_type());
  }
}

// ((input_gates + hidden_gates) + input_bias) + hidden_bias into `pre` ([B, G*H]).
void gate_sum(const T& pre, const T& ig, const T& hg, const T* ib, const T* hb, c10::ScalarType compute) {
  if (ib)
    launch(R_rnn_gate_sum, {pre}, {ig, hg, *ib, *hb}, compute);
  else
    launch(R_rnn_gate_sum_nobias, {pre}, {ig, hg}, compute);
}

// Where the gate sums go: the workspace's leading G*H columns, or a float temporary for
// 16-bit dtypes (rounding them to 16 bits would differ from CUDA).
T sum_buffer(const T& ws, int64_t cols, c10::ScalarType compute) {
  if (compute == ws.scalar_type()) return ws.narrow(1, 0, cols);
  return at::empty({ws.size(0), cols}, ws.options().dtype(compute));
}

std::tuple<T, T, T> fused_lstm_cell(const T& input_gates, const T& hidden_gates, const T& cx, const Opt& input_bias,
                                    const Opt& hidden_bias) {
  const char* name = "_thnn_fused_lstm_cell";
  const T* ib = get(input_bias);
  const T* hb = ib ? get(hidden_bias) : nullptr;  // CUDA: has_bias is input_bias's presence
  check_sizes(name, input_gates, hidden_gates, ib, hb, 4, cx);
  c10::ScalarType compute = checked_compute(input_gates, name);
  int64_t b = input_gates.size(0), h = input_gates.size(1) / 4;
  T workspace = at::empty_like(input_gates, at::MemoryFormat::Contiguous);
  T hy = at::empty_like(cx, at::MemoryFormat::Contiguous);
  T cy = at::empty_like(cx, at::MemoryFormat::Contiguous);
  if (workspace.numel() == 0) return {hy, cy, workspace};
  T pre = sum_buffer(workspace, 4 * h, compute);
  gate_sum(pre, input_gates, hidden_gates, ib, hb, compute);
  T cx2 = cx.reshape({b, h}), hy2 = hy.view({b, h}), cy2 = cy.view({b, h});
  launch(R_lstm_cell,
         {hy2, cy2, gate(workspace, 0, h), gate(workspace, 1, h), gate(workspace, 2, h), gate(workspace, 3, h)},
         {gate(pre, 0, h), gate(pre, 1, h), gate(pre, 2, h), gate(pre, 3, h), cx2}, compute);
  return {hy, cy, workspace};
}

std::tuple<T, T, T> fused_lstm_cell_backward_impl(const Opt& grad_hy_opt, const Opt& grad_cy_opt, const T& cx,
                                                  const T& cy, const T& workspace, bool has_bias) {
  const char* name = "fused_lstm_cell_backward";
  const T *ghy = get(grad_hy_opt), *gcy = get(grad_cy_opt);
  if (!ghy && !gcy) return {};
  // CUDA's checkLSTMBackwardSizes.
  const T undefined;  // TensorArg keeps a reference
  at::TensorArg ghy_a{ghy ? *ghy : undefined, "grad_hy", 1}, gcy_a{gcy ? *gcy : undefined, "grad_cy", 2};
  at::TensorArg cx_a{cx, "cx", 3}, cy_a{cy, "cy", 4}, ws_a{workspace, "workspace", 5};
  const at::TensorArg& defined = ghy ? ghy_a : gcy_a;
  at::checkDim(name, defined, 2);
  auto size = defined->sizes();
  if (ghy) at::checkSize(name, ghy_a, size);
  if (gcy) at::checkSize(name, gcy_a, size);
  at::checkSize(name, cx_a, size);
  at::checkSize(name, cy_a, size);
  at::checkDim(name, ws_a, 2);
  at::checkNumel(name, ws_a, size[0] * size[1] * 4);
  for (const T* t : {ghy, gcy, &cx, &cy}) {
    if (!t) continue;
    check_ocl(*t, name, "operand");
    TORCH_CHECK(t->scalar_type() == workspace.scalar_type(), name, ": expected all tensors of dtype ",
                workspace.scalar_type(), ", got ", t->scalar_type());
  }
  check_ocl(workspace, name, "workspace");
  c10::ScalarType compute = checked_compute(workspace, "_thnn_fused_lstm_cell_cuda_backward");
  int64_t h = size[1];
  T grad_gates = at::empty_like(workspace, at::MemoryFormat::Contiguous);
  T grad_cx = at::empty_like(cx, at::MemoryFormat::Contiguous);
  if (grad_gates.numel() > 0) {
    T ws = workspace.reshape({size[0], 4 * h});  // checkNumel allows any 2-D shape; gates are [B, 4H]
    T gg = grad_gates.view({size[0], 4 * h});
    launch(R_lstm_cell_backward, {gate(gg, 0, h), gate(gg, 1, h), gate(gg, 2, h), gate(gg, 3, h), grad_cx},
           {gate(ws, 0, h), gate(ws, 1, h), gate(ws, 2, h), gate(ws, 3, h), cy, ghy ? *ghy : zero(compute),
            gcy ? *gcy : zero(compute), cx},
           compute);
  }
  T grad_bias = has_bias ? grad_gates.sum(0, /*keepdim=*/false) : T();
  return {grad_gates, grad_cx, grad_bias};
}

constexpr int64_t kGruWorkspace = 5;  // CUDA's GRU_WORKSPACE_MULTIPLIER

std::tuple<T, T> fused_gru_cell(const T& input_gates, const T& hidden_gates, const T& hx, const Opt& input_bias,
                                const Opt& hidden_bias) {
  const char* name = "_thnn_fused_gru_cell";
  const T* ib = get(input_bias);
  const T* hb = ib ? get(hidden_bias) : nullptr;  // CUDA: has_bias is input_bias's presence
  check_sizes(name, input_gates, hidden_gates, ib, hb, 3, hx);
  c10::ScalarType compute = checked_compute(input_gates, name);
  int64_t b = input_gates.size(0), h = input_gates.size(1) / 3;
  // CUDA sizes the workspace from hx ([B, 5 * hx.size(1)]); the checks above make that [B, 5H]
  // for every hx that is [B, H], the only shape torch's RNN code passes.
  TORCH_CHECK(hx.size(0) == b && hx.size(1) == h, name, ": expected hx of size [", b, ", ", h, "], got ",
              hx.sizes());
  T workspace = at::empty({b, h * kGruWorkspace}, hx.options());
  T hy = at::empty_like(hx, at::MemoryFormat::Contiguous);
  if (workspace.numel() == 0) return {hy, workspace};
  T pre = sum_buffer(workspace, 3 * h, compute);  // its n columns are unused: n adds rg * (hn + b_hn)
  gate_sum(pre, input_gates, hidden_gates, ib, hb, compute);
  std::vector<T> outs = {hy, gate(workspace, 0, h), gate(workspace, 1, h), gate(workspace, 2, h),
                         gate(workspace, 4, h)};
  T r = gate(pre, 0, h), z = gate(pre, 1, h), in = gate(input_gates, 2, h), hn = gate(hidden_gates, 2, h);
  if (ib)
    launch(R_gru_cell, outs, {r, z, in, hn, hx, gate(*ib, 2, h), gate(*hb, 2, h)}, compute);
  else
    launch(R_gru_cell_nobias, outs, {r, z, in, hn, hx}, compute);
  gate(workspace, 3, h).copy_(hx);
  return {hy, workspace};
}

std::tuple<T, T, T, T, T> fused_gru_cell_backward(const T& grad_hy, const T& workspace, bool has_bias) {
  const char* name = "fused_gru_cell_backward";
  at::TensorArg ghy_a{grad_hy, "grad_hy", 1}, ws_a{workspace, "workspace", 2};
  at::checkDim(name, ghy_a, 2);
  at::checkSize(name, ws_a, {grad_hy.size(0), grad_hy.size(1) * kGruWorkspace});
  check_ocl(grad_hy, name, "grad_hy");
  check_ocl(workspace, name, "workspace");
  TORCH_CHECK(grad_hy.scalar_type() == workspace.scalar_type(), name, ": expected grad_hy of dtype ",
              workspace.scalar_type(), ", got ", grad_hy.scalar_type());
  c10::ScalarType compute = checked_compute(grad_hy, "_thnn_fused_gru_cell_cuda_backward");
  int64_t b = workspace.size(0), h = workspace.size(1) / kGruWorkspace;
  T grad_input_gates = at::empty({b, 3 * h}, workspace.options());
  T grad_hidden_gates = at::empty({b, 3 * h}, workspace.options());
  T grad_hx = at::empty_like(grad_hy, at::MemoryFormat::Contiguous);
  if (grad_hx.numel() > 0) {
    const T& ws = workspace;
    launch(R_gru_cell_backward,
           {gate(grad_input_gates, 0, h), gate(grad_input_gates, 1, h), gate(grad_input_gates, 2, h),
            gate(grad_hidden_gates, 2, h), grad_hx},
           {gate(ws, 0, h), gate(ws, 1, h), gate(ws, 2, h), gate(ws, 3, h), gate(ws, 4, h), grad_hy}, compute);
    // r and z gradients are the same for both gate matrices.
    grad_hidden_gates.narrow(1, 0, 2 * h).copy_(grad_input_gates.narrow(1, 0, 2 * h));
  }
  T grad_input_bias, grad_hidden_bias;
  if (has_bias) {
    grad_input_bias = grad_input_gates.sum(0, /*keepdim=*/false);
    grad_hidden_bias = grad_hidden_gates.sum(0, /*keepdim=*/false);
  }
  return {grad_input_gates, grad_hidden_gates, grad_hx, grad_input_bias, grad_hidden_bias};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward_impl));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
}

} // namespace pytorch_ocl
