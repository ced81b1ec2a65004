// The GEMM path on Hopper's wgmma (gemm_wgmma.cpp, kernels/gemm_wgmma.cl): operands packed into the instruction's
// tile layout (16-bit as they are, float32 as TF32 or 3xTF32's parts), then one kernel with bulk copies and
// mbarriers. On for 16-bit products and float32 ones on the matrix engine on sm_90 devices; PYTORCH_OCL_WGMMA=0,
// PYTORCH_OCL_MMA=0 / emulate or a forced PYTORCH_OCL_GEMM_CONFIG turn it off;
// PYTORCH_OCL_MMA=emulate with PYTORCH_OCL_WGMMA=1 runs its emulation on any device (tests).
#pragma once
#include <dlprim/gemm.h>

#include <string>
#include <vector>

namespace dlprim {
namespace detail {

// Whether gemm() takes this path for `g` (normalised as gemm.cpp's plan: C unit-stride along n): No; Yes (forced by
// PYTORCH_OCL_WGMMA=1, or a product large on every side); Tune: a product where the packing may cost more than the
// engine gains (tuned against the tiled kernels, family "gemm_engine"; without tuning, or with
// PYTORCH_OCL_WGMMA=rule, it takes wgmma).
enum class WgmmaUse { No, Yes, Tune };
WgmmaUse wgmma_use(const Context& ctx, const Gemm& g);
// For Tune: wgmma is taken before the tile configs are tuned where it runs this many times faster than the fallback
// tile config (gemm.cpp; 1.25: tuned configs are rarely > 1/4 faster than it). PYTORCH_OCL_WGMMA_MARGIN (read once;
// tests: 0 takes wgmma first wherever it runs, a large value never); an Error for anything but a number >= 0.
double wgmma_first_margin();
// Workspace: the packed operands.
uint64_t wgmma_workspace_bytes(const Context& ctx, const Gemm& g);
// Packs A and B into `ws` from `ws_off` (a multiple of 16 bytes) and enqueues the product; with `events`, the
// launches' events are appended (tuning times them).
void run_gemm_wgmma(const Context& ctx, cl_command_queue q, const Gemm& g, cl_mem ws, uint64_t ws_off,
                    std::vector<cl_event>* events = nullptr);
// Builds the kernels run_gemm_wgmma takes for `g` (tuning prepares its candidates on build threads).
void prepare_wgmma(const Context& ctx, const Gemm& g);
// "wgmma KIND BMxBNxBK stages=S", for gemm_plan_description.
std::string wgmma_description(const Context& ctx, const Gemm& g);

} // namespace detail
} // namespace dlprim
