// On-chip kernels of the blocked factorizations (csrc/aten/LinalgBlocked.cpp): the piece one
// work-group works on is read from global memory once, factored in local memory, and written
// once, so a step costs barriers on local memory instead of a walk over global memory (the
// linalg.cl kernels keep their matrix in global memory and serve any size; these serve the
// block sizes that fit, chosen by the host). Same T / R / MUL / CONJ / ... prelude as linalg.cl.

// Local blocks are row-major with an odd leading dimension (ld = n + 1): a walk down a column
// (consecutive work-items on consecutive rows) hits distinct banks.
#define LS(i, j) s[(i) * ld + (j)]
#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// inv(L) of the lower triangular n x n L in local memory (leading dimension ld), in place, by Gauss-Jordan
// steps (no pivoting: L is triangular): at step k the multipliers -l_ik / l_kk (column k) and row k / l_kk,
// then l_ic += mult_i l_kc for i > k > c; entries above the diagonal stay zero. A zero diagonal gives inf /
// NaN, as trsm would. v: 2 n elements of scratch. Called by the whole group (two barriers a step).
inline void lower_inverse_local(__local T* s, int ld, int n, __local T* v) {
  const int lid = get_local_id(0), L = get_local_size(0);
  __local T* col = v;
  __local T* row = v + n;
  for (int k = 0; k < n; ++k) {
    const T pinv = DIV(TO_T(1), LS(k, k));
    for (int i = lid; i < n; i += L) {
      if (i > k) col[i] = -MUL(LS(i, k), pinv);
      if (i < k) row[i] = LS(k, i);
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // everyone has read l_kk, row k and column k
    if (lid == 0) LS(k, k) = pinv;
    for (int i = k + 1 + lid; i < n; i += L) LS(i, k) = col[i];
    for (int c = lid; c < k; c += L) LS(k, c) = MUL(row[c], pinv);
    const int m = n - k - 1;
    for (int t = lid; t < m * k; t += L) {
      const int i = k + 1 + t / k, c = t % k;
      LS(i, c) += MUL(col[i], row[c]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// inv(L) of the lower triangular n x n L in local memory (leading dimension ld) by recursive doubling:
// with the diagonal blocks of width w inverted, each pair [[A, 0], [B, C]] (A at rows and columns o.., C
// after it, w wide or cut at n) gets the lower-left block -inv(C) B inv(A); widths 1, 2, 4, ... so two
// products and two barriers a level (12 for n = 64) instead of Gauss-Jordan's two a column. The diagonal
// must hold 1 / l_ii already (the caller's last pass writes it). B inv(A) goes to the strict upper
// triangle (transposed, at (o + j, o + w + i)), which is left as scratch: callers read the lower part.
// Called by the whole group after a barrier.
inline void lower_inverse_doubling(__local T* s, int ld, int n) {
  const int lid = get_local_id(0), L = get_local_size(0);
  for (int w = 1; w < n; w *= 2) {
    const int work = (n - w + 2 * w - 1) / (2 * w) * w * w;  // w x w outputs per pair (o = 2 w p, o + w < n)
    for (int t = lid; t < work; t += L) {
      const int o = 2 * w * (t / (w * w)), i = t % (w * w) / w, j = t % w, r = o + w + i;
      if (r >= n) continue;
      T acc = TO_T(0);
      for (int k = j; k < w; ++k) acc += MUL(LS(r, o + k), LS(o + k, o + j));  // B inv(A), inv(A) lower
      LS(o + j, r) = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int t = lid; t < work; t += L) {
      const int o = 2 * w * (t / (w * w)), i = t % (w * w) / w, j = t % w, r = o + w + i;
      if (r >= n) continue;
      T acc = TO_T(0);
      for (int k = 0; k <= i; ++k) acc += MUL(LS(r, o + w + k), LS(o + j, o + w + k));  // inv(C) (B inv(A))
      LS(r, o + j) = -acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// Rows and columns of the block one work-item of linalg_cholesky_block keeps in registers: a P x P group,
// P = ceil(n / CHOL_TILE) (256 items for 64 x 64); the host launches exactly P * P items.
#define CHOL_TILE 4
#ifndef CHOL_PAIR
#define CHOL_PAIR 1
#endif

// Lower Cholesky L L^H of each n x n diagonal block (only its lower triangle read, the strict
// upper one written as zeros), as linalg_cholesky, and when want_inv the inverse of L (lower, the
// upper part zeros) into inv, so the panel below is one GEMM (L21 = A21 inv(L11)^H). info: the
// whole matrix's (potrf's info), set to base + k by the first block that fails at its column k
// (info[b] still 0: blocks run in queue order) and left alone otherwise: no per-block merge.
// One barrier for two columns: item (ty, tx) keeps a_ij for the rows i = ty + P r and columns j = tx + P c
// in registers; column k's step updates the trailing a_ij (i >= j > k) by a_ik conj(a_jk) / a_kk (the
// unscaled, LDL^H form; column k in local memory), column k + 1's likewise in the same step, and the owners
// of the next two columns put them in local memory; the columns are scaled by 1 / sqrt(a_jj) once at the end.
// The inverse by recursive doubling (lower_inverse_doubling). Barriers for n = 64: 1 + 32 + 1 + 12 (was 257).
// CHOL_PAIR 0 (a define): a column a step (64 + 14 barriers; the column k + 1 terms off): what the host builds by
// default (faster on an H200 than the pairs' heavier steps: Cholesky 4096 in 6.86 against 7.22 ms).
// s: n (n + 1) elements of T; v: 2 n (sqrt(d_k), then 1 / sqrt(d_k)).
__kernel void linalg_cholesky_block(__global T* a, ulong a_o, long bs, long rs, long cs, int n, __global T* inv,
                                    ulong inv_o, long inv_bs, long inv_rs, long inv_cs, int want_inv,
                                    __global int* info, ulong info_o, int base, __local T* s, __local T* v) {
  const bool pair = CHOL_PAIR;
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  const int ld = n + 1, P = (n + CHOL_TILE - 1) / CHOL_TILE;
  // Consecutive items along a's unit stride (the global reads and writes coalesce); items past P * P own nothing.
  const bool own = lid < P * P;
  const int ty = !own ? n : rs < cs ? lid % P : lid / P, tx = !own ? n : rs < cs ? lid / P : lid % P;
  __global T* A = a + a_o + b * bs;
  T acc[CHOL_TILE][CHOL_TILE];
#pragma unroll
  for (int r = 0; r < CHOL_TILE; ++r)
#pragma unroll
    for (int c = 0; c < CHOL_TILE; ++c) {
      const int i = ty + P * r, j = tx + P * c;
      acc[r][c] = i < n && j <= i ? AT(A, i, j) : TO_T(0);
      if (j <= 1 && i < n) LS(i, j) = acc[r][c];
    }
  barrier(CLK_LOCAL_MEM_FENCE);
  int done = n;  // the columns factored
  for (int k = 0; k < n; k += pair ? 2 : 1) {
    // Columns k and k + 1 in one step: local memory holds both as of step k - 2; every item forms column
    // k + 1's update by column k itself where it needs it (its rows, its columns, the pivot d1), the same
    // operations in every item, so d1 and the group's decisions are the same everywhere.
    const bool two = pair && k + 1 < n;
    const R d0 = RE(LS(k, k));
    if (!(d0 > 0)) {  // the same d0 in every item: the whole group leaves together
      done = k;
      break;
    }
    const R dinv0 = 1 / d0;
    const T c0 = two ? CONJ(LS(k + 1, k)) * dinv0 : TO_T(0);
    const R d1 = two ? RE(LS(k + 1, k + 1) - MUL(LS(k + 1, k), c0)) : 1;
    if (lid == 0) {
      const R sq = sqrt(d0);
      v[k] = TO_T(sq);
      v[n + k] = TO_T(1 / sq);  // potf2 scales by the reciprocal
      if (two && d1 > 0) {
        v[k + 1] = TO_T(sqrt(d1));
        v[n + k + 1] = TO_T(1 / sqrt(d1));
      }
    }
    if (!(d1 > 0)) {  // column k done: its scale written before the others read it, and s(k, k) read by all
      done = k + 1;
      barrier(CLK_LOCAL_MEM_FENCE);
      break;
    }
    const R dinv1 = 1 / d1;
    T ci0[CHOL_TILE], ci1[CHOL_TILE], cj0[CHOL_TILE], cj1[CHOL_TILE];
#pragma unroll
    for (int r = 0; r < CHOL_TILE; ++r) {
      const int i = ty + P * r, j = tx + P * r;
      ci0[r] = i > k && i < n ? LS(i, k) : TO_T(0);
      ci1[r] = two && i > k + 1 && i < n ? LS(i, k + 1) - MUL(ci0[r], c0) : TO_T(0);
      const T aj = j > k && j < n ? LS(j, k) : TO_T(0);
      cj0[r] = CONJ(aj) * dinv0;
      cj1[r] = two && j > k + 1 && j < n ? CONJ(LS(j, k + 1) - MUL(aj, c0)) * dinv1 : TO_T(0);
    }
#pragma unroll
    for (int r = 0; r < CHOL_TILE; ++r)
#pragma unroll
      for (int c = 0; c < CHOL_TILE; ++c) {
        const int i = ty + P * r, j = tx + P * c;
        if (j > k && j <= i) acc[r][c] -= MUL(ci0[r], cj0[c]);  // finished columns untouched (no 0 * inf)
        if (two && j > k + 1 && j <= i) acc[r][c] -= MUL(ci1[r], cj1[c]);
        if ((pair ? j == k + 2 || j == k + 3 : j == k + 1) && i >= j && i < n) LS(i, j) = acc[r][c];
      }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  // inv(L) of the factored columns (all without a failure; with one, the leading ones: the panel below
  // then gets those columns as potf2 leaves them, and zeros past them). Its lower part goes to s: without a
  // failure nobody reads s any more (the last barrier); with one, only s(done, done) is still read.
  const int m = want_inv ? done : 0;
#pragma unroll
  for (int r = 0; r < CHOL_TILE; ++r)
#pragma unroll
    for (int c = 0; c < CHOL_TILE; ++c) {
      const int i = ty + P * r, j = tx + P * c;
      if (i >= n || j >= n) continue;
      T x = TO_T(0);
      if (j < i) x = j < done ? acc[r][c] * RE(v[n + j]) : acc[r][c];  // past a failure: as left
      else if (j == i) x = j < done ? v[j] : acc[r][c];
      AT(A, i, j) = x;
      if (j <= i && i < m) LS(i, j) = j == i ? v[n + j] : x;
    }
  if (lid == 0 && done < n && info[info_o + b] == 0) info[info_o + b] = base + done + 1;
  if (!want_inv) return;
  barrier(CLK_LOCAL_MEM_FENCE);
  lower_inverse_doubling(s, ld, m);
  __global T* X = inv + inv_o + b * inv_bs;
  for (int t = lid; t < n * n; t += L) {
    const int i = t / n, j = t % n;
    X[(long)i * inv_rs + (long)j * inv_cs] = j <= i && i < m ? LS(i, j) : TO_T(0);
  }
}

// linalg_trsm (linalg.cl) with A and X in local memory: X <- A^-1 X for triangular n x n A (lower:
// forward, else backward substitution; unit: ones taken on the diagonal; conj: A read conjugated),
// X n x nrhs, the same operations in the same order per element, barriers on local memory instead
// of global. For the small solves of the recursive LU panel and the triangular inverses (n, nrhs
// up to 64). sa: n (n + 1) elements; sx: n (nrhs + 1).
__kernel void linalg_trsm_local(__global const T* a, ulong a_o, long a_bs, long a_rs, long a_cs, __global T* x,
                                ulong x_o, long x_bs, long x_rs, long x_cs, int n, int nrhs, int lower, int unit,
                                int conj, __local T* sa, __local T* sx) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global const T* A = a + a_o + b * a_bs;
  __global T* X = x + x_o + b * x_bs;
  const int ld = n + 1, lx = nrhs + 1;
  for (int t = lid; t < n * n; t += L) {
    const int i = t / n, j = t % n;
    const T v = A[i * a_rs + j * a_cs];
    sa[i * ld + j] = conj ? CONJ(v) : v;
  }
  for (int t = lid; t < n * nrhs; t += L) {
    const int i = t / nrhs, j = t % nrhs;
    sx[i * lx + j] = X[i * x_rs + j * x_cs];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int t = 0; t < n; ++t) {
    const int k = lower ? t : n - 1 - t;
    if (!unit) {
      const T d = sa[k * ld + k];
      for (int j = lid; j < nrhs; j += L) sx[k * lx + j] = DIV(sx[k * lx + j], d);
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int rows = n - 1 - t;
    for (int q = lid; q < rows * nrhs; q += L) {
      const int r = q / nrhs, j = q % nrhs;
      const int i = lower ? k + 1 + r : r;
      sx[i * lx + j] -= MUL(sa[i * ld + k], sx[k * lx + j]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int t = lid; t < n * nrhs; t += L) {
    const int i = t / nrhs, j = t % nrhs;
    X[i * x_rs + j * x_cs] = sx[i * lx + j];
  }
}

// The upper triangular T of H_1 ... H_k = I - V T V^H (blocked QR's compact WY form; wy_factor in
// LinalgBlocked.cpp) from S = V^H V (only its strict upper part read) and tau, in one launch: T^-1 =
// diag(1 / tau) + the strict upper part of S, with the rows and columns of a tau_i = 0 (an identity
// reflector) cut out and 1 on their diagonal, inverted in local memory (as its transpose, lower: the
// inverse of the transpose is the transpose of the inverse), then T's columns of tau_j = 0 zeroed.
// s: n (n + 1) elements; v: 2 n. mode 0: T into t (one group a matrix); 1: t <- T Y, 2: t <- T^H Y for Y
// (n x ncols, y), `groups` groups a matrix each rebuilding T and taking a chunk of Y's columns (the WY
// update's small product folded in: one launch instead of this kernel and a GEMM).
__kernel void linalg_wy_factor(__global const T* sm, ulong s_o, long s_bs, long s_rs, long s_cs,
                               __global const T* tau, ulong tau_o, long tau_bs, __global T* t, ulong t_o, long t_bs,
                               long t_rs, long t_cs, int n, __global const T* y, ulong y_o, long y_bs, long y_rs,
                               long y_cs, long ncols, int mode, long groups, __local T* s, __local T* v) {
  const long b = get_group_id(0) / groups, g = get_group_id(0) % groups;
  const int lid = get_local_id(0), L = get_local_size(0);
  const int ld = n + 1;
  __global const T* S = sm + s_o + b * s_bs;
  __global const T* TAU = tau + tau_o + b * tau_bs;
  for (int q = lid; q < n * n; q += L) {
    const int i = q / n, j = q % n;  // (i, j) of the lower transpose: T^-1 (j, i)
    const T ti = TAU[i], tj = TAU[j];
    T val = TO_T(0);
    if (i == j) val = IS_ZERO(ti) ? TO_T(1) : DIV(TO_T(1), ti);
    else if (i > j && !IS_ZERO(ti) && !IS_ZERO(tj)) val = S[j * s_rs + i * s_cs];
    LS(i, j) = val;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  lower_inverse_local(s, ld, n, v);
  __global T* X = t + t_o + b * t_bs;
  if (mode == 0) {
    for (int q = lid; q < n * n; q += L) {
      const int i = q / n, j = q % n;
      X[i * t_rs + j * t_cs] = (j >= i && !IS_ZERO(TAU[j])) ? LS(j, i) : TO_T(0);
    }
    return;
  }
  // T (i, j) = LS(j, i) for j >= i where tau_j != 0, else 0.
  __global const T* Y = y + y_o + b * y_bs;
  const long cw = (ncols + groups - 1) / groups, c0 = g * cw, c1 = min(ncols, c0 + cw);
  for (long q = lid; q < n * (c1 - c0); q += L) {
    const int i = q % n;
    const long c = c0 + q / n;
    T acc = TO_T(0);
    if (mode == 2) {
      if (!IS_ZERO(TAU[i]))
        for (int j = 0; j <= i; ++j) acc += MUL(CONJ(LS(i, j)), Y[j * y_rs + c * y_cs]);
    } else {
      for (int j = i; j < n; ++j)
        if (!IS_ZERO(TAU[j])) acc += MUL(LS(j, i), Y[j * y_rs + c * y_cs]);
    }
    X[i * t_rs + c * t_cs] = acc;
  }
}

// One step of blocked getrf after its panel (columns [k0, k1), absolute 1-based pivots P[k0..k1)), in one
// launch instead of a laswp left of the panel, one right of it, inv(L11) and a GEMM for U12 and its copy
// back: a work-item per column outside the panel, the groups' columns left of it first (nleft_groups of
// them: swaps only), then those right of it: the panel's interchanges of rows k0.. in order, then, right of
// the panel, U12 = L11^-1 A12 by forward substitution (?trsm's order: x_i -= l_ik x_k for k < i; L11 unit
// lower, read from the panel) on the column's kb elements in local memory (sx: kb an item, x_i at
// sx[i L + lid]: consecutive items on consecutive banks). Each item touches only its own column, so
// program order alone orders its swaps and solve: no barrier.
__kernel void linalg_lu_swap_solve(__global T* a, ulong a_o, long bs, long rs, long cs, long m, long n,
                                   __global const int* piv, ulong piv_o, long piv_bs, long k0, long k1,
                                   long nleft_groups, long groups, __local T* sx) {
  const long g = get_group_id(0) % groups, b = get_group_id(0) / groups;
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global const int* P = piv + piv_o + b * piv_bs;
  const bool right = g >= nleft_groups;
  const long j = right ? k1 + (g - nleft_groups) * L + lid : g * L + lid;
  if (j >= (right ? n : k0)) return;  // no barriers below
  for (long i = k0; i < k1; ++i) {
    const long p = P[i] - 1;
    if (p != i && p >= 0 && p < m) {
      const T t = AT(A, i, j);
      AT(A, i, j) = AT(A, p, j);
      AT(A, p, j) = t;
    }
  }
  if (!right) return;
  const int kb = (int)(k1 - k0);
  __global T* X = A + k0 * rs + j * cs;  // the column's rows k0.. (U12's column)
  __global const T* L11 = A + k0 * rs + k0 * cs;
  for (int i = 0; i < kb; ++i) sx[i * L + lid] = X[(long)i * rs];
  for (int k = 0; k < kb; ++k) {
    const T xk = sx[k * L + lid];
    for (int i = k + 1; i < kb; ++i) sx[i * L + lid] -= MUL(L11[(long)i * rs + (long)k * cs], xk);
  }
  for (int i = 0; i < kb; ++i) X[(long)i * rs] = sx[i * L + lid];
}
