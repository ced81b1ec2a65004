// Device memory of another API as an ocl tensor (cl_khr_external_memory_opaque_fd): on NVIDIA a CUDA allocation
// exported as a POSIX file descriptor is imported into the device's OpenCL context, so the two APIs share the bytes
// without a trip through host memory. pytorch_ocl._dist_nccl uses it to hand DDP's gradients to NCCL
// (scripts/probe_cuda_interop.py is the stand-alone check).
#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Stream.h"
#include "python/Bindings.h"

#include <ATen/ATen.h>
#include <c10/core/Storage.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>
#include <torch/csrc/utils/pybind.h>

#include <string>
#include <vector>

namespace pytorch_ocl {
namespace {

// From cl_ext.h (cl_khr_external_memory, cl_nv_device_attribute_query): the library targets the 1.2 headers.
constexpr cl_uint kImportHandleTypes = 0x204F;   // CL_DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR
constexpr cl_ulong kDeviceHandleList = 0x2051;   // CL_DEVICE_HANDLE_LIST_KHR
constexpr cl_ulong kOpaqueFd = 0x2060;           // CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR
constexpr cl_uint kPciBusNv = 0x4008, kPciSlotNv = 0x4009, kPciDomainNv = 0x400A;

using CreateBufferWithProperties = cl_mem (*)(cl_context, const cl_ulong*, cl_mem_flags, size_t, void*, cl_int*);
using AcquireRelease = cl_int (*)(cl_command_queue, cl_uint, const cl_mem*, cl_uint, const cl_event*, cl_event*);

bool imports_opaque_fd(int device) {
  cl_device_id id = device_info(device).id;
  size_t n = 0;
  if (clGetDeviceInfo(id, kImportHandleTypes, 0, nullptr, &n) != CL_SUCCESS || n == 0) return false;
  std::vector<cl_uint> types(n / sizeof(cl_uint));
  if (clGetDeviceInfo(id, kImportHandleTypes, n, types.data(), nullptr) != CL_SUCCESS) return false;
  for (cl_uint t : types)
    if (t == kOpaqueFd) return true;
  return false;
}

struct Imported {
  uintptr_t vbase;
  cl_mem mem;
};

void free_imported(void* ctx) {
  auto* m = static_cast<Imported*>(ctx);
  unregister_external_buffer(m->vbase);
  clReleaseMemObject(m->mem);
  delete m;
}

// `mem` (owned from here) as a uint8 ocl tensor of `nbytes`, at an address range of its own (Allocator.h).
at::Tensor wrap(cl_mem mem, int64_t nbytes, int device) {
  auto* owner = new Imported{register_external_buffer(mem, static_cast<size_t>(nbytes), device), mem};
  c10::DataPtr ptr(reinterpret_cast<void*>(owner->vbase), owner, &free_imported, ocl_device(device));
  c10::Storage storage(c10::Storage::use_byte_size_t(), static_cast<size_t>(nbytes), std::move(ptr), nullptr, false);
  at::Tensor t = at::empty({0}, at::TensorOptions().dtype(at::kByte).device(ocl_device(device)));
  t.set_(storage, 0, {nbytes}, {1});
  return t;
}

at::Tensor import_fd(int fd, int64_t nbytes, int device) {
  check_device_index(device);
  TORCH_CHECK(nbytes > 0, "ocl: import of external memory: size must be positive, got ", nbytes);
  TORCH_CHECK(imports_opaque_fd(device), "ocl: import of external memory: ocl:", device,
              " cannot import opaque file descriptors (no cl_khr_external_memory_opaque_fd)");
  // clCreateBufferWithProperties is OpenCL 3.0 (the build targets 1.2 headers and loaders): looked up at run time
  static auto create = reinterpret_cast<CreateBufferWithProperties>(dlsym(RTLD_DEFAULT, "clCreateBufferWithProperties"));
  TORCH_CHECK(create, "ocl: import of external memory: the OpenCL loader has no clCreateBufferWithProperties");
  dlprim::Context& ctx = context(device);
  const auto& info = device_info(device);
  // A successful import hands the descriptor to the driver (as Vulkan's and CUDA's opaque-fd imports do): NVIDIA's
  // keeps it and closes it when the buffer is released (scripts/probe_cuda_interop.py shows both). Our callers
  // closed `fd` after the import, so the release later closed whatever the process had opened under that number
  // meanwhile (the kernel cache's SQLite file: "disk I/O error" on every op of the 2-GPU runs). The driver gets a
  // duplicate of its own and the caller keeps `fd`; a driver that does not take it leaves the duplicate open for
  // the process's life (one per imported buffer), the safe side of not knowing.
  const int handed = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  TORCH_CHECK(handed >= 0, "ocl: import of external memory: fd ", fd, " is not an open descriptor");
  cl_ulong props[] = {kOpaqueFd, static_cast<cl_ulong>(handed), kDeviceHandleList,
                      reinterpret_cast<cl_ulong>(info.id), 0, 0};
  cl_int err = CL_SUCCESS;
  cl_mem mem = create(ctx.context(), props, CL_MEM_READ_WRITE, static_cast<size_t>(nbytes), nullptr, &err);
  if (err != CL_SUCCESS || !mem) close(handed);  // a failed import leaves the descriptor with its owner: us
  TORCH_CHECK(err == CL_SUCCESS && mem, "ocl: import of external memory (", nbytes, " bytes, fd ", fd,
              ") failed: ", dlprim::cl_error_name(err));
  // The extension asks for the buffer to be acquired on a queue before use; it stays acquired for its life
  // (the other API and we order our accesses by host waits, _dist_nccl.py).
  auto acquire = reinterpret_cast<AcquireRelease>(
      clGetExtensionFunctionAddressForPlatform(info.platform, "clEnqueueAcquireExternalMemObjectsKHR"));
  if (acquire) {
    cl_command_queue q = current_queue(device);
    err = acquire(q, 1, &mem, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clFinish(q);
    if (err != CL_SUCCESS) {
      clReleaseMemObject(mem);
      TORCH_CHECK(false, "ocl: acquiring imported memory failed: ", dlprim::cl_error_name(err));
    }
  }
  return wrap(mem, nbytes, device);
}

// Host memory that a CPU device (PoCL) uses in place (CL_MEM_USE_HOST_PTR) as an ocl tensor: the same sharing of
// bytes between the device and another party (here the host) as an import, where no other API exists; the emulated
// NCCL transport of the distributed tests (_dist_nccl.py, PYTORCH_OCL_DIST_NCCL=emulate) stands on it.
at::Tensor wrap_host(int64_t address, int64_t nbytes, int device) {
  check_device_index(device);
  TORCH_CHECK(nbytes > 0, "ocl: wrap of host memory: size must be positive, got ", nbytes);
  TORCH_CHECK(device_info(device).is_cpu, "ocl: wrap of host memory: ocl:", device,
              " is not a CPU device (a GPU would work on a copy, not on the host's bytes)");
  cl_int err = CL_SUCCESS;
  cl_mem mem = clCreateBuffer(context(device).context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                              static_cast<size_t>(nbytes), reinterpret_cast<void*>(address), &err);
  TORCH_CHECK(err == CL_SUCCESS && mem, "ocl: wrap of host memory failed: ", dlprim::cl_error_name(err));
  return wrap(mem, nbytes, device);
}

// "domain:bus:slot" of an NVIDIA device (cl_nv_device_attribute_query), "" elsewhere: how a CUDA device is
// matched (GPUs of one host may share a bus and differ by slot alone, as on the 2-GPU H200 host).
std::string pci_bus(int device) {
  check_device_index(device);
  cl_device_id id = device_info(device).id;
  cl_uint bus = 0, slot = 0, domain = 0;
  if (clGetDeviceInfo(id, kPciBusNv, sizeof bus, &bus, nullptr) != CL_SUCCESS) return "";
  if (clGetDeviceInfo(id, kPciSlotNv, sizeof slot, &slot, nullptr) != CL_SUCCESS) return "";
  if (clGetDeviceInfo(id, kPciDomainNv, sizeof domain, &domain, nullptr) != CL_SUCCESS) domain = 0;
  return std::to_string(domain) + ":" + std::to_string(bus) + ":" + std::to_string(slot);
}

} // namespace

void bind_external_memory(pybind11::module& m) {
  m.def("_imports_opaque_fd", &imports_opaque_fd, pybind11::arg("device"),
        "Whether ocl:device imports memory exported as an opaque file descriptor (cl_khr_external_memory_opaque_fd).");
  m.def("_import_external_memory", &import_fd, pybind11::arg("fd"), pybind11::arg("nbytes"), pybind11::arg("device"),
        "A uint8 ocl tensor of nbytes over memory another API exported as an opaque file descriptor.");
  m.def("_wrap_host_memory", &wrap_host, pybind11::arg("address"), pybind11::arg("nbytes"), pybind11::arg("device"),
        "A uint8 ocl tensor over host bytes that a CPU device uses in place (CL_MEM_USE_HOST_PTR).");
  m.def("_pci_bus", &pci_bus, pybind11::arg("device"), "\"domain:bus:slot\" of an NVIDIA device, else \"\".");
}

} // namespace pytorch_ocl
