// mode (values and indices along a dim) composed of native ops, in the CPU kernel's terms: the
// row sorted (stable, so equal values keep their order), runs of equal values found by comparing
// neighbours, each run's length from the position of its start (a running max of run starts), and
// the first longest run wins, so ties between values go to the smallest and the index is that
// of the run's last element: the largest original index of the value (the CPU's insertion sort
// gives the same on rows up to 16 elements; its introsort on longer rows leaves ties in any order).
// NaNs sort last and each is its own run (the CPU's comparisons leave their order undefined).
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

std::tuple<at::Tensor, at::Tensor> mode(const at::Tensor& self, int64_t dim, bool keepdim) {
  check_ocl(self, "mode", "self");
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "mode is not implemented for complex tensors on ocl");
  c10::DeviceGuard guard(self.device());
  if (self.dim() == 0) {
    dim = at::maybe_wrap_dim(dim, 1);
    return {self.clone(), at::zeros({}, self.options().dtype(at::kLong))};
  }
  dim = at::maybe_wrap_dim(dim, self.dim());
  int64_t n = self.size(dim);
  std::vector<int64_t> out_shape = self.sizes().vec();
  out_shape[dim] = 1;
  TORCH_CHECK_INDEX(n > 0, "mode(): Expected reduction dim ", dim, " to have non-zero size.");
  if (self.numel() == 0) {
    if (!keepdim) out_shape.erase(out_shape.begin() + dim);
    return {at::empty(out_shape, self.options()), at::empty(out_shape, self.options().dtype(at::kLong))};
  }
  at::Tensor x = self.movedim(dim, -1);
  auto sorted = at::sort(x, /*stable=*/true, -1, false);
  at::Tensor v = std::get<0>(sorted), order = std::get<1>(sorted);
  std::vector<int64_t> edge_shape = v.sizes().vec();
  edge_shape.back() = 1;
  at::Tensor yes = at::ones(edge_shape, v.options().dtype(at::kBool));
  at::Tensor differ = n > 1 ? v.narrow(-1, 1, n - 1) != v.narrow(-1, 0, n - 1)
                            : at::empty(edge_shape, yes.options()).narrow(-1, 0, 0);
  at::Tensor is_end = at::cat({differ, yes}, -1), is_start = at::cat({yes, differ}, -1);
  at::Tensor pos = at::arange(n, v.options().dtype(at::kLong)).expand(v.sizes());
  at::Tensor start = std::get<0>(at::cummax(at::where(is_start, pos, at::zeros({}, pos.options())), -1));
  at::Tensor score = at::where(is_end, pos - start + 1, at::zeros({}, pos.options()));
  at::Tensor best = score.argmax(-1, true);
  at::Tensor values = v.gather(-1, best), indices = order.gather(-1, best);
  values = values.movedim(-1, dim);
  indices = indices.movedim(-1, dim);
  if (!keepdim) {
    values = values.squeeze(dim);
    indices = indices.squeeze(dim);
  }
  return {values.contiguous(), indices.contiguous()};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mode", TORCH_FN(mode));
}

} // namespace pytorch_ocl
