#include "aten/ReduceLaunch.h"

#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/WrapDimMinimal.h>

namespace pytorch_ocl {

DimMask reduction_mask(at::OptionalIntArrayRef dims, int64_t ndim) {
  DimMask mask;
  if (!dims.has_value() || dims->empty()) {
    mask.set();
    return mask;
  }
  return at::dim_list_to_bitset(*dims, ndim);
}

DimMask single_dim_mask(int64_t dim, int64_t ndim) {
  DimMask mask;
  mask.set(c10::maybe_wrap_dim(dim, ndim));
  return mask;
}

std::vector<int64_t> reduced_shape(const at::Tensor& self, const DimMask& mask, bool keepdim) {
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!mask[d])
      shape.push_back(self.size(d));
    else if (keepdim)
      shape.push_back(1);
  }
  return shape;
}

c10::ScalarType sum_acc_type(c10::ScalarType out) {
  if (out == c10::kHalf || out == c10::kBFloat16) return c10::kFloat;
  if (c10::isFloatingType(out)) return out;
  return out == c10::kUInt64 ? c10::kUInt64 : c10::kLong;
}

void check_nonempty_reduction(const at::Tensor& self, const DimMask& mask, bool all_dims, const char* name) {
  if (all_dims || self.dim() == 0) {
    TORCH_CHECK_INDEX(self.numel() != 0, name, ": Expected reduction dim to be specified for input.numel() == 0. "
                      "Specify the reduction dim with the 'dim' argument.");
    return;
  }
  for (int64_t d = 0; d < self.dim(); ++d)
    TORCH_CHECK_INDEX(!mask[d] || self.size(d) != 0, name, ": Expected reduction dim ", d,
                      " to have non-zero size.");
}

namespace {

std::vector<dlprim::ReduceDim> dims_of(const at::Tensor& self, const DimMask& mask, bool keepdim,
                                       const std::vector<at::Tensor>& outs) {
  std::vector<dlprim::ReduceDim> dims;
  int64_t out_dim = 0;
  for (int64_t d = 0; d < self.dim(); ++d) {
    dlprim::ReduceDim r;
    r.size = self.size(d);
    r.in_stride = self.stride(d);
    r.reduced = mask[d];
    if (!r.reduced || keepdim) {
      for (size_t k = 0; k < outs.size(); ++k) r.out_stride[k] = outs[k].stride(out_dim);
      ++out_dim;
    }
    dims.push_back(r);
  }
  return dims;
}

} // namespace

void launch_reduction(const dlprim::ReduceOp& op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                      const std::vector<at::Tensor>& outs_in, c10::ScalarType acc, std::array<double, 2> params,
                      const char* name) {
  check_ocl(self, name, "self");
  TORCH_INTERNAL_ASSERT(static_cast<int>(outs_in.size()) == op.n_outputs);
  std::vector<int64_t> shape = reduced_shape(self, mask, keepdim);
  for (const at::Tensor& o : outs_in) {
    check_ocl(o, name, "out");
    TORCH_CHECK(o.device() == self.device(), name, ": expected the output on ", self.device(), " but it is on ",
                o.device());
    at::native::resize_output(o, shape);
  }
  if (outs_in[0].numel() == 0) return;
  c10::DeviceGuard guard(self.device());

  // Results that alias the input (or too many unmergeable dims) go through temporaries.
  std::vector<at::Tensor> outs = outs_in;
  bool copy_back = false;
  for (at::Tensor& o : outs)
    if (at::get_overlap_status(o, self) != at::MemOverlapStatus::No) {
      o = at::empty(shape, o.options());
      copy_back = true;
    }
  at::Tensor input = self;
  dlprim::ReduceShape rshape;
  if (!dlprim::describe_reduction(op, dims_of(input, mask, keepdim, outs), rshape)) {
    // Kept dims first, reduced dims last, in a contiguous copy: each group merges into one dim.
    std::vector<int64_t> perm;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t d = 0; d < self.dim(); ++d)
        if (mask[d] == (pass == 1)) perm.push_back(d);
    input = self.permute(perm).contiguous();
    DimMask pmask;
    for (size_t i = 0; i < perm.size(); ++i) pmask[i] = mask[perm[i]];
    for (at::Tensor& o : outs)
      if (!o.is_contiguous()) {
        o = at::empty(shape, o.options());
        copy_back = true;
      }
    // With keepdim the outputs keep size-1 dims in the original order; drop them (they do not
    // affect offsets) by viewing the outputs with the kept dims only.
    std::vector<at::Tensor> flat;
    for (const at::Tensor& o : outs) flat.push_back(o.view(reduced_shape(self, mask, false)));
    TORCH_CHECK(dlprim::describe_reduction(op, dims_of(input, pmask, false, flat), rshape), name,
                ": cannot describe the reduction of shape ", self.sizes());
  }

  int device = self.device().index();
  dlprim::Context& ctx = context(device);
  BufferRef in_buf = buffer_of(input);
  dlprim::ReduceTensor in{to_dlprim(input.scalar_type(), name), in_buf.mem, in_buf.offset / input.itemsize()};
  std::vector<dlprim::ReduceTensor> out_views;
  for (const at::Tensor& o : outs) {
    BufferRef b = buffer_of(o);
    out_views.push_back({to_dlprim(o.scalar_type(), name), b.mem, b.offset / o.itemsize()});
  }
  dlprim::DType acc_t = to_dlprim(acc, name);
  uint64_t ws_bytes = 0;
  OCL_DLPRIM_CALL(name, ws_bytes = dlprim::reduce_workspace_bytes(ctx, op, acc_t, rshape, in));
  at::Tensor ws;
  BufferRef ws_buf{};
  if (ws_bytes) {
    ws = at::empty({static_cast<int64_t>(ws_bytes)}, self.options().dtype(at::kByte));
    ws_buf = buffer_of(ws);
  }
  OCL_TRACE(name, " in=", self.sizes(), " ", self.scalar_type(), " out=", outs[0].sizes(), " ",
            outs[0].scalar_type(), " acc=", acc, " kept_rank=", rshape.kept_rank,
            " reduced_rank=", rshape.reduced_rank);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::reduce(ctx, q, op, acc_t, rshape, in, out_views, params, ws_buf.mem, ws_buf.offset));
  note_enqueued(q);
  if (copy_back)
    for (size_t k = 0; k < outs.size(); ++k)
      if (!outs[k].is_same(outs_in[k])) outs_in[k].copy_(outs[k]);
}

} // namespace pytorch_ocl
