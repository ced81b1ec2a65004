// The inference fast path of nn.MultiheadAttention / nn.TransformerEncoderLayer (eval mode, no grad; torch takes it
// for PrivateUse1 devices as for CUDA): _native_multi_head_attention, _transformer_encoder_layer_fwd and the
// _masked_softmax they use, composed of our native ops (linear on the GEMM, softmax, layer_norm) in the order of
// ATen's CPU kernels (transformers/attention.cpp, transformer.cpp), so the results match theirs.
//
// Masks are boolean (true: masked out) or additive; mask_type 0 is a (L, S) source mask, 1 a (B, S) key padding
// mask, 2 (or none) a mask that broadcasts to the (B, H, L, S) scores. A row whose keys are all masked gets NaN
// weights, as from ATen's CPU kernel.
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/layer_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/softmax.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>
#include <tuple>

namespace pytorch_ocl {

namespace {

// `mask` expanded to the scores' shape (types 0 and 1 spelled out for 4-D scores).
at::Tensor expand_mask(const at::Tensor& mask, const at::Tensor& scores, std::optional<int64_t> mask_type) {
  at::Tensor m = mask;
  if (mask_type && scores.dim() == 4 && (*mask_type == 0 || *mask_type == 1)) {
    TORCH_CHECK(m.dim() == 2, "_masked_softmax: a mask of type ", *mask_type, " must have 2 dims, got ", m.sizes());
    m = *mask_type == 0 ? m.view({1, 1, m.size(0), m.size(1)})   // (L, S): every batch and head
                        : m.view({m.size(0), 1, 1, m.size(1)});  // (B, S): every head and query
  }
  return m.expand_as(scores);
}

at::Tensor masked_softmax(const at::Tensor& self, const at::Tensor& mask, std::optional<int64_t> dim,
                          std::optional<int64_t> mask_type) {
  const int64_t d = dim ? *dim : self.dim() - 1;
  at::Tensor m = expand_mask(mask, self, mask_type);
  const double inf = std::numeric_limits<double>::infinity();
  return at::softmax(m.is_floating_point() ? self + m : self.masked_fill(m.to(at::kBool), -inf), d);
}

std::tuple<at::Tensor, at::Tensor> native_multi_head_attention(
    const at::Tensor& query, const at::Tensor& key, const at::Tensor& value, int64_t embed_dim, int64_t num_head,
    const at::Tensor& qkv_weight, const at::Tensor& qkv_bias, const at::Tensor& proj_weight,
    const at::Tensor& proj_bias, const std::optional<at::Tensor>& mask, bool need_weights, bool average_attn_weights,
    std::optional<int64_t> mask_type) {
  TORCH_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3,
              "_native_multi_head_attention: expected (batch, length, embed) query, key and value, got ",
              query.sizes(), ", ", key.sizes(), ", ", value.sizes());
  TORCH_CHECK(num_head > 0 && embed_dim % num_head == 0, "_native_multi_head_attention: embed_dim ", embed_dim,
              " is not divisible by num_head ", num_head);
  TORCH_CHECK(query.size(2) == embed_dim, "_native_multi_head_attention: query's embed size ", query.size(2),
              " != embed_dim ", embed_dim);
  const int64_t B = query.size(0), L = query.size(1), S = key.size(1), dh = embed_dim / num_head;
  auto heads = [&](const at::Tensor& x, int64_t n) { return x.view({B, n, num_head, dh}).transpose(1, 2); };
  auto w = qkv_weight.chunk(3, 0);
  auto b = qkv_bias.chunk(3, 0);
  // q scaled before the product, as ATen's transform_bias_rescale_qkv does
  at::Tensor q = heads(at::linear(query, w[0], b[0]), L) / std::sqrt(static_cast<double>(dh));
  at::Tensor k = heads(at::linear(key, w[1], b[1]), S);
  at::Tensor v = heads(at::linear(value, w[2], b[2]), S);
  at::Tensor scores = at::matmul(q, k.transpose(-2, -1));  // (B, H, L, S)
  at::Tensor p = mask && mask->defined() ? masked_softmax(scores, *mask, -1, mask_type) : at::softmax(scores, -1);
  at::Tensor ctx = at::matmul(p, v).transpose(1, 2).reshape({B, L, embed_dim});
  at::Tensor out = at::linear(ctx, proj_weight, proj_bias);
  if (!need_weights) return {out, at::empty({0}, query.options())};
  return {out, average_attn_weights ? p.sum(1) / static_cast<double>(num_head) : p};
}

at::Tensor transformer_encoder_layer_fwd(
    const at::Tensor& src, int64_t embed_dim, int64_t num_heads, const at::Tensor& qkv_weight,
    const at::Tensor& qkv_bias, const at::Tensor& proj_weight, const at::Tensor& proj_bias, bool use_gelu,
    bool norm_first, double eps, const at::Tensor& norm_weight_1, const at::Tensor& norm_bias_1,
    const at::Tensor& norm_weight_2, const at::Tensor& norm_bias_2, const at::Tensor& ffn_weight_1,
    const at::Tensor& ffn_bias_1, const at::Tensor& ffn_weight_2, const at::Tensor& ffn_bias_2,
    const std::optional<at::Tensor>& mask, std::optional<int64_t> mask_type) {
  auto norm = [&](const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    return at::layer_norm(x, {embed_dim}, w, b, eps);
  };
  at::Tensor x = norm_first ? norm(src, norm_weight_1, norm_bias_1) : src;
  x = std::get<0>(native_multi_head_attention(x, x, x, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight,
                                              proj_bias, mask, false, true, mask_type)) +
      src;
  if (!norm_first) x = norm(x, norm_weight_1, norm_bias_1);
  at::Tensor h = norm_first ? norm(x, norm_weight_2, norm_bias_2) : x;
  h = at::linear(h, ffn_weight_1, ffn_bias_1);
  h = use_gelu ? at::gelu(h) : at::relu(h);
  x = at::linear(h, ffn_weight_2, ffn_bias_2) + x;
  return norm_first ? x : norm(x, norm_weight_2, norm_bias_2);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_masked_softmax", TORCH_FN(masked_softmax));
  m.impl("_native_multi_head_attention", TORCH_FN(native_multi_head_attention));
  m.impl("_transformer_encoder_layer_fwd", TORCH_FN(transformer_encoder_layer_fwd));
}

} // namespace pytorch_ocl
