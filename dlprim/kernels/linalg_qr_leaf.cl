// geqrf of the recursive QR panel's leaves in registers (csrc/aten/LinalgBlocked.cpp, qr_panel), for the
// leaves that fit: the host compiles this file with W (the leaf's columns at most: 4, 8 or 16) and
// LEAF_RPI (rows per work-item) defined and linalg_leaf_common.cl before it, and falls back to linalg_qr.cl's
// linalg_geqrf for taller leaves. Same T / R / MUL / ... prelude as linalg.cl; LAPACK's reflectors as linalg_geqrf's.

// geqrf of a tall leaf (m x w, w <= W) with the leaf in registers: item lid holds rows lid,
// lid + L, ... (LEAF_RPI of them) x W columns, read once and written once. Per column k one group
// reduction of W sums at once, over the rows below k: s_k = |x|^2 (x: column k below the
// diagonal) and s_j = x^H a_j for the columns j > k (the reflector's v = x / (alpha - beta), so
// v^H a_j = conj(1 / (alpha - beta)) s_j: no second pass after the scaling), with row k (alpha and
// a_kj) through local memory; every item then forms beta, tau and w_j = conj(tau) (a_kj + v^H a_j)
// itself and updates its rows (geqr2's H^H applied to the columns right of k). Three barriers a
// column: the item sums to `part` (stride W + 1), chunk sums to `part2`, the W totals to `fin`.
// krow is double-buffered by column parity (a slow item may still read column k's while others
// write column k + 1's; column k + 2's come after everyone passed column k + 1's first barrier).
// Sizes: part L (W + 1), part2 C W, fin W, krow 2 W, ids L.
// has_v: also write the leaf's unit lower trapezoidal V (reflectors below the diagonal, 1 on it, 0
// above) to v, so the panel's block reflectors need no tril / diagonal-fill copy of their own, and zeros
// to the v_top rows of v's matrix above the leaf (the panel's V starts uninitialized: no zero fill launch).
__kernel void linalg_geqrf_leaf(__global T* a, ulong a_o, long bs, long rs, long cs, int m, int w, __global T* tau,
                                ulong tau_o, long tau_bs, __global T* v, ulong v_o, long v_bs, long v_rs, long v_cs,
                                int has_v, int v_top, __local T* part, __local T* part2, __local T* fin,
                                __local T* krow, __local int* ids) {
  const long b = get_group_id(0);
  __global T* A = a + a_o + b * bs;
  __global T* TAU = tau + tau_o + b * tau_bs;
  const int lid = get_local_id(0), L = get_local_size(0);
  T x[LEAF_RPI][W];
  leaf_load(x, A, rs, cs, m, w);
  // The reduction's second stage: C chunks of S items each (C ~ sqrt(L): the serial sums of the two stages
  // about equal, S + C adds on the column's critical path).
  int C = 1;
  while (C * C < L) C *= 2;
  const int S = L / C;
  const int kmax = min(m, w);
  for (int k = 0; k < kmax; ++k) {
    __local T* kr = krow + (k & 1) * W;
    T xk[LEAF_RPI];
#pragma unroll
    for (int r = 0; r < LEAF_RPI; ++r) {
      const int i = r * L + lid;
      xk[r] = i > k ? leaf_col(x[r], k) : TO_T(0);  // this item's part of x
      if (i == k)
#pragma unroll
        for (int j = 0; j < W; ++j) kr[j] = x[r][j];
    }
#pragma unroll
    for (int j = 0; j < W; ++j) {
      T s = TO_T(0);
      if (j >= k)
#pragma unroll
        for (int r = 0; r < LEAF_RPI; ++r)
          if (r * L + lid > k) s += MUL(CONJ(xk[r]), x[r][j]);  // j == k: |x|^2 (real); R rows skipped
      part[lid * (W + 1) + j] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < W * C; t += L) {
      const int j = t % W, c = t / W;
      T s = TO_T(0);
      for (int u = 0; u < S; ++u) s += part[(c * S + u) * (W + 1) + j];
      part2[c * W + j] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = lid; j < W; j += L) {
      T s = TO_T(0);
      for (int c = 0; c < C; ++c) s += part2[c * W + j];
      fin[j] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const R xn2 = RE(fin[k]);
    const T alpha = kr[k];
    const R ar = RE(alpha), ai = IM(alpha);
    T tk = TO_T(0), new_diag = alpha, scale = TO_T(0);
    if (xn2 != 0 || ai != 0) {  // else H = I (tau 0), as ?larfg
      const R beta = -copysign(sqrt(ar * ar + ai * ai + xn2), ar);
      tk = (TO_T(beta) - alpha) / beta;
      scale = DIV(TO_T(1), alpha - TO_T(beta));
      new_diag = TO_T(beta);
    }
    if (lid == 0) TAU[k] = tk;
    if (!IS_ZERO(tk)) {
      const T ct = CONJ(tk), cs_ = CONJ(scale);
#pragma unroll
      for (int r = 0; r < LEAF_RPI; ++r) xk[r] = MUL(xk[r], scale);  // v (0 outside rows k + 1 .. m - 1)
      // Column by column, w_j formed from local memory where it is used (a W-array of them would
      // hold W more registers through the update).
#pragma unroll
      for (int j = 0; j < W; ++j) {
        if (j > k && j < w) {
          const T wj = MUL(ct, kr[j] + MUL(cs_, fin[j]));
#pragma unroll
          for (int r = 0; r < LEAF_RPI; ++r) {
            const int i = r * L + lid;
            if (i == k) x[r][j] -= wj;
            else if (i > k) x[r][j] -= MUL(xk[r], wj);  // rows above k untouched (no 0 * inf)
          }
        }
      }
#pragma unroll
      for (int r = 0; r < LEAF_RPI; ++r) {
        const int i = r * L + lid;
#pragma unroll
        for (int j = 0; j < W; ++j)
          if (j == k && i >= k) x[r][j] = i == k ? new_diag : xk[r];
      }
    }
  }
  const int me = leaf_store_item(ids);
  __global T* V = v + v_o + b * v_bs;
#pragma unroll
  for (int r = 0; r < LEAF_RPI; ++r) {
    const int i = r * L + me;
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (i < m && j < w) {
        AT(A, i, j) = x[r][j];  // and V's element with it: each x dies at its writes
        if (has_v) V[(long)i * v_rs + (long)j * v_cs] = i > j ? x[r][j] : TO_T(i == j ? 1 : 0);
      }
  }
  if (has_v)
    for (int t = lid; t < v_top * w; t += L) V[(long)(t % v_top - v_top) * v_rs + (long)(t / v_top) * v_cs] = TO_T(0);
}
