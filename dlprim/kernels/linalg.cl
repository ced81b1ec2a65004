// Dense linear algebra on batches of small and medium matrices: Cholesky, LU with partial
// pivoting, triangular solves, row interchanges. Our own kernels (no LAPACK/clBLAS/MAGMA on
// OpenCL fits PoCL + NVIDIA); the algorithms are the textbook unblocked right-looking ones.
//
// One work-group per matrix: the group walks the n steps of the factorization and separates them
// with barriers, so a whole factorization is one launch whatever n is. The matrix stays in global
// memory (barrier(CLK_GLOBAL_MEM_FENCE) orders a group's own global accesses), so any n fits.
// Every matrix is (offset, batch stride, row stride, column stride) in elements: transposes and
// torch's column-major outputs are just strides. The generator (linalg.cpp) prepends T (the
// element), R (its real part), EPS and the arithmetic on T that differs between real and complex
// elements: MUL, DIV, CONJ, ABS1 (|re| + |im|), IS_ZERO, RE, TO_T (a real as T). Sums and
// differences of T and T * real are plain operators on float2 / double2 too.

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// Lower Cholesky A = L L^H of each matrix, in place, reading only the lower triangle (the
// diagonal's real part, as potrf); the strict upper triangle is zeroed. info[b] = k > 0 when the leading minor of order k is not positive
// definite (potrf's convention: the factorization stops there).
__kernel void linalg_cholesky(__global T* a, ulong a_o, long bs, long rs, long cs, long n, __global int* info,
                              ulong info_o) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  int bad = 0;
  for (long k = 0; k < n; ++k) {
    R d = RE(AT(A, k, k));
    barrier(CLK_GLOBAL_MEM_FENCE);  // every item has read d before item 0 overwrites it
    if (!(d > 0)) {                 // the same d in every item: the whole group leaves together
      bad = (int)(k + 1);
      break;
    }
    R s = sqrt(d);
    if (lid == 0) AT(A, k, k) = TO_T(s);
    for (long i = k + 1 + lid; i < n; i += L) AT(A, i, k) /= s;
    barrier(CLK_GLOBAL_MEM_FENCE);
    const long m = n - k - 1;
    for (long t = lid; t < m * m; t += L) {
      long i = k + 1 + t / m, j = k + 1 + t % m;
      if (j <= i) AT(A, i, j) -= MUL(AT(A, i, k), CONJ(AT(A, j, k)));
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  for (long t = lid; t < n * n; t += L) {
    long i = t / n, j = t % n;
    if (j > i) AT(A, i, j) = TO_T(0);
  }
  if (lid == 0) info[info_o + b] = bad;
}

// LU factorization with partial pivoting of each m x n matrix, in place (getrf): unit lower L
// below the diagonal, U on and above it, 1-based pivots piv[b][k] (row k was swapped with row
// piv - 1 at step k), info[b] = k > 0 for the first exactly zero pivot U[k-1][k-1] (the
// factorization goes on, as LAPACK's). The pivot is the first row of largest ABS1 (i?amax: |x|
// for real, |re| + |im| for complex, as izamax/icamax). lv/li: local scratch of one R and one
// long per work-item (a power of two of them). As a leaf of the recursive LU panel (linalg.h's
// LuLeafPlace): pivots + piv_base, the row swaps also over the nleft columns left of the matrix and the
// nright right of it, with merge_info the first failure's piv_base + k kept in info, and with solve_rows
// the split's U12 solved after it (lu_leaf_solve; sx: solve_rows x solve_cols) (all 0: a matrix of its own).
__kernel void linalg_lu(__global T* a, ulong a_o, long bs, long rs, long cs, long m, long n, __global int* piv,
                        ulong piv_o, long piv_bs, __global int* info, ulong info_o, long piv_base, long nleft,
                        long nright, int merge_info, int solve_rows, int solve_cols, __local R* lv,
                        __local long* li, __local T* sx) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global int* P = piv + piv_o + b * piv_bs;
  const long kmax = min(m, n);
  int bad = 0;
  for (long k = 0; k < kmax; ++k) {
    R best = -1;
    long bi = k;
    for (long i = k + lid; i < m; i += L) {
      R v = ABS1(AT(A, i, k));
      if (v > best) {  // strict: the first of equal values in this item's rows (they ascend)
        best = v;
        bi = i;
      }
    }
    lv[lid] = best;
    li[lid] = bi;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = L >> 1; s > 0; s >>= 1) {
      if (lid < s) {
        R o = lv[lid + s];
        long oi = li[lid + s];
        if (o > lv[lid] || (o == lv[lid] && oi < li[lid])) {
          lv[lid] = o;
          li[lid] = oi;
        }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long p = li[0];
    const T pv = AT(A, p, k);
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);  // p and pv read before the swap and the next search
    if (lid == 0) P[k] = (int)(p + 1 + piv_base);
    if (IS_ZERO(pv) && bad == 0) bad = (int)(k + 1);
    if (p != k) {
      for (long j = lid - nleft; j < n + nright; j += L) {
        T t = AT(A, k, j);
        AT(A, k, j) = AT(A, p, j);
        AT(A, p, j) = t;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (!IS_ZERO(pv))
      for (long i = k + 1 + lid; i < m; i += L) AT(A, i, k) = DIV(AT(A, i, k), pv);
    barrier(CLK_GLOBAL_MEM_FENCE);
    const long rows = m - k - 1, cols = n - k - 1;
    for (long t = lid; t < rows * cols; t += L) {
      long i = k + 1 + t / cols, j = k + 1 + t % cols;
      AT(A, i, j) -= MUL(AT(A, i, k), AT(A, k, j));
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0 && !merge_info) info[info_o + b] = bad;
  if (lid == 0 && merge_info && bad && info[info_o + b] == 0) info[info_o + b] = (int)(bad + piv_base);
  if (solve_rows > 0) lu_leaf_solve(A, rs, cs, (int)n, solve_rows, solve_cols, sx);
}

// Solves A X = B in place of B (n x nrhs) for triangular A (n x n): lower -> forward
// substitution, upper -> backward; unit: the diagonal is taken as ones and not read; conj: A's
// elements are read conjugated (A^H with transposed strides: the adjoint solves).
// A: (a_bs, a_rs, a_cs); X: (x_bs, x_rs, x_cs).
__kernel void linalg_trsm(__global const T* a, ulong a_o, long a_bs, long a_rs, long a_cs, __global T* x,
                          ulong x_o, long x_bs, long x_rs, long x_cs, long n, long nrhs, int lower, int unit,
                          int conj) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global const T* A = a + a_o + b * a_bs;
  __global T* X = x + x_o + b * x_bs;
  for (long t = 0; t < n; ++t) {
    const long k = lower ? t : n - 1 - t;
    if (!unit) {
      const T d0 = A[k * a_rs + k * a_cs];
      const T d = conj ? CONJ(d0) : d0;
      for (long j = lid; j < nrhs; j += L) X[k * x_rs + j * x_cs] = DIV(X[k * x_rs + j * x_cs], d);
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    const long rows = n - 1 - t;  // the rows still to solve: after k (lower) or before it (upper)
    for (long q = lid; q < rows * nrhs; q += L) {
      long r = q / nrhs, j = q % nrhs;
      long i = lower ? k + 1 + r : r;
      const T aik = A[i * a_rs + k * a_cs];
      X[i * x_rs + j * x_cs] -= MUL(conj ? CONJ(aik) : aik, X[k * x_rs + j * x_cs]);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

// Applies getrf's row interchanges (1-based piv, k of them) to X (n x nrhs) in place: in order
// (P^T X, getrs' forward laswp) or in reverse order (P X). X has n rows. Each item swaps the same
// columns at every step, so its own program order orders the swaps: no barrier between steps (one
// was a fence and a group-wide wait per pivot).
__kernel void linalg_laswp(__global T* x, ulong x_o, long x_bs, long rs, long cs, long n, long nrhs,
                           __global const int* piv, ulong piv_o, long piv_bs, long k, int reverse) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* X = x + x_o + b * x_bs;
  __global const int* P = piv + piv_o + b * piv_bs;
  for (long t = 0; t < k; ++t) {
    const long i = reverse ? k - 1 - t : t;
    const long p = P[i] - 1;
    if (p != i && p >= 0 && p < n)  // an invalid pivot (user input) is skipped, never followed
      for (long j = lid; j < nrhs; j += L) {
        T v = AT(X, i, j);
        AT(X, i, j) = AT(X, p, j);
        AT(X, p, j) = v;
      }
  }
}

// perm[b][0..m) = the row order that getrf's k interchanges make of 0..m-1 (one item a matrix):
// row i of P^T A is row perm[i] of A.
__kernel void linalg_permutation(__global const int* piv, ulong piv_o, long piv_bs, long k, __global long* perm,
                                 ulong perm_o, long m, ulong batch) {
  const ulong b = get_global_id(0);
  if (b >= batch) return;
  __global const int* P = piv + piv_o + b * piv_bs;
  __global long* out = perm + perm_o + b * m;
  for (long i = 0; i < m; ++i) out[i] = i;
  for (long i = 0; i < k; ++i) {
    long p = P[i] - 1, v = out[i];
    if (p < 0 || p >= m) continue;  // an invalid pivot (user input) is skipped, never followed
    out[i] = out[p];
    out[p] = v;
  }
}
