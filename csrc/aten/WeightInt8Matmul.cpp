// _weight_int8pack_mm: x [M, K] (float32 / float16 / bfloat16) times an int8 weight [N, K] with one scale
// per output channel [N], torchao's and gpt-fast's int8 weight-only quantized linear.
//
// The weight is dequantized into a float32 scratch matrix and multiplied with the existing GEMM (mm),
// then scaled per column: one GEMM implementation (tiles, autotuning, matrix engines) serves every
// product. Accumulating in float32 and rounding once after the scale, as the CPU kernel does, keeps
// 16-bit results the CPU's to its summation order. The cost is reading a float copy of the weight (4x
// the int8 bytes) where a fused kernel would read the int8 weight once: the bandwidth weight-only
// quantization is meant to save; a GEMM tile loading int8 B blocks is the faster way left for later.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mm.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor weight_int8pack_mm(const at::Tensor& A, const at::Tensor& B, const at::Tensor& scales) {
  // The CPU's checks and messages (aten/src/ATen/native/LinearAlgebra.cpp).
  const char* fn = "_weight_int8pack_mm_ocl";
  auto M = A.size(0);
  auto N = B.size(0);
  auto K = A.size(1);
  TORCH_CHECK(A.dtype() == at::kBFloat16 || A.dtype() == at::kHalf || A.dtype() == at::kFloat, fn,
              " : expect A to be either 32-bit or 16-bit float tensor.");
  TORCH_CHECK(A.dim() == 2, fn, " : expect A to be 2D tensor.");
  TORCH_CHECK(A.stride(1) == 1, fn, " : A must be contiguous on the last dimension.");
  TORCH_CHECK(B.dtype() == at::kChar, fn, " : expect B to be int8 tensor.");
  TORCH_CHECK(B.size(1) == K, fn, " : expect B.size(1) == ", K);
  TORCH_CHECK(B.is_contiguous(), fn, " : expect B to be contiguous.");
  TORCH_CHECK(scales.dim() == 1 && scales.size(0) == N, fn, " : expect scales to be 1d tensor with size ", N);
  TORCH_CHECK(scales.scalar_type() == A.scalar_type(), "expected scalar type ", A.scalar_type(), " but found ",
              scales.scalar_type());
  if (M == 0 || N == 0) return at::empty({M, N}, A.options());
  // int8 values are exact in float32; the 16-bit activations too.
  at::Tensor c = at::mm(A.to(at::kFloat), B.to(at::kFloat).t());
  c.mul_(scales);
  return c.to(A.scalar_type());
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("_weight_int8pack_mm", TORCH_FN(weight_int8pack_mm)); }

} // namespace pytorch_ocl
