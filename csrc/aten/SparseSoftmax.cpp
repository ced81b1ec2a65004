// torch.sparse.softmax / log_softmax of a COO tensor (the SparsePrivateUse1 key), forward and backward.
// As on the CPU and CUDA the unspecified elements count as -inf: the result has the coalesced input's
// indices and each stored value is normalised over the stored values of its "pool" (the entries that
// share every coordinate but `dim`). Built from dense device ops, nothing read on the host:
//   pools     the linear index of the coordinates without `dim`, made compact by sort + unique_consecutive
//   forward   segment max (index_reduce_ amax), exp of the shifted values, segment sum (index_add_)
//   backward  softmax: out * (g - sum_pool(out * g)); log_softmax: g - exp(out) * sum_pool(g), with g the
//             incoming gradient at the output's coordinates (sparse_mask: zero where it stores none)
// A `dim` among the dense dims is the dense (log_)softmax of the values.
#include "aten/SparseUtils.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/unique_consecutive.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

struct Pools {
  at::Tensor of_entry; // (nnz,) int64: the pool of every stored value, in [0, count)
  int64_t count;
};

// The pools of a COO tensor's (coalesced) indices along sparse dim `dim`.
Pools sparse_pools(const at::Tensor& indices, c10::IntArrayRef sizes, int64_t dim) {
  // The row-major linear index with `dim`'s coordinate zeroed (and its size 1): equal for one pool.
  at::Tensor without_dim = indices.clone();
  without_dim.select(0, dim).zero_();
  std::vector<int64_t> pool_sizes(sizes.begin(), sizes.begin() + indices.size(0));
  pool_sizes[dim] = 1;
  at::Tensor key = sparse_linear_index(without_dim, pool_sizes);
  // Pool ids as compact as the pools that occur (the product of the kept sizes can be huge).
  auto [sorted, order] = at::sort(key, /*stable=*/true, 0, false);
  auto [unique, run_of, counts] = at::unique_consecutive(sorted, /*return_inverse=*/true, false);
  at::Tensor of_entry = at::empty_like(run_of).index_copy_(0, order, run_of);
  return {of_entry, unique.size(0)};
}

std::vector<int64_t> pooled_shape(const at::Tensor& values, int64_t pools) {
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = pools;
  return shape;
}

void check_softmax_input(const at::Tensor& t, const char* op, const char* arg) {
  check_ocl(t, op, arg);
  TORCH_CHECK(t.is_sparse(), op, ": expected '", arg, "' to be a sparse COO tensor, got ", t.layout());
  TORCH_CHECK(c10::isFloatingType(t.scalar_type()), op, ": expected a floating point '", arg, "', got ",
              t.scalar_type());
}

at::Tensor sparse_softmax_forward(const at::Tensor& self, int64_t dim, bool half_to_float, bool log,
                                  const char* op) {
  check_softmax_input(self, op, "self");
  TORCH_CHECK(!half_to_float, op, ": with half to float conversion is not supported on ocl");
  dim = at::maybe_wrap_dim(dim, self.dim());
  c10::DeviceGuard guard(self.device());
  at::Tensor input = self.coalesce();
  int64_t sparse_dim = input.sparse_dim();
  at::Tensor values = input._values();
  at::Tensor out;
  if (values.numel() == 0) {
    out = values.clone();
  } else if (dim >= sparse_dim) {
    int64_t d = dim - sparse_dim + 1;
    out = log ? at::_log_softmax(values, d, false) : at::_softmax(values, d, false);
  } else {
    Pools pools = sparse_pools(input._indices(), input.sizes(), dim);
    // Every pool has a member, so the max needs no initial value.
    at::Tensor max = at::empty(pooled_shape(values, pools.count), values.options())
                         .index_reduce_(0, pools.of_entry, values, "amax", /*include_self=*/false);
    at::Tensor shifted = values - max.index_select(0, pools.of_entry);
    at::Tensor exps = shifted.exp();
    at::Tensor sums =
        at::zeros(pooled_shape(values, pools.count), values.options()).index_add_(0, pools.of_entry, exps);
    out = log ? shifted.sub_(sums.log_().index_select(0, pools.of_entry))
              : exps.div_(sums.index_select(0, pools.of_entry));
  }
  return make_coo(input._indices().clone(), out, input.sizes(), true);
}

at::Tensor sparse_softmax_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                   const at::Tensor& self, bool log, const char* op) {
  check_softmax_input(output, op, "output");
  check_ocl(grad_output, op, "grad_output");
  TORCH_CHECK(grad_output.sizes().equals(output.sizes()), op, ": expected grad_output and output of the same size, ",
              "got ", grad_output.sizes(), " and ", output.sizes());
  TORCH_CHECK(!grad_output.is_sparse() || grad_output.sparse_dim() == output.sparse_dim(), op,
              ": expected grad_output and output with the same sparse_dim, got ", grad_output.sparse_dim(), " and ",
              output.sparse_dim());
  dim = at::maybe_wrap_dim(dim, output.dim());
  c10::DeviceGuard guard(output.device());
  at::Tensor out_coo = output.coalesce();
  int64_t sparse_dim = out_coo.sparse_dim();
  at::Tensor out = out_coo._values();
  // The incoming gradient at the output's coordinates (grad_output may store others, or none).
  at::Tensor grad = grad_output.sparse_mask(out_coo)._values().to(out.scalar_type());
  at::Tensor grad_input;
  if (out.numel() == 0) {
    grad_input = out.clone();
  } else if (dim >= sparse_dim) {
    int64_t d = dim - sparse_dim + 1;
    grad_input = log ? at::_log_softmax_backward_data(grad, out, d, self.scalar_type())
                     : at::_softmax_backward_data(grad, out, d, self.scalar_type());
  } else {
    Pools pools = sparse_pools(out_coo._indices(), out_coo.sizes(), dim);
    at::Tensor summed = at::zeros(pooled_shape(out, pools.count), out.options())
                            .index_add_(0, pools.of_entry, log ? grad : out * grad)
                            .index_select(0, pools.of_entry);
    grad_input = log ? grad - out.exp() * summed : out * (grad - summed);
  }
  return make_coo(out_coo._indices().clone(), grad_input, out_coo.sizes(), true);
}

at::Tensor softmax_coo(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax_forward(self, dim, half_to_float, false, "_sparse_softmax");
}

at::Tensor log_softmax_coo(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return sparse_softmax_forward(self, dim, half_to_float, true, "_sparse_log_softmax");
}

at::Tensor softmax_coo_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                const at::Tensor& self) {
  return sparse_softmax_backward(grad_output, output, dim, self, false, "_sparse_softmax_backward_data");
}

at::Tensor log_softmax_coo_backward(const at::Tensor& grad_output, const at::Tensor& output, int64_t dim,
                                    const at::Tensor& self) {
  return sparse_softmax_backward(grad_output, output, dim, self, true, "_sparse_log_softmax_backward_data");
}

} // namespace

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_sparse_softmax", TORCH_FN(softmax_coo));
  m.impl("_sparse_log_softmax", TORCH_FN(log_softmax_coo));
  m.impl("_sparse_softmax_backward_data", TORCH_FN(softmax_coo_backward));
  m.impl("_sparse_log_softmax_backward_data", TORCH_FN(log_softmax_coo_backward));
}

} // namespace pytorch_ocl
