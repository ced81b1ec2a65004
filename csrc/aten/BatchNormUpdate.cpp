// _batch_norm_with_update and batch_norm_backward, the batch-norm pair torch.compile and
// torch.export emit (training mode updates the running statistics in place): thin forwards to the
// native native_batch_norm / native_batch_norm_backward (BatchNorm.cpp), as the CPU and CUDA
// kernels forward to theirs, with the CPU's empty reserve tensor.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_batch_norm.h>
#include <ATen/ops/native_batch_norm_backward.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  check_ocl(input, "_batch_norm_with_update", "input");
  auto [out, save_mean, save_invstd] =
      at::native_batch_norm(input, weight, bias, running_mean, running_var, /*training=*/true, momentum, eps);
  at::Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {out, save_mean, save_invstd, reserve};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  check_ocl(grad_out, "batch_norm_backward", "grad_out");
  return at::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                                        update, eps, output_mask);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_batch_norm_with_update", TORCH_FN(batch_norm_with_update));
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward));
}

} // namespace pytorch_ocl
