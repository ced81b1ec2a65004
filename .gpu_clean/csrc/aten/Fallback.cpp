// Ops without an ocl kernel run on the CPU with a warning naming them (once per op),
// and are counted; PYTORCH_OCL_STRICT=1 makes them errors instead.
#include "aten/Fallback.h"

#include "core/Trace.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace pytorch_ocl {

namespace {

std::atomic<bool> g_strict{[] {
  const char* v = std::getenv("PYTORCH_OCL_STRICT");
  return v && *v && std::strcmp(v, "0") != 0;
}()};
std::mutex g_mutex;
std::map<std::string, uint64_t> g_counts;

void ocl_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& n = op.schema().operator_name();
  std::string name = n.name + (n.overload_name.empty() ? "" : "." + n.overload_name);
  TORCH_CHECK_NOT_IMPLEMENTED(!g_strict.load(), "ocl: operator '", name,
                              "' is not implemented for the ocl device, and PYTORCH_OCL_STRICT=1 forbids "
                              "running it on the CPU");
  OCL_TRACE("CPU fallback: ", name);
  bool first;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    first = g_counts[name]++ == 0;
  }
  if (first)
    TORCH_WARN("ocl: operator '", name, "' is not implemented for the ocl device; running it on the CPU "
               "(copies to host and back). Set PYTORCH_OCL_STRICT=1 to make this an error.");
  at::native::cpu_fallback(op, stack);
}

} // namespace

std::map<std::string, uint64_t> fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_counts.clear();
}

void set_strict(bool strict) { g_strict = strict; }
bool is_strict() { return g_strict; }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&ocl_fallback>());
}

} // namespace pytorch_ocl
