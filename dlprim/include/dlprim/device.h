// Enumeration of OpenCL devices across platforms, in a stable order.
#pragma once
#include <dlprim/cl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name, vendor, platform_name, driver_version, device_version, opencl_c_version;
  std::string extensions;
  bool is_gpu = false, is_cpu = false;
  uint32_t compute_units = 0;
  uint64_t global_mem_size = 0, local_mem_size = 0, max_alloc_size = 0;
  size_t max_work_group_size = 0;
  size_t max_parameter_size = 1024;  // CL_DEVICE_MAX_PARAMETER_SIZE: kernel argument bytes (1024 at least)
  uint32_t mem_base_addr_align_bytes = 0;
  bool fp64 = false, fp16 = false;
  // CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: every program is then built with
  // -cl-fp32-correctly-rounded-divide-sqrt (IEEE float division and sqrt, as CUDA's defaults and the CPU).
  bool correct_div_sqrt = false;

  bool has_extension(const std::string& ext) const;
  // NVIDIA's OpenCL (its compiler options, build threading and PTX editing differ from everyone else's).
  bool is_nvidia() const { return vendor.find("NVIDIA") != std::string::npos; }
  // Identifies the compiled-code compatibility domain (for the on-disk binary cache).
  std::string cache_identity() const;
};

// All OpenCL devices of all platforms, platform order then device order, optionally
// filtered and ordered by the spec in `filter` (see PYTORCH_OCL_DEVICES in the README):
// a comma separated list of entries "P:D" (platform index, device index), "gpu", "cpu",
// or a case-insensitive substring of the device or platform name.
// Never throws: a machine without an OpenCL loader or platform has no devices.
std::vector<DeviceInfo> enumerate_devices(const std::string& filter, std::string* error = nullptr);

} // namespace dlprim
