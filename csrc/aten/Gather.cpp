// gather and masked_select: the index-driven copies cross_entropy needs (class weights of the
// targets with label smoothing). Indices are range-checked on the host like the CPU does (one
// min/max read back); masked_select reads its output size back (it is data-dependent).
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/gather.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

dlprim::Buffer buf(const at::Tensor& t) {
  if (!t.defined() || t.numel() == 0) return {};
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool /*sparse_grad*/,
                       at::Tensor& out) {
  const char* op = "gather";
  check_ocl(self, op, "self");
  check_ocl(index, op, "index");
  TORCH_CHECK_INDEX(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt || index.numel() == 0,
                    "gather(): Expected dtype int32/int64 for index");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  if (index.numel() == 0) {  // the CPU checks no shapes for an empty index
    at::native::resize_output(out, index.sizes());
    return out;
  }
  int64_t rank = std::max<int64_t>(self.dim(), 1);
  TORCH_CHECK(std::max<int64_t>(index.dim(), 1) == rank, "Index tensor must have the same number of dimensions as input tensor");
  TORCH_CHECK(rank <= dlprim::kGatherMaxDims, op, ": at most ", dlprim::kGatherMaxDims, " dimensions are supported");
  for (int64_t d = 0; d < index.dim(); ++d)
    TORCH_CHECK(d == dim || index.size(d) <= (self.dim() ? self.size(d) : 1), "Size does not match at dimension ", d,
                " expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim);
  c10::DeviceGuard guard(self.device());
  at::native::resize_output(out, index.sizes());
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), op, ": expected out dtype ", self.scalar_type(), ", got ",
              out.scalar_type());
  if (index.numel() == 0) return out;
  int64_t dim_size = self.dim() ? self.size(dim) : 1;
  auto [lo, hi] = at::aminmax(index);
  int64_t lo_v = lo.item<int64_t>(), hi_v = hi.item<int64_t>();
  // Negative indices are out of bounds for gather, as on the CPU.
  TORCH_CHECK_INDEX(lo_v >= 0 && hi_v < dim_size, "index ", lo_v < 0 ? lo_v : hi_v, " is out of bounds for dimension ",
                    dim, " with size ", dim_size);
  at::Tensor idx = index.to(c10::kLong).contiguous();
  at::Tensor res = out.is_contiguous() && !out.is_same(self) ? out : at::empty(index.sizes(), self.options());
  int64_t sizes[dlprim::kGatherMaxDims], strides[dlprim::kGatherMaxDims];
  for (int64_t d = 0; d < rank; ++d) {
    sizes[d] = index.dim() ? index.size(d) : 1;
    strides[d] = self.dim() ? self.stride(d) : 1;
  }
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " dim=", dim, " index=", index.sizes());
  OCL_DLPRIM_CALL(op, dlprim::gather_dim(context(dev), current_queue(dev), to_dlprim(self.scalar_type(), op),
                                         buf(self), buf(idx), buf(res), int(rank), int(dim), sizes, strides));
  note_enqueued(current_queue(dev));
  if (!res.is_same(out)) out.copy_(res);
  return out;
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) {
  const char* op = "masked_select";
  check_ocl(self, op, "self");
  check_ocl(mask, op, "mask");
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  c10::DeviceGuard guard(self.device());
  auto [s, m] = at::expand_outplace(self, mask);
  at::Tensor src = s->contiguous(), msk = m->contiguous();
  int64_t n = src.numel();
  if (n == 0) return at::empty({0}, self.options());
  at::Tensor pos = at::cumsum(msk.reshape({-1}), 0, c10::kLong);
  int64_t count = pos[n - 1].item<int64_t>();
  at::Tensor out = at::empty({count}, self.options());
  if (count == 0) return out;
  int dev = self.device().index();
  OCL_TRACE(op, " ", self.sizes(), " mask=", mask.sizes(), " selected=", count);
  OCL_DLPRIM_CALL(op, dlprim::masked_compact(context(dev), current_queue(dev), to_dlprim(self.scalar_type(), op),
                                             buf(src), buf(msk), buf(pos), buf(out), uint64_t(n)));
  note_enqueued(current_queue(dev));
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather.out", TORCH_FN(gather_out));
  m.impl("masked_select", TORCH_FN(masked_select));
}

} // namespace pytorch_ocl
