#include "aten/RowMajor.h"

#include "core/TensorUtils.h"

namespace pytorch_ocl {

bool describe_row_major(c10::IntArrayRef sizes, const std::vector<at::TensorBase>& tensors, int keep_trailing,
                        dlprim::RowMajorShape& shape, std::vector<dlprim::StridedOperand>& operands,
                        const char* op) {
  const int64_t ndim = static_cast<int64_t>(sizes.size());
  const int64_t free_dims = std::max<int64_t>(0, ndim - keep_trailing);
  const size_t n = tensors.size();
  std::vector<int64_t> out_sizes;
  std::vector<std::vector<int64_t>> out_strides(n);
  int64_t merge_from = -1;  // index in out_sizes of the last free dim, where merging may continue
  for (int64_t d = 0; d < ndim; ++d) {
    bool is_free = d < free_dims;
    if (is_free && sizes[d] == 1) continue;
    bool merge = is_free && merge_from >= 0;
    for (size_t k = 0; merge && k < n; ++k)
      merge = out_strides[k][merge_from] == tensors[k].stride(d) * sizes[d];
    if (merge) {
      out_sizes[merge_from] *= sizes[d];
      for (size_t k = 0; k < n; ++k) out_strides[k][merge_from] = tensors[k].stride(d);
      continue;
    }
    out_sizes.push_back(sizes[d]);
    for (size_t k = 0; k < n; ++k) out_strides[k].push_back(tensors[k].stride(d));
    merge_from = is_free ? static_cast<int64_t>(out_sizes.size()) - 1 : -1;
  }
  if (out_sizes.size() > static_cast<size_t>(dlprim::kMaxDims)) return false;
  shape = dlprim::RowMajorShape();
  shape.rank = static_cast<int>(out_sizes.size());
  for (int d = 0; d < shape.rank; ++d) shape.sizes[d] = out_sizes[d];
  operands.clear();
  for (size_t k = 0; k < n; ++k) {
    dlprim::StridedOperand o;
    o.dtype = to_dlprim(tensors[k].scalar_type(), op);
    BufferRef buf = buffer_of(tensors[k]);
    o.mem = buf.mem;
    o.offset = buf.offset / tensors[k].itemsize();
    for (int d = 0; d < shape.rank; ++d) o.strides[d] = out_strides[k][d];
    operands.push_back(o);
  }
  return true;
}

} // namespace pytorch_ocl

#include "core/Errors.h"
#include "core/Trace.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

namespace pytorch_ocl {

void launch_positional(const dlprim::PositionalOp& op, c10::ScalarType compute, const at::Tensor& out,
                       const at::Tensor* in, int keep_trailing, const dlprim::PositionalParams& params) {
  const char* name = op.name.c_str();
  check_ocl(out, name, "out");
  if (in) {
    check_ocl(*in, name, "self");
    TORCH_CHECK(in->device() == out.device(), name, ": self is on ", in->device(), " but out is on ", out.device());
  }
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  int device = out.device().index();
  at::Tensor target = out, source;
  if (in) source = *in;
  std::vector<at::TensorBase> tensors{target};
  if (in) tensors.push_back(source);
  dlprim::RowMajorShape shape;
  std::vector<dlprim::StridedOperand> ops;
  if (!describe_row_major(out.sizes(), tensors, keep_trailing, shape, ops, name)) {
    // Too many dims that cannot be merged: work on dense tensors, whose batch dims merge.
    target = at::empty(out.sizes(), out.options());
    tensors = {target};
    if (in) {
      source = in->contiguous();
      tensors.push_back(source);
    }
    TORCH_CHECK(describe_row_major(out.sizes(), tensors, keep_trailing, shape, ops, name), name,
                ": cannot describe shape ", out.sizes());
  }
  OCL_TRACE(name, " ", out.scalar_type(), out.sizes(), " rank=", shape.rank);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::positional(context(device), q, op, to_dlprim(compute, name), shape, ops[0],
                                           in ? &ops[1] : nullptr, params));
  note_enqueued(q);
  if (!target.is_same(out)) out.copy_(target);
}

} // namespace pytorch_ocl
