// Blocked (right-looking) Cholesky, LU with partial pivoting and triangular solves for matrices
// larger than linalg::block_size(): the one-work-group kernels run on nb-wide pieces (diagonal
// blocks, tall panels) and the O(n^3) trailing updates are matmuls on our GEMM, so a large matrix
// is n / nb rounds of a few launches instead of one work-group walking n steps. The same
// algorithms as LAPACK's blocked potrf/getrf/trsm (pivots: each panel's, offset to the matrix).
#include "aten/LinalgCommon.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/where.h>

#include <algorithm>
#include <vector>

namespace pytorch_ocl::linalg {

namespace {

// Rows [r0, r1) and columns [c0, c1) of the matrices of a.
at::Tensor block(const at::Tensor& a, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
  return a.narrow(-2, r0, r1 - r0).narrow(-1, c0, c1 - c0);
}

at::Tensor batch_info(const at::Tensor& a) {
  std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end() - 2);
  return at::empty(shape, a.options().dtype(c10::kInt));
}

// info <- offset + part where info is still 0 and part reports a failure (the first one counts).
void merge_info(const at::Tensor& info, const at::Tensor& part, int64_t offset) {
  info.copy_(at::where(info.eq(0).logical_and(part.gt(0)), part.add(offset), info));
}

} // namespace

void blocked_cholesky(const at::Tensor& a, const at::Tensor& info, int64_t nb, const char* op) {
  const int64_t n = a.size(-1);
  info.zero_();
  at::Tensor part = batch_info(a);
  for (int64_t k0 = 0; k0 < n; k0 += nb) {
    const int64_t k1 = std::min(n, k0 + nb);
    at::Tensor a11 = block(a, k0, k1, k0, k1);
    cholesky_kernel(a11, false, part, op);
    merge_info(info, part, k0);
    if (k1 == n) break;
    at::Tensor a21 = block(a, k1, n, k0, k1);
    // L21 L11^H = A21 is conj(L11) L21^T = A21^T: a solve with conj(L11) on A21's transpose.
    trsm_kernel(a11, a21.mT(), /*lower=*/true, false, false, op, /*conj=*/true);
    at::Tensor a22 = block(a, k1, n, k1, n);
    a22.sub_(at::matmul(a21, a21.mH()));
  }
  a.copy_(a.tril());  // the kernel zeroes the upper part of the diagonal blocks only
}

void blocked_lu(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, int64_t nb, const char* op) {
  const int64_t m = a.size(-2), n = a.size(-1), kmax = std::min(m, n);
  info.zero_();
  at::Tensor part = batch_info(a);
  for (int64_t k0 = 0; k0 < kmax; k0 += nb) {
    const int64_t k1 = std::min(kmax, k0 + nb);
    at::Tensor panel = block(a, k0, m, k0, k1);
    at::Tensor piv = pivots.narrow(-1, k0, k1 - k0);
    lu_kernel(panel, piv, part, op);  // pivots relative to row k0
    merge_info(info, part, k0);
    if (k0 > 0) laswp(block(a, k0, m, 0, k0), piv, false, op);
    if (k1 < n) {
      laswp(block(a, k0, m, k1, n), piv, false, op);
      at::Tensor u12 = block(a, k0, k1, k1, n);
      trsm_kernel(block(a, k0, k1, k0, k1), u12, /*lower=*/true, false, /*unit=*/true, op);
      if (k1 < m) block(a, k1, m, k1, n).sub_(at::matmul(block(a, k1, m, k0, k1), u12));
    }
    piv.add_(k0);
  }
}

void blocked_trsm(const at::Tensor& a, const at::Tensor& x, bool lower, bool unit, int64_t nb, const char* op,
                  bool conj) {
  const int64_t n = x.size(-2);
  conj = conj && x.is_complex();
  auto op_a = [&](const at::Tensor& b) { return conj ? b.conj() : b; };  // the GEMM resolves the view
  if (lower) {
    for (int64_t k0 = 0; k0 < n; k0 += nb) {
      const int64_t k1 = std::min(n, k0 + nb);
      at::Tensor xk = x.narrow(-2, k0, k1 - k0);
      trsm_kernel(block(a, k0, k1, k0, k1), xk, true, false, unit, op, conj);
      if (k1 < n) x.narrow(-2, k1, n - k1).sub_(at::matmul(op_a(block(a, k1, n, k0, k1)), xk));
    }
  } else {
    for (int64_t k1 = n; k1 > 0; k1 -= nb) {
      const int64_t k0 = std::max<int64_t>(0, k1 - nb);
      at::Tensor xk = x.narrow(-2, k0, k1 - k0);
      trsm_kernel(block(a, k0, k1, k0, k1), xk, false, false, unit, op, conj);
      if (k0 > 0) x.narrow(-2, 0, k0).sub_(at::matmul(op_a(block(a, 0, k0, k0, k1)), xk));
    }
  }
}

} // namespace pytorch_ocl::linalg
