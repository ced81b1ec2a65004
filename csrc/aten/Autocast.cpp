// torch.autocast("ocl"): without a kernel for AutocastPrivateUse1 every op inside the
// context fails to dispatch. Ops fall through (no casting policy yet); torch versions
// that register the fallthrough themselves keep theirs.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>

namespace pytorch_ocl {

namespace {

struct AutocastRegistrar {
  AutocastRegistrar() {
    if (c10::Dispatcher::singleton().hasBackendFallbackForDispatchKey(c10::DispatchKey::AutocastPrivateUse1))
      return;
    lib = std::make_unique<torch::Library>(torch::Library::IMPL, "_", c10::DispatchKey::AutocastPrivateUse1,
                                           __FILE__, __LINE__);
    lib->fallback(torch::CppFunction::makeFallthrough());
  }
  std::unique_ptr<torch::Library> lib;
} g_autocast;

} // namespace
} // namespace pytorch_ocl
