// index_select of a COO tensor (the SparsePrivateUse1 key), from dense device ops. Along a dense dim
// it is the values' index_select. Along a sparse dim every position j of `index` takes a copy of each
// stored entry whose coordinate there is index[j], with that coordinate replaced by j (so an index
// repeated selects its entries twice). As on the CPU, the copies are ordered by j, then in stored order,
// when len(index) <= nnz, else in stored order, then by j; and the result is marked coalesced only when
// it stores fewer than two entries. The join, without an (nnz x len(index)) mask (equal_pairs):
//   stable sort of one side; searchsorted gives each element of the other side its run of equal keys
//   output pair k belongs to the element whose cumulative count passes k (searchsorted again)
// Two host reads: whether an index is out of range (as the CPU, it raises IndexError) and the result's nnz.
#include "aten/SparseUtils.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/where.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// `index` as int64 in [0, size), negative positions counted from the end (as the CPU accepts them).
at::Tensor checked_index(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  check_ocl(index, "index_select", "index");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK_INDEX(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
                    "index_select(): Expected dtype int32 or int64 for index");
  int64_t size = self.size(dim);
  at::Tensor idx = index.reshape({-1}).to(c10::kLong);
  if (idx.numel() == 0) return idx;
  at::Tensor bad = at::nonzero(at::logical_or(idx < -size, idx >= size));
  if (bad.size(0) > 0) {
    TORCH_CHECK_INDEX(false, "index_select(): index contains ", idx[bad[0][0]].item<int64_t>(),
                      " that is out of range for tensor of size ", self.sizes(), " at dimension ", dim);
  }
  return at::where(idx < 0, idx + size, idx);
}

// Every (q, p) with queries[q] == keys[p], ordered by q, then p (queries and keys non-empty, int64).
std::pair<at::Tensor, at::Tensor> equal_pairs(const at::Tensor& queries, const at::Tensor& keys) {
  auto [sorted, order] = at::sort(keys, /*stable=*/true, 0, false);
  at::Tensor first = at::searchsorted(sorted, queries, false, /*right=*/false);
  at::Tensor counts = at::searchsorted(sorted, queries, false, /*right=*/true) - first;
  at::Tensor ends = counts.cumsum(0);
  at::Tensor k = at::arange(ends[-1].item<int64_t>(), queries.options());
  at::Tensor q = at::searchsorted(ends, k, false, /*right=*/true);
  at::Tensor rank_in_run = k - (ends - counts).index_select(0, q);
  return {q, order.index_select(0, first.index_select(0, q) + rank_in_run)};
}

at::Tensor index_select_coo(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  check_ocl(self, "index_select", "self");
  dim = at::maybe_wrap_dim(dim, self.dim());
  c10::DeviceGuard guard(self.device());
  at::Tensor idx = checked_index(self, dim, index);
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = idx.numel();
  int64_t sparse_dim = self.sparse_dim();
  at::Tensor indices = self._indices();
  at::Tensor values = self._values();
  if (dim >= sparse_dim) {
    return make_coo(indices.clone(), values.index_select(dim - sparse_dim + 1, idx), sizes, self._nnz() < 2);
  }
  if (self._nnz() == 0 || idx.numel() == 0) {
    std::vector<int64_t> value_shape = values.sizes().vec();
    value_shape[0] = 0;
    return make_coo(at::empty({sparse_dim, 0}, indices.options()), at::empty(value_shape, values.options()), sizes,
                    true);
  }
  at::Tensor coordinates = indices.select(0, dim);
  at::Tensor entry, j;
  if (idx.numel() <= self._nnz()) {
    std::tie(j, entry) = equal_pairs(idx, coordinates);
  } else {
    std::tie(entry, j) = equal_pairs(coordinates, idx);
  }
  at::Tensor new_indices = indices.index_select(1, entry);
  new_indices.select(0, dim).copy_(j);
  return make_coo(new_indices, values.index_select(0, entry), sizes, entry.numel() < 2);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("index_select", TORCH_FN(index_select_coo));
}

} // namespace pytorch_ocl
