// Sparse COO tensors on ocl (the SparsePrivateUse1 key). The tensor object itself is ATen's
// device-generic SparseTensorImpl: its constructors, accessors, clone/copy/resize are registered as
// the at::native functions SparseCPU and SparseCUDA use. What computes is ours, built from dense
// device ops (nonzero, sort, unique_consecutive, index_select, index_add_) so everything stays on the
// device:
//   dense -> COO     nonzero of the (any over dense dims) mask, values gathered by linear index
//   COO -> dense     zeros + index_add_ over the linear index (duplicates sum, as on the CPU)
//   coalesce         stable sort of the linear index, runs (unique_consecutive), segment sum by index_add_
//   addmm/mm         out = beta*t + alpha * index_add_(rows, dense[cols] * values)
//   add              dense += sparse (index_add_), sparse + sparse (concatenation, uncoalesced)
//   sparse_mask      values gathered at the mask's coordinates (to_dense's and mm's backward)
#include "aten/SparseUtils.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_coalesced_native.h>
#include <ATen/ops/_dimI_native.h>
#include <ATen/ops/_dimV_native.h>
#include <ATen/ops/_indices_native.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors_native.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/_values_native.h>
#include <ATen/ops/add_native.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/indices_native.h>
#include <ATen/ops/is_coalesced_native.h>
#include <ATen/ops/mm_native.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/remainder.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/sparse_resize_and_clear_native.h>
#include <ATen/ops/sparse_resize_native.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/unsqueeze_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zero_native.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

int64_t sparse_numel(c10::IntArrayRef sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

at::Tensor sparse_linear_index(const at::Tensor& indices, c10::IntArrayRef sparse_sizes) {
  at::Tensor linear = at::zeros({indices.size(1)}, indices.options().dtype(c10::kLong));
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(sparse_sizes.size()) - 1; d >= 0; --d) {
    linear.add_(indices.select(0, d), stride);
    stride *= sparse_sizes[d];
  }
  return linear;
}

at::Tensor sparse_unflatten_index(const at::Tensor& linear, c10::IntArrayRef sparse_sizes) {
  int64_t sparse_dim = static_cast<int64_t>(sparse_sizes.size());
  at::Tensor indices = at::empty({sparse_dim, linear.size(0)}, linear.options());
  if (linear.numel() == 0) return indices;
  at::Tensor rest = linear;
  for (int64_t d = sparse_dim - 1; d >= 0; --d) {
    indices.select(0, d).copy_(at::remainder(rest, sparse_sizes[d]));
    rest = at::div(rest, sparse_sizes[d], "floor");
  }
  return indices;
}

at::Tensor make_coo(const at::Tensor& indices, const at::Tensor& values, c10::IntArrayRef sizes, bool coalesced) {
  int64_t sparse_dim = indices.size(0);
  int64_t dense_dim = static_cast<int64_t>(sizes.size()) - sparse_dim;
  at::Tensor result = at::_sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, sizes, indices, values,
                                                                   values.options().layout(c10::kSparse));
  result._coalesced_(coalesced);
  return result;
}

// Every stored value s = S[r, c] adds its scaled row of the dense operand to one output row:
// S @ D: out[r, :] += s * D[c, :];  D @ S: out[:, c] += s * D[:, r] (done on the transposes).
// Uncoalesced triplets are fine: duplicates add twice, as they mean.
at::Tensor& sparse_triplets_addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                      const c10::Scalar& beta, const c10::Scalar& alpha, const at::Tensor& rows,
                                      const at::Tensor& cols, const at::Tensor& values, bool sparse_left,
                                      at::Tensor& out, const char* op) {
  check_ocl(self, op, "self");
  check_ocl(mat1, op, "mat1");
  check_ocl(mat2, op, "mat2");
  TORCH_CHECK(mat1.dim() == 2 && mat2.dim() == 2, op, ": 2D matrices expected, got ", mat1.dim(), "D and ",
              mat2.dim(), "D");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
              mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  TORCH_CHECK(mat1.scalar_type() == mat2.scalar_type() && self.scalar_type() == mat2.scalar_type(), op,
              ": expected self, mat1 and mat2 to have the same dtype, but got ", self.scalar_type(), ", ",
              mat1.scalar_type(), " and ", mat2.scalar_type());
  c10::DeviceGuard guard(mat2.device());
  int64_t m = mat1.size(0), n = mat2.size(1);
  const at::Tensor& dense = sparse_left ? mat2 : mat1;
  TORCH_CHECK(at::is_expandable_to(self.sizes(), {m, n}), op, ": self of size ", self.sizes(),
              " cannot be broadcast to ", c10::IntArrayRef{m, n});
  // Accumulate in (m, n), or (n, m) when the sparse operand is on the right.
  std::vector<int64_t> acc_shape = sparse_left ? std::vector<int64_t>{m, n} : std::vector<int64_t>{n, m};
  at::Tensor t = self.expand({m, n});
  if (!sparse_left) t = t.t();
  // beta == 0 ignores self entirely (NaN included), as on the CPU and CUDA.
  at::Tensor acc = beta.toComplexDouble() == 0.0 ? at::zeros(acc_shape, dense.options())
                                                 : at::mul(t, beta).contiguous();
  if (values.numel() > 0 && acc.numel() > 0) {
    at::Tensor source = sparse_left ? dense : dense.t();
    const at::Tensor& src_index = sparse_left ? cols : rows;
    const at::Tensor& dst_index = sparse_left ? rows : cols;
    at::Tensor scaled = source.index_select(0, src_index).mul_(values.unsqueeze(1));
    acc.index_add_(0, dst_index, scaled, alpha);
  }
  at::native::resize_output(out, {m, n});
  out.copy_(sparse_left ? acc : acc.t());
  return out;
}

namespace {

// The dense tensor as (rows of the flattened sparse dims, dense dims...): values are its rows.
at::Tensor rows_view(const at::Tensor& dense, int64_t sparse_dim) {
  std::vector<int64_t> shape{sparse_numel(dense.sizes().slice(0, sparse_dim))};
  for (int64_t s : dense.sizes().slice(sparse_dim)) shape.push_back(s);
  return dense.reshape(shape);
}

// Tensor.to_sparse(sparse_dim) of a dense ocl tensor. The coordinates come out of nonzero in
// row-major order, so the result is coalesced without a sort.
at::Tensor dense_to_coo(const at::Tensor& self, int64_t sparse_dim) {
  check_ocl(self, "to_sparse", "self");
  int64_t dims = self.dim();
  TORCH_CHECK(sparse_dim > 0 || dims == 0, "sparse_dim must be >0 if dimensionality > 0");
  TORCH_CHECK(sparse_dim <= dims, "sparse_dim must be less than or equal to self.dim()");
  c10::DeviceGuard guard(self.device());
  at::Tensor mask = at::ne(self, 0);
  // A row of the dense dims is stored when any of its elements is nonzero.
  if (sparse_dim < dims) mask = mask.flatten(sparse_dim).any(-1);
  at::Tensor linear = at::nonzero(mask.reshape({-1})).select(1, 0);
  at::Tensor indices = sparse_unflatten_index(linear, self.sizes().slice(0, sparse_dim));
  at::Tensor values = rows_view(self, sparse_dim).index_select(0, linear);
  return make_coo(indices, values, self.sizes(), true);
}

at::Tensor dense_to_coo_default(const at::Tensor& self, std::optional<c10::Layout> layout,
                                at::OptionalIntArrayRef blocksize, std::optional<int64_t> dense_dim) {
  // The layout switch (and its argument checks) is ATen's; it comes back to dense_to_coo for COO.
  return at::native::dense_to_sparse(self, layout, blocksize, dense_dim);
}

at::Tensor coo_to_dense(const at::Tensor& self, std::optional<c10::ScalarType> dtype, std::optional<bool> masked_grad) {
  TORCH_CHECK(!dtype.has_value(), "dtype argument is not supported by sparse_to_dense");
  check_ocl(self, "to_dense", "self");
  c10::DeviceGuard guard(self.device());
  int64_t sparse_dim = self.sparse_dim();
  at::Tensor dense = at::zeros(self.sizes(), self.options().layout(c10::kStrided));
  if (self._nnz() == 0 || dense.numel() == 0) return dense;
  at::Tensor linear = sparse_linear_index(self._indices(), self.sizes().slice(0, sparse_dim));
  rows_view(dense, sparse_dim).index_add_(0, linear, self._values());
  return dense;
}

at::Tensor coalesce_coo(const at::Tensor& self) {
  check_ocl(self, "coalesce", "self");
  c10::DeviceGuard guard(self.device());
  if (self._nnz() < 2) {
    at::Tensor copy = self.clone();
    copy._coalesced_(true);
    return copy;
  }
  c10::IntArrayRef sparse_sizes = self.sizes().slice(0, self.sparse_dim());
  at::Tensor values = self._values();
  at::Tensor linear = sparse_linear_index(self._indices(), sparse_sizes);
  // Stable, so duplicates are summed in their stored order (the CPU's order).
  auto [sorted, order] = at::sort(linear, /*stable=*/true, 0, false);
  auto [unique, run_of, counts] = at::unique_consecutive(sorted, /*return_inverse=*/true, false);
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = unique.size(0);
  at::Tensor summed = at::zeros(shape, values.options()).index_add_(0, run_of, values.index_select(0, order));
  return make_coo(sparse_unflatten_index(unique, sparse_sizes), summed, self.sizes(), true);
}

// dense.add(sparse) and sparse.add(sparse); add(sparse, dense) is rejected by ATen's add_sparse.
at::Tensor& add_coo_out(const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha, at::Tensor& out) {
  check_ocl(self, "add", "self");
  check_ocl(other, "add", "other");
  TORCH_CHECK(self.sizes().equals(other.sizes()), "add: expected 'self' and 'other' to have same size, but self ",
              "has size ", self.sizes(), " while other has size ", other.sizes(),
              " (FYI: dense-sparse addition does not currently support broadcasting)");
  c10::DeviceGuard guard(self.device());
  c10::ScalarType common = at::result_type(self, other);
  TORCH_CHECK(c10::canCast(common, out.scalar_type()), "Can't convert result type ", common, " to output ",
              out.scalar_type(), " in add operation");
  TORCH_CHECK(other.is_sparse(), "add(sparse, dense) is not supported. Use add(dense, sparse) instead.");
  at::Tensor other_values = other._values().to(common);
  if (!alpha.equal(1)) other_values = at::mul(other_values, alpha);
  if (self.is_sparse()) {
    TORCH_CHECK(self.sparse_dim() == other.sparse_dim(), "add: expected same sparse_dim, got ", self.sparse_dim(),
                " and ", other.sparse_dim());
    TORCH_CHECK(out.is_sparse(), "add: expected a sparse 'out' for sparse + sparse");
    at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
    at::Tensor values = at::cat({self._values().to(common), other_values}, 0).to(out.scalar_type());
    at::Tensor sum = make_coo(indices, values, self.sizes(), false);
    at::native::resize_as_sparse_(out, sum);
    at::native::copy_sparse_(out, sum, false);
    return out;
  }
  TORCH_CHECK(!out.is_sparse(), "add: expected a dense 'out' for dense + sparse");
  at::native::resize_output(out, self.sizes());
  at::Tensor result = out.is_contiguous() ? out : at::empty(self.sizes(), out.options());
  if (!result.is_same(self)) result.copy_(self);
  if (other._nnz() > 0 && result.numel() > 0) {
    int64_t sparse_dim = other.sparse_dim();
    at::Tensor linear = sparse_linear_index(other._indices(), other.sizes().slice(0, sparse_dim));
    rows_view(result, sparse_dim).index_add_(0, linear, other_values.to(result.scalar_type()));
  }
  if (!result.is_same(out)) out.copy_(result);
  return out;
}

// self's values at the mask's coordinates (zero where self stores none). A dense self is gathered
// by linear index; a sparse self is coalesced (its linear indices sorted and unique) and each mask
// coordinate binary-searched in them.
at::Tensor sparse_mask_coo(const at::Tensor& self, const at::Tensor& mask) {
  check_ocl(self, "sparse_mask", "self");
  TORCH_CHECK(mask.is_sparse(), "sparse_mask expects mask to be a sparse COO tensor, but got ", mask.layout());
  TORCH_CHECK(self.sizes().equals(mask.sizes()), "sparse_mask(): operands have incompatible sizes; self has size ",
              self.sizes(), " but mask has size ", mask.sizes());
  c10::DeviceGuard guard(self.device());
  int64_t sparse_dim = mask.sparse_dim();
  c10::IntArrayRef sparse_sizes = mask.sizes().slice(0, sparse_dim);
  at::Tensor indices = mask._indices();
  at::Tensor linear = sparse_linear_index(indices, sparse_sizes);
  if (!self.is_sparse()) {
    at::Tensor values = rows_view(self, sparse_dim).index_select(0, linear);
    return make_coo(indices.clone(), values, self.sizes(), mask.is_coalesced());
  }
  TORCH_CHECK(self.sparse_dim() == sparse_dim, "sparse_mask(): the mask and self need the same sparse_dim, got ",
              sparse_dim, " and ", self.sparse_dim());
  at::Tensor source = self.coalesce();
  at::Tensor source_values = source._values();
  std::vector<int64_t> shape = source_values.sizes().vec();
  shape[0] = linear.size(0);
  if (source._nnz() == 0 || linear.numel() == 0) {
    return make_coo(indices.clone(), at::zeros(shape, source_values.options()), self.sizes(), mask.is_coalesced());
  }
  at::Tensor keys = sparse_linear_index(source._indices(), sparse_sizes);
  at::Tensor position = at::searchsorted(keys, linear).clamp_max_(keys.size(0) - 1);
  at::Tensor found = at::eq(keys.index_select(0, position), linear);
  std::vector<int64_t> found_shape(shape.size(), 1);
  found_shape[0] = linear.size(0);
  at::Tensor values = at::where(found.view(found_shape), source_values.index_select(0, position),
                                at::zeros({}, source_values.options()));
  return make_coo(indices.clone(), values, self.sizes(), mask.is_coalesced());
}

at::Tensor& addmm_coo_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                          const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(mat1.is_sparse() && !mat2.is_sparse() && !self.is_sparse(),
              "addmm: on ocl only sparse COO mat1 with dense self and mat2 is supported");
  TORCH_CHECK(mat1.sparse_dim() == 2 && mat1.dense_dim() == 0, "addmm: matrices expected, got ", mat1.sparse_dim(),
              "D sparse tensor with ", mat1.dense_dim(), " dense dims");
  at::Tensor indices = mat1._indices();
  return sparse_triplets_addmm_out(self, mat1, mat2, beta, alpha, indices.select(0, 0), indices.select(0, 1),
                                   mat1._values(), true, out, "addmm");
}

at::Tensor addmm_coo(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                     const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, mat2.options());
  return addmm_coo_out(self, mat1, mat2, beta, alpha, out);
}

at::Tensor& addmm_coo_(at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                       const c10::Scalar& alpha) {
  return addmm_coo_out(self, mat1, mat2, beta, alpha, self);
}

using SparseMm = at::Tensor (*)(const at::Tensor&, const at::Tensor&);

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_to_sparse.sparse_dim", TORCH_FN(dense_to_coo));
  m.impl("_to_sparse", TORCH_FN(dense_to_coo_default));
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // The tensor object: ATen's device-generic SparseTensorImpl functions.
  m.impl("_sparse_coo_tensor_with_dims", TORCH_FN(at::native::new_with_dims_sparse));
  m.impl("_sparse_coo_tensor_with_dims_and_tensors", TORCH_FN(at::native::new_with_dims_and_tensor_sparse_symint));
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_coo));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_dimI", TORCH_FN(at::native::sparse_dim_sparse));
  m.impl("_dimV", TORCH_FN(at::native::dense_dim_sparse));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse));
  m.impl("is_coalesced", TORCH_FN(at::native::is_coalesced_sparse));
  m.impl("_coalesced_", TORCH_FN(at::native::_coalesced_sparse_));
  m.impl("_indices", TORCH_FN(at::native::_indices_sparse));
  m.impl("_values", TORCH_FN(at::native::_values_sparse));
  m.impl("indices", TORCH_FN(at::native::indices_sparse));
  m.impl("values", TORCH_FN(at::native::values_sparse));
  m.impl("clone", TORCH_FN(at::native::clone_sparse));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_wrapper_));
  m.impl("copy_sparse_to_sparse_", TORCH_FN(at::native::copy_sparse_));
  m.impl("sparse_resize_", TORCH_FN(at::native::sparse_resize_));
  m.impl("sparse_resize_and_clear_", TORCH_FN(at::native::sparse_resize_and_clear_));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_));
  m.impl("_to_sparse.sparse_dim", TORCH_FN(static_cast<ToSparseDim>(at::native::sparse_coo_to_sparse)));
  m.impl("_to_sparse", TORCH_FN(static_cast<ToSparseLayout>(at::native::sparse_coo_to_sparse)));
  m.impl("mm", TORCH_FN(static_cast<SparseMm>(at::native::_sparse_mm)));
  m.impl("add.Tensor", TORCH_FN(at::native::add_sparse));
  m.impl("add_.Tensor", TORCH_FN(at::native::add_sparse_));
  m.impl("unsqueeze", TORCH_FN(at::native::unsqueeze_sparse));  // sum(..., keepdim=True) uses it
  // What computes, on the device.
  m.impl("_to_dense", TORCH_FN(coo_to_dense));
  m.impl("_coalesce", TORCH_FN(coalesce_coo));
  m.impl("add.out", TORCH_FN(add_coo_out));
  m.impl("sparse_mask", TORCH_FN(sparse_mask_coo));
  m.impl("addmm.out", TORCH_FN(addmm_coo_out));
  m.impl("addmm", TORCH_FN(addmm_coo));
  m.impl("addmm_", TORCH_FN(addmm_coo_));
}

} // namespace pytorch_ocl
