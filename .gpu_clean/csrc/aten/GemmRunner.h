// Runs dlprim GEMMs on torch tensors: strided operands without copies where a unit stride
// exists, a temporary result when the output overlaps an input, split-K workspace from the
// caching allocator. Shared by the linear-algebra ops and the 1x1 convolution path.
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/gemm.h>

namespace pytorch_ocl {

struct GemmCall {
  const char* op = "gemm";
  at::Tensor a, b;    // [Z, M, K] and [Z, K, N] (any strides; copied only without a unit stride)
  at::Tensor out;     // [Z, M, N] (or [1, M, N] when sum_batches): written, any strides
  at::Tensor d;       // [Z, M, N] addend (expanded views welcome); undefined: none
  double alpha = 1, beta = 0;
  dlprim::Activation act = dlprim::Activation::None;
  bool sum_batches = false;  // out = sum over z of a[z] @ b[z] (addbmm)
  bool alpha_zero_skips = true;  // see dlprim::Gemm (ATen's baddbmm and addr evaluate 0 * product)
};

void run_gemm(const GemmCall& call);

// How float32 matmuls may use the matrix engine, as CUDA users set it:
// torch.set_float32_matmul_precision('high' | 'medium') allows TF32; 'highest' (the default) keeps fp32
// accuracy (3xTF32 on the engine, see dlprim::Fp32Math).
dlprim::Fp32Math matmul_fp32_math();

} // namespace pytorch_ocl
