// scaled_dot_product_attention on ocl: torch's SDPA asks _fused_sdp_choice_stub which backend to
// use; we answer "overrideable" where the fused kernel (dlprim/attention) can run the call and
// "math" otherwise (torch's decomposition into native ops, never the CPU). The overrideable op and
// its backward are the fused forward and the recomputing backward (dropout drawn in the kernels).
#include "aten/GemmRunner.h"
#include "aten/RandomLaunch.h"
#include "core/Errors.h"
#include "core/Graph.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/attention.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace pytorch_ocl {

namespace {

bool fused_dtype(c10::ScalarType t) {
  return t == c10::kFloat || t == c10::kHalf || t == c10::kBFloat16 || t == c10::kDouble;
}

// PYTORCH_OCL_SDPA=math sends every call to torch's math path (for comparisons and debugging).
bool fused_disabled() {
  const char* v = std::getenv("PYTORCH_OCL_SDPA");
  return v && std::strcmp(v, "math") == 0;
}

bool broadcasts_to(const at::Tensor& m, at::IntArrayRef target) {
  if (m.dim() > static_cast<int64_t>(target.size())) return false;
  int64_t off = static_cast<int64_t>(target.size()) - m.dim();
  for (int64_t d = 0; d < m.dim(); ++d)
    if (m.size(d) != 1 && m.size(d) != target[off + d]) return false;
  return true;
}

// What the fused kernel covers; everything else runs torch's math path on the device.
bool fused_can_run(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal, bool enable_gqa) {
  if (fused_disabled() || !at::globalContext().userEnabledOverrideableSDP()) return false;
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  if (!fused_dtype(q.scalar_type()) || k.scalar_type() != q.scalar_type() || v.scalar_type() != q.scalar_type())
    return false;
  if (!(dropout_p >= 0 && dropout_p < 1)) return false;  // p = 1 (all dropped): torch's math path
  if (k.size(0) != q.size(0) || v.size(0) != q.size(0) || k.size(1) != v.size(1) || k.size(2) != v.size(2) ||
      k.size(3) != q.size(3))
    return false;
  if (k.size(1) == 0 || q.size(1) % k.size(1) != 0 || (q.size(1) != k.size(1) && !enable_gqa)) return false;
  if (q.size(3) > dlprim::kAttnMaxHeadDim || v.size(3) > dlprim::kAttnMaxHeadDim) return false;
  if (mask.has_value() && mask->defined()) {
    const at::Tensor& m = *mask;
    if (is_causal || m.requires_grad() || m.is_nested()) return false;  // torch's own checks / bias gradient
    if (m.scalar_type() != c10::kBool && m.scalar_type() != q.scalar_type()) return false;
    if (!broadcasts_to(m, {q.size(0), q.size(1), q.size(2), k.size(2)})) return false;
  }
  return true;
}

int64_t sdp_choice(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   const std::optional<at::Tensor>& mask, double dropout_p, bool is_causal,
                   std::optional<double> scale, bool enable_gqa) {
  (void)scale;
  bool fused = fused_can_run(q, k, v, mask, dropout_p, is_causal, enable_gqa);
  return static_cast<int64_t>(fused ? at::SDPBackend::overrideable : at::SDPBackend::math);
}

dlprim::AttnTensor attn_tensor(const at::Tensor& t) {
  dlprim::AttnTensor a;
  if (!t.defined()) return a;
  BufferRef b = buffer_of(t);
  a.mem = b.mem;
  a.offset = b.offset / t.element_size();
  a.sb = t.stride(0);
  a.sh = t.stride(1);
  a.sl = t.stride(2);
  a.sd = t.stride(3);
  return a;
}

dlprim::AttnShape attn_shape(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool is_causal,
                             std::optional<double> scale, bool has_mask) {
  dlprim::AttnShape s;
  s.B = q.size(0);
  s.Hq = q.size(1);
  s.Hk = k.size(1);
  s.L = q.size(2);
  s.S = k.size(2);
  s.D = q.size(3);
  s.DV = v.size(3);
  s.scale = scale.has_value() ? *scale : 1.0 / std::sqrt(static_cast<double>(s.D));
  s.causal = is_causal;
  s.has_mask = has_mask;
  s.deterministic = at::globalContext().deterministicAlgorithms();
  return s;
}

void check_inputs(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const char* op) {
  check_ocl(q, op, "query");
  check_ocl(k, op, "key");
  check_ocl(v, op, "value");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op, ": expected 4-D query, key and value, got ",
              q.dim(), ", ", k.dim(), " and ", v.dim(), " dims");
  TORCH_CHECK(k.scalar_type() == q.scalar_type() && v.scalar_type() == q.scalar_type(), op,
              ": query, key and value must have one dtype, got ", q.scalar_type(), ", ", k.scalar_type(), " and ",
              v.scalar_type());
  TORCH_CHECK(fused_dtype(q.scalar_type()), op, ": no fused kernel for dtype ", q.scalar_type());
  TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == v.size(1) &&
                  k.size(2) == v.size(2) && k.size(3) == q.size(3),
              op, ": incompatible shapes query ", q.sizes(), ", key ", k.sizes(), ", value ", v.sizes());
  TORCH_CHECK(k.size(1) > 0 && q.size(1) % k.size(1) == 0, op, ": query heads (", q.size(1),
              ") must be a multiple of key/value heads (", k.size(1), ")");
}

// The additive mask as a [B, Hq, L, S] view (broadcast dims get stride 0) of the query's dtype.
at::Tensor expanded_mask(const std::optional<at::Tensor>& mask, const at::Tensor& q, const at::Tensor& k,
                         const char* op) {
  if (!mask.has_value() || !mask->defined()) return at::Tensor();
  at::Tensor m = *mask;
  check_ocl(m, op, "attn_bias");
  if (m.scalar_type() == c10::kBool)  // torch converts boolean masks before; a direct call may not
    m = at::where(m, at::zeros({}, q.options()), at::full({}, -INFINITY, q.options()));
  else if (m.scalar_type() != q.scalar_type())
    m = m.to(q.scalar_type());
  TORCH_CHECK(broadcasts_to(m, {q.size(0), q.size(1), q.size(2), k.size(2)}), op, ": attn_bias of shape ",
              m.sizes(), " does not broadcast to ", at::IntArrayRef({q.size(0), q.size(1), q.size(2), k.size(2)}));
  return m.expand({q.size(0), q.size(1), q.size(2), k.size(2)});
}

// The mask's block flags (dlprim::attention_mask_blocks, filled on the device from the mask: no host sync) and
// their view for the kernels; none without a mask. The forward and the backward each compute their own (one
// read of the mask: the backward's op receives the mask, not the forward's flags).
std::pair<at::Tensor, dlprim::AttnTensor> mask_block_flags(const at::Tensor& m, const dlprim::AttnShape& s,
                                                           const at::Tensor& q, cl_command_queue queue, int device,
                                                           const char* op) {
  if (!m.defined()) return {at::Tensor(), dlprim::AttnTensor()};
  uint64_t bytes = 0;
  const dlprim::AttnTensor mt = attn_tensor(m);
  dlprim::AttnTensor f = dlprim::attention_mask_block_grid(s, mt, bytes);
  at::Tensor flags = at::empty({static_cast<int64_t>(std::max<uint64_t>(bytes, 1))}, q.options().dtype(c10::kByte));
  BufferRef fb = buffer_of(flags);
  f.mem = fb.mem;
  f.offset = fb.offset;
  OCL_DLPRIM_CALL(op, dlprim::attention_mask_blocks(context(device), queue, s, to_dlprim(q.scalar_type(), op), mt, f));
  return {flags, f};
}

// The output in the query's dimension order, as torch's meta function (alloc_with_matching_layout)
// allocates it: torch.compile asserts the strides of every extern kernel's result against the meta.
at::Tensor alloc_like_query(const at::Tensor& q, int64_t dv) {
  if (dv == q.size(3)) return at::empty_like(q);
  std::vector<int64_t> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return q.stride(a) > q.stride(b); });
  std::vector<int64_t> sizes = {q.size(0), q.size(1), q.size(2), dv}, strides(4);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= sizes[*it];
  }
  return at::empty_strided(sizes, strides, q.options());
}

c10::ScalarType compute_type(const at::Tensor& q) {
  return q.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor, c10::SymInt, c10::SymInt, at::Tensor, at::Tensor,
           at::Tensor>
fused_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const std::optional<at::Tensor>& bias,
              double dropout_p, bool is_causal, bool return_debug_mask, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable";
  check_inputs(q, k, v, op);
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, op, ": dropout_p must be in [0, 1), got ", dropout_p);
  c10::DeviceGuard guard(q.device());
  at::Tensor m = expanded_mask(bias, q, k, op);
  at::Tensor out = alloc_like_query(q, v.size(3));
  at::Tensor lse = at::empty({q.size(0), q.size(1), q.size(2)}, q.options().dtype(compute_type(q)));
  dlprim::AttnShape s = attn_shape(q, k, v, is_causal, scale, m.defined());
  s.fp32_math = matmul_fp32_math();  // float32 on a matrix engine: TF32 where matmul may use it
  int device = q.device().index();
  // Dropout: one Philox offset of the device's generator (torch.manual_seed reproduces it); the
  // backward redraws the same mask from (seed, offset), saved as the op's philox outputs.
  int64_t seed = 0, offset = 0;
  if (dropout_p > 0) {
    // The backward reads (seed, offset) from the saved host values, which a replay could not update.
    check_not_capturing(current_queue(device), "scaled_dot_product_attention with dropout");
    auto so = next_philox(std::nullopt, device);
    seed = static_cast<int64_t>(so.first);
    offset = static_cast<int64_t>(so.second);
    s.dropout = dropout_p;
    s.seed = so.first;
    s.offset = so.second;
  }
  OCL_TRACE(op, " q ", q.sizes(), " k ", k.sizes(), " v ", v.sizes(), " causal=", is_causal, " mask=", m.defined(),
            " dropout=", dropout_p);
  cl_command_queue queue = current_queue(device);
  BufferRef lb = buffer_of(lse);
  const auto flags = mask_block_flags(m, s, q, queue, device, op);
  OCL_DLPRIM_CALL(op, dlprim::attention_forward(context(device), queue, s, to_dlprim(q.scalar_type(), op),
                                                attn_tensor(q), attn_tensor(k), attn_tensor(v), attn_tensor(m),
                                                flags.second, attn_tensor(out), lb.mem,
                                                lb.offset / lse.element_size()));
  // Training: the backward's programs build in the background while the rest of the forward runs.
  if (at::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad()))
    OCL_DLPRIM_CALL(op, dlprim::attention_prepare_backward(context(device), s, to_dlprim(q.scalar_type(), op),
                                                           attn_tensor(q), attn_tensor(k), attn_tensor(v)));
  // return_debug_mask: the keep mask (1 kept, 0 dropped) [B, Hq, L, S] in q's dtype, for tests.
  at::Tensor debug_mask;
  if (return_debug_mask && dropout_p > 0) {
    debug_mask = at::empty({q.size(0), q.size(1), q.size(2), k.size(2)}, q.options());
    BufferRef db = buffer_of(debug_mask);
    OCL_DLPRIM_CALL(op, dlprim::attention_dropout_mask(context(device), queue, s, to_dlprim(q.scalar_type(), op),
                                                       db.mem, db.offset / debug_mask.element_size()));
  }
  note_enqueued(queue);
  at::Tensor philox_seed = at::scalar_tensor(seed, at::TensorOptions().dtype(c10::kLong));
  at::Tensor philox_offset = at::scalar_tensor(offset, at::TensorOptions().dtype(c10::kLong));
  return {out, lse, at::Tensor(), at::Tensor(), c10::SymInt(q.size(2)), c10::SymInt(k.size(2)), philox_seed,
          philox_offset, debug_mask.defined() ? debug_mask : at::empty({0}, q.options())};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> fused_backward(
    const at::Tensor& grad_out, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
    const at::Tensor& bias, std::array<bool, 4> grad_input_mask, const at::Tensor& out, const at::Tensor& lse,
    const at::Tensor& cum_seq_q, const at::Tensor& cum_seq_k, c10::SymInt max_q, c10::SymInt max_k, double dropout_p,
    bool is_causal, const at::Tensor& philox_seed, const at::Tensor& philox_offset, std::optional<double> scale) {
  (void)cum_seq_q, (void)cum_seq_k, (void)max_q, (void)max_k;
  const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  check_inputs(q, k, v, op);
  check_ocl(grad_out, op, "grad_out");
  TORCH_CHECK(dropout_p >= 0 && dropout_p < 1, op, ": dropout_p must be in [0, 1), got ", dropout_p);
  TORCH_CHECK(dropout_p == 0 || (philox_seed.defined() && philox_offset.defined() && philox_seed.numel() == 1 &&
                                 philox_offset.numel() == 1),
              op, ": dropout needs the forward's philox_seed and philox_offset");
  TORCH_CHECK(!(grad_input_mask[3] && bias.defined()), op,
              ": the gradient of attn_bias is not computed by the fused kernel on ocl");
  TORCH_CHECK(grad_out.sizes() == out.sizes(), op, ": grad_out has shape ", grad_out.sizes(), ", expected ",
              out.sizes());
  c10::DeviceGuard guard(q.device());
  at::Tensor m = expanded_mask(bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt, q, k, op);
  c10::ScalarType ct = compute_type(q);
  // delta_i = dO_i . O_i: the row term of the softmax backward, one small reduction.
  at::Tensor delta = at::sum(at::mul(grad_out.to(ct), out.to(ct)), {-1}).contiguous();
  at::Tensor lse_c = lse.to(ct).contiguous();
  // empty_like: the layouts torch's meta functions promise (torch.compile checks them).
  at::Tensor gq = at::empty_like(q);
  at::Tensor gk = at::empty_like(k);
  at::Tensor gv = at::empty_like(v);
  dlprim::AttnShape s = attn_shape(q, k, v, is_causal, scale, m.defined());
  s.fp32_math = matmul_fp32_math();
  if (dropout_p > 0) {
    s.dropout = dropout_p;
    s.seed = static_cast<uint64_t>(philox_seed.item<int64_t>());  // CPU scalars: no device sync
    s.offset = static_cast<uint64_t>(philox_offset.item<int64_t>());
  }
  int device = q.device().index();
  OCL_TRACE(op, " q ", q.sizes(), " k ", k.sizes(), " v ", v.sizes(), " causal=", is_causal, " dropout=", dropout_p);
  cl_command_queue queue = current_queue(device);
  BufferRef lb = buffer_of(lse_c), db = buffer_of(delta);
  const auto flags = mask_block_flags(m, s, q, queue, device, op);
  // The one-pass kernel's scratch (dlprim::attention_backward_work): its counters zeroed by a fill on the queue,
  // the float32 dq accumulator as the kernel asks (ordered: uninitialized, the first contribution of a tile stores;
  // atomic: zero); none for two passes.
  uint64_t n_counters = 0, n_acc = 0;
  int acc_fill = 0;
  OCL_DLPRIM_CALL(op, dlprim::attention_backward_work(context(device), s, to_dlprim(q.scalar_type(), op),
                                                      attn_tensor(q), attn_tensor(k), attn_tensor(v),
                                                      attn_tensor(grad_out), n_counters, n_acc, acc_fill));
  at::Tensor counters, acc;
  dlprim::AttnBwdWork work;
  if (n_counters) {
    counters = at::zeros({static_cast<int64_t>(n_counters)}, q.options().dtype(c10::kInt));
    acc = acc_fill ? at::full({static_cast<int64_t>(n_acc)}, acc_fill == 1 ? NAN : 0.0, q.options().dtype(c10::kFloat))
                   : at::empty({static_cast<int64_t>(n_acc)}, q.options().dtype(c10::kFloat));
    BufferRef cb = buffer_of(counters), ab = buffer_of(acc);
    work.counters = cb.mem;
    work.counters_offset = cb.offset / counters.element_size();
    work.acc = ab.mem;
    work.acc_offset = ab.offset / acc.element_size();
  }
  OCL_DLPRIM_CALL(op, dlprim::attention_backward(
                          context(device), queue, s, to_dlprim(q.scalar_type(), op), attn_tensor(q), attn_tensor(k),
                          attn_tensor(v), attn_tensor(m), flags.second, attn_tensor(grad_out), lb.mem,
                          lb.offset / lse_c.element_size(), db.mem, db.offset / delta.element_size(),
                          attn_tensor(gq), attn_tensor(gk), attn_tensor(gv), work));
  note_enqueued(queue);
  return {grad_input_mask[0] ? gq : at::Tensor(), grad_input_mask[1] ? gk : at::Tensor(),
          grad_input_mask[2] ? gv : at::Tensor(), at::Tensor()};
}

} // namespace

// pytorch_ocl._C._attention_mask_blocks (tests): the block flags the kernels would read for an SDPA call with
// query q, key k and attn_mask mask, as [FB, FH, FQ, FK] uint8 (a dimension the mask broadcasts has one block).
at::Tensor attention_mask_blocks_for_test(const at::Tensor& q, const at::Tensor& k, const at::Tensor& mask) {
  const char* op = "_attention_mask_blocks";
  check_inputs(q, k, k, op);
  c10::DeviceGuard guard(q.device());
  at::Tensor m = expanded_mask(mask, q, k, op);
  dlprim::AttnShape s = attn_shape(q, k, k, false, std::nullopt, true);
  int device = q.device().index();
  cl_command_queue queue = current_queue(device);
  auto flags = mask_block_flags(m, s, q, queue, device, op);
  note_enqueued(queue);
  const int64_t B = dlprim::kAttnMaskBlock;
  const int64_t fb = m.stride(0) == 0 ? 1 : s.B, fh = m.stride(1) == 0 ? 1 : s.Hq;
  const int64_t fq = m.stride(2) == 0 ? std::min<int64_t>(s.L, 1) : (s.L + B - 1) / B;
  const int64_t fk = m.stride(3) == 0 ? std::min<int64_t>(s.S, 1) : (s.S + B - 1) / B;
  return flags.first.narrow(0, 0, fb * fh * fq * fk).view({fb, fh, fq, fk});
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_sdp_choice", TORCH_FN(sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_forward));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_backward));
}

} // namespace pytorch_ocl

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &pytorch_ocl::sdp_choice)
} // namespace at::native
