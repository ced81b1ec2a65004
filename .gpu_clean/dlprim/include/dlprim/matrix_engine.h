// Which matrix engine (tensor cores and the like) a device offers to OpenCL kernels, found by
// probing rather than by name: NVIDIA's compiler takes inline PTX, so an mma.sync kernel is built and
// run once per context and its answer checked. Nothing uses the engine yet; the GEMM kernels that
// will (issue: matrix engines) read this.
#pragma once
#include <dlprim/context.h>

#include <string>

namespace dlprim {

struct MatrixEngine {
  // "none", "nvidia-mma" (mma.sync through inline PTX) or "intel-dpas" (the device lists
  // cl_intel_subgroup_matrix_multiply_accumulate; not probed yet).
  std::string kind = "none";
  int cc_major = 0, cc_minor = 0;     // NVIDIA compute capability (cl_nv_device_attribute_query)
  bool tf32 = false, bf16 = false, fp16 = false;  // mma.sync shapes that built and gave the right sums
  std::string detail;                 // what was probed, or why there is none
  // One line, e.g. "nvidia-mma (sm_90: tf32 bf16 fp16)" or "none (vendor ...)".
  std::string describe() const;
};

// Probed on the first call for a context, then remembered. Never throws: a probe that fails to
// build or gives a wrong answer leaves its shape off (detail says which).
const MatrixEngine& matrix_engine(const Context& ctx);

} // namespace dlprim
