// getrf of the recursive LU panel's leaves in registers (csrc/aten/LinalgBlocked.cpp, lu_panel), for
// the leaves that fit: the host compiles this file with W (the leaf's columns at most: 4, 8 or 16) and
// LEAF_RPI (rows per work-item) defined and linalg_leaf_common.cl before it, and falls back to linalg.cl's
// linalg_lu for taller leaves. Same T / R / MUL / ABS1 / ... prelude as linalg.cl.

// getrf of a tall leaf (m x w, w <= W) of the recursive LU panel with the leaf in registers: item
// lid holds rows lid, lid + L, ... (LEAF_RPI of them) x W columns, read once and written once; per
// column a two-level group argmax (the first largest ABS1, the ties and NaN rule of linalg_lu: an
// item scans its rows in ascending order with a strict >, the group takes the largest value, then
// the smallest row), the pivot row through local memory (swapped with row k, and the U row every
// item's update reads), the scaling and the rank-1 update of this item's rows. Pivots, info and
// results are linalg_lu's (the same operations in the same order per element). Loops over W and the
// rows are unrolled so x stays in registers (a column picked by comparisons, never by a runtime
// index). bv / bi: one per item; prow / krow: W elements.
// The leaf's place in its panel: pivots written + piv_base (the leaf's first row in the matrix: getrf's
// final pivots, no offset pass), and its interchanges also applied to the nleft panel columns left of the
// leaf and the nright right of it after the factorization (in global memory, an item per column: its own
// program order orders the swaps), so the recursive panel needs no laswp launches of its own; merge_info: info as linalg_lu's;
// solve_rows: the split's U12 after the leaf, as linalg_lu's (sx: solve_rows x solve_cols).

inline bool leaf_better(R v, int i, R bvv, int bii) { return v > bvv || (v == bvv && i < bii); }

__kernel void linalg_lu_leaf(__global T* a, ulong a_o, long bs, long rs, long cs, int m, int w, __global int* piv,
                             ulong piv_o, long piv_bs, __global int* info, ulong info_o, int piv_base, int nleft,
                             int nright, int merge_info, int solve_rows, int solve_cols, __local R* bv,
                             __local int* bi, __local T* prow, __local T* krow, __local T* sx) {
  const long b = get_group_id(0);
  __global T* A = a + a_o + b * bs;
  __global int* P = piv + piv_o + b * piv_bs;
  const int lid = get_local_id(0), L = get_local_size(0);
  T x[LEAF_RPI][W];
  leaf_load(x, A, rs, cs, m, w);
  const int C = min(L, 32), S = L / C;  // chunks of the argmax's first level, their length
  int bad = 0;
  const int kmax = min(m, w);
  for (int k = 0; k < kmax; ++k) {
    R best = -1;
    int besti = k;
#pragma unroll
    for (int r = 0; r < LEAF_RPI; ++r) {
      const int i = r * L + lid;
      const R v = ABS1(leaf_col(x[r], k));
      if (i >= k && i < m && v > best) {
        best = v;
        besti = i;
      }
    }
    bv[lid] = best;
    bi[lid] = besti;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < C) {
      R cb = bv[lid * S];
      int ci = bi[lid * S];
      for (int t = 1; t < S; ++t) {
        const R o = bv[lid * S + t];
        const int oi = bi[lid * S + t];
        if (leaf_better(o, oi, cb, ci)) {
          cb = o;
          ci = oi;
        }
      }
      bv[lid * S] = cb;
      bi[lid * S] = ci;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    R pb = bv[0];
    int p = bi[0];
    for (int c = 1; c < C; ++c) {
      const R o = bv[c * S];
      const int oi = bi[c * S];
      if (leaf_better(o, oi, pb, p)) {
        pb = o;
        p = oi;
      }
    }
    // The pivot row to prow (everyone's U row), row k to krow (the pivot row's new contents).
    if (lid == p % L) {
#pragma unroll
      for (int r = 0; r < LEAF_RPI; ++r)
        if (r == p / L)
#pragma unroll
          for (int j = 0; j < W; ++j) prow[j] = x[r][j];
    }
    if (lid == k % L) {
#pragma unroll
      for (int r = 0; r < LEAF_RPI; ++r)
        if (r == k / L)
#pragma unroll
          for (int j = 0; j < W; ++j) krow[j] = x[r][j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // also: every item has read bv / bi before the next column's writes
    const T pv = prow[k];
    if (lid == 0) P[k] = p + 1 + piv_base;
    if (IS_ZERO(pv) && bad == 0) bad = k + 1;
#pragma unroll
    for (int r = 0; r < LEAF_RPI; ++r) {
      const int i = r * L + lid;
      if (p != k && i == k)
#pragma unroll
        for (int j = 0; j < W; ++j) x[r][j] = prow[j];
      if (p != k && i == p)
#pragma unroll
        for (int j = 0; j < W; ++j) x[r][j] = krow[j];
      if (i > k && i < m) {
        T l = leaf_col(x[r], k);
        if (!IS_ZERO(pv)) l = DIV(l, pv);
#pragma unroll
        for (int j = 0; j < W; ++j) {
          if (j == k) x[r][j] = l;
          if (j > k && j < w) x[r][j] -= MUL(l, prow[j]);
        }
      }
    }
  }
  const int me = leaf_store_item(bi);  // bi: every read of it came before the last column's third barrier
#pragma unroll
  for (int r = 0; r < LEAF_RPI; ++r) {
    const int i = r * L + me;
#pragma unroll
    for (int j = 0; j < W; ++j)
      if (i < m && j < w) AT(A, i, j) = x[r][j];
  }
  if (lid == 0 && !merge_info) info[info_o + b] = bad;
  if (lid == 0 && merge_info && bad && info[info_o + b] == 0) info[info_o + b] = bad + piv_base;
  // The interchanges over the rest of the panel after the leaf, where x is dead (inside the column loop they
  // would hold registers through it): nobody else reads those columns meanwhile, and each item replays the
  // pivots in order on its own columns.
  if (nleft + nright > 0) {
    barrier(CLK_GLOBAL_MEM_FENCE);  // P, written by item 0
    for (int e = lid; e < nleft + nright; e += L) {
      const int j = e < nleft ? e - nleft : w + e - nleft;
      for (int k = 0; k < kmax; ++k) {
        const int p = P[k] - 1 - piv_base;
        if (p != k) {
          const T t = AT(A, k, j);
          AT(A, k, j) = AT(A, p, j);
          AT(A, p, j) = t;
        }
      }
    }
  }
  if (solve_rows > 0) lu_leaf_solve(A, rs, cs, w, solve_rows, solve_cols, sx);
}
