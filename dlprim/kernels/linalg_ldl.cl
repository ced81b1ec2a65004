// LDL^T / LDL^H of symmetric (complex: symmetric or Hermitian) matrices by Bunch-Kaufman diagonal
// pivoting, and the solve with its factors: linalg.ldl_factor(_ex) and linalg.ldl_solve. Our own
// kernels written from LAPACK's documented algorithm (the unblocked ?sytf2 / ?hetf2, lower
// triangle, and ?sytrs / ?hetrs): torch's CPU answer is LAPACK's, and its pivots are compared
// exactly, so the pivot decisions (alpha = (1 + sqrt(17)) / 8, the first index of the largest
// |re| + |im| as i?amax, the zero-column test) and the order of the arithmetic follow those
// routines. The prelude (linalg.cpp) defines T, R, MUL, DIV, CONJ, ABS1, RE, TO_T.
//
// Pivots use LAPACK's 1-based encoding: piv[k] = p > 0: a 1x1 block, rows/columns k and p-1 were
// interchanged; piv[k] = piv[k+1] = -p: a 2x2 block at k, k+1, with k+1 and p-1 interchanged.

// No fused multiply-adds: LAPACK's reference order rounds each product (MKL's answer does too: an
// exactly cancelling update, which decides info and later pivots, stays exactly zero only so).
#pragma OPENCL FP_CONTRACT OFF

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// (1 + sqrt(17)) / 8 rounded as LAPACK computes it in each precision (no reliance on the
// device's sqrt accuracy).
#define LDL_ALPHA ((R)(sizeof(R) == 8 ? 0x1.47e0f66afed07p-1 : 0x1.47e0f6p-1))

// The magnitude the pivot tests use for a diagonal element: |re| (Hermitian: the diagonal is
// real) or ABS1 (symmetric; |x| for real).
#define DIAG_ABS(v) (herm ? fabs(RE(v)) : ABS1(v))

// The 2x2 block's inverse applied to row j of columns k, k+1 (a0, a1): ?sytf2's wk, wkp1
// (zhetf2's with d21 complex and the conjugate where it has one).
// (A macro: PoCL 5's inliner crashed on it as a function with pointer results.)
#define LDL_W(a0, a1, wk, wkp1)                               \
  if (herm) {                                                 \
    wk = MUL(dd, MUL(d11, a0) - MUL(d21, a1));                \
    wkp1 = MUL(dd, MUL(d22, a1) - MUL(CONJ(d21), a0));        \
  } else {                                                    \
    wk = MUL(dd, MUL(d11, a0) - a1);                          \
    wkp1 = MUL(dd, MUL(d22, a1) - a0);                        \
  }

// In place of each n x n matrix (only its lower triangle is read; the strict upper one is zeroed):
// L (unit, below the diagonal) and the blocks of D (on the diagonal and, for 2x2 blocks, the
// subdiagonal), pivots as above, info[b] = the first k (1-based) whose column was exactly zero (or
// its diagonal NaN): that step is skipped, as LAPACK's. herm: A = L D L^H with a real diagonal
// (zhetf2); else A = L D L^T (zsytf2 for complex). dec: 2 ints of local scratch.
__kernel void linalg_ldl_factor(__global T* a, ulong a_o, long bs, long rs, long cs, long n, int herm,
                                __global int* piv, ulong piv_o, long piv_bs, __global int* info, ulong info_o,
                                __local int* dec) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global int* P = piv + piv_o + b * piv_bs;
  const R alpha = LDL_ALPHA;
  for (long t = lid; t < n * n; t += L) {
    long i = t / n, j = t % n;
    if (j > i) AT(A, i, j) = TO_T(0);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  int bad = 0;
  long k = 0;
  while (k < n) {
    // The pivot decision: one item (a serial O(n) scan; the update below is the O(n^2) part).
    if (lid == 0) {
      const R absakk = DIAG_ABS(AT(A, k, k));
      long imax = k;
      R colmax = 0;
      if (k + 1 < n) {  // i?amax: the first of the largest, starting from the first element
        imax = k + 1;
        colmax = ABS1(AT(A, k + 1, k));
        for (long i = k + 2; i < n; ++i) {
          R v = ABS1(AT(A, i, k));
          if (v > colmax) {
            colmax = v;
            imax = i;
          }
        }
      }
      int kp = (int)k, kstep = 1, skip = 0;
      if (max(absakk, colmax) == 0 || isnan(absakk)) {
        skip = 1;
      } else if (!(absakk >= alpha * colmax)) {
        // rowmax: the largest off-diagonal magnitude in row/column imax of the trailing matrix
        long jmax = k;
        R rowmax = ABS1(AT(A, imax, k));
        for (long j = k + 1; j < imax; ++j) {
          R v = ABS1(AT(A, imax, j));
          if (v > rowmax) {
            rowmax = v;
            jmax = j;
          }
        }
        if (imax + 1 < n) {
          long j2 = imax + 1;
          R r2 = ABS1(AT(A, imax + 1, imax));
          for (long i = imax + 2; i < n; ++i) {
            R v = ABS1(AT(A, i, imax));
            if (v > r2) {
              r2 = v;
              j2 = i;
            }
          }
          rowmax = max(rowmax, r2);
        }
        if (absakk >= alpha * colmax * (colmax / rowmax)) {
          kp = (int)k;
        } else if (DIAG_ABS(AT(A, imax, imax)) >= alpha * rowmax) {
          kp = (int)imax;
        } else {
          kp = (int)imax;
          kstep = 2;
        }
      }
      dec[0] = skip ? -1 : kp;
      dec[1] = kstep;
      if (skip) {
        if (herm) AT(A, k, k) = TO_T(RE(AT(A, k, k)));
        P[k] = (int)(k + 1);
      } else if (kstep == 1) {
        P[k] = kp + 1;
      } else {
        P[k] = -(kp + 1);
        P[k + 1] = -(kp + 1);
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const int kp_or_skip = dec[0], kstep = dec[1];
    barrier(CLK_LOCAL_MEM_FENCE);  // all have read dec before item 0 rewrites it next step
    if (kp_or_skip < 0 && bad == 0) bad = (int)(k + 1);  // a zero column: nothing to eliminate
    const long kp = kp_or_skip, kk = k + kstep - 1;
    // Interchange rows and columns kk and kp of the trailing matrix (lower triangle): disjoint
    // pairs, one per item. Hermitian: the part crossing the diagonal is conjugated.
    if (kp >= 0 && kp != kk) {
      const long n1 = n - kp - 1, n2 = kp - kk - 1;
      for (long t = lid; t < n1 + n2; t += L) {
        if (t < n1) {
          long i = kp + 1 + t;
          T v = AT(A, i, kk);
          AT(A, i, kk) = AT(A, i, kp);
          AT(A, i, kp) = v;
        } else {
          long j = kk + 1 + (t - n1);
          T v = AT(A, j, kk);
          T w = AT(A, kp, j);
          AT(A, j, kk) = herm ? CONJ(w) : w;
          AT(A, kp, j) = herm ? CONJ(v) : v;
        }
      }
      if (lid == 0) {
        if (herm) AT(A, kp, kk) = CONJ(AT(A, kp, kk));
        T d = AT(A, kk, kk);
        T e = AT(A, kp, kp);
        AT(A, kk, kk) = herm ? TO_T(RE(e)) : e;
        AT(A, kp, kp) = herm ? TO_T(RE(d)) : d;
        if (kstep == 2) {
          if (herm) AT(A, k, k) = TO_T(RE(AT(A, k, k)));
          T s = AT(A, k + 1, k);
          AT(A, k + 1, k) = AT(A, kp, k);
          AT(A, kp, k) = s;
        }
      }
    } else if (kp >= 0 && herm && lid == 0) {
      AT(A, k, k) = TO_T(RE(AT(A, k, k)));
      if (kstep == 2) AT(A, k + 1, k + 1) = TO_T(RE(AT(A, k + 1, k + 1)));
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (kp >= 0 && kstep == 1 && k + 1 < n) {
      // Rank-1 update of the trailing lower triangle with w = column k (?syr / zher order:
      // a(i,j) += w(i) * (-d11 * w(j)), skipped where w(j) is zero), then column k scaled by d11.
      const long m = n - k - 1;
      const R r1 = herm ? 1 / RE(AT(A, k, k)) : (R)0;
      const T d11 = herm ? TO_T(r1) : DIV(TO_T(1), AT(A, k, k));
      for (long t = lid; t < m * m; t += L) {
        long i = k + 1 + t / m, j = k + 1 + t % m;
        const T wj = AT(A, j, k);
        if (j > i) {
        } else if (IS_ZERO(wj)) {
          if (herm && i == j) AT(A, j, j) = TO_T(RE(AT(A, j, j)));
        } else if (herm) {
          const T tmp = CONJ(wj) * (-r1);
          if (i == j)
            AT(A, j, j) = TO_T(RE(AT(A, j, j)) + RE(MUL(wj, tmp)));
          else
            AT(A, i, j) += MUL(AT(A, i, k), tmp);
        } else {
          const T tmp = MUL(-d11, wj);
          AT(A, i, j) += MUL(AT(A, i, k), tmp);
        }
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long i = k + 1 + lid; i < n; i += L) AT(A, i, k) = herm ? AT(A, i, k) * r1 : MUL(d11, AT(A, i, k));
      barrier(CLK_GLOBAL_MEM_FENCE);
    } else if (kp >= 0 && kstep == 2 && k + 2 < n) {
      // Rank-2 update with the 2x2 block's inverse applied to columns k, k+1 (?sytf2 / zhetf2's
      // formulas, recomputed per item from the unchanged columns), then those columns become L's.
      const long m = n - k - 2;
      const T c = AT(A, k + 1, k);
      T d11, d22, d21, dd;
      if (herm) {
        const R d = hypot(RE(c), IM(c));
        const R e11 = RE(AT(A, k + 1, k + 1)) / d, e22 = RE(AT(A, k, k)) / d;
        const R tt = 1 / (e11 * e22 - 1);
        d11 = TO_T(e11);
        d22 = TO_T(e22);
        d21 = c / d;
        dd = TO_T(tt / d);
      } else {
        d11 = DIV(AT(A, k + 1, k + 1), c);
        d22 = DIV(AT(A, k, k), c);
        const T tt = DIV(TO_T(1), MUL(d11, d22) - TO_T(1));
        d21 = DIV(tt, c);
        dd = d21;
      }
      for (long t = lid; t < m * m; t += L) {
        long i = k + 2 + t / m, j = k + 2 + t % m;
        T wk, wkp1;
        LDL_W(AT(A, j, k), AT(A, j, k + 1), wk, wkp1);
        if (j > i) {
        } else if (herm) {
          T v = AT(A, i, j) - MUL(AT(A, i, k), CONJ(wk)) - MUL(AT(A, i, k + 1), CONJ(wkp1));
          AT(A, i, j) = i == j ? TO_T(RE(v)) : v;
        } else {
          AT(A, i, j) = AT(A, i, j) - MUL(AT(A, i, k), wk) - MUL(AT(A, i, k + 1), wkp1);
        }
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      // Every item computed its w's from the old columns; now the columns themselves change.
      for (long j = k + 2 + lid; j < n; j += L) {
        T wk, wkp1;
        LDL_W(AT(A, j, k), AT(A, j, k + 1), wk, wkp1);
        AT(A, j, k) = wk;
        AT(A, j, k + 1) = wkp1;
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    k += kstep;
  }
  if (lid == 0) info[info_o + b] = bad;
}

// Solves A X = B in place of B (n x nrhs) with the factors of linalg_ldl_factor (?sytrs /
// ?hetrs, lower): one work-item per (matrix, right-hand side), B's columns being independent.
// Pivots naming a row outside the matrix (user input) are skipped, never followed.
__kernel void linalg_ldl_solve(__global const T* a, ulong a_o, long a_bs, long a_rs, long a_cs,
                               __global const int* piv, ulong piv_o, long piv_bs, __global T* x, ulong x_o,
                               long x_bs, long x_rs, long x_cs, long n, long nrhs, int herm, ulong batch) {
  const ulong g = get_global_id(0);
  if (g >= batch * (ulong)nrhs) return;
  const ulong b = g / (ulong)nrhs;
  const long c = (long)(g % (ulong)nrhs);
  __global const T* A = a + a_o + b * a_bs;
  __global const int* P = piv + piv_o + b * piv_bs;
  __global T* X = x + x_o + b * x_bs + c * x_cs;
#define LA(i, j) A[(long)(i) * a_rs + (long)(j) * a_cs]
#define XR(i) X[(long)(i) * x_rs]
#define SWAP_ROWS(i, p)               \
  if ((p) != (i) && (p) >= 0 && (p) < n) { \
    T s_ = XR(i);                     \
    XR(i) = XR(p);                    \
    XR(p) = s_;                       \
  }
  // Forward: L D y = P^T b, block by block.
  long k = 0;
  while (k < n) {
    const int p = P[k];
    if (p > 0 || k + 1 >= n) {
      const long kp = (long)p - 1;
      SWAP_ROWS(k, kp);
      const T xk = XR(k);
      for (long i = k + 1; i < n; ++i) XR(i) -= MUL(LA(i, k), xk);
      XR(k) = herm ? XR(k) * (1 / RE(LA(k, k))) : MUL(XR(k), DIV(TO_T(1), LA(k, k)));
      k += 1;
    } else {
      const long kp = -(long)p - 1;
      SWAP_ROWS(k + 1, kp);
      const T x0 = XR(k), x1 = XR(k + 1);
      for (long i = k + 2; i < n; ++i) XR(i) -= MUL(LA(i, k), x0);
      for (long i = k + 2; i < n; ++i) XR(i) -= MUL(LA(i, k + 1), x1);
      const T akm1k = LA(k + 1, k);
      const T lo = herm ? CONJ(akm1k) : akm1k;  // the block's upper off-diagonal element
      const T akm1 = DIV(LA(k, k), lo), ak = DIV(LA(k + 1, k + 1), akm1k);
      const T denom = MUL(akm1, ak) - TO_T(1);
      const T bkm1 = DIV(x0, lo), bk = DIV(x1, akm1k);
      XR(k) = DIV(MUL(ak, bkm1) - bk, denom);
      XR(k + 1) = DIV(MUL(akm1, bk) - bkm1, denom);
      k += 2;
    }
  }
  // Backward: L^T x = y (L^H when Hermitian), then the interchanges in reverse.
  k = n - 1;
  while (k >= 0) {
    const int p = P[k];
    if (p > 0 || k == 0) {
      T s = TO_T(0);
      for (long i = k + 1; i < n; ++i) s += MUL(herm ? CONJ(LA(i, k)) : LA(i, k), XR(i));
      XR(k) -= s;
      SWAP_ROWS(k, (long)p - 1);
      k -= 1;
    } else {
      T s = TO_T(0), s1 = TO_T(0);
      for (long i = k + 1; i < n; ++i) {
        s += MUL(herm ? CONJ(LA(i, k)) : LA(i, k), XR(i));
        s1 += MUL(herm ? CONJ(LA(i, k - 1)) : LA(i, k - 1), XR(i));
      }
      XR(k) -= s;
      XR(k - 1) -= s1;
      SWAP_ROWS(k, -(long)p - 1);
      k -= 2;
    }
  }
#undef SWAP_ROWS
#undef XR
#undef LA
}
