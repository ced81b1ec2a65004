#include <dlprim/device.h>

#include <algorithm>
#include <cctype>
#include <sstream>

namespace dlprim {

namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, &s[0], nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return "";
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, &s[0], nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
  T v{};
  clGetDeviceInfo(d, what, sizeof(T), &v, nullptr);
  return v;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

DeviceInfo describe(cl_platform_id p, cl_device_id d) {
  DeviceInfo info;
  info.platform = p;
  info.id = d;
  info.name = device_string(d, CL_DEVICE_NAME);
  info.vendor = device_string(d, CL_DEVICE_VENDOR);
  info.platform_name = platform_string(p, CL_PLATFORM_NAME);
  info.driver_version = device_string(d, CL_DRIVER_VERSION);
  info.device_version = device_string(d, CL_DEVICE_VERSION);
  info.opencl_c_version = device_string(d, CL_DEVICE_OPENCL_C_VERSION);
  info.extensions = device_string(d, CL_DEVICE_EXTENSIONS);
  auto type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
  info.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  info.is_cpu = (type & CL_DEVICE_TYPE_CPU) != 0;
  info.compute_units = device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS);
  info.global_mem_size = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE);
  info.local_mem_size = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE);
  info.max_parameter_size = std::max<size_t>(1024, device_value<size_t>(d, CL_DEVICE_MAX_PARAMETER_SIZE));
  info.max_alloc_size = device_value<cl_ulong>(d, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  info.max_work_group_size = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  info.mem_base_addr_align_bytes = device_value<cl_uint>(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  info.fp64 = info.has_extension("cl_khr_fp64");
  info.fp16 = info.has_extension("cl_khr_fp16");
  cl_device_fp_config fp32 = 0;
  if (clGetDeviceInfo(info.id, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp32), &fp32, nullptr) == CL_SUCCESS)
    info.correct_div_sqrt = (fp32 & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  return info;
}

// Whether `entry` of PYTORCH_OCL_DEVICES selects the device at (platform p, device d).
bool matches(const std::string& entry, size_t p, size_t d, const DeviceInfo& info) {
  std::string e = lower(entry);
  if (e == "gpu") return info.is_gpu;
  if (e == "cpu") return info.is_cpu;
  auto colon = e.find(':');
  if (colon != std::string::npos && !e.empty() && std::isdigit(static_cast<unsigned char>(e[0]))) {
    try {
      return std::stoul(e.substr(0, colon)) == p && std::stoul(e.substr(colon + 1)) == d;
    } catch (...) {
      return false;
    }
  }
  return lower(info.name).find(e) != std::string::npos ||
         lower(info.platform_name).find(e) != std::string::npos;
}

} // namespace

bool DeviceInfo::has_extension(const std::string& ext) const {
  std::istringstream in(extensions);
  std::string word;
  while (in >> word)
    if (word == ext) return true;
  return false;
}

std::string DeviceInfo::cache_identity() const {
  return platform_name + "|" + name + "|" + vendor + "|" + driver_version + "|" + device_version;
}

std::vector<DeviceInfo> enumerate_devices(const std::string& filter, std::string* error) {
  struct Found {
    size_t p, d;
    DeviceInfo info;
  };
  std::vector<Found> all;
  cl_uint np = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &np);
  if (err != CL_SUCCESS || np == 0) {
    if (error) *error = err == CL_SUCCESS ? "no OpenCL platform" : cl_error_name(err);
    return {};
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  for (size_t p = 0; p < platforms.size(); ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0)
      continue;
    std::vector<cl_device_id> ids(nd);
    clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
    for (size_t d = 0; d < ids.size(); ++d) all.push_back({p, d, describe(platforms[p], ids[d])});
  }
  std::vector<DeviceInfo> out;
  if (filter.empty()) {
    for (auto& f : all) out.push_back(f.info);
    return out;
  }
  std::vector<bool> taken(all.size(), false);
  std::istringstream in(filter);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    entry.erase(0, entry.find_first_not_of(" \t"));
    entry.erase(entry.find_last_not_of(" \t") + 1);
    if (entry.empty()) continue;
    for (size_t i = 0; i < all.size(); ++i) {
      if (!taken[i] && matches(entry, all[i].p, all[i].d, all[i].info)) {
        taken[i] = true;
        out.push_back(all[i].info);
      }
    }
  }
  return out;
}

} // namespace dlprim
