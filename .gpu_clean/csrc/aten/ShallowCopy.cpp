// _has_compatible_shallow_copy_type for ocl tensors: whether `from`'s TensorImpl can be copied
// into `self` (`param.data = t`, and Module.to(), which keeps a parameter object and swaps its
// data only when this says yes). Torch's own check lists the dense backends it knows (CPU, CUDA,
// MPS, HIP, XPU, HPU, MTIA) and not PrivateUse1, so `model.to("ocl")` used to build a new
// Parameter per module attribute: parameters shared by two modules (tied input/output
// embeddings) became two independent tensors on ocl, and the shared weight silently got only one
// of its gradients. A dense ocl tensor is a plain strided TensorImpl, like a CPU or CUDA one.
#include <ATen/core/Tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

bool is_dense(c10::DispatchKeySet ks) {
  constexpr auto backends = c10::DispatchKeySet(
      {c10::BackendComponent::CPUBit, c10::BackendComponent::CUDABit, c10::BackendComponent::MPSBit,
       c10::BackendComponent::HIPBit, c10::BackendComponent::XPUBit, c10::BackendComponent::HPUBit,
       c10::BackendComponent::MTIABit, c10::BackendComponent::PrivateUse1Bit});
  return ks.has_any(c10::DispatchKeySet(c10::DispatchKey::Dense)) && ks.has_any(backends);
}

bool has_compatible_shallow_copy_type(const at::Tensor& self, const at::Tensor& from) {
  if (is_dense(self.key_set()) && is_dense(from.key_set())) return true;
  return self.unsafeGetTensorImpl()->has_compatible_shallow_copy_type(from.key_set());
}

} // namespace

// The op is CompositeImplicitAutograd; with an ocl argument its dispatch key is PrivateUse1's
// (the highest backend bit), behind the autograd key when the tensors are not inference tensors.
TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) {
  m.impl("_has_compatible_shallow_copy_type", TORCH_FN(has_compatible_shallow_copy_type));
}

} // namespace pytorch_ocl
