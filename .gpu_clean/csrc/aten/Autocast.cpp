// torch.autocast("ocl"): CUDA's casting policy, from torch's own op lists (ATen/autocast_mode.h),
// registered for AutocastPrivateUse1:
//   lower_precision_fp (the autocast dtype): convolutions, matmul family, linear, RNN cells, SDPA;
//   fp32: pointwise ops that lose range in 16 bits, norms, losses, upsampling;
//   fp32_set_opt_dtype: softmax, log_softmax, sum, prod, cumsum, cumprod, vector/matrix norms;
//   promote (widest input type): addcmul, addcdiv, atan2, cross, dot, index_put, scatter_add, ...
// binary_cross_entropy is refused as on CUDA (unsafe in 16 bits; BCEWithLogits is the safe form),
// and every other op falls through. The lists come from the torch the package is built against,
// so they follow torch's CUDA policy version for version. A torch that registers these kernels for
// PrivateUse1 itself keeps its own.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>

namespace pytorch_ocl {

namespace {

// torch's signature lists name these unqualified (they are written for namespace at).
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;

at::Tensor binary_cross_entropy_banned(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                       int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
              "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
              "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
              "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
              "safe to autocast.");
}

bool registered_by_torch(c10::DispatchKey key) {
  auto op = c10::Dispatcher::singleton().findOp({"aten::mm", ""});
  return op && op->hasKernelForDispatchKey(key);
}

struct AutocastRegistrar {
  AutocastRegistrar() {
    constexpr c10::DispatchKey key = c10::DispatchKey::AutocastPrivateUse1;
    if (!c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(key)) {
      fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_", key, __FILE__, __LINE__);
      fallback->fallback(torch::CppFunction::makeFallthrough());
    }
    if (registered_by_torch(key)) return;
    policies = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", key, __FILE__, __LINE__);
    torch::Library& m = *policies;  // the name torch's KERNEL macros register through
    using namespace at;             // torch 2.11's signature lists name at:: types unqualified (DimnameList)
#define OCL_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define OCL_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define OCL_FP32_OPT(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define OCL_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
    AT_FORALL_LOWER_PRECISION_FP(OCL_LOWER)
    AT_FORALL_FP32(OCL_FP32)
    AT_FORALL_FP32_SET_OPT_DTYPE(OCL_FP32_OPT)
    AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
    AT_FORALL_PROMOTE(OCL_PROMOTE)
#undef OCL_LOWER
#undef OCL_FP32
#undef OCL_FP32_OPT
#undef OCL_PROMOTE
    m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"), TORCH_FN(binary_cross_entropy_banned));
  }
  std::unique_ptr<torch::Library> fallback, policies;
} g_autocast;

} // namespace
} // namespace pytorch_ocl
