// Indexing ops whose output size depends on the data: nonzero, masked_select, masked_scatter_,
// repeat_interleave, bincount, unique (sorted, consecutive); plus searchsorted/bucketize.
// Each counts with a running sum (the scan kernel) and reads the count back once (a host sync,
// as on CUDA), then writes positions/keys with the index kernels (see IndexLaunch.h).
#include "aten/IndexLaunch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/zeros.h>
#include <ATen/native/Resize.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

dlprim::DevPtr ptr_of(const at::Tensor& t) {
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  check_ocl(self, "nonzero", "self");
  TORCH_CHECK(out.scalar_type() == c10::kLong, "nonzero: Expected out tensor to have scalar type Long but got ",
              out.scalar_type());
  at::Tensor coords = mask_positions(self, {}, true, "nonzero");
  at::native::resize_output(out, coords.sizes());
  out.copy_(coords);
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  check_ocl(self, "nonzero", "self");
  return mask_positions(self, {}, true, "nonzero");
}

at::Tensor nonzero_static(const at::Tensor& self, int64_t size, int64_t fill_value) {
  check_ocl(self, "nonzero_static", "self");
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer, but got size: ", size);
  at::Tensor coords = mask_positions(self, {}, true, "nonzero_static");
  at::Tensor out = at::full({size, self.dim()}, fill_value, self.options().dtype(c10::kLong));
  int64_t n = std::min(size, coords.size(0));
  if (n > 0) out.narrow(0, 0, n).copy_(coords.narrow(0, 0, n));
  return out;
}

at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  check_ocl(self, "masked_select", "self");
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "masked_select(): self and result must have the same dtype");
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> shape = at::infer_size(self.sizes(), mask.sizes());
  at::Tensor src = self.expand(shape);
  at::Tensor keys = mask_positions(mask.to(self.device()).expand(shape), src.strides(), false, "masked_select");
  at::native::resize_output(out, {keys.numel()});
  keyed_gather(src, {}, keys, keys.numel(), out, "masked_select");
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  at::Tensor out = at::empty({0}, self.options());
  return masked_select_out(self, mask, out);
}

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  check_ocl(self, "masked_scatter_", "self");
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  c10::DeviceGuard guard(self.device());
  at::Tensor keys =
      mask_positions(mask.to(self.device()).expand(self.sizes()), self.strides(), false, "masked_scatter_");
  int64_t count = keys.numel();
  TORCH_CHECK(count <= source.numel(), "masked_scatter: Number of elements of source < number of ones in mask");
  if (count == 0) return self;
  at::Tensor src = source.to(self.device()).reshape({-1}).narrow(0, 0, count);
  keyed_scatter(self, {}, keys, count, src, "masked_scatter_");
  return self;
}

at::Tensor repeat_interleave(const at::Tensor& repeats, std::optional<int64_t> output_size) {
  check_ocl(repeats, "repeat_interleave", "repeats");
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK(repeats.scalar_type() == c10::kLong || repeats.scalar_type() == c10::kInt,
              "repeats has to be Long or Int tensor");
  c10::DeviceGuard guard(repeats.device());
  int64_t n = repeats.numel();
  auto long_opts = repeats.options().dtype(c10::kLong);
  if (n == 0) return at::empty({output_size.value_or(0)}, long_opts);
  at::Tensor rep = repeats.contiguous();
  at::Tensor cs = at::cumsum(rep, 0, c10::kLong);
  // One read for the total and the smallest repeat.
  at::Tensor host = at::stack({cs[-1], rep.min().to(c10::kLong)}).cpu();
  TORCH_CHECK(host[1].item<int64_t>() >= 0, "repeats can not be negative");
  int64_t total = output_size.value_or(host[0].item<int64_t>());
  at::Tensor out = at::empty({total}, long_opts);
  int device = repeats.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("repeat_interleave",
                  dlprim::index_repeat(context(device), q, to_dlprim(rep.scalar_type(), "repeat_interleave"),
                                       static_cast<uint64_t>(n), ptr_of(rep), ptr_of(cs), ptr_of(out), total));
  note_enqueued(q);
  return out;
}

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt, int64_t minlength) {
  check_ocl(self, "bincount", "self");
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK(self.dim() == 1 && c10::isIntegralType(self.scalar_type(), false),
              "bincount only supports 1-d non-negative integral inputs.");
  const at::Tensor& w = weights_opt ? *weights_opt : at::Tensor();
  bool has_w = w.defined();
  TORCH_CHECK(!has_w || (w.dim() == 1 && w.numel() == self.numel()),
              "weights should be 1-d and have the same length as input");
  c10::ScalarType out_t = !has_w ? c10::kLong : (w.scalar_type() == c10::kFloat ? c10::kFloat : c10::kDouble);
  c10::DeviceGuard guard(self.device());
  auto opts = self.options().dtype(out_t);
  if (self.numel() == 0) return at::zeros({minlength}, opts);
  at::Tensor host = at::stack({self.min(), self.max()}).to(c10::kCPU, c10::kLong);
  TORCH_CHECK(host[0].item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
  int64_t n = std::max(host[1].item<int64_t>() + 1, minlength);
  at::Tensor out = at::zeros({n}, opts);
  at::Tensor src = has_w ? w.to(self.device(), out_t) : at::ones({self.numel()}, opts);
  at::Tensor idx = self.scalar_type() == c10::kLong || self.scalar_type() == c10::kInt ? self : self.to(c10::kLong);
  out.index_add_(0, idx, src);
  return out;
}

// (values, inverse, counts) of the runs of equal neighbours of `flat` (1-d).
std::tuple<at::Tensor, at::Tensor, at::Tensor> runs_of(const at::Tensor& flat, const char* op) {
  int64_t n = flat.numel();
  at::Tensor starts_mask =
      at::cat({at::ones({1}, flat.options().dtype(c10::kBool)), flat.narrow(0, 1, n - 1).ne(flat.narrow(0, 0, n - 1))});
  at::Tensor starts = mask_positions(starts_mask, {1}, false, op);  // offsets of each run's start
  at::Tensor values = flat.index_select(0, starts);
  at::Tensor ends = at::cat({starts.narrow(0, 1, starts.numel() - 1), at::full({1}, n, starts.options())});
  at::Tensor counts = at::sub(ends, starts);
  at::Tensor group = at::sub(at::cumsum(starts_mask, 0, c10::kLong), 1);
  return {values, group, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool /*sorted*/, bool return_inverse,
                                                       bool return_counts) {
  check_ocl(self, "unique", "self");
  c10::DeviceGuard guard(self.device());
  auto long_opts = self.options().dtype(c10::kLong);
  if (self.numel() == 0)
    return {at::empty({0}, self.options()), at::empty(return_inverse ? self.sizes() : c10::IntArrayRef{0}, long_opts),
            at::empty({0}, long_opts)};
  auto [sorted, perm] = at::sort(self.reshape({-1}), /*stable=*/true, 0, false);
  auto [values, group, counts] = runs_of(sorted, "unique");
  at::Tensor inverse = at::empty({0}, long_opts);
  if (return_inverse) {
    inverse = at::empty({self.numel()}, long_opts);
    inverse.index_copy_(0, perm, group);
    inverse = inverse.view(self.sizes());
  }
  return {values, inverse, return_counts ? counts : at::empty({0}, long_opts)};
}

std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim) {
  check_ocl(self, "unique_consecutive", "self");
  TORCH_CHECK_NOT_IMPLEMENTED(!dim || self.dim() <= 1, "unique_consecutive: dim= is not supported on ocl");
  c10::DeviceGuard guard(self.device());
  auto long_opts = self.options().dtype(c10::kLong);
  if (self.numel() == 0)
    return {at::empty({0}, self.options()), at::empty(return_inverse ? self.sizes() : c10::IntArrayRef{0}, long_opts),
            at::empty({0}, long_opts)};
  auto [values, group, counts] = runs_of(self.reshape({-1}), "unique_consecutive");
  return {values, return_inverse ? group.view(self.sizes()) : at::empty({0}, long_opts),
          return_counts ? counts : at::empty({0}, long_opts)};
}

at::Tensor& ocl_searchsorted_out(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                             std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter_opt,
                             at::Tensor& out) {
  check_ocl(sorted_sequence, "searchsorted", "sorted_sequence");
  if (side) {
    TORCH_CHECK(*side == "left" || *side == "right", "torch.searchsorted(): side can only be 'left' or 'right' but ",
                "got ", *side);
    TORCH_CHECK(!right || *side == "right", "torch.searchsorted(): side and right can't be set to opposites, got side ",
                "of ", *side, " while right was True");
    right = *side == "right";
  }
  TORCH_CHECK(sorted_sequence.dim() >= 1, "torch.searchsorted(): boundaries tensor should have positive dimension");
  bool one_row = sorted_sequence.dim() == 1;
  if (!one_row) {
    TORCH_CHECK(self.dim() == sorted_sequence.dim() &&
                    self.sizes().slice(0, self.dim() - 1) == sorted_sequence.sizes().slice(0, self.dim() - 1),
                "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of ",
                "boundaries tensor and input value tensor must match, but we got boundaries tensor ",
                sorted_sequence.sizes(), " and input value tensor ", self.sizes());
  }
  at::Tensor sorter;
  if (sorter_opt && sorter_opt->defined()) {
    sorter = sorter_opt->to(sorted_sequence.device(), c10::kLong).contiguous();
    TORCH_CHECK(sorter.sizes() == sorted_sequence.sizes(),
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor ",
                sorted_sequence.sizes(), "and got sorter tensor ", sorter.sizes());
  }
  c10::DeviceGuard guard(sorted_sequence.device());
  at::native::resize_output(out, self.sizes());
  if (self.numel() == 0) return out;
  // Mixed dtypes compare in the promoted type, as on the CPU.
  c10::ScalarType t = c10::promoteTypes(sorted_sequence.scalar_type(), self.scalar_type());
  at::Tensor values = self.to(sorted_sequence.device(), t).contiguous();
  at::Tensor bounds = sorted_sequence.to(t).contiguous();
  at::Tensor result = out.scalar_type() == c10::kLong && out.is_contiguous() ? out : at::empty(self.sizes(),
                                                                                                out.options().dtype(c10::kLong));
  int64_t m = bounds.size(-1);
  uint64_t per_row = self.dim() == 0 ? 1 : static_cast<uint64_t>(self.size(-1));
  int device = bounds.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("searchsorted",
                  dlprim::index_searchsorted(context(device), q, to_dlprim(bounds.scalar_type(), "searchsorted"),
                                             static_cast<uint64_t>(values.numel()), per_row, one_row, ptr_of(values),
                                             ptr_of(bounds), m, sorter.defined(),
                                             sorter.defined() ? ptr_of(sorter) : dlprim::DevPtr{}, right,
                                             ptr_of(result)));
  note_enqueued(q);
  if (!result.is_same(out)) out.copy_(result);
  return out;
}

at::Tensor ocl_searchsorted(const at::Tensor& sorted_sequence, const at::Tensor& self, bool out_int32, bool right,
                        std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  at::Tensor out = at::empty({0}, self.options().device(sorted_sequence.device()).dtype(out_int32 ? c10::kInt : c10::kLong));
  return ocl_searchsorted_out(sorted_sequence, self, out_int32, right, side, sorter, out);
}

at::Tensor ocl_searchsorted_scalar(const at::Tensor& sorted_sequence, const c10::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  TORCH_CHECK(sorted_sequence.dim() == 1, "torch.searchsorted(): input value can be a scalar only when boundaries ",
              "tensor dimension is 1, but we got boundaries tensor dim(", sorted_sequence.dim(), ")");
  return ocl_searchsorted(sorted_sequence, at::full({}, self, sorted_sequence.options()), out_int32, right, side, sorter);
}

at::Tensor& ocl_bucketize_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                          at::Tensor& out) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return ocl_searchsorted_out(boundaries, self, out_int32, right, std::nullopt, std::nullopt, out);
}

at::Tensor ocl_bucketize(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
  return ocl_searchsorted(boundaries, self, out_int32, right, std::nullopt, std::nullopt);
}

at::Tensor ocl_bucketize_scalar(const c10::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  return ocl_bucketize(at::full({}, self, boundaries.options()), boundaries, out_int32, right);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("nonzero", TORCH_FN(nonzero));
  m.impl("nonzero.out", TORCH_FN(nonzero_out));
  m.impl("nonzero_static", TORCH_FN(nonzero_static));
  m.impl("masked_select", TORCH_FN(masked_select));
  m.impl("masked_select.out", TORCH_FN(masked_select_out));
  m.impl("masked_scatter_", TORCH_FN(masked_scatter_));
  m.impl("repeat_interleave.Tensor", TORCH_FN(repeat_interleave));
  m.impl("bincount", TORCH_FN(bincount));
  m.impl("_unique2", TORCH_FN(unique2));
  m.impl("_unique", TORCH_FN(unique));
  m.impl("unique_consecutive", TORCH_FN(unique_consecutive));
  m.impl("searchsorted.Tensor", TORCH_FN(ocl_searchsorted));
  m.impl("searchsorted.Tensor_out", TORCH_FN(ocl_searchsorted_out));
  m.impl("searchsorted.Scalar", TORCH_FN(ocl_searchsorted_scalar));
  m.impl("bucketize.Tensor", TORCH_FN(ocl_bucketize));
  m.impl("bucketize.Tensor_out", TORCH_FN(ocl_bucketize_out));
  m.impl("bucketize.Scalar", TORCH_FN(ocl_bucketize_scalar));
}

} // namespace pytorch_ocl
