// Complex matrix products on the real GEMM (ComplexGemm.cpp).
#pragma once
#include <ATen/core/Tensor.h>

namespace pytorch_ocl {

// out = beta * d + alpha * (a @ b) for complex a [Z, M, K], b [Z, K, N] (conjugate views
// welcome), out [Z, M, N] (any strides; [1, M, N] when sum_batches: the product summed over z).
// d (may be null or undefined) broadcasts to out; beta == 0 ignores it (NaN included);
// alpha == 0 skips the product when alpha_zero_skips (the BLAS semantics ATen's addmm keeps).
void complex_gemm(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                  const at::Tensor* d, const c10::Scalar& beta, const c10::Scalar& alpha, bool sum_batches,
                  bool alpha_zero_skips);

} // namespace pytorch_ocl
