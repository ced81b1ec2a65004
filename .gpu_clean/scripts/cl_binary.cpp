// Builds one OpenCL C file on a device and prints what the driver made of it: the build log (with
// -cl-nv-verbose on NVIDIA: registers and spills per kernel), each kernel's private / local memory
// and work-group limits, and the program binary (PTX on NVIDIA) to a file. For reading what a
// kernel compiled to; the library itself never uses it.
//
//   g++ -O1 -o /tmp/cl_binary scripts/cl_binary.cpp -lOpenCL
//   /tmp/cl_binary kernel.cl out.ptx ["build options"]
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, err);
    std::exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s kernel.cl out.bin [build options]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string src = ss.str();
  cl_platform_id plat;
  cl_device_id dev;
  check(clGetPlatformIDs(1, &plat, nullptr), "clGetPlatformIDs");
  check(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, nullptr), "clGetDeviceIDs");
  cl_int err;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  const char* text = src.c_str();
  cl_program prog = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  const char* opts = argc > 3 ? argv[3] : "";
  cl_int build = clBuildProgram(prog, 1, &dev, opts, nullptr, nullptr);
  size_t n = 0;
  clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
  std::printf("== build log\n%s\n", log.c_str());
  check(build, "clBuildProgram");
  cl_uint nk = 0;
  clCreateKernelsInProgram(prog, 0, nullptr, &nk);
  std::vector<cl_kernel> ks(nk);
  clCreateKernelsInProgram(prog, nk, ks.data(), nullptr);
  for (cl_kernel k : ks) {
    char name[256] = {0};
    clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof(name), name, nullptr);
    cl_ulong priv = 0, local = 0;
    size_t wg = 0;
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof(priv), &priv, nullptr);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local), &local, nullptr);
    clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr);
    std::printf("kernel %s: private %llu B, local %llu B, max work-group %zu\n", name,
                static_cast<unsigned long long>(priv), static_cast<unsigned long long>(local), wg);
  }
  size_t size = 0;
  clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr);
  std::vector<unsigned char> bin(size);
  unsigned char* p = bin.data();
  clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(p), &p, nullptr);
  std::ofstream(argv[2], std::ios::binary).write(reinterpret_cast<const char*>(bin.data()), size);
  std::printf("binary: %zu bytes -> %s\n", size, argv[2]);
  return 0;
}
