#include <dlprim/context.h>

#include <chrono>
#include <string>

namespace dlprim {

double measure_launch_us(const Context& ctx, int launches, bool profiling, int n_args, unsigned flush_every,
                         bool set_args_each_launch, int n_scalar_args) {
  std::string params;
  for (int i = 0; i < n_args + n_scalar_args; ++i)
    params += (i ? ", " : "") + std::string(i < n_args ? "__global float* p" : "ulong p") + std::to_string(i);
  if (params.empty()) params = "void";
  cl_program prog = ctx.program("__kernel void probe(" + params + ") {}");
  cl_kernel k = create_kernel(prog, "probe");
  cl_int err = CL_SUCCESS;
  cl_command_queue q =
      clCreateCommandQueue(ctx.context(), ctx.device(), profiling ? CL_QUEUE_PROFILING_ENABLE : 0, &err);
  DLPRIM_CL_CHECK(err);
  cl_mem buf = clCreateBuffer(ctx.context(), CL_MEM_READ_WRITE, 4096, nullptr, &err);
  DLPRIM_CL_CHECK(err);
  size_t global = 256, local = 64;
  auto run = [&](int n) {
    auto set_args = [&]() {
      KernelArgs args(k);
      for (int a = 0; a < n_args; ++a) args.add(buf);
      for (int a = 0; a < n_scalar_args; ++a) args.add<cl_ulong>(a);
    };
    if (!set_args_each_launch) set_args();
    for (int i = 0; i < n; ++i) {
      if (set_args_each_launch) set_args();
      DLPRIM_CL_CHECK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
      if (flush_every && (i + 1) % flush_every == 0) clFlush(q);
    }
    clFinish(q);
  };
  run(100);
  auto t0 = std::chrono::steady_clock::now();
  run(launches);
  auto t1 = std::chrono::steady_clock::now();
  clReleaseMemObject(buf);
  clReleaseCommandQueue(q);
  clReleaseKernel(k);
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / launches;
}

} // namespace dlprim
