// Matrix-engine detection (matrix_engine.h): NVIDIA compute capability from the driver, then one
// mma.sync probe kernel per operand type (kernels/mma_probe.cl), each built and run on one warp with
// all-ones operands and checked for the exact sums.
#include <dlprim/embedded.h>
#include <dlprim/matrix_engine.h>

#include <map>
#include <mutex>
#include <sstream>
#include <vector>

namespace dlprim {

namespace {

constexpr cl_device_info kComputeCapabilityMajorNV = 0x4000;  // cl_nv_device_attribute_query
constexpr cl_device_info kComputeCapabilityMinorNV = 0x4001;

struct Probe {
  const char* define;
  cl_uint one;     // the all-ones operand register (two 16-bit ones, or fp32 1.0 for TF32)
  float expected;  // the reduction length K of the shape
  bool MatrixEngine::*flag;
};

// Builds and runs one probe; "" on success, else why not.
std::string run_probe(const Context& ctx, const Probe& p) {
  cl_mem buf = nullptr;
  cl_command_queue q = nullptr;
  cl_kernel k = nullptr;
  std::string why;
  try {
    cl_program prog = ctx.program(kernel_source("mma_probe"), std::string("-D") + p.define);
    k = create_kernel(prog, "mma_probe");
    cl_int err = CL_SUCCESS;
    buf = clCreateBuffer(ctx.context(), CL_MEM_READ_WRITE, 128 * sizeof(float), nullptr, &err);
    DLPRIM_CL_CHECK(err);
    q = clCreateCommandQueue(ctx.context(), ctx.device(), 0, &err);
    DLPRIM_CL_CHECK(err);
    KernelArgs(k).add(buf).add<cl_uint>(p.one);
    size_t global = 32, local = 32;
    DLPRIM_CL_CHECK(clEnqueueNDRangeKernel(q, k, 1, nullptr, &global, &local, 0, nullptr, nullptr));
    std::vector<float> out(128, -1.0f);
    DLPRIM_CL_CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, out.size() * sizeof(float), out.data(), 0, nullptr, nullptr));
    for (float v : out)
      if (v != p.expected) {
        std::ostringstream s;
        s << "wrong sum " << v << " (expected " << p.expected << ")";
        why = s.str();
        break;
      }
  } catch (const std::exception& e) {
    why = e.what();
    why = why.substr(0, why.find('\n'));
  }
  if (k) clReleaseKernel(k);
  if (buf) clReleaseMemObject(buf);
  if (q) clReleaseCommandQueue(q);
  return why;
}

MatrixEngine probe(const Context& ctx) {
  MatrixEngine m;
  const DeviceInfo& info = ctx.info();
  if (info.has_extension("cl_intel_subgroup_matrix_multiply_accumulate")) {
    m.kind = "intel-dpas";
    m.detail = "cl_intel_subgroup_matrix_multiply_accumulate listed; not probed";
    return m;
  }
  if (!info.has_extension("cl_nv_device_attribute_query")) {
    m.detail = "no vendor matrix extension (" + info.vendor + ")";
    return m;
  }
  cl_uint major = 0, minor = 0;
  clGetDeviceInfo(ctx.device(), kComputeCapabilityMajorNV, sizeof(major), &major, nullptr);
  clGetDeviceInfo(ctx.device(), kComputeCapabilityMinorNV, sizeof(minor), &minor, nullptr);
  m.cc_major = static_cast<int>(major);
  m.cc_minor = static_cast<int>(minor);
  if (major < 8) {  // mma.sync with f32 accumulation of tf32/bf16 operands needs sm_80
    m.detail = "compute capability " + std::to_string(major) + "." + std::to_string(minor) + " < 8.0";
    return m;
  }
  static const Probe probes[] = {{"MMA_TF32", 0x3f800000u, 8.0f, &MatrixEngine::tf32},
                                 {"MMA_BF16", 0x3f803f80u, 16.0f, &MatrixEngine::bf16},
                                 {"MMA_FP16", 0x3c003c00u, 16.0f, &MatrixEngine::fp16}};
  std::string failures;
  for (const Probe& p : probes) {
    std::string why = run_probe(ctx, p);
    m.*(p.flag) = why.empty();
    if (!why.empty()) failures += std::string(failures.empty() ? "" : "; ") + p.define + ": " + why;
  }
  if (m.tf32 || m.bf16 || m.fp16) m.kind = "nvidia-mma";
  m.detail = failures.empty() ? "mma.sync probes passed" : failures;
  return m;
}

} // namespace

std::string MatrixEngine::describe() const {
  std::ostringstream s;
  s << kind;
  if (kind == "nvidia-mma") {
    s << " (sm_" << cc_major << cc_minor << ":" << (tf32 ? " tf32" : "") << (bf16 ? " bf16" : "")
      << (fp16 ? " fp16" : "") << ")";
  } else if (!detail.empty()) {
    s << " (" << detail << ")";
  }
  return s.str();
}

const MatrixEngine& matrix_engine(const Context& ctx) {
  static std::mutex mutex;
  static std::map<cl_context, MatrixEngine> found;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = found.find(ctx.context());
  if (it == found.end()) it = found.emplace(ctx.context(), probe(ctx)).first;
  return it->second;
}

} // namespace dlprim
