// Indexing along one dim and advanced indexing: index_select (embedding), index.Tensor (x[idx],
// x[mask]), index_put_ (x[idx] = v, accumulate), take, put_, index_copy, index_fill_, index_add,
// index_reduce, embedding_dense_backward. All are rows of keys over the indexed tensor (see
// IndexLaunch.h); accumulating ones sort the keys and fold each run of equal keys (no atomics).
#include "aten/IndexLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/List.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/real.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor as_1d(const at::Tensor& t) { return t.dim() == 0 ? t.view({1}) : t; }

at::Tensor on_device(const at::Tensor& t, const at::Tensor& like) {
  return t.device() == like.device() ? t : t.to(like.device());
}

void check_index_1d(const at::Tensor& index, const char* op) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  TORCH_CHECK(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, op,
              "(): Expected dtype int32/int64 for index but got ", index.scalar_type());
}

// Keys of a 1-D index along `dim` of `big` (already 1-d if it was 0-dim).
at::Tensor dim_keys(const at::Tensor& big, int64_t dim, const at::Tensor& index, bool for_sort, bool wrap,
                    const char* op) {
  int64_t n = index.numel();
  KeyBuilder kb(big.device(), {n}, op, for_sort);
  kb.add(on_device(index, big).reshape({n}), big.size(dim), big.stride(dim), dim, wrap);
  return kb.finish();
}

at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  check_ocl(self, "index_select", "self");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  check_index_1d(index, "index_select");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index_select(): self and result must have the same scalar type");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[dim] = index.numel();
  at::native::resize_output(out, shape);
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(self.device());
  at::Tensor big = as_1d(self);
  if (index.scalar_type() == c10::kLong && index.device() == self.device()) {  // one launch, no keys
    index_gather_direct(big, dim, as_1d(index), as_1d(out).movedim(dim, 0), "index_select");
    return out;
  }
  at::Tensor keys = dim_keys(big, dim, index, false, false, "index_select");
  keyed_gather(big, dims_except(big.dim(), dim), keys, index.numel(), as_1d(out).movedim(dim, 0), "index_select");
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return index_select_out(self, dim, index, out);
}

// self[indices] described as rows over the broadcast index shape.
struct Advanced {
  std::vector<at::Tensor> idx;  // per dim of self (undefined where not indexed)
  std::vector<int64_t> other_dims, row_shape, result_shape, to_rows_first;
};

Advanced make_advanced(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices, const char* op) {
  Advanced a;
  a.idx.resize(self.dim());
  int64_t pos = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<at::Tensor> o = indices.get(i);
    if (!o || !o->defined()) {
      ++pos;
      continue;
    }
    at::Tensor t = on_device(*o, self);
    if (t.scalar_type() == c10::kBool || t.scalar_type() == c10::kByte) {
      TORCH_CHECK_INDEX(pos + t.dim() <= self.dim(), "too many indices for tensor of dimension ", self.dim(),
                        " (got ", pos + t.dim(), ")");
      for (int64_t j = 0; j < t.dim(); ++j)
        TORCH_CHECK_INDEX(t.size(j) == self.size(pos + j), "The shape of the mask ", t.sizes(), " at index ", j,
                          " does not match the shape of the indexed tensor ", self.sizes(), " at index ", pos + j);
      at::Tensor nz = at::nonzero(t);
      for (int64_t j = 0; j < t.dim(); ++j) a.idx[pos + j] = nz.select(1, j);
      pos += t.dim();
      continue;
    }
    TORCH_CHECK_INDEX(t.scalar_type() == c10::kLong || t.scalar_type() == c10::kInt,
                      "tensors used as indices must be long, int, byte or bool tensors");
    TORCH_CHECK_INDEX(pos < self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ",
                      pos + 1, ")");
    a.idx[pos++] = t;
  }
  TORCH_CHECK_INDEX(pos <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ", pos, ")");
  std::vector<int64_t> indexed;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (a.idx[d].defined()) {
      a.row_shape = indexed.empty() ? a.idx[d].sizes().vec() : at::infer_size(a.row_shape, a.idx[d].sizes());
      indexed.push_back(d);
    } else {
      a.other_dims.push_back(d);
    }
  }
  TORCH_CHECK_INDEX(!indexed.empty(), op, ": no index tensors given");
  bool adjacent = indexed.back() - indexed.front() + 1 == static_cast<int64_t>(indexed.size());
  int64_t before = adjacent ? indexed.front() : 0;
  int64_t nb = static_cast<int64_t>(a.row_shape.size());
  for (int64_t d = 0; d < before; ++d) a.result_shape.push_back(self.size(d));
  for (int64_t s : a.row_shape) a.result_shape.push_back(s);
  for (int64_t d : a.other_dims)
    if (d >= before) a.result_shape.push_back(self.size(d));
  for (int64_t k = 0; k < nb; ++k) a.to_rows_first.push_back(before + k);
  for (int64_t k = 0; k < before; ++k) a.to_rows_first.push_back(k);
  for (int64_t k = before + nb; k < static_cast<int64_t>(a.result_shape.size()); ++k) a.to_rows_first.push_back(k);
  return a;
}

at::Tensor advanced_keys(const at::Tensor& self, const Advanced& a, bool for_sort, const char* op) {
  KeyBuilder kb(self.device(), a.row_shape, op, for_sort);
  for (int64_t d = 0; d < self.dim(); ++d)
    if (a.idx[d].defined()) kb.add(a.idx[d], self.size(d), self.stride(d), d, true);
  return kb.finish();
}

at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  check_ocl(self, "index", "self");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "index: out has dtype ", out.scalar_type(), ", expected ",
              self.scalar_type());
  c10::DeviceGuard guard(self.device());
  Advanced a = make_advanced(self, indices, "index");
  at::native::resize_output(out, a.result_shape);
  if (out.numel() == 0) return out;
  at::Tensor keys = advanced_keys(self, a, false, "index");
  keyed_gather(self, a.other_dims, keys, c10::multiply_integers(a.row_shape), out.permute(a.to_rows_first), "index");
  return out;
}

at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  at::Tensor out = at::empty({0}, self.options());
  return index_out(self, indices, out);
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate, bool /*unsafe*/) {
  check_ocl(self, "index_put_", "self");
  TORCH_CHECK(values.scalar_type() == self.scalar_type(),
              "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
              " for the destination and ", values.scalar_type(), " for the source.");
  at::assert_no_internal_overlap(self);
  c10::DeviceGuard guard(self.device());
  Advanced a = make_advanced(self, indices, "index_put_");
  at::Tensor v = on_device(values, self);
  if (accumulate && self.is_complex()) {  // the real and imaginary parts accumulate separately
    TORCH_CHECK(!self.is_conj(), "index_put_: a conjugate view as the destination is not supported on ocl");
    at::Tensor vr = v.resolve_conj();
    at::Tensor re = at::real(self), im = at::imag(self);
    index_put_impl_(re, indices, at::real(vr), true, false);
    index_put_impl_(im, indices, at::imag(vr), true, false);
    return self;
  }
  TORCH_CHECK(at::is_expandable_to(v.sizes(), a.result_shape), "shape mismatch: value tensor of shape ", v.sizes(),
              " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(a.result_shape));
  int64_t rows = c10::multiply_integers(a.row_shape);
  if (rows == 0) return self;
  at::Tensor dense = v.expand(a.result_shape).permute(a.to_rows_first);
  at::Tensor keys = advanced_keys(self, a, accumulate, "index_put_");
  if (accumulate)
    keyed_reduce(self, a.other_dims, keys, rows, dense, dlprim::IndexReduce::Sum, true, 1.0, "index_put_");
  else
    keyed_scatter(self, a.other_dims, keys, rows, dense, "index_put_");
  return self;
}

at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  check_ocl(self, "take", "self");
  TORCH_CHECK(index.scalar_type() == c10::kLong, "take(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "take(): self and out expected to have the same dtype");
  at::native::resize_output(out, index.sizes());
  if (out.numel() == 0) return out;
  TORCH_CHECK_INDEX(self.numel() > 0, "take(): tried to take from an empty tensor");
  if (self.is_complex()) {  // complex64 as 64-bit moves; wider complex one real component at a time
    if (self.scalar_type() == c10::kComplexFloat) {
      at::Tensor bits = out.view(c10::kLong);
      take_out(self.resolve_conj().view(c10::kLong), index, bits);
      return out;
    }
    at::Tensor parts = at::view_as_real(self.resolve_conj()), out_parts = at::view_as_real(out);
    for (int64_t k = 0; k < 2; ++k) {
      at::Tensor part = at::empty({0}, parts.options());
      out_parts.select(-1, k).copy_(take_out(parts.select(-1, k), index, part));
    }
    return out;
  }
  c10::DeviceGuard guard(self.device());
  // contiguous: reshape keeps a strided view (a slice with step), whose keys would be dense offsets
  at::Tensor flat = self.contiguous().view({-1});
  KeyBuilder kb(self.device(), index.sizes(), "take");
  kb.add(on_device(index, self), flat.numel(), 1, 0, true);
  keyed_gather(flat, {}, kb.finish(), kb.rows(), out, "take");
  return out;
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor out = at::empty({0}, self.options());
  return take_out(self, index, out);
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index, const at::Tensor& source, bool accumulate) {
  check_ocl(self, "put_", "self");
  TORCH_CHECK(index.scalar_type() == c10::kLong, "put_(): Expected a long tensor for index, but got ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "put_(): self and source expected to have the same dtype, ",
              "but got self.dtype = ", self.scalar_type(), " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(index.numel() == source.numel(), "put_(): Expected source and index to have the same number of ",
              "elements, but got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  at::assert_no_internal_overlap(self);
  if (index.numel() == 0) return self;
  TORCH_CHECK_INDEX(self.numel() > 0, "put_(): Tried to put elements into an empty tensor");
  if (self.is_complex()) {
    // complex64 stores as 64-bit moves (each pair whole); sums, and wider complex, run on each
    // real component (as the CPU's accumulation, which adds the components independently)
    at::Tensor src = on_device(source, self).resolve_conj();
    if (self.scalar_type() == c10::kComplexFloat && !accumulate) {
      at::Tensor bits = self.view(c10::kLong);
      put_(bits, index, src.view(c10::kLong), false);
      return self;
    }
    at::Tensor parts = at::view_as_real(self), src_parts = at::view_as_real(src);
    for (int64_t k = 0; k < 2; ++k) {
      at::Tensor part = parts.select(-1, k);
      put_(part, index, src_parts.select(-1, k), accumulate);
    }
    return self;
  }
  c10::DeviceGuard guard(self.device());
  at::Tensor flat = self.is_contiguous() ? self.view({-1}) : self.contiguous().view({-1});
  KeyBuilder kb(self.device(), index.sizes(), "put_", accumulate);
  kb.add(on_device(index, self), flat.numel(), 1, 0, true);
  at::Tensor keys = kb.finish();
  at::Tensor dense = on_device(source, self).reshape(index.sizes());
  if (accumulate)
    keyed_reduce(flat, {}, keys, kb.rows(), dense, dlprim::IndexReduce::Sum, true, 1.0, "put_");
  else
    keyed_scatter(flat, {}, keys, kb.rows(), dense, "put_");
  if (!self.is_contiguous()) self.copy_(flat.view(self.sizes()));
  return self;
}

// out = self with rows `index` along dim replaced by (or reduced with) source's.
void index_update(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                  at::Tensor& out, const dlprim::IndexReduce* mode, bool include_self, double alpha, bool wrap, const char* op) {
  check_ocl(self, op, "self");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  check_index_1d(index, op);
  at::native::resize_output(out, self.sizes());
  if (!out.is_same(self)) out.copy_(self);
  if (index.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  at::Tensor big = as_1d(out);
  at::Tensor keys = dim_keys(big, dim, index, mode != nullptr, wrap, op);  // checks the indices
  if (out.numel() == 0) return;
  at::Tensor dense = as_1d(on_device(source, self)).movedim(dim, 0);
  std::vector<int64_t> inner = dims_except(big.dim(), dim);
  if (mode)
    keyed_reduce(big, inner, keys, index.numel(), dense, *mode, include_self, alpha, op);
  else
    keyed_scatter(big, inner, keys, index.numel(), dense, op);
}

at::Tensor& index_copy_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                           at::Tensor& out) {
  index_update(self, dim, index, source, out, nullptr, false, 1.0, false, "index_copy");
  return out;
}

at::Tensor& index_add_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                          const c10::Scalar& alpha, at::Tensor& out) {
  if (self.is_complex() && source.scalar_type() == self.scalar_type()) {
    // Sums of complex values: the real and imaginary parts accumulate separately (strided views of out).
    TORCH_CHECK(!out.is_conj(), "index_add: a conjugate view as the result is not supported on ocl");
    at::native::resize_output(out, self.sizes());
    if (!out.is_same(self)) out.copy_(self);
    at::Tensor src = at::mul(source, alpha).resolve_conj();
    at::Tensor re = at::real(out), im = at::imag(out);
    index_add_out(re, dim, index, at::real(src), 1, re);
    index_add_out(im, dim, index, at::imag(src), 1, im);
    return out;
  }
  dlprim::IndexReduce mode = dlprim::IndexReduce::Sum;
  index_update(self, dim, index, source, out, &mode, true, alpha.toDouble(), false, "index_add");
  return out;
}

at::Tensor& index_reduce_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                             c10::string_view reduce, bool include_self, at::Tensor& out) {
  dlprim::IndexReduce mode = parse_reduce(reduce, "index_reduce");
  TORCH_CHECK(mode != dlprim::IndexReduce::Sum, "index_reduce(): Expected reduce to be one of prod, mean, amax or ",
              "amin but got ", reduce, ".");
  index_update(self, dim, index, source, out, &mode, include_self, 1.0, false, "index_reduce");
  return out;
}

at::Tensor& index_fill_tensor_(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  at::assert_no_internal_overlap(self);
  dim = c10::maybe_wrap_dim(dim, self.dim());
  at::Tensor v = value.to(self.device(), self.scalar_type());
  std::vector<int64_t> shape = as_1d(self).movedim(dim, 0).sizes().vec();
  shape[0] = index.numel();
  index_update(self, dim, index, v.expand(shape).movedim(0, dim), self, nullptr, false, 1.0, true, "index_fill_");
  return self;
}

at::Tensor& index_fill_scalar_(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  return index_fill_tensor_(self, dim, index, device_scalar(value, self));
}

at::Tensor embedding_dense_backward(const at::Tensor& grad, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  check_ocl(grad, "embedding_dense_backward", "grad_output");
  c10::DeviceGuard guard(grad.device());
  int64_t d = grad.size(-1);
  at::Tensor grad_weight = at::zeros({num_weights, d}, grad.options());
  int64_t n = indices.numel();
  if (n == 0 || d == 0) return grad_weight;
  KeyBuilder kb(grad.device(), {n}, "embedding_backward", true);
  std::optional<int64_t> skip;
  if (padding_idx >= 0) skip = padding_idx;
  kb.add(on_device(indices, grad).reshape({n}), num_weights, d, 0, true, {}, skip);
  at::Tensor keys = kb.finish();
  // A row many tokens share (BERT's 2 token types for every token) is summed in chunks of rows, then the
  // chunks in order: deterministic, as CUDA's sorted embedding backward, but not the CPU's sequential rounding
  // (index_put_ / index_add_ keep that).
  keyed_reduce(grad_weight, {1}, keys, n, grad.reshape({n, d}),
               scale_grad_by_freq ? dlprim::IndexReduce::Mean : dlprim::IndexReduce::Sum, false, 1.0,
               "embedding_backward", /*chunked=*/true);
  return grad_weight;
}

// max_norm embeddings: rows of the distinct indices whose norm exceeds max_norm are scaled
// down to it (in place), composed of our native ops.
at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type) {
  check_ocl(self, "embedding_renorm_", "self");
  TORCH_CHECK(self.dim() == 2, "embedding_renorm_(): input must be 2-D, got ", self.dim(), "-D");
  c10::DeviceGuard guard(self.device());
  at::Tensor u = std::get<0>(at::_unique2(on_device(indices, self).reshape({-1}), true, false, false));
  if (u.numel() == 0) return self;
  at::Tensor rows = self.index_select(0, u);
  at::Tensor norms = at::linalg_vector_norm(rows, norm_type, c10::IntArrayRef{1}, true);
  at::Tensor scale = at::where(norms.gt(max_norm), norms.add(1e-7).reciprocal().mul(max_norm), 1.0);
  self.index_copy_(0, u, rows.mul(scale));
  return self;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select));
  m.impl("index_select.out", TORCH_FN(index_select_out));
  m.impl("index.Tensor_out", TORCH_FN(index_out));
  m.impl("index.Tensor", TORCH_FN(index));  // direct: the structured meta would run nonzero on masks again
  m.impl("_index_put_impl_", TORCH_FN(index_put_impl_));
  m.impl("take", TORCH_FN(take));
  m.impl("take.out", TORCH_FN(take_out));
  m.impl("put_", TORCH_FN(put_));
  m.impl("index_copy.out", TORCH_FN(index_copy_out));
  m.impl("index_add.out", TORCH_FN(index_add_out));
  m.impl("index_reduce.out", TORCH_FN(index_reduce_out));
  m.impl("index_fill_.int_Tensor", TORCH_FN(index_fill_tensor_));
  m.impl("index_fill_.int_Scalar", TORCH_FN(index_fill_scalar_));
  m.impl("embedding_dense_backward", TORCH_FN(embedding_dense_backward));
  m.impl("embedding_renorm_", TORCH_FN(embedding_renorm_));
}

} // namespace pytorch_ocl
