// Non-symmetric eigenproblem (linalg.eig / eigvals) of batches of complex n x n matrices: Householder
// reduction to upper Hessenberg form, complex single-shift QR iterations (implicit, Givens bulge
// chasing, Wilkinson shifts with zlahqr's exceptional shifts) to the Schur form T = Z^H A Z, then
// eigenvectors by back-substitution on T (ztrevc) transformed back by Z and normalised as zgeev
// (unit 2-norm, largest component real). Real input is converted to complex by the caller: one
// algorithm for both. One work-group per matrix, the matrices in global memory, the sequential
// steps (reflectors, rotations) separated by barriers, their element updates spread over the group.
// Always compiled with the complex prelude of linalg.cpp (T float2/double2, R its part).

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]
#define ZAT(i, j) Z[(long)(i) + (long)(j) * n]
#define XAT(i, j) X[(long)(i) + (long)(j) * n]
#define GBAR barrier(CLK_GLOBAL_MEM_FENCE)

inline R cabs_(T a) { return hypot(a.x, a.y); }

// Principal square root (no overflow through hypot).
inline T csqrt_(T z) {
  const R r = cabs_(z);
  if (r == 0) return TO_T(0);
  const R t = sqrt((r + fabs(z.x)) / 2);
  if (z.x >= 0) return (T)(t, z.y / (2 * t));
  return (T)(fabs(z.y) / (2 * t), copysign(t, z.y));
}

// The rotation G = [c s; -conj(s) c] (c real) with G [f; g] = [r; 0].
inline void givens_(T f, T g, R* c, T* s) {
  if (IS_ZERO(g)) {
    *c = 1;
    *s = TO_T(0);
    return;
  }
  const R af = cabs_(f);
  if (af == 0) {
    *c = 0;
    *s = CONJ(g) / cabs_(g);
    return;
  }
  const R nrm = hypot(af, cabs_(g));
  *c = af / nrm;
  *s = MUL(f / af, CONJ(g)) / nrm;
}

// a (n x n, rs/cs strides) is destroyed (T on exit); w: n eigenvalues per matrix; z, x: n * n
// scratch per matrix (Z and the triangular eigenvectors, column-major); v (strided, written when
// want_v) the normalised eigenvectors; info[b] = hi + 1 where QR did not converge (zlahqr's info).
__kernel void linalg_eig(__global T* a, ulong a_o, long bs, long rs, long cs, __global T* w, ulong w_o, long w_bs,
                         __global T* z, ulong z_o, long z_bs, __global T* x, ulong x_o, long x_bs, __global T* v,
                         ulong v_o, long v_bs, long vrs, long vcs, __global int* info, ulong info_o, long n,
                         int want_v) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global T* W = w + w_o + b * w_bs;
  __global T* Z = z + z_o + b * z_bs;
  __global T* X = x + x_o + b * x_bs;
  __global T* V = v + v_o + b * v_bs;
  if (want_v)
    for (long t = lid; t < n * n; t += L) Z[t] = TO_T(t % n == t / n ? 1 : 0);
  // 1. Hessenberg: for column k, the Hermitian reflector P = I - u u^H / (||x|| (||x|| + |alpha|))
  // with u = x + phase(alpha) ||x|| e1 maps x = A[k+1:, k] to -phase(alpha) ||x|| e1; applied
  // on both sides (P = P^H) and accumulated into Z. u is kept in X's first column.
  // Barriers stay outside conditionals (PoCL's work-group compiler needs them so); a column
  // already reduced (tail == 0, the same on every work-item) makes the steps' loops empty.
  for (long k = 0; k + 2 < n; ++k) {
    GBAR;
    R tail = 0;
    for (long i = k + 2; i < n; ++i) {
      const T e = AT(A, i, k);
      tail += RE(MUL(CONJ(e), e));
    }
    const long top = tail == 0 ? 0 : n;  // loop bound: nothing to do when 0
    const T alpha = AT(A, k + 1, k);
    const R aa = cabs_(alpha), xn = sqrt(aa * aa + tail);
    const T ph = aa == 0 ? TO_T(1) : alpha / aa;
    const R scale = 1 / (xn * (xn + aa));
    for (long i = k + 1 + lid; i < top; i += L) XAT(i, 0) = i == k + 1 ? alpha + ph * xn : AT(A, i, k);
    GBAR;
    // From the left on columns k+1.. (one work-item per column); column k becomes -ph xn e1.
    for (long j = k + 1 + lid; j < top; j += L) {
      T d = TO_T(0);
      for (long i = k + 1; i < n; ++i) d += MUL(CONJ(XAT(i, 0)), AT(A, i, j));
      d *= scale;
      for (long i = k + 1; i < n; ++i) AT(A, i, j) -= MUL(XAT(i, 0), d);
    }
    GBAR;
    if (lid == 0 && top > 0) {
      AT(A, k + 1, k) = -ph * xn;
      for (long i = k + 2; i < n; ++i) AT(A, i, k) = TO_T(0);
    }
    // From the right on every row (one work-item per row), and Z <- Z P.
    for (long r = lid; r < top; r += L) {
      T d = TO_T(0);
      for (long i = k + 1; i < n; ++i) d += MUL(AT(A, r, i), XAT(i, 0));
      d *= scale;
      for (long i = k + 1; i < n; ++i) AT(A, r, i) -= MUL(d, CONJ(XAT(i, 0)));
      if (want_v) {
        d = TO_T(0);
        for (long i = k + 1; i < n; ++i) d += MUL(ZAT(r, i), XAT(i, 0));
        d *= scale;
        for (long i = k + 1; i < n; ++i) ZAT(r, i) -= MUL(d, CONJ(XAT(i, 0)));
      }
    }
  }
  GBAR;
  // 2. Shifted QR on the active block [l, hi], deflating from the bottom. Work-item 0 finds the
  // deflation point and shares it, so the loop bounds (and the barriers in them) are the same on
  // every work-item; the shift and rotations each computes from the same values (rounding only).
  const long itmax = 30 * max(10L, n);
  const R small = (R)n / EPS * SAFMIN;
  long hi = n - 1, its = 0;
  int failed = 0;
  __local long l_shared;  // the deflation point, found by work-item 0: decisions stay uniform
  while (hi > 0 && !failed) {
    if (lid == 0) {
      long l = hi;
      for (; l > 0; --l) {
        const R h = ABS1(AT(A, l, l - 1));
        R tst = ABS1(AT(A, l - 1, l - 1)) + ABS1(AT(A, l, l));
        if (tst == 0) {
          if (l - 2 >= 0) tst += fabs(RE(AT(A, l - 1, l - 2)));
          if (l + 1 <= hi) tst += fabs(RE(AT(A, l + 1, l)));
        }
        if (h <= max(small, EPS * tst)) break;
      }
      if (l > 0) AT(A, l, l - 1) = TO_T(0);
      l_shared = l;
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    const long l = l_shared;
    barrier(CLK_LOCAL_MEM_FENCE);  // read by all before work-item 0 writes the next
    const long h0 = hi;
    int sweep = 0;
    if (l == hi) {  // A[hi][hi] is an eigenvalue
      --hi;
      its = 0;
    } else if (++its > itmax) {
      failed = 1;
      if (lid == 0) info[info_o + b] = (int)(hi + 1);
    } else {
      sweep = 1;
    }
    T s = TO_T(0);
    if (!sweep) {
    } else if (its % 10 == 0) {  // exceptional shifts (zlahqr's), against cycling
      s = its % 20 == 0 ? AT(A, hi, hi) + TO_T((R)0.75 * fabs(RE(AT(A, hi, hi - 1))))
                        : AT(A, l, l) + TO_T((R)0.75 * fabs(RE(AT(A, l + 1, l))));
    } else {  // Wilkinson: the eigenvalue of the trailing 2 x 2 nearer its last diagonal element
      const T p = AT(A, hi - 1, hi - 1), q = AT(A, hi - 1, hi), r = AT(A, hi, hi - 1), d = AT(A, hi, hi);
      const T hd = (p - d) / 2;
      const T root = csqrt_(MUL(hd, hd) + MUL(q, r));
      const T e1 = hd + root, e2 = hd - root;  // (eigenvalue - d)
      s = d + (cabs_(e1) < cabs_(e2) ? e1 : e2);
    }
    // The sweep (no iterations when deflating or failed: barriers stay unconditional).
    const long kend = sweep ? h0 : l;
    for (long k = l; k < kend; ++k) {
      const T f = k == l ? AT(A, l, l) - s : AT(A, k, k - 1);
      const T g = k == l ? AT(A, l + 1, l) : AT(A, k + 1, k - 1);
      R c;
      T sn;
      givens_(f, g, &c, &sn);
      GBAR;  // f and g read by all before anyone writes
      // Rows k, k+1 (the whole Schur form when vectors are wanted, else the active block).
      const long j1 = want_v ? n : hi + 1;
      for (long j = (k == l ? l : k - 1) + lid; j < j1; j += L) {
        const T p = AT(A, k, j), q = AT(A, k + 1, j);
        AT(A, k, j) = c * p + MUL(sn, q);
        AT(A, k + 1, j) = c * q - MUL(CONJ(sn), p);
      }
      GBAR;
      if (k > l && lid == 0) AT(A, k + 1, k - 1) = TO_T(0);  // the bulge chased down
      const long r0 = want_v ? 0 : l, r1 = min(k + 2, hi);
      for (long r = r0 + lid; r <= r1; r += L) {
        const T p = AT(A, r, k), q = AT(A, r, k + 1);
        AT(A, r, k) = c * p + MUL(q, CONJ(sn));
        AT(A, r, k + 1) = c * q - MUL(p, sn);
      }
      if (want_v)
        for (long r = lid; r < n; r += L) {
          const T p = ZAT(r, k), q = ZAT(r, k + 1);
          ZAT(r, k) = c * p + MUL(q, CONJ(sn));
          ZAT(r, k + 1) = c * q - MUL(p, sn);
        }
      GBAR;
    }
  }
  GBAR;
  for (long i = lid; i < n; i += L) W[i] = AT(A, i, i);
  // 3. Eigenvectors of T by back-substitution, one work-item per vector (ztrevc): x_k = 1,
  // (T[j][j] - T[k][k]) x_j = -sum_{j<m<=k} T[j][m] x_m, tiny pivots replaced by smin; columns
  // scaled down when they grow past `big` (the vector's direction is what matters).
  R tnorm = 0;
  for (long i = 0; i < n; ++i) tnorm = max(tnorm, ABS1(AT(A, i, i)));
  const R smin = max(EPS * tnorm, small);
  const R big = sqrt(1 / SAFMIN);  // sums of n terms T x stay finite
  const long nv = want_v ? n : 0;  // no vectors: empty loops (barriers stay unconditional)
  for (long k = lid; k < nv; k += L) {
    const T lam = AT(A, k, k);
    for (long j = k + 1; j < n; ++j) XAT(j, k) = TO_T(0);
    XAT(k, k) = TO_T(1);
    for (long j = k - 1; j >= 0; --j) {
      T sum = TO_T(0);
      for (long m = j + 1; m <= k; ++m) sum += MUL(AT(A, j, m), XAT(m, k));
      T d = AT(A, j, j) - lam;
      if (ABS1(d) < smin) d = TO_T(smin);
      const T xj = -DIV(sum, d);
      XAT(j, k) = xj;
      const R mag = ABS1(xj);
      if (mag > big)
        for (long m = j; m <= k; ++m) XAT(m, k) /= mag;
    }
  }
  GBAR;
  // V = Z X (X upper triangular).
  for (long t = lid; t < n * nv; t += L) {
    const long i = t % n, k = t / n;
    T sum = TO_T(0);
    for (long m = 0; m <= k; ++m) sum += MUL(ZAT(i, m), XAT(m, k));
    V[i * vrs + k * vcs] = sum;
  }
  GBAR;
  // zgeev's normalisation: unit 2-norm, then the first component of largest |.| made real.
  for (long k = lid; k < nv; k += L) {
    R mx = 0;
    long im = 0;
    for (long i = 0; i < n; ++i) {
      const R m2 = cabs_(V[i * vrs + k * vcs]);
      if (m2 > mx) {
        mx = m2;
        im = i;
      }
    }
    if (mx == 0) continue;
    R ss = 0;
    for (long i = 0; i < n; ++i) {
      const T e = V[i * vrs + k * vcs] / mx;
      ss += RE(MUL(CONJ(e), e));
    }
    const T top = V[im * vrs + k * vcs];
    const T f = CONJ(top) / (cabs_(top) * mx * sqrt(ss));  // unit norm and phase in one factor
    for (long i = 0; i < n; ++i) V[i * vrs + k * vcs] = MUL(V[i * vrs + k * vcs], f);
    V[im * vrs + k * vcs].y = 0;
  }
}
