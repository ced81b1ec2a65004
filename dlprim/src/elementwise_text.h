// Elementwise kernels' OpenCL C: the program head (type macros, the op's prelude) and the text of each
// launch mode's kernel (elementwise.cpp picks a mode per launch and builds these through the program cache).
#pragma once
#include <dlprim/elementwise.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace dlprim {
namespace ew_detail {

// Kernel modes: contiguous (one element per work-item), contiguous vectorized (kVecWidth
// elements per work-item through one aligned vector load/store per operand), strided with
// 32- or 64-bit index math, and rows: 2-D, vectorized along contiguous rows, each input
// either a full row (unit stride) or one value broadcast along the row (stride 0).
enum Mode { kContig = 0, kRows = 2, kVec = 4, kStrided32 = 32, kStrided64 = 64 };
constexpr int kVecWidth = 4;  // elements per work-item of the vectorized contiguous kernel

// Whether any operand or the compute type is float64 (the program then enables cl_khr_fp64).
bool needs_fp64(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins);
// Items one ew_multi launch carries for these operand types (its argument list stays under the device limit).
// Array operands (outputs and non-scalar inputs) of one ew_multi item, and the bytes of the kernel's
// by-value struct { ulong o[slots * arrays]; uint e[slots]; } (ends and offsets).
int multi_arrays(const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins);
size_t multi_meta_bytes(int slots, int arrays);
int multi_slots(size_t param_bytes, DType compute, const std::vector<EwOperand>& outs,
                const std::vector<EwOperand>& ins);
// ew_multi: `slots` items, item j covering work-items [e<j-1>, e<j>) of its own operands; `vec`:
// ew_multi_vec4, kVecWidth elements per work-item (items and array operands aligned to it).
std::string multi_kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                              const std::vector<EwOperand>& ins, int slots, bool vec);
// fp64 pragma, common.cl, the type macros and the op's prelude.
std::string program_head(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins);
// The head plus one kernel per mode.
std::string program_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins, std::initializer_list<Mode> modes);

} // namespace ew_detail
} // namespace dlprim
