// pytorch_ocl.Kernel: OpenCL C written by the user, built through the program cache and
// launched on the current stream like any built-in op. Python marshals the arguments;
// this file owns the kernel objects and the launch.
#include "python/Bindings.h"

#include "core/DeferredChecks.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/Stream.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <dlprim/capture.h>
#include <dlprim/context.h>
#include <dlprim/program_cache.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

namespace py = pybind11;

namespace pytorch_ocl {

namespace {

// Argument kinds sent by python/pytorch_ocl/kernel.py. kCheck (torch.compile's kernels with index checks,
// inductor/runtime.py): a device-side check slot (DeferredChecks.h) as a __global int* and its ulong offset; the
// kernel sets it for a bad index, and the host raises the argument's message where it next waits for the queue.
enum ArgKind { kTensor = 0, kBytes = 1, kLocal = 2, kCheck = 3 };

struct CachedKernel {
  std::mutex m;
  cl_kernel k = nullptr;
  cl_uint n_params = 0;
  std::string name;
};

CachedKernel& kernel_for(int device, const std::string& source, const std::string& name, const std::string& options) {
  static std::mutex map_mutex;
  static std::map<std::tuple<int, std::string, std::string, std::string>, CachedKernel> cache;
  CachedKernel* e;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    e = &cache[std::make_tuple(device, source, name, options)];
  }
  std::lock_guard<std::mutex> lock(e->m);
  if (!e->k) {
    std::string what = "Kernel '" + name + "'";
    OCL_DLPRIM_CALL(what.c_str(), e->k = dlprim::create_kernel(context(device).program(source, options), name.c_str()));
    OCL_CHECK(clGetKernelInfo(e->k, CL_KERNEL_NUM_ARGS, sizeof(e->n_params), &e->n_params, nullptr));
    e->name = name;
  }
  return *e;
}

// A built kernel as an integer handle (the address of its entry: std::map nodes never move and
// entries are never erased). Launching by handle skips converting and comparing the source text
// (torch.compile's kernels carry a few KB of prelude each) on every launch.
uintptr_t kernel_ref(int device, const std::string& source, const std::string& name, const std::string& options) {
  return reinterpret_cast<uintptr_t>(&kernel_for(device, source, name, options));
}

void build(int device, const std::string& source, const std::string& name, const std::string& options) {
  kernel_for(device, source, name, options);
}

// Builds many kernels at once on the build threads (dlprim::parallel_builds); per kernel "" or
// the error it raised.
std::vector<std::string> build_many(int device, const std::vector<std::tuple<std::string, std::string, std::string>>& ks) {
  const dlprim::Context& ctx = context(device);  // created here, not by the first build thread
  std::vector<std::string> errors(ks.size());
  py::gil_scoped_release no_gil;
  dlprim::parallel_builds(ctx.info(), ks.size(), [&](size_t i) {
    try {
      kernel_for(device, std::get<0>(ks[i]), std::get<1>(ks[i]), std::get<2>(ks[i]));
    } catch (const std::exception& e) {
      errors[i] = e.what();
    }
  });
  return errors;
}

void launch_entry(CachedKernel& e, int device, const std::vector<py::tuple>& args, const std::vector<size_t>& global,
                  const std::vector<size_t>& local) {
  const std::string& name = e.name;
  TORCH_CHECK(!global.empty() && global.size() <= 3, "Kernel '", name, "': global_size must have 1 to 3 dims");
  TORCH_CHECK(local.empty() || local.size() == global.size(), "Kernel '", name,
              "': local_size must have as many dims as global_size");
  for (size_t d = 0; d < local.size(); ++d)
    TORCH_CHECK(local[d] > 0 && global[d] % local[d] == 0, "Kernel '", name, "': global_size[", d, "]=", global[d],
                " is not a multiple of local_size[", d, "]=", local[d]);
  std::lock_guard<std::mutex> lock(e.m);
  // Arguments set by an earlier call persist on the kernel object: a short argument list
  // would silently reuse them.
  cl_uint supplied = 0;
  for (const py::tuple& a : args) supplied += a[0].cast<int>() == kTensor || a[0].cast<int>() == kCheck ? 2 : 1;
  TORCH_CHECK(supplied == e.n_params, "Kernel '", name, "' takes ", e.n_params, " parameters but the call supplies ",
              supplied, " (each tensor counts as two: a __global pointer and a ulong element offset)");
  cl_command_queue q = current_queue(device);
  dlprim::KernelArgs kargs(e.k);
  DeviceFlag check;
  std::string check_message;
  bool index_error = true;
  auto commit = [&] {  // also after a failure: the slot goes back through the check that frees it
    if (check.slot < 0) return;
    commit_flag(device, q, check, [message = check_message, index_error] {
      TORCH_CHECK_INDEX(!index_error, message);
      TORCH_CHECK(false, message);
    });
  };
  size_t index = 0;
  try {
    for (const py::tuple& a : args) {
      int kind = a[0].cast<int>();
      if (kind == kCheck) {
        TORCH_CHECK(check.mem == nullptr, "Kernel '", name, "': more than one check argument");
        check_message = a[1].cast<std::string>();
        index_error = a.size() < 3 || a[2].cast<bool>();
        // Inside a graph capture nothing reads the slot back: the shared discard slot (the kernel still guards
        // its accesses), as the eager index ops do there
        bool discard = index_check_mode() == IndexCheckMode::Off ||
                       (dlprim::capture::any_active() && dlprim::capture::capturing(q));
        check = acquire_flag(device, q, discard);
        kargs.add(check.mem).add<cl_ulong>(static_cast<cl_ulong>(check.offset));
      } else if (kind == kTensor) {
        at::Tensor t = a[1].cast<at::Tensor>();
        BufferRef buf = buffer_of(t);
        cl_mem mem = buf.mem;
        kargs.add(mem).add<cl_ulong>(buf.offset / t.itemsize());
      } else if (kind == kBytes) {
        std::string bytes = a[1].cast<std::string>();
        kargs.add_raw(bytes.size(), bytes.data());
      } else {
        kargs.add_local(a[1].cast<size_t>());
      }
      ++index;
    }
  } catch (const dlprim::Error& err) {
    commit();
    TORCH_CHECK(false, "Kernel '", name, "': argument ", index, ": ", err.what(),
                " (a tensor takes two kernel parameters: a __global pointer and a ulong element offset)");
  }
  try {
    OCL_DLPRIM_CALL(name.c_str(), dlprim::launch_nd(q, e.k, static_cast<cl_uint>(global.size()), global.data(),
                                                    local.empty() ? nullptr : local.data(), name.c_str()));
  } catch (...) {
    commit();
    throw;
  }
  note_enqueued(q);
  commit();
  if (check.slot >= 0) check_now_if_sync(device, q);
}

void launch(int device, const std::string& source, const std::string& name, const std::string& options,
            const std::vector<py::tuple>& args, const std::vector<size_t>& global, const std::vector<size_t>& local) {
  launch_entry(kernel_for(device, source, name, options), device, args, global, local);
}

void launch_ref(uintptr_t ref, int device, const std::vector<py::tuple>& args, const std::vector<size_t>& global,
                const std::vector<size_t>& local) {
  TORCH_CHECK(ref != 0, "launch_user_kernel_ref: null kernel handle");
  launch_entry(*reinterpret_cast<CachedKernel*>(ref), device, args, global, local);
}

} // namespace

void bind_user_kernels(py::module& m) {
  m.def("build_user_kernel", &build);
  m.def("build_user_kernels", &build_many);
  m.def("launch_user_kernel", &launch);
  m.def("user_kernel_ref", &kernel_ref);
  m.def("launch_user_kernel_ref", &launch_ref);
}

} // namespace pytorch_ocl
