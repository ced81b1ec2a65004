#include <dlprim/program_cache.h>

#include "disk_cache.h"

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

namespace dlprim {

namespace {

std::mutex g_mutex;
std::map<std::tuple<cl_context, std::string, std::string>, cl_program> g_programs;
std::atomic<uint64_t> g_builds{0}, g_disk_hits{0};

std::string build_log(cl_program prog, cl_device_id dev) {
  size_t n = 0;
  clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

std::vector<unsigned char> program_binary(cl_program prog) {
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS ||
      size == 0)
    return {};
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

cl_program from_binary(cl_context ctx, const DeviceInfo& dev, const std::vector<unsigned char>& bin,
                       const std::string& options) {
  const unsigned char* ptr = bin.data();
  size_t size = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(ctx, 1, &dev.id, &size, &ptr, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return nullptr;
  }
  if (clBuildProgram(prog, 1, &dev.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return nullptr;
  }
  return prog;
}

cl_program from_source(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& options) {
  const char* src = source.c_str();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
  DLPRIM_CL_CHECK(err);
  err = clBuildProgram(prog, 1, &dev.id, options.c_str(), nullptr, nullptr);
  ++g_builds;
  if (err != CL_SUCCESS) {
    std::string log = build_log(prog, dev.id);
    clReleaseProgram(prog);
    std::string head = source.substr(0, 2000);
    throw Error("OpenCL program build failed on '" + dev.name + "' (" + cl_error_name(err) +
                ", options '" + options + "'). Build log:\n" + log + "\nSource (start):\n" + head);
  }
  return prog;
}

} // namespace

cl_program get_program(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& options) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto key = std::make_tuple(ctx, source, options);
  auto it = g_programs.find(key);
  if (it != g_programs.end()) return it->second;
  DiskCache& disk = DiskCache::instance();
  std::string disk_key = disk.key(dev.cache_identity(), source, options);
  cl_program prog = nullptr;
  std::vector<unsigned char> bin;
  if (disk.load(disk_key, &bin) && !bin.empty()) {
    prog = from_binary(ctx, dev, bin, options);
    if (prog) ++g_disk_hits;
  }
  if (!prog) {
    prog = from_source(ctx, dev, source, options);
    disk.store(disk_key, program_binary(prog));
  }
  g_programs.emplace(key, prog);
  return prog;
}

CacheStats cache_stats() { return {g_builds.load(), g_disk_hits.load()}; }
std::string disk_cache_path() { return DiskCache::instance().path(); }
bool disk_cache_compiled() { return DiskCache::compiled(); }
bool disk_cache_usable() { return DiskCache::instance().usable(); }
std::string disk_cache_warning() { return DiskCache::instance().warning(); }

} // namespace dlprim
