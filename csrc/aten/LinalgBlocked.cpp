// Blocked (right-looking) Cholesky, LU with partial pivoting and triangular solves for matrices
// larger than linalg::block_size(): the one-work-group kernels run on nb-wide pieces (diagonal
// blocks, tall panels) and the O(n^3) trailing updates are matmuls on our GEMM, so a large matrix
// is n / nb rounds of a few launches instead of one work-group walking n steps. The same
// algorithms as LAPACK's blocked potrf/getrf/trsm (pivots: absolute, as the panel's leaves write them).
// Householder QR (geqrf, orgqr) the same way: the one-work-group kernels on nb-column panels, the
// reflectors of a panel applied to the rest at once in compact WY form, H_1 ... H_nb = I - V T V^H
// (LAPACK's ?larft + ?larfb), so the O(n^3) part is two matmuls per panel (and V^H V, and T's small product).
#include "aten/LinalgCommon.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/baddbmm.h>
#include <ATen/ops/diag_embed.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eye.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <dlprim/env.h>

#include <algorithm>
#include <cstdlib>
#include <utility>
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

// c -= a @ b as one GEMM with beta 1, alpha -1 into c itself (a strided block of the work matrix),
// instead of a product then an elementwise pass over c; batches of more than one dim take the two steps.
// Operands may be other blocks of c's own matrix: the GEMM runner sees that disjoint blocks of one
// column- or row-major matrix do not overlap (GemmRunner.cpp, disjoint_blocks) and writes c in
// place; anything it cannot prove apart makes it write a temporary and copy it back.
void sub_product(const at::Tensor& c, const at::Tensor& a, const at::Tensor& b) {
  if (c.dim() == 2) {
    c.addmm_(a, b, 1, -1);
  } else if (c.dim() == 3) {
    c.baddbmm_(a, b, 1, -1);
  } else {
    c.sub_(at::matmul(a, b));
  }
}

// A GEMM operand from another block of x's own matrix: x itself for one matrix (see sub_product),
// for a batch a copy in x's layout (the runner proves only single matrices' blocks apart; a copy
// of the thin panel, O(n nb), beats its temporary of the trailing block, O(n^2)). Column-major
// stays column-major: a straight copy (clone() of a non-dense view is a transposing one).
at::Tensor operand(const at::Tensor& x) {
  if (x.dim() == 2) return x;
  return x.stride(-2) == 1 && x.stride(-1) != 1 ? x.mT().clone().mT() : x.clone();
}

// An uninitialized matrix of a's shape, column-major (the layout of the panels the GEMMs read with it).
at::Tensor empty_col_major(const at::Tensor& a) {
  std::vector<int64_t> shape = a.sizes().vec();
  std::swap(shape.end()[-1], shape.end()[-2]);
  return at::empty(shape, a.options()).mT();
}

// A copy of the unit lower trapezoidal V whose columns are a panel's reflectors (below the diagonal),
// column-major, in one launch.
at::Tensor reflectors(const at::Tensor& panel, const char* op) {
  at::Tensor v = empty_col_major(panel);
  unit_lower_kernel(panel, v, op);
  return v;
}

// The upper triangular T of H_1 ... H_k = I - V T V^H (H_i = I - tau_i v_i v_i^H). Not ?larft's
// column recurrence (k dependent matrix-vector products) but its closed form from vhv = V^H V:
// T^-1 = diag(1 / tau) + strict upper part of V^H V. A reflector with tau_i = 0 is the identity:
// its row and column of T^-1 are cut out (diagonal 1 to keep it invertible), then T_ii set to 0.
// This is the off-chip form (a dozen launches), where the WY kernel (wy_times) does not fit.
at::Tensor wy_factor_off_chip(const at::Tensor& vhv, const at::Tensor& tau, const char* op) {
  at::Tensor nz = tau.ne(0);
  at::Tensor keep = nz.unsqueeze(-1).logical_and(nz.unsqueeze(-2));
  at::Tensor s = vhv.triu(1);
  at::Tensor tinv = at::where(keep, s, at::zeros_like(s))
                        .add_(at::diag_embed(at::where(nz, at::reciprocal(tau), at::ones_like(tau))));
  const int64_t k = tau.size(-1);
  at::Tensor t = at::eye(k, tau.options()).expand(tinv.sizes()).contiguous();
  trsm_kernel(tinv, t, /*lower=*/false, false, false, op);  // k <= nb: one kernel
  return t.mul_(nz.unsqueeze(-2));
}

// T y, or T^H y (adjoint), for the T of v's reflectors (wy_factor_off_chip): on GPUs the V^H V GEMM and
// one kernel that builds T in local memory and multiplies (wy_factor_kernel with y; every group of y's
// columns rebuilds T, cheap in parallel there, not on CPU devices: wy_product_on_chip), else that kernel
// writing T and a GEMM for the product; off chip T's launches and the GEMM.
at::Tensor wy_times(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& y, bool adjoint, const char* op) {
  at::Tensor vhv = at::matmul(v.mH(), v).resolve_conj();
  at::Tensor yr = y.resolve_conj();
  at::Tensor t;
  if (flat_batches(vhv) && flat_batches(yr)) {
    if (wy_product_on_chip(vhv)) {
      at::Tensor w = at::empty(yr.sizes(), yr.options());
      if (wy_factor_kernel(vhv, tau, w, op, yr, adjoint)) return w;
    }
    t = at::empty(vhv.sizes(), vhv.options());
    if (!wy_factor_kernel(vhv, tau, t, op)) t = at::Tensor();
  }
  if (!t.defined()) t = wy_factor_off_chip(vhv, tau, op);
  return at::matmul(adjoint ? t.mH() : t, yr);
}

// inv(T) of the nb x nb triangular diagonal blocks t (lower or upper as given; unit: ones taken
// on the diagonal): one trsm kernel on an identity (nb^3 / 6 work per block), so the wide solve
// against T in blocked potrf is one GEMM (L21 = A21 inv(L11)^H) over all compute units instead of the
// trsm kernel's nb dependent steps per column chunk; potrf's L11 inverse is as accurate as the solve
// (?trtri then ?trmm is MAGMA's way too). (getrf's U12 is lu_swap_solve_kernel's, with its row swaps.)
at::Tensor tri_inverse(const at::Tensor& t, bool lower, bool unit, const char* op) {
  at::Tensor inv = at::eye(t.size(-1), t.options()).expand(t.sizes()).contiguous();
  trsm_kernel(t, inv, lower, false, unit, op);
  return inv;
}

// Columns per leaf of a recursive panel from the environment (PYTORCH_OCL_LU_LEAF, PYTORCH_OCL_QR_LEAF),
// else 0 (leaf_width decides).
int64_t leaf_setting(const char* name) {
  const char* v = dlprim::env_value(name);  // under the environment lock
  const int64_t leaf = v && *v ? std::atoll(v) : 0;
  return leaf > 0 ? leaf : 0;
}

// The most rows a register leaf of w columns may have (lu_leaf_max_rows, geqrf_leaf_max_rows).
using LeafMaxRows = int64_t (*)(const at::Tensor&, int64_t);

// The leaf width for a panel of m rows: the user's, else 16 (the best of 8 / 16 / 32 in kernel time on
// PoCL at n = 1024 for LU; fewer launches than 8), or the widest of 8 and 4 whose leaf of m rows fits in
// one work-group's registers where a 16-column one does not (the tall panels of large matrices).
int64_t leaf_width(const at::Tensor& panel, int64_t user, LeafMaxRows max_rows) {
  if (user > 0) return user;
  const int64_t m = panel.size(-2);
  if (m <= max_rows(panel, 16)) return 16;
  for (int64_t w : {8, 4})
    if (m <= max_rows(panel, w)) return w;
  return 16;
}

// A leaf: in registers where it fits (lu_leaf_kernel), else the any-size global-memory kernel.
void lu_leaf_any(const at::Tensor& leaf, const at::Tensor& piv, const at::Tensor& info,
                 const dlprim::LuLeafPlace& place, const char* op) {
  if (leaf.size(-1) <= 16 && leaf.size(-2) <= lu_leaf_max_rows(leaf, leaf.size(-1))) {
    lu_leaf_kernel(leaf, piv, info, op, place);
  } else {
    lu_kernel(leaf, piv, info, op, place);
  }
}

// getrf of a tall panel (m x w) by recursive halves (Toledo's / LAPACK's ?getrf2 split): the left
// half is factored, U12 = L11^-1 A12 solved (a w/2-row trsm), A22 -= L21 U12 on our GEMM, then the
// right half below. Only leaves of `leaf` columns run the one-work-group kernel, so its rank-1 updates
// (m w / 2 per column, the bulk of a 64-wide panel on one work-group) cover leaf columns instead of w,
// and the rest is a GEMM over all compute units. The same partial pivoting as the unblocked kernel
// (each column's pivot is the first largest |a| of the updated column). No launches but the leaves and
// GEMMs (dlprim::LuLeafPlace): each leaf writes its pivots absolute (+ its first row, col0: the panel
// sits on the diagonal) and applies its row swaps to the panel's columns outside it (`left` and `right`
// of this sub-panel), which ?getrf2's laswp of the right half before its trsm and of the left half after
// the right half's factorization do in bulk (nothing reads those columns' swapped rows in between: the
// halves' solve and GEMM read their own columns); the left half's last leaf solves the split's U12 after
// itself where its local memory holds it (else a trsm launch): solve_rows / solve_cols, the split that
// this sub-panel's last leaf ends, passed down to right halves. info (contiguous, zeroed before the
// first panel): the leaves keep the first failure's column there (merge_info).
void lu_panel(const at::Tensor& panel, const at::Tensor& piv, const at::Tensor& info, int64_t col0, int64_t leaf,
              int64_t left, int64_t right, int64_t solve_rows, int64_t solve_cols, const char* op) {
  const int64_t m = panel.size(-2), w = panel.size(-1);
  if (w <= leaf_width(panel, leaf, lu_leaf_max_rows)) {
    lu_leaf_any(panel, piv, info, {col0, left, right, /*merge_info=*/true, solve_rows, solve_cols}, op);
    return;
  }
  const int64_t w1 = w / 2;
  const bool fused = lu_leaf_solve_fits(panel, w1, w - w1);
  at::Tensor lhalf = panel.narrow(-1, 0, w1), rhalf = panel.narrow(-1, w1, w - w1);
  lu_panel(lhalf, piv.narrow(-1, 0, w1), info, col0, leaf, left, right + w - w1, fused ? w1 : 0, fused ? w - w1 : 0,
           op);
  at::Tensor u12 = rhalf.narrow(-2, 0, w1);
  if (!fused) trsm_kernel(lhalf.narrow(-2, 0, w1), u12, /*lower=*/true, false, /*unit=*/true, op);
  sub_product(rhalf.narrow(-2, w1, m - w1), operand(lhalf.narrow(-2, w1, m - w1)), operand(u12));
  lu_panel(rhalf.narrow(-2, w1, m - w1), piv.narrow(-1, w1, w - w1), info, col0 + w1, leaf, left + w1, right,
           solve_rows, solve_cols, op);
}

// rest <- Q^H rest for Q = H_1 ... H_k, v the unit lower trapezoidal V of the reflectors (rows as
// rest's) and tau: I - V T^H V^H (?larfb) in four launches: V^H V and V^H rest on the GEMM, T^H (V^H rest)
// in the kernel that builds T, rest -= V (...) on the GEMM.
void apply_panel_h(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& rest, const char* op) {
  at::Tensor w = wy_times(v, tau, at::matmul(v.mH(), rest), /*adjoint=*/true, op);
  sub_product(rest, v, w);
}

// geqrf of a tall panel (m x w, m >= w) by recursive halves (Elmroth-Gustavson's recursive QR):
// the left half factored, its block reflector applied to the right half (apply_panel_h: GEMMs over
// all compute units), then the right half's rows w1.. factored. Only leaves of `leaf` columns run a
// one-work-group kernel: in registers where they fit (geqrf_leaf_kernel), else linalg_geqrf, whose
// per-column update then covers the leaf's columns instead of the panel's. tau: the panel's slice;
// v (the panel's shape; uninitialized on entry) <- the panel's unit lower trapezoidal V, written by the
// leaf kernels (either) as they finish, each with the zeros of the `top` rows above it (the panel's rows
// above this sub-panel): no zero fill, tril or diagonal-fill launches.
void qr_panel(const at::Tensor& panel, const at::Tensor& tau, const at::Tensor& v, int64_t top, int64_t leaf,
              const char* op) {
  const int64_t m = panel.size(-2), w = panel.size(-1);
  if (w <= leaf_width(panel, leaf, geqrf_leaf_max_rows)) {
    if (w <= 16 && m <= geqrf_leaf_max_rows(panel, w)) {
      geqrf_leaf_kernel(panel, tau, v, op, top);
    } else {
      geqrf_kernel(panel, tau, op, v, top);
    }
    return;
  }
  const int64_t w1 = w / 2;
  at::Tensor left = panel.narrow(-1, 0, w1), right = panel.narrow(-1, w1, w - w1);
  at::Tensor t1 = tau.narrow(-1, 0, w1), v1 = v.narrow(-1, 0, w1);
  qr_panel(left, t1, v1, top, leaf, op);
  apply_panel_h(v1, t1, right, op);
  qr_panel(right.narrow(-2, w1, m - w1), tau.narrow(-1, w1, w - w1), block(v, w1, m, w1, w), top + w1, leaf, op);
}

} // namespace

void blocked_geqrf(const at::Tensor& a, const at::Tensor& tau, int64_t nb, const char* op) {
  const int64_t m = a.size(-2), n = a.size(-1), kmax = std::min(m, n);
  const int64_t leaf = leaf_setting("PYTORCH_OCL_QR_LEAF");
  for (int64_t k0 = 0; k0 < kmax; k0 += nb) {
    const int64_t k1 = std::min(kmax, k0 + nb);
    at::Tensor panel = block(a, k0, m, k0, k1);
    at::Tensor t = tau.narrow(-1, k0, k1 - k0);  // the kernels write tau's slice in place
    at::Tensor v = empty_col_major(panel);
    qr_panel(panel, t, v, 0, leaf, op);
    if (k1 == n) break;
    // The rest of the rows k0.. gets Q_panel^H = I - V T^H V^H, as geqr2 applies H_i^H in turn.
    apply_panel_h(v, t, block(a, k0, m, k1, n), op);
  }
}

void blocked_orgqr(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& out, int64_t nb, const char* op) {
  const int64_t m = out.size(-2), qc = out.size(-1), k = tau.size(-1);
  out.zero_();
  out.diagonal(0, -2, -1).fill_(1);
  // Backward, as ?orgqr: the panel starting at k0 acts on rows k0.. and, with the later panels
  // applied to the identity first, leaves the columns left of k0 (still e_j there) alone.
  for (int64_t k0 = (k - 1) / nb * nb; k0 >= 0; k0 -= nb) {
    const int64_t k1 = std::min(k, k0 + nb);
    at::Tensor vp = reflectors(block(v, k0, m, k0, k1), op);
    at::Tensor q = block(out, k0, m, k0, qc);
    at::Tensor w = wy_times(vp, tau.narrow(-1, k0, k1 - k0), at::matmul(vp.mH(), q), /*adjoint=*/false, op);
    sub_product(q, vp, w);
  }
}

// L21 = A21 inv(L11)^H into a21 (L21 L11^H = A21), a product apart from the trailing block's storage (see
// sub_product), made in a21's layout (column-major: as (conj(inv(L11)) A21^T)^T) so the copy back is straight.
static at::Tensor cholesky_panel(const at::Tensor& a21, const at::Tensor& linv) {
  at::Tensor l21 = a21.stride(-2) == 1 ? at::matmul(linv.conj(), a21.mT()).mT() : at::matmul(a21, linv.mH());
  a21.copy_(l21);
  return l21;
}

// An outer step's diagonal block (w x w) factored in place and inv(L) into linv (w x w, zeros on entry),
// blocked within: leaf-wide blocks by the kernel, halves above that (leaf multiples), and the inverse
// assembled from the halves', inv([[L11, 0], [L21, L22]]) = [[inv11, 0], [-inv22 L21 inv11, inv22]].
static void cholesky_diag_on_chip(const at::Tensor& a11, const at::Tensor& linv, const at::Tensor& inf, int64_t base,
                                  int64_t leaf, const char* op) {
  const int64_t w = a11.size(-1);
  if (w <= leaf) {
    cholesky_block_kernel(a11, linv, inf, base, op);
    return;
  }
  const int64_t h = (w / 2 + leaf - 1) / leaf * leaf;
  at::Tensor i11 = block(linv, 0, h, 0, h), i22 = block(linv, h, w, h, w);
  cholesky_diag_on_chip(block(a11, 0, h, 0, h), i11, inf, base, leaf, op);
  at::Tensor l21 = cholesky_panel(block(a11, h, w, 0, h), i11);
  sub_product(block(a11, h, w, h, w), l21, l21.mH());
  cholesky_diag_on_chip(block(a11, h, w, h, w), i22, inf, base + h, leaf, op);
  sub_product(block(linv, h, w, 0, h), i22, at::matmul(l21, i11));  // 0 - inv22 (L21 inv11), in place
}

// Blocked potrf with the diagonal blocks on chip (cholesky_block_kernel): per block one kernel
// (factor, info, inv(L11)), the panel L21 = A21 inv(L11)^H and the trailing update on our GEMM,
// four launches; the upper triangle zeroed once at the end (the loop reads only the lower one).
// PYTORCH_OCL_CHOLESKY_PANEL (a multiple of nb, default nb): wider outer steps, their diagonal blocks
// blocked within (cholesky_diag_on_chip), so the outer trailing GEMMs run with K = that width.
static void blocked_cholesky_on_chip(const at::Tensor& a, const at::Tensor& info, int64_t nb, const char* op) {
  const int64_t n = a.size(-1);
  const int64_t outer = std::max<int64_t>(1, leaf_setting("PYTORCH_OCL_CHOLESKY_PANEL") / nb) * nb;
  at::Tensor inf = info.is_contiguous() ? info : at::empty(info.sizes(), info.options());
  inf.zero_();
  for (int64_t k0 = 0; k0 < n; k0 += outer) {
    const int64_t k1 = std::min(n, k0 + outer);
    at::Tensor a11 = block(a, k0, k1, k0, k1);
    // The last block needs no inverse unless blocked within (its halves' panels use theirs).
    at::Tensor linv;
    if (k1 - k0 > nb) linv = at::zeros(a11.sizes(), a.options());
    else if (k1 < n) linv = at::empty(a11.sizes(), a.options());
    cholesky_diag_on_chip(a11, linv, inf, k0, nb, op);
    if (k1 == n) break;
    at::Tensor l21 = cholesky_panel(block(a, k1, n, k0, k1), linv);
    sub_product(block(a, k1, n, k1, n), l21, l21.mH());
  }
  a.tril_();
  copy_into(info, inf);
}

void blocked_cholesky(const at::Tensor& a, const at::Tensor& info, int64_t nb, const char* op) {
  if (cholesky_block_fits(a, nb)) {
    blocked_cholesky_on_chip(a, info, nb, op);
    return;
  }
  const int64_t n = a.size(-1);
  info.zero_();
  at::Tensor part = batch_info(a);
  for (int64_t k0 = 0; k0 < n; k0 += nb) {
    const int64_t k1 = std::min(n, k0 + nb);
    at::Tensor a11 = block(a, k0, k1, k0, k1);
    cholesky_kernel(a11, false, part, op);  // zeroes a11's strict upper part
    merge_info(info, part, k0);
    if (k1 == n) break;
    at::Tensor l21 = cholesky_panel(block(a, k1, n, k0, k1), tri_inverse(a11, /*lower=*/true, false, op));
    block(a, k0, k1, k1, n).zero_();  // the upper triangle, a block row at a time (no tril pass)
    sub_product(block(a, k1, n, k1, n), l21, l21.mH());
  }
}

void blocked_lu(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, int64_t nb, const char* op) {
  const int64_t m = a.size(-2), n = a.size(-1), kmax = std::min(m, n);
  const int64_t leaf = leaf_setting("PYTORCH_OCL_LU_LEAF");
  // The leaves keep the first failure in info themselves (run in column order): one zero fill, no merge.
  at::Tensor inf = info.is_contiguous() ? info : at::empty(info.sizes(), info.options());
  inf.zero_();
  // A step: the panel (its leaves write absolute pivots and swap the panel's rows), one launch for the
  // panel's interchanges over the other columns and U12 = L11^-1 A12 (?trsm's forward substitution, a
  // work-item per column), and the trailing update on our GEMM.
  for (int64_t k0 = 0; k0 < kmax; k0 += nb) {
    const int64_t k1 = std::min(kmax, k0 + nb);
    lu_panel(block(a, k0, m, k0, k1), pivots.narrow(-1, k0, k1 - k0), inf, k0, leaf, 0, 0, 0, 0, op);
    lu_swap_solve_kernel(a, pivots, k0, k1, op);
    if (k1 < n && k1 < m)
      sub_product(block(a, k1, m, k1, n), operand(block(a, k1, m, k0, k1)), operand(block(a, k0, k1, k1, n)));
  }
  copy_into(info, inf);
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
      if (k1 < n) sub_product(x.narrow(-2, k1, n - k1), op_a(block(a, k1, n, k0, k1)), xk);
    }
  } else {
    for (int64_t k1 = n; k1 > 0; k1 -= nb) {
      const int64_t k0 = std::max<int64_t>(0, k1 - nb);
      at::Tensor xk = x.narrow(-2, k0, k1 - k0);
      trsm_kernel(block(a, k0, k1, k0, k1), xk, false, false, unit, op, conj);
      if (k0 > 0) sub_product(x.narrow(-2, 0, k0), op_a(block(a, 0, k0, k0, k1)), xk);
    }
  }
}

} // namespace pytorch_ocl::linalg
