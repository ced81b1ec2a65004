// embedding_bag (_embedding_bag, _embedding_bag_forward_only, _embedding_bag_backward (dense), _embedding_bag_dense_backward,
// _embedding_bag_per_sample_weights_backward) composed of native indexing ops: each index's bag
// (offset2bag) by searchsorted over the bag starts, the rows gathered with index_select and
// folded per bag with index_add (sum, mean) or index_reduce amax (max), the backward scattering
// the bag gradients back with index_add. Padding entries count for nothing (not in a mean's bag
// size, never a max), empty bags give zeros, as on the CPU. The auxiliary outputs are the CPU's:
// offset2bag, bag_size (non-padding entries for mean / max, zeros for sum) and max_indices (the
// winning weight row per bag and column, the bag's first maximum; bag_size for mean). 16-bit
// weights sum in float32.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/bincount.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

enum Mode { kSum = 0, kMean = 1, kMax = 2 };

c10::ScalarType acc_of(const at::Tensor& t) { return t.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat; }

struct Bags {
  int64_t B = 0;
  at::Tensor idx, offset2bag, valid;  // long [N], long [N], bool [N] (not padding)
};

Bags make_bags(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, int64_t mode,
               const std::optional<at::Tensor>& psw, bool include_last_offset, int64_t padding_idx) {
  const char* op = "embedding_bag";
  check_ocl(weight, op, "weight");
  check_ocl(indices, op, "indices");
  check_ocl(offsets, op, "offsets");
  TORCH_CHECK(indices.scalar_type() == at::kLong || indices.scalar_type() == at::kInt, op,
              ": expected indices to be Long or Int, but got ", indices.scalar_type());
  TORCH_CHECK(offsets.scalar_type() == at::kLong || offsets.scalar_type() == at::kInt, op,
              ": expected offsets to be Long or Int, but got ", offsets.scalar_type());
  TORCH_CHECK(c10::isFloatingType(weight.scalar_type()), op, ": expected weight to be floating point, but got ",
              weight.scalar_type());
  TORCH_CHECK(indices.dim() == 1, "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets.dim());
  TORCH_CHECK(weight.dim() == 2, "weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim());
  TORCH_CHECK(mode >= kSum && mode <= kMax, op, ": unknown mode ", mode);
  if (psw && psw->defined()) {
    check_ocl(*psw, op, "per_sample_weights");
    TORCH_CHECK(mode == kSum, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(psw->scalar_type() == weight.scalar_type(), "embedding_bag: Expected per_sample_weights to have the "
                "same dtype as weight, got ", psw->scalar_type(), " and ", weight.scalar_type());
    TORCH_CHECK(psw->dim() == 1 && psw->numel() == indices.numel(), "embedding_bag: Expected per_sample_weights to "
                "be 1D with the same number of elements as indices, got ", psw->sizes());
  }
  Bags b;
  int64_t n_off = offsets.numel(), N = indices.numel();
  b.B = include_last_offset ? std::max<int64_t>(n_off - 1, 0) : n_off;
  at::Tensor off = offsets.to(at::kLong);
  if (n_off > 0) {
    // The CPU's offset checks (one host read of the first and last offsets).
    at::Tensor ends = at::cat({off.narrow(0, 0, 1), off.narrow(0, n_off - 1, 1)}).cpu();
    int64_t first = ends[0].item<int64_t>(), last = ends[1].item<int64_t>();
    TORCH_CHECK(first == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                "position 0. However, got ", first);
    TORCH_CHECK(last <= N, "offsets[-1] can not be greater than input's length ", N, " but got offsets[-1] of ",
                last);
  }
  b.idx = indices.to(at::kLong).contiguous();
  at::Tensor starts = off.narrow(0, 0, b.B).contiguous();
  at::Tensor pos = at::arange(N, b.idx.options());
  // An index belongs to the last bag starting at or before it (empty bags are skipped over).
  b.offset2bag = b.B > 0 ? at::searchsorted(starts, pos, false, true) - 1 : at::zeros({N}, b.idx.options());
  if (include_last_offset && b.B > 0) {
    // Indices at or past offsets[-1] belong to no bag.
    at::Tensor stop = off.narrow(0, n_off - 1, 1);
    b.offset2bag = b.offset2bag.clamp_max(b.B - 1);
    b.valid = (pos < stop);
  } else {
    b.valid = at::ones_like(b.idx, b.idx.options().dtype(at::kBool));
  }
  if (padding_idx >= 0) b.valid = b.valid.logical_and(b.idx != padding_idx);
  return b;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<at::Tensor>& psw, bool include_last_offset, int64_t padding_idx) {
  c10::DeviceGuard guard(weight.device());
  Bags b = make_bags(weight, indices, offsets, mode, psw, include_last_offset, padding_idx);
  int64_t D = weight.size(1);
  c10::ScalarType acc = acc_of(weight);
  at::Tensor rows = weight.index_select(0, b.idx).to(acc);  // [N, D]
  at::Tensor validf = b.valid.to(acc).unsqueeze(1);
  at::Tensor count = at::zeros({b.B}, b.idx.options()).index_add(0, b.offset2bag, b.valid.to(at::kLong));
  at::Tensor out, bag_size, max_indices;
  if (mode == kMax) {
    at::Tensor neg = at::full({}, -std::numeric_limits<double>::infinity(), rows.options());
    at::Tensor cand = at::where(b.valid.unsqueeze(1), rows, neg);
    at::Tensor best = at::full({b.B, D}, -std::numeric_limits<double>::infinity(), rows.options())
                          .index_reduce(0, b.offset2bag, cand, "amax");
    // The first position of each bag's maximum, then its weight row.
    at::Tensor hit = b.valid.unsqueeze(1).logical_and(cand == best.index_select(0, b.offset2bag));
    at::Tensor posf = at::arange(b.idx.numel(), rows.options()).unsqueeze(1).expand_as(rows);
    at::Tensor big = at::full({}, static_cast<double>(b.idx.numel()), rows.options());
    at::Tensor first = at::full({b.B, D}, static_cast<double>(b.idx.numel()), rows.options())
                           .index_reduce(0, b.offset2bag, at::where(hit, posf, big), "amin");
    at::Tensor empty = (count == 0).unsqueeze(1);
    at::Tensor firstl = first.to(at::kLong).clamp_max(std::max<int64_t>(b.idx.numel() - 1, 0));
    max_indices = b.idx.numel() ? at::where(empty, at::zeros({}, b.idx.options()), b.idx.index_select(0,
                                            firstl.reshape({-1})).reshape({b.B, D}))
                                : at::zeros({b.B, D}, b.idx.options());
    out = at::where(empty, at::zeros({}, rows.options()), best);
    bag_size = count;
  } else {
    at::Tensor contrib = rows * validf;
    if (psw && psw->defined()) contrib = contrib * psw->to(acc).unsqueeze(1);
    out = at::zeros({b.B, D}, rows.options()).index_add(0, b.offset2bag, contrib);
    if (mode == kMean) {
      out = out / count.clamp_min(1).to(acc).unsqueeze(1);
      bag_size = count;
      max_indices = count.clone();
    } else {
      bag_size = at::zeros({b.B}, b.idx.options());
      max_indices = at::zeros({b.B}, b.idx.options());
    }
  }
  return {out.to(weight.scalar_type()), b.offset2bag, bag_size, max_indices};
}

at::Tensor embedding_bag_dense_backward(const at::Tensor& grad, const at::Tensor& indices,
                                        const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                        const at::Tensor& max_indices, int64_t num_weights, bool scale_grad_by_freq,
                                        int64_t mode, const std::optional<at::Tensor>& psw, int64_t padding_idx) {
  const char* op = "_embedding_bag_dense_backward";
  check_ocl(grad, op, "grad");
  check_ocl(indices, op, "indices");
  c10::DeviceGuard guard(grad.device());
  int64_t D = grad.size(1);
  c10::ScalarType acc = acc_of(grad);
  at::Tensor g = grad.to(acc);
  at::Tensor idx = indices.to(at::kLong).reshape({-1});
  at::Tensor gw = at::zeros({num_weights, D}, g.options());
  if (idx.numel() == 0) return gw.to(grad.scalar_type());
  at::Tensor o2b = offset2bag.to(at::kLong);
  at::Tensor valid = padding_idx >= 0 ? (idx != padding_idx) : at::ones_like(idx, idx.options().dtype(at::kBool));
  at::Tensor freq;
  if (scale_grad_by_freq) freq = at::bincount(idx, std::nullopt, num_weights).to(acc);
  if (mode == kMax) {
    at::Tensor mi = max_indices.to(at::kLong);
    at::Tensor hit = bag_size.to(at::kLong).unsqueeze(1).gt(0).expand_as(mi);  // empty bags have no winner
    at::Tensor gg = at::where(hit, g, at::zeros({}, g.options()));
    if (scale_grad_by_freq) gg = gg / freq.index_select(0, mi.reshape({-1})).reshape(mi.sizes()).clamp_min(1);
    at::Tensor flat = mi * D + at::arange(D, mi.options()).unsqueeze(0);
    return gw.reshape({-1}).index_add(0, flat.reshape({-1}), gg.reshape({-1})).reshape({num_weights, D})
        .to(grad.scalar_type());
  }
  at::Tensor rows = g.index_select(0, o2b) * valid.to(acc).unsqueeze(1);  // [N, D]
  if (mode == kMean) rows = rows / bag_size.to(at::kLong).clamp_min(1).to(acc).index_select(0, o2b).unsqueeze(1);
  if (psw && psw->defined()) rows = rows * psw->to(acc).unsqueeze(1);
  if (scale_grad_by_freq) rows = rows / freq.index_select(0, idx).unsqueeze(1);
  return gw.index_add(0, idx, rows).to(grad.scalar_type());
}

at::Tensor embedding_bag_per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight,
                                                     const at::Tensor& indices, const at::Tensor& offsets,
                                                     const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == kSum, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  check_ocl(grad, "_embedding_bag_per_sample_weights_backward", "grad");
  c10::DeviceGuard guard(grad.device());
  c10::ScalarType acc = acc_of(grad);
  at::Tensor idx = indices.to(at::kLong).reshape({-1});
  at::Tensor w = weight.index_select(0, idx).to(acc);
  at::Tensor g = grad.to(acc).index_select(0, offset2bag.to(at::kLong));
  at::Tensor r = (w * g).sum(1);
  if (padding_idx >= 0) r = r * (idx != padding_idx).to(acc);
  return r.to(grad.scalar_type());
}

// The backward's entry point: dense only (sparse gradients need sparse tensors on the device).
at::Tensor embedding_bag_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                  const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                  const at::Tensor& max_indices, int64_t num_weights, bool scale_grad_by_freq,
                                  int64_t mode, bool sparse, const std::optional<at::Tensor>& psw,
                                  int64_t padding_idx) {
  TORCH_CHECK_NOT_IMPLEMENTED(!sparse, "embedding_bag: sparse=True gradients are not supported on the ocl device");
  return embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, max_indices, num_weights,
                                      scale_grad_by_freq, mode, psw, padding_idx);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", TORCH_FN(embedding_bag));
  m.impl("_embedding_bag_forward_only", TORCH_FN(embedding_bag));
  m.impl("_embedding_bag_backward", TORCH_FN(embedding_bag_backward));
  m.impl("_embedding_bag_dense_backward", TORCH_FN(embedding_bag_dense_backward));
  m.impl("_embedding_bag_per_sample_weights_backward", TORCH_FN(embedding_bag_per_sample_weights_backward));
}

} // namespace pytorch_ocl
