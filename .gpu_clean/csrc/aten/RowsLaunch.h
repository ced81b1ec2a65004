// Describes tensors as rows along one dim for the dlprim scan and softmax kernels.
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/rows.h>

#include <vector>

namespace pytorch_ocl {

// Rows of `tensors` (same sizes) along `dim` (already wrapped; 0-dim tensors are one row of
// one element). False when more than dlprim::kMaxDims row dims cannot be merged.
bool rows_of(const std::vector<at::Tensor>& tensors, int64_t dim, dlprim::RowsShape& shape);

dlprim::RowsTensor rows_tensor(const at::Tensor& t, const char* name);

// The result tensors a rows kernel may write directly: temporaries replace those that overlap
// one of `inputs`; copy_back() then copies them into the originals.
struct RowsOutputs {
  std::vector<at::Tensor> targets, tensors;
  RowsOutputs(const std::vector<at::Tensor>& outs, const std::vector<at::Tensor>& inputs);
  void copy_back();
};

} // namespace pytorch_ocl
