// A helper process that compiles OpenCL programs for its parent (dlprim/src/build_workers.cpp).
// NVIDIA's OpenCL compiler serializes the builds of one process; separate processes build at the same
// time (16 tuning candidates: 17 s one after another, 3.6 s in 16 processes on an H100), so the tuner's
// candidate builds go to a few of these.
//
//   ocl_build_worker PLATFORM_INDEX DEVICE_INDEX DEVICE_NAME
//
// Standard input and output are one socket to the parent. Requests: u32 options length, options,
// u64 source length, source. Replies: u8 status (0 built, 1 failed), u64 length, then the program
// binary (PTX on NVIDIA) or the build log. Exits at end of input; writes nothing else to the socket.
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

bool read_all(void* p, size_t n) {
  auto* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = read(0, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool write_all(const void* p, size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n) {
    ssize_t r = write(1, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool reply(uint8_t status, const void* data, uint64_t size) {
  return write_all(&status, 1) && write_all(&size, sizeof(size)) && write_all(data, size);
}

cl_device_id find_device(unsigned pi, unsigned di, const char* want) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || pi >= np) return nullptr;
  std::vector<cl_platform_id> plats(np);
  clGetPlatformIDs(np, plats.data(), nullptr);
  cl_uint nd = 0;
  if (clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || di >= nd) return nullptr;
  std::vector<cl_device_id> devs(nd);
  clGetDeviceIDs(plats[pi], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
  char name[512] = {0};
  clGetDeviceInfo(devs[di], CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
  return std::strcmp(name, want) == 0 ? devs[di] : nullptr;  // another order of devices: refuse
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s PLATFORM_INDEX DEVICE_INDEX DEVICE_NAME\n", argv[0]);
    return 2;
  }
  cl_device_id dev = find_device(static_cast<unsigned>(std::atoi(argv[1])), static_cast<unsigned>(std::atoi(argv[2])), argv[3]);
  if (!dev) return 3;
  cl_int err = CL_SUCCESS;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  if (err != CL_SUCCESS) return 4;
  for (;;) {
    uint32_t olen = 0;
    uint64_t slen = 0;
    if (!read_all(&olen, sizeof(olen))) break;
    std::string options(olen, '\0');
    if (!read_all(&options[0], olen) || !read_all(&slen, sizeof(slen))) break;
    std::string source(slen, '\0');
    if (!read_all(&source[0], slen)) break;
    const char* src = source.c_str();
    size_t len = source.size();
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    if (err != CL_SUCCESS) {
      if (!reply(1, "clCreateProgramWithSource failed", 32)) break;
      continue;
    }
    err = clBuildProgram(prog, 1, &dev, options.c_str(), nullptr, nullptr);
    size_t size = 0;
    std::vector<unsigned char> bin;
    if (err == CL_SUCCESS && clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) == CL_SUCCESS &&
        size) {
      bin.resize(size);
      unsigned char* ptr = bin.data();
      if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) bin.clear();
    }
    clReleaseProgram(prog);
    bool ok = bin.empty() ? reply(1, "no binary", 9) : reply(0, bin.data(), bin.size());
    if (!ok) break;
  }
  clReleaseContext(ctx);
  return 0;
}
