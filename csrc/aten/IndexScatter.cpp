// gather and the scatter family (scatter src/value, scatter with reduce, scatter_add,
// scatter_reduce): one key per index element, its position in the other dims plus the index
// value along `dim` (see IndexLaunch.h). Reductions sort the keys and fold equal ones in order.
#include "aten/IndexLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

void check_index(const at::Tensor& self, int64_t dim, const at::Tensor& index, const char* op) {
  TORCH_CHECK(index.numel() == 0 || index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, op,
              "(): Expected dtype int32/int64 for index");
  TORCH_CHECK(index.dim() == self.dim() || index.numel() == 0 || (index.dim() <= 1 && self.dim() <= 1), op,
              "(): Index tensor must have the same number of dimensions as self tensor");
  if (index.dim() == self.dim())
    for (int64_t d = 0; d < self.dim(); ++d)
      TORCH_CHECK(d == dim || index.size(d) <= self.size(d), op, "(): Expected index ", index.sizes(),
                  " to be no larger than self ", self.sizes(), " apart from dimension ", dim);
}

// Keys of each index element into `big` (1-d when 0-dim): its coordinates in the other dims
// plus index * stride(dim).
at::Tensor element_keys(const at::Tensor& big, int64_t dim, const at::Tensor& index, bool for_sort, const char* op) {
  at::Tensor idx = as_1d(index.device() == big.device() ? index : index.to(big.device()));
  std::vector<int64_t> pos(idx.dim());
  for (int64_t d = 0; d < idx.dim(); ++d) pos[d] = d == dim ? 0 : big.stride(d);
  KeyBuilder kb(big.device(), idx.sizes(), op, for_sort);
  kb.add(idx, big.size(dim), big.stride(dim), dim, false, pos);
  return kb.finish();
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool /*sparse_grad*/,
                       at::Tensor& out) {
  check_ocl(self, "gather", "self");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  check_index(self, dim, index, "gather");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "gather(): Expected out tensor to have dtype ",
              self.scalar_type(), ", but got ", out.scalar_type(), " instead");
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) return out;
  c10::DeviceGuard guard(self.device());
  at::Tensor big = as_1d(self);
  at::Tensor keys = element_keys(big, dim, index, false, "gather");
  keyed_gather(big, {}, keys, index.numel(), as_1d(out), "gather");
  return out;
}

// out = self, then out[index] (reduce)= src (src undefined: the 0-dim `value`).
void scatter_impl(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                  const dlprim::IndexReduce* mode, bool include_self, at::Tensor& out, const char* op) {
  check_ocl(self, op, "self");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  check_index(self, dim, index, op);
  TORCH_CHECK(src.scalar_type() == self.scalar_type(), op, "(): Expected self.dtype to be equal to src.dtype");
  at::native::resize_output(out, self.sizes());
  if (!out.is_same(self)) out.copy_(self);
  at::assert_no_internal_overlap(out);
  if (index.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  at::Tensor big = as_1d(out);
  at::Tensor keys = element_keys(big, dim, index, mode != nullptr, op);
  at::Tensor idx = as_1d(index);
  at::Tensor s = src.device() == self.device() ? src : src.to(self.device());
  // Only the leading index-shaped block of src takes part.
  at::Tensor dense = s.dim() == 0 ? s.expand(idx.sizes()) : as_1d(s).as_strided(idx.sizes(), as_1d(s).strides());
  if (mode)
    keyed_reduce(big, {}, keys, idx.numel(), dense, *mode, include_self, 1.0, op);
  else
    keyed_scatter(big, {}, keys, idx.numel(), dense, op);
}

at::Tensor& scatter_src_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  scatter_impl(self, dim, index, src, nullptr, true, out, "scatter");
  return out;
}

at::Tensor& scatter_value_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value,
                              at::Tensor& out) {
  scatter_impl(self, dim, index, device_scalar(value, self), nullptr, true, out, "scatter");
  return out;
}

dlprim::IndexReduce legacy_reduce(c10::string_view reduce) {
  TORCH_CHECK(reduce == "add" || reduce == "multiply", "reduce argument must be either add or multiply.");
  return parse_reduce(reduce, "scatter");
}

at::Tensor& scatter_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                               c10::string_view reduce, at::Tensor& out) {
  dlprim::IndexReduce mode = legacy_reduce(reduce);
  scatter_impl(self, dim, index, src, &mode, true, out, "scatter");
  return out;
}

at::Tensor& scatter_value_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                     const c10::Scalar& value, c10::string_view reduce, at::Tensor& out) {
  dlprim::IndexReduce mode = legacy_reduce(reduce);
  scatter_impl(self, dim, index, device_scalar(value, self), &mode, true, out, "scatter");
  return out;
}

at::Tensor& scatter_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                            at::Tensor& out) {
  if (self.is_complex() && src.scalar_type() == self.scalar_type()) {
    // Sums of complex values: the real and imaginary parts accumulate separately (strided views of out).
    TORCH_CHECK(!out.is_conj(), "scatter_add: a conjugate view as the result is not supported on ocl");
    at::native::resize_output(out, self.sizes());
    if (!out.is_same(self)) out.copy_(self);
    at::Tensor s = src.resolve_conj();
    at::Tensor re = at::real(out), im = at::imag(out);
    scatter_add_out(re, dim, index, at::real(s), re);
    scatter_add_out(im, dim, index, at::imag(s), im);
    return out;
  }
  dlprim::IndexReduce mode = dlprim::IndexReduce::Sum;
  scatter_impl(self, dim, index, src, &mode, true, out, "scatter_add");
  return out;
}

at::Tensor& scatter_reduce_two_out(const at::Tensor& self, int64_t dim, const at::Tensor& index,
                                   const at::Tensor& src, c10::string_view reduce, bool include_self,
                                   at::Tensor& out) {
  dlprim::IndexReduce mode = parse_reduce(reduce, "scatter_reduce");
  scatter_impl(self, dim, index, src, &mode, include_self, out, "scatter_reduce");
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("scatter.src_out", TORCH_FN(scatter_src_out));
  m.impl("scatter.value_out", TORCH_FN(scatter_value_out));
  m.impl("scatter.reduce_out", TORCH_FN(scatter_reduce_out));
  m.impl("scatter.value_reduce_out", TORCH_FN(scatter_value_reduce_out));
  m.impl("scatter_add.out", TORCH_FN(scatter_add_out));
  m.impl("scatter_reduce.two_out", TORCH_FN(scatter_reduce_two_out));
}

} // namespace pytorch_ocl
