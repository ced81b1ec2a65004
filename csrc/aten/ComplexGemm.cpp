// Complex matrix products on the real GEMM: one real GEMM of 4 real products per complex one.
// A [Z, M, K] complex read as real [Z, M, 2K] (re, im interleaved: its view_as_real) times the
// real [Z, 2K, 2N] matrix whose rows 2k, 2k+1 are B[k] and iB[k] as (re, im) pairs gives
// [Z, M, 2N] = (re, im) pairs of A @ B:
//   sum_k (a_re b_re - a_im b_im, a_re b_im + a_im b_re)
// so the result is the complex product with no unpacking, in one launch of the tuned real GEMM
// (twice the flops of Gauss's 3-product form, but none of its cancellation). alpha, beta and
// the addend are applied by the complex pointwise ops afterwards.
#include "aten/ComplexGemm.h"
#include "aten/GemmRunner.h"

#include <ATen/ops/add.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>

namespace pytorch_ocl {

void complex_gemm(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out,
                  const at::Tensor* d, const c10::Scalar& beta, const c10::Scalar& alpha, bool sum_batches,
                  bool alpha_zero_skips) {
  TORCH_CHECK(a.dim() == 3 && b.dim() == 3, op, ": internal: complex GEMM takes 3-D operands");
  TORCH_CHECK(a.scalar_type() != c10::kComplexHalf, op, ": dtype ComplexHalf is not supported on the ocl device");
  const int64_t Z = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  c10::complex<double> al = alpha.toComplexDouble(), be = beta.toComplexDouble();
  bool use_d = d != nullptr && d->defined() && be != c10::complex<double>(0, 0);
  bool use_product = !(alpha_zero_skips && al == c10::complex<double>(0, 0)) && Z > 0;

  at::Tensor product;  // [Z or 1, M, N] complex
  if (use_product) {
    at::Tensor ar = at::view_as_real(a.resolve_conj()).reshape({Z, M, 2 * K});
    at::Tensor bc = b.resolve_conj();
    at::Tensor bb = at::view_as_real(at::stack({bc, at::mul(bc, c10::Scalar(c10::complex<double>(0, 1)))}, 2))
                        .reshape({Z, 2 * K, 2 * N});
    at::Tensor r = at::empty({Z, M, 2 * N}, ar.options());
    GemmCall c;
    c.op = op;
    c.a = ar;
    c.b = bb;
    c.out = r;
    run_gemm(c);
    product = at::view_as_complex(r.view({Z, M, N, 2}));
    if (sum_batches) product = at::sum(product, {0}, /*keepdim=*/true);
    if (al != c10::complex<double>(1, 0)) product = at::mul(product, alpha);
  }
  const at::Tensor& dst = out;
  at::Tensor addend = use_d ? d->expand(dst.sizes()) : at::Tensor();
  if (product.defined() && addend.defined()) {
    dst.copy_(at::add(product, addend, beta));
  } else if (product.defined()) {
    dst.copy_(product.expand(dst.sizes()));
  } else if (addend.defined()) {
    dst.copy_(at::mul(addend, beta));
  } else {
    dst.zero_();
  }
}

} // namespace pytorch_ocl
