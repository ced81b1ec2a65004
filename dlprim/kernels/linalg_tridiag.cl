// The large-n symmetric eigenproblem (linalg.eigh / eigvalsh above the Jacobi crossover), real
// float32/float64 only (T = R). Our own kernels, LAPACK's algorithms:
//
// 1. Tridiagonal reduction A = Q T Q^T (?sytrd, lower, blocked as ?latrd): for each column i of an
//    nb-column panel, tridiag_column brings column i up to date with the panel's earlier reflectors
//    (A(i:, i) -= V W(i, :)^T + W V(i, :)^T) and makes its Householder reflector (?larfg), then
//    tridiag_rowdot, a wide kernel (one work-group per row, all compute units), forms A22 v and the
//    2 nb dot products V^T v, W^T v, and tridiag_w finishes W's column (?latrd's w = tau (A22 v -
//    V W^T v - W V^T v), w -= tau/2 (w^T v) v). The trailing update A22 -= V W^T + W V^T of each
//    panel is one GEMM on the host side (csrc/aten/LinalgEighTridiag.cpp). V and W live transposed
//    in one buffer vw (2 nb rows of n: rows 0..nb-1 are V^T, rows nb..2nb-1 W^T, zero until their
//    column is made), so "sum over the panel's earlier columns" is a sum over all 2 nb rows.
// 2. Eigenvalues and eigenvectors of T by implicit QL with Wilkinson-like shifts (EISPACK's tql2,
//    LAPACK's ?steqr): robust, eigenvectors orthogonal whatever the clustering of the eigenvalues.
//    The QL sweeps on (d, e) are O(n) serial steps each; their rotations act on the rows of Z (= Q,
//    the product of the reflectors, so Z ends as the eigenvectors of A) independently. So every
//    work-group repeats the same serial sweeps on its own copy of (d, e) (the same arithmetic: the
//    same rotations bit for bit) and applies them to its own rows of Z: the O(n^3) rotation work is
//    spread over n / L work-groups with two barriers per sweep, not per rotation.
// 3. Eigenvalues only (eigvalsh): bisection with Sturm counts, one work-item per eigenvalue, instead
//    of the QL sweeps' serial chain.
//
// The generator (linalg.cpp) prepends T, R, EPS and SAFMIN, and linalg_group.cl (group_sum).

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]


// The row of vw paired with row c in the rank-2 update: V's row c with W's row c and back.
inline long tri_swap(long c, long nb) { return c < nb ? c + nb : c - nb; }

// Column i (panel column j) of a (n x n, full symmetric, row-major: rs = n) brought up to date and
// reduced: d[i] = a(i, i) updated, e[i] = beta, tau[i], a(i + 2:, i) = v below the implicit 1 (where
// the orgqr of the back-transform reads it), vw row j = v (0 above i + 1, 1 at i + 1).
// One work-group per matrix (group id 0 = batch).
__kernel void linalg_tridiag_column(__global T* a, ulong a_o, long a_bs, __global T* vw, ulong vw_o, long vw_bs,
                                    __global T* d, ulong d_o, long d_bs, __global T* e, ulong e_o, long e_bs,
                                    __global T* tau, ulong tau_o, long tau_bs, long n, long nb, long i, long j,
                                    __local R* red) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * a_bs;
  __global T* VW = vw + vw_o + b * vw_bs;
  const long rs = n, cs = 1;
  for (long r = i + lid; r < n; r += L) {
    T x = AT(A, r, i);
    for (long c = 0; c < j; ++c) {
      x -= VW[c * n + r] * VW[(c + nb) * n + i] + VW[(c + nb) * n + r] * VW[c * n + i];
    }
    AT(A, r, i) = x;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  R part = 0;
  for (long r = i + 2 + lid; r < n; r += L) {
    const T x = AT(A, r, i);
    part += x * x;
  }
  const R xn2 = group_sum(part, red);
  const T alpha = AT(A, i + 1, i);
  T tk = 0, beta = alpha, scale = 0;
  if (xn2 != 0) {  // else H = I (tau 0), as ?larfg
    beta = -copysign(sqrt(alpha * alpha + xn2), alpha);
    tk = (beta - alpha) / beta;
    scale = 1 / (alpha - beta);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);  // alpha read by all before it is overwritten
  for (long r = i + 2 + lid; r < n; r += L) {
    const T v = AT(A, r, i) * scale;
    AT(A, r, i) = v;
    VW[j * n + r] = v;
  }
  if (lid == 0) {
    d[d_o + b * d_bs + i] = AT(A, i, i);
    e[e_o + b * e_bs + i] = beta;
    tau[tau_o + b * tau_bs + i] = tk;
    AT(A, i + 1, i) = beta;
    VW[j * n + i + 1] = 1;
  }
}

// p[g] = row g of [A(i + 1:, i + 1:) ; vw(:, i + 1:)] . v, v = vw row j (zero up to i, so only
// columns i + 1.. count). A22 is symmetric: its row sums are A22 v. One work-group per row
// (group id 0), batch = group id 1; p: (n - i - 1) + 2 nb values per matrix.
__kernel void linalg_tridiag_rowdot(__global const T* a, ulong a_o, long a_bs, __global const T* vw, ulong vw_o,
                                    long vw_bs, __global T* p, ulong p_o, long p_bs, long n, long nb, long i, long j,
                                    __local R* red) {
  const long g = get_group_id(0), b = get_group_id(1);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global const T* VW = vw + vw_o + b * vw_bs;
  const long m = n - i - 1;
  __global const T* row = g < m ? a + a_o + b * a_bs + (i + 1 + g) * n : VW + (g - m) * n;
  __global const T* v = VW + j * n;
  R part = 0;
  for (long c = i + 1 + lid; c < n; c += L) part += row[c] * v[c];
  const R s = group_sum(part, red);
  if (lid == 0) p[p_o + b * p_bs + g] = s;
}

// The same products with one work-item per output (CPU devices: no barriers, a few work-groups
// instead of one per row, whose scheduling costs PoCL more than the dot products). Rows, not
// columns: a column walk (stride n per step in each item) measured 2.6x slower on PoCL.
__kernel void linalg_tridiag_rowdot1(__global const T* a, ulong a_o, long a_bs, __global const T* vw, ulong vw_o,
                                     long vw_bs, __global T* p, ulong p_o, long p_bs, long n, long nb, long i,
                                     long j) {
  const long g = get_global_id(0), b = get_global_id(1);
  const long m = n - i - 1;
  if (g >= m + 2 * nb) return;
  __global const T* VW = vw + vw_o + b * vw_bs;
  __global const T* row = g < m ? a + a_o + b * a_bs + (i + 1 + g) * n : VW + (g - m) * n;
  __global const T* v = VW + j * n;
  R s = 0;
  for (long c = i + 1; c < n; ++c) s += row[c] * v[c];
  p[p_o + b * p_bs + g] = s;
}

// W's column j (vw row nb + j) from tridiag_rowdot's p: y = A22 v - V (W^T v) - W (V^T v),
// w = tau y, w -= tau / 2 (w^T v) v (rows i + 1..; the rows above stay 0). One work-group per matrix.
__kernel void linalg_tridiag_w(__global T* vw, ulong vw_o, long vw_bs, __global const T* p, ulong p_o, long p_bs,
                               __global const T* tau, ulong tau_o, long tau_bs, long n, long nb, long i, long j,
                               __local R* red) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* VW = vw + vw_o + b * vw_bs;
  __global const T* P = p + p_o + b * p_bs;
  const long m = n - i - 1;
  const T tk = tau[tau_o + b * tau_bs + i];
  __global T* w = VW + (nb + j) * n;
  __global const T* v = VW + j * n;
  R part = 0;
  for (long r = i + 1 + lid; r < n; r += L) {
    T y = P[r - i - 1];
    for (long c = 0; c < j; ++c) y -= VW[c * n + r] * P[m + c + nb] + VW[(c + nb) * n + r] * P[m + c];
    y *= tk;
    w[r] = y;
    part += y * v[r];
  }
  const R alpha = -(R)0.5 * tk * group_sum(part, red);
  for (long r = i + 1 + lid; r < n; r += L) w[r] += alpha * v[r];
}

// Implicit QL on the tridiagonal (d, e) (e[k] couples k and k + 1; e[n - 1] unused) of each matrix:
// eigenvalues ascending into w; with rows > 0, the rotations applied to the rows of z (n x n,
// element (r, c) at r * zrs + c * zcs), the result permuted with the eigenvalues into vout's columns.
// Grid: groups_per_matrix groups (id 0) per matrix (id 1); scratch per group: 4 n R (d, e, c, s)
// and n ints (the sort). An eigenvalue not converged after max_sweeps sweeps (60, as tql2) is counted
// into info[b] (written by group 0), which the host raises as LAPACK's failure to converge.
__kernel void linalg_tridiag_ql(__global const T* d, ulong d_o, long d_bs, __global const T* e, ulong e_o, long e_bs,
                                __global T* scr, ulong scr_o, __global int* iscr, ulong iscr_o, __global T* w,
                                ulong w_o, long w_bs, __global T* z, ulong z_o, long z_bs, long zrs, long zcs,
                                __global T* vout,
                                ulong vo_o, long vo_bs, long vo_rs, long vo_cs, long n, long rows,
                                __global int* info, ulong info_o, long max_sweeps) {
  const long g = get_group_id(0), G = get_num_groups(0), b = get_group_id(1);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* D = scr + scr_o + (b * G + g) * 4 * n;
  __global T* E = D + n;
  __global T* C = E + n;
  __global T* S = C + n;
  __global int* RANK = iscr + iscr_o + (b * G + g) * n;
  __global T* Z = z + z_o + b * z_bs;
  __local long ctl[4];  // step kind (0 done, 1 sweep), rotations hi..lo
  __local long state[3];  // l, iterations on l, eigenvalues given up on (item 0's)
  for (long k = lid; k < n; k += L) {
    D[k] = d[d_o + b * d_bs + k];
    E[k] = k < n - 1 ? e[e_o + b * e_bs + k] : 0;
  }
  if (lid == 0) {
    state[0] = 0;
    state[1] = 0;
    state[2] = 0;
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  while (true) {
    if (lid == 0) {
      long l = state[0], iter = state[1];
      ctl[0] = 0;
      while (l < n) {
        long m = l;
        for (; m < n - 1; ++m) {
          const R dd = fabs(D[m]) + fabs(D[m + 1]);
          if (fabs(E[m]) <= EPS * dd || fabs(E[m]) < SAFMIN) break;
        }
        if (m == l || iter >= max_sweeps) {
          if (m != l) ++state[2];
          ++l;
          iter = 0;
          continue;
        }
        ++iter;
        // One QL sweep from m up to l (tql2 / Numerical Recipes' tqli).
        R gg = (D[l + 1] - D[l]) / (2 * E[l]);
        R r = hypot(gg, (R)1);
        gg = D[m] - D[l] + E[l] / (gg + copysign(r, gg));
        R s = 1, c = 1, p = 0;
        long k = m - 1, lo = m;
        int early = 0;
        for (; k >= l; --k) {
          const R f = s * E[k], bb = c * E[k];
          r = hypot(f, gg);
          E[k + 1] = r;
          if (r == 0) {  // split: the sweep stops here
            D[k + 1] -= p;
            E[m] = 0;
            early = 1;
            break;
          }
          s = f / r;
          c = gg / r;
          gg = D[k + 1] - p;
          r = (D[k] - gg) * s + 2 * c * bb;
          p = s * r;
          D[k + 1] = gg + p;
          gg = c * r - bb;
          C[k] = c;
          S[k] = s;
          lo = k;
        }
        if (!early) {
          D[l] -= p;
          E[l] = gg;
          E[m] = 0;
        }
        ctl[0] = lo < m ? 1 : 2;
        ctl[1] = m - 1;
        ctl[2] = lo;
        break;
      }
      state[0] = l;
      state[1] = iter;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const long kind = ctl[0], hi = ctl[1], lo = ctl[2];
    if (kind == 0) {
      if (lid == 0 && g == 0) info[info_o + b] = (int)state[2];
      break;
    }
    // The row loop's trip count is the same for every item (a guard inside instead): PoCL's
    // optimized work-group code gave the items past `rows` wrong stores otherwise.
    if (kind == 1)
      for (long r0 = g * L; r0 < rows; r0 += G * L) {
        const long r = r0 + lid;
        if (r < rows) {
          __global T* zr = Z + r * zrs;
          T cur = zr[(hi + 1) * zcs];
          for (long k = hi; k >= lo; --k) {
            const T zk = zr[k * zcs];
            zr[(k + 1) * zcs] = S[k] * zk + C[k] * cur;
            cur = C[k] * zk - S[k] * cur;
          }
          zr[lo * zcs] = cur;
        }
      }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  // Ascending order: eigenvalue k goes to position rank(k) (ties by index).
  for (long k = lid; k < n; k += L) {
    const R x = D[k];
    long rank = 0;
    for (long q = 0; q < n; ++q) rank += (D[q] < x || (D[q] == x && q < k)) ? 1 : 0;
    RANK[rank] = (int)k;
    if (g == 0) w[w_o + b * w_bs + rank] = x;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  __global T* VO = vout + vo_o + b * vo_bs;
  for (long r0 = g * L; r0 < rows; r0 += G * L) {
    const long r = r0 + lid;
    if (r < rows)
      for (long k = 0; k < n; ++k) VO[r * vo_rs + k * vo_cs] = Z[r * zrs + RANK[k] * zcs];
  }
}

// Sturm count: the number of eigenvalues of the tridiagonal (D, E) less than x (LAPACK's ?laneg
// recurrence, pivots kept away from zero by pivmin).
inline long tri_sturm(__global const T* D, __global const T* E, long n, R x, R pivmin) {
  R q = D[0] - x;
  if (fabs(q) < pivmin) q = -pivmin;
  long c = q < 0 ? 1 : 0;
  for (long i = 1; i < n; ++i) {
    q = D[i] - x - E[i - 1] * E[i - 1] / q;
    if (fabs(q) < pivmin) q = -pivmin;
    c += q < 0 ? 1 : 0;
  }
  return c;
}

// Eigenvalues only (eigvalsh): bisection with Sturm counts (LAPACK's ?stebz idea), work-item k
// (id 0) finds the k-th smallest eigenvalue of matrix id 1 alone, all in parallel, to an interval of
// 2 eps max(|lo|, |hi|) + eps ||T|| (the QL iteration's accuracy). Sturm counts are monotone in x,
// so the results come out ascending.
__kernel void linalg_tridiag_bisect(__global const T* d, ulong d_o, long d_bs, __global const T* e, ulong e_o,
                                    long e_bs, __global T* w, ulong w_o, long w_bs, long n) {
  const long k = get_global_id(0), b = get_global_id(1);
  if (k >= n) return;
  __global const T* D = d + d_o + b * d_bs;
  __global const T* E = e + e_o + b * e_bs;
  // Gershgorin interval and the pivot floor.
  R lo = D[0], hi = D[0], emax2 = 0;
  for (long i = 0; i < n; ++i) {
    const R r = (i > 0 ? fabs(E[i - 1]) : 0) + (i < n - 1 ? fabs(E[i]) : 0);
    lo = fmin(lo, D[i] - r);
    hi = fmax(hi, D[i] + r);
    if (i < n - 1) emax2 = fmax(emax2, E[i] * E[i]);
  }
  const R tnorm = fmax(fabs(lo), fabs(hi));
  const R pivmin = SAFMIN * fmax((R)1, emax2);
  lo -= 2 * EPS * tnorm * n + 2 * pivmin;
  hi += 2 * EPS * tnorm * n + 2 * pivmin;
  for (int it = 0; it < 256; ++it) {
    if (hi - lo <= 2 * EPS * fmax(fabs(lo), fabs(hi)) + EPS * tnorm + pivmin) break;
    const R mid = lo + (hi - lo) / 2;
    if (tri_sturm(D, E, n, mid, pivmin) > k) hi = mid;
    else lo = mid;
  }
  w[w_o + b * w_bs + k] = lo + (hi - lo) / 2;
}
