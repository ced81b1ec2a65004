// General matrix multiply on strided, batched operands with a fused epilogue:
//   C[b, g] = act(alpha * sum_o op(A)[b, g, o] @ op(B)[b, g, o] + beta * D[b, g])
// A is M x K, B is K x N, C and D are M x N. Transposes are strides: A needs a unit stride
// along k or along m (likewise B along n or k); C and D take any strides (D strides of 0
// broadcast a bias along M or N). f16/bf16 are computed in float, f64 in double, integers
// in their own type (wrapping, as the CPU's; one work-item per output, alpha/beta as integers).
//
// The work goes to one of three kernel families: a tiled register-blocked kernel whose tile
// parameters are autotuned per device and shape class (see autotune.h), one work-item per
// output for tiny problems, or one work-group per output for dot/matrix-vector shapes.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

enum class Activation { None = 0, Relu = 1, Gelu = 2, GeluTanh = 3 };

// What a float32 product may do on a matrix engine (matrix_engine.h); other dtypes ignore it (16-bit
// products use the engine whenever the device has one). Exact: fp32 accuracy -- on an engine with TF32 the
// 3xTF32 kernel (each input split into two TF32 parts, three products: within the fp32 error bound, faster
// than FMA there), else the FMA kernels; PYTORCH_OCL_3XTF32=0 keeps FMA. Tf32: inputs rounded to TF32
// (torch's 'high'/'medium' matmul precision, torch.backends.cudnn.allow_tf32 for convolutions). Tf32x3:
// 3xTF32 wherever the engine has TF32.
enum class Fp32Math { Exact = 0, Tf32 = 1, Tf32x3 = 2 };

// Element (r, c) of batch entry (b, g), slice o: offset + b * batch_stride + g * group_stride
// + o * outer_stride + r * row_stride + c * col_stride, all in elements.
struct GemmMatrix {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
  int64_t row_stride = 0, col_stride = 1;
  int64_t batch_stride = 0, group_stride = 0;
  int64_t outer_stride = 0;  // A and B only
};

struct Gemm {
  DType dtype = DType::F32;  // of A and B, and of C and D unless c_dtype says otherwise
  // C and D may instead have the accumulation type (compute_dtype(dtype)), for intermediate
  // results of 16-bit products that should not be rounded to 16 bits.
  DType c_dtype = DType::F32;
  bool c_dtype_set = false;  // false: C and D have `dtype`
  int64_t M = 0, N = 0, K = 0;
  int64_t batch = 1;    // independent products (index b)
  int64_t groups = 1;   // a second batch level (index g); entry z = b * groups + g
  int64_t k_outer = 1;  // products summed into each output (addbmm, conv weight gradients)
  double alpha = 1, beta = 0;
  // BLAS semantics: alpha == 0 skips the product (NaN/inf in A or B do not propagate).
  // ATen follows it for addmm/addmv/addbmm but not for baddbmm/addr; those clear this.
  bool alpha_zero_skips = true;
  bool has_d = false;   // D is read only when set (so beta == 0 ignores NaN in D)
  Activation act = Activation::None;
  Fp32Math fp32_math = Fp32Math::Exact;
  GemmMatrix a, b, c, d;
};

// Bytes of scratch memory gemm() needs for `g` (split-K partial sums); 0 when none.
// Planning may autotune (once per device and shape class).
uint64_t gemm_workspace_bytes(const Context& ctx, const Gemm& g);
// Enqueues the product on `q`. `workspace` must hold gemm_workspace_bytes(ctx, g) bytes
// from `workspace_offset` (it may be null when that is 0). Throws Error for unsupported
// dtypes (f64 without cl_khr_fp64, bool) and operands without a unit stride.
void gemm(const Context& ctx, cl_command_queue q, const Gemm& g, cl_mem workspace = nullptr,
          uint64_t workspace_offset = 0);
// Which kernel gemm() runs for `g`, e.g. "tiled 128x128x16 t16x16 v4x4 local splits=1"; for
// tests and benchmarks.
std::string gemm_plan_description(const Context& ctx, const Gemm& g);

} // namespace dlprim
