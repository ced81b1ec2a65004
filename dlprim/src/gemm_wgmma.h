// The GEMM path on Hopper's wgmma (gemm_wgmma.cpp, kernels/gemm_wgmma.cl): operands packed into the instruction's
// tile layout (16-bit as they are, float32 as TF32 or 3xTF32's parts), then one kernel with bulk copies and
// mbarriers. On for 16-bit products and float32 ones on the matrix engine on sm_90 devices; PYTORCH_OCL_WGMMA=0,
// PYTORCH_OCL_MMA=0 / emulate or a forced PYTORCH_OCL_GEMM_CONFIG turn it off;
// PYTORCH_OCL_MMA=emulate with PYTORCH_OCL_WGMMA=1 runs its emulation on any device (tests).
#pragma once
#include <dlprim/gemm.h>

#include <string>

namespace dlprim {
namespace detail {

// Whether gemm() takes this path for `g` (normalised as gemm.cpp's plan: C unit-stride along n).
bool wgmma_wanted(const Context& ctx, const Gemm& g);
// Workspace: the packed operands.
uint64_t wgmma_workspace_bytes(const Context& ctx, const Gemm& g);
// Packs A and B into `ws` from `ws_off` (a multiple of 16 bytes) and enqueues the product.
void run_gemm_wgmma(const Context& ctx, cl_command_queue q, const Gemm& g, cl_mem ws, uint64_t ws_off);
// "wgmma KIND BMxBNxBK stages=S", for gemm_plan_description.
std::string wgmma_description(const Context& ctx, const Gemm& g);

} // namespace detail
} // namespace dlprim
