#include "aten/RowsLaunch.h"

#include "core/TensorUtils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>

namespace pytorch_ocl {

bool rows_of(const std::vector<at::Tensor>& tensors, int64_t dim, dlprim::RowsShape& shape) {
  TORCH_INTERNAL_ASSERT(!tensors.empty() && tensors.size() <= static_cast<size_t>(dlprim::kRowTensors));
  std::vector<int64_t> sizes = tensors[0].sizes().vec();
  std::vector<std::vector<int64_t>> strides;
  for (const at::Tensor& t : tensors) strides.push_back(t.strides().vec());
  if (sizes.empty()) {
    sizes = {1};
    for (auto& s : strides) s = {1};
    dim = 0;
  }
  // Unused slots repeat the first tensor (they never block a merge).
  while (strides.size() < static_cast<size_t>(dlprim::kRowTensors)) strides.push_back(strides[0]);
  return dlprim::describe_rows(sizes, strides, static_cast<int>(dim), shape);
}

dlprim::RowsTensor rows_tensor(const at::Tensor& t, const char* name) {
  BufferRef b = buffer_of(t);
  return {to_dlprim(t.scalar_type(), name), b.mem, b.offset / t.itemsize()};
}

RowsOutputs::RowsOutputs(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& inputs)
    : targets(outs), tensors(outs) {
  for (at::Tensor& o : tensors)
    for (const at::Tensor& in : inputs)
      if (at::get_overlap_status(o, in) != at::MemOverlapStatus::No) {
        o = at::empty(o.sizes(), o.options());
        break;
      }
}

void RowsOutputs::copy_back() {
  for (size_t k = 0; k < targets.size(); ++k)
    if (!tensors[k].is_same(targets[k])) targets[k].copy_(tensors[k]);
}

} // namespace pytorch_ocl
