// Sums of a COO tensor (the SparsePrivateUse1 key): Tensor.sum and the torch.sparse.sum forward are
// ATen's device-generic kernels (_sparse_sum a composite of ops we have); the backward of a sum over
// dims is ours. Every stored entry of the coalesced input takes the incoming gradient at its
// coordinates with the summed dims dropped:
//   all sparse dims summed   grad is dense (the dense dims left): broadcast to every entry
//   some sparse dims kept    grad is sparse over the kept ones: gathered with sparse_mask at each entry's
//                            kept coordinates (zero where grad stores none), as the CPU's binary search
// then broadcast over the summed dense dims. Composed of dense device ops, nothing read on the host.
#include "aten/SparseUtils.h"
#include "core/TensorUtils.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum_native.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <bitset>

namespace pytorch_ocl {

namespace {

at::Tensor sparse_sum_backward_coo(const at::Tensor& grad, const at::Tensor& self, at::IntArrayRef dim) {
  const char* op = "_sparse_sum_backward";
  check_ocl(self, op, "self");
  check_ocl(grad, op, "grad");
  TORCH_CHECK(self.is_sparse(), op, ": expected a sparse COO 'self', got ", self.layout());
  c10::DeviceGuard guard(self.device());
  at::Tensor input = self.coalesce();
  int64_t sparse_dim = input.sparse_dim();
  std::bitset<at::dim_bitset_size> summed = at::dim_list_to_bitset(dim, input.dim());
  std::vector<at::Tensor> kept_coordinates;
  std::vector<int64_t> summed_value_dims; // dims of the values (dim 0: the entries) that were summed
  for (int64_t d = 0; d < input.dim(); ++d) {
    if (d < sparse_dim && !summed[d]) kept_coordinates.push_back(input._indices().select(0, d));
    if (d >= sparse_dim && summed[d]) summed_value_dims.push_back(d - sparse_dim + 1);
  }
  at::Tensor values = input._values();
  int64_t nnz = values.size(0);
  at::Tensor per_entry;
  if (kept_coordinates.empty()) {
    TORCH_CHECK(!grad.is_sparse(), op, ": expected a dense grad since all sparse dims are summed");
    per_entry = grad.unsqueeze(0);
  } else {
    TORCH_CHECK(grad.is_sparse(), op, ": expected a sparse grad, but got dense");
    TORCH_CHECK(grad.sparse_dim() == static_cast<int64_t>(kept_coordinates.size()), op, ": expected grad with ",
                kept_coordinates.size(), " sparse dims, got ", grad.sparse_dim());
    // A COO tensor of grad's shape storing each entry's kept coordinates (its values are never read).
    std::vector<int64_t> mask_values_shape{nnz};
    for (int64_t s : grad.sizes().slice(grad.sparse_dim())) mask_values_shape.push_back(s);
    at::Tensor unread = at::empty(mask_values_shape, grad.options().layout(c10::kStrided));
    at::Tensor mask = make_coo(at::stack(kept_coordinates), unread, grad.sizes(), false);
    per_entry = grad.sparse_mask(mask)._values();
  }
  for (int64_t d : summed_value_dims) per_entry = per_entry.unsqueeze(d);
  at::Tensor grad_values = per_entry.expand(values.sizes()).contiguous();
  return make_coo(input._indices().clone(), grad_values, input.sizes(), true);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  // Tensor.sum of a COO tensor: ATen's device-generic kernels (the values' sum; _sparse_sum over dims).
  m.impl("sum", TORCH_FN(at::native::sum_coo));
  m.impl("sum.dim_IntList", TORCH_FN(at::native::sum_sparse_coo));
  m.impl("_sparse_sum_backward", TORCH_FN(sparse_sum_backward_coo));
}

} // namespace pytorch_ocl
