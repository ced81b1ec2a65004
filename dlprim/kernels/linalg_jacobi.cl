// Jacobi methods for batches of matrices: the symmetric/Hermitian eigenproblem (two-sided cyclic
// Jacobi, linalg.eigh) and the SVD (one-sided Hestenes Jacobi, linalg.svd). Our own kernels; Jacobi is
// chosen over tridiagonalization + QR for its simplicity and its accuracy (small eigenvalues and
// singular values to high relative accuracy, which matrix_rank/pinv thresholds need).
//
// One work-group per matrix. A sweep visits every pair (p, q) once in n - 1 rounds of the
// round-robin ("circle") ordering: the pairs of one round are disjoint, so their rotations are
// computed together from the current matrix and applied together (Brent-Luk), rounds separated by
// barriers. Rotation parameters live in a global scratch (cs: c then s, N/2 of each, N = n rounded
// up to even; the odd player out pairs with the dummy N - 1 = n and sits the round out).
// The generator (linalg.cpp) prepends T (real, or float2/double2 for complex), R (its real part),
// EPS and the complex-aware arithmetic MUL, CONJ, RE, TO_T, ABS (|a|), ABS2 (|a|^2).
//
// One rotation form serves both: J = [[c, sg], [-conj(sg), c]] with c real and |sg|^2 + c^2 = 1
// (sg = s * a_pq / |a_pq|: the phase of a_pq is folded into the rotation, which then reduces
// to the real one, sg = s, for real T). A <- J^H A J, V <- V J:
//   rows    p <- c x - sg y,        q <- conj(sg) x + c y
//   columns p <- c x - conj(sg) y,  q <- sg x + c y
// c is stored as T (real part) next to sg in the rot scratch.

#define MAX_SWEEPS 60

// Pair `i` of round `r` among N players (N even): (p, q) with p < q.
inline void rr_pair(long N, long r, long i, long* p, long* q) {
  long a, b;
  if (i == 0) {
    a = N - 1;
    b = r;
  } else {
    a = (r + i) % (N - 1);
    b = (r - i + (N - 1)) % (N - 1);
  }
  *p = min(a, b);
  *q = max(a, b);
}


// Eigenvalues (ascending, into w) and, with compute_v, eigenvectors (columns of vout) of the
// symmetric (Hermitian) n x n matrices in a (both triangles filled, real diagonal; destroyed). v: n x n scratch for the
// unsorted vectors.
__kernel void linalg_eigh_jacobi(__global T* a, ulong a_o, long a_bs, long rs, long cs, __global T* v, ulong v_o,
                                 long v_bs, __global T* rot, ulong rot_o, long rot_bs, __global R* w, ulong w_o,
                                 long w_bs, __global T* vout, ulong vo_o, long vo_bs, long vo_rs, long vo_cs, long n,
                                 int compute_v, __local R* red) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * a_bs;
  __global T* V = v + v_o + b * v_bs;  // n x n, row-major
  __global T* C = rot + rot_o + b * rot_bs;
  const long N = n + (n & 1), P = N / 2;
  __global T* S = C + P;
#define EA(i, j) A[(long)(i) * rs + (long)(j) * cs]
  if (compute_v)
    for (long t = lid; t < n * n; t += L) V[t] = TO_T((t / n == t % n) ? 1 : 0);
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int sweep = 0; sweep < MAX_SWEEPS && n > 1; ++sweep) {
    R off = 0, all = 0;
    for (long t = lid; t < n * n; t += L) {
      R x2 = ABS2(EA(t / n, t % n));
      all += x2;
      if (t / n != t % n) off += x2;
    }
    off = group_sum(off, red);
    all = group_sum(all, red);
    // Converged when the off-diagonal part is at rounding level (eigenvalue errors go with its
    // square); the same values in every item: the group leaves together.
    if (!(off > (n * EPS) * (n * EPS) * all)) break;
    for (long r = 0; r < N - 1; ++r) {
      for (long i = lid; i < P; i += L) {
        long p, q;
        rr_pair(N, r, i, &p, &q);
        R c = 1;
        T sg = TO_T(0);
        if (q < n) {
          T apq = EA(p, q);
          R mag = ABS(apq);
          if (mag != 0) {
            R tau = (RE(EA(q, q)) - RE(EA(p, p))) / (2 * mag);
            R t = (tau >= 0 ? (R)1 : (R)-1) / (fabs(tau) + sqrt(1 + tau * tau));
            c = 1 / sqrt(1 + t * t);
            sg = (apq / mag) * (t * c);  // apq / mag: exactly +-1 when real
          }
        }
        C[i] = TO_T(c);
        S[i] = sg;
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long t = lid; t < P * n; t += L) {  // rows p, q <- J^T A
        long i = t / n, j = t % n, p, q;
        rr_pair(N, r, i, &p, &q);
        if (q >= n || IS_ZERO(S[i])) continue;
        R c = RE(C[i]);
        T sg = S[i], x = EA(p, j), y = EA(q, j);
        EA(p, j) = c * x - MUL(sg, y);
        EA(q, j) = MUL(CONJ(sg), x) + c * y;
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long t = lid; t < P * n; t += L) {  // columns p, q <- A J (and V J)
        long i = t / n, j = t % n, p, q;
        rr_pair(N, r, i, &p, &q);
        if (q >= n || IS_ZERO(S[i])) continue;
        R c = RE(C[i]);
        T sg = S[i], x = EA(j, p), y = EA(j, q);
        EA(j, p) = c * x - MUL(CONJ(sg), y);
        EA(j, q) = MUL(sg, x) + c * y;
        if (compute_v) {
          x = V[j * n + p];
          y = V[j * n + q];
          V[j * n + p] = c * x - MUL(CONJ(sg), y);
          V[j * n + q] = MUL(sg, x) + c * y;
        }
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
  }
  // Ascending order; ties keep index order.
  __global R* W = w + w_o + b * w_bs;
  __global T* VO = vout + vo_o + b * vo_bs;
  for (long i = lid; i < n; i += L) {
    R d = RE(EA(i, i));
    long rank = 0;
    for (long j = 0; j < n; ++j) {
      R e = RE(EA(j, j));
      rank += (e < d || (e == d && j < i)) ? 1 : 0;
    }
    W[rank] = d;
    if (compute_v)
      for (long r = 0; r < n; ++r) VO[r * vo_rs + rank * vo_cs] = V[r * n + i];
  }
#undef EA
}

// One-sided Jacobi SVD of the m x n matrices in a (m >= n; destroyed): singular values descending
// into s, the normalized left vectors into the first n columns of u (a zero column where the
// singular value is 0), the right vectors as the columns of vout (n x n). v: n x n scratch.
__kernel void linalg_svd_jacobi(__global T* a, ulong a_o, long a_bs, long rs, long cs, __global T* v, ulong v_o,
                                long v_bs, __global T* rot, ulong rot_o, long rot_bs, __global R* sv, ulong s_o,
                                long s_bs, __global T* u, ulong u_o, long u_bs, long u_rs, long u_cs,
                                __global T* vout, ulong vo_o, long vo_bs, long vo_rs, long vo_cs, long m, long n,
                                __local R* red) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * a_bs;
  __global T* V = v + v_o + b * v_bs;  // n x n, row-major
  __global T* C = rot + rot_o + b * rot_bs;
  const long N = n + (n & 1), P = N / 2;
  __global T* S = C + P;
#define EA(i, j) A[(long)(i) * rs + (long)(j) * cs]
  for (long t = lid; t < n * n; t += L) V[t] = TO_T((t / n == t % n) ? 1 : 0);
  barrier(CLK_GLOBAL_MEM_FENCE);
  const R tol = sqrt((R)m) * EPS;
  for (int sweep = 0; sweep < MAX_SWEEPS && n > 1; ++sweep) {
    R rotated = 0;
    for (long r = 0; r < N - 1; ++r) {
      for (long i = lid; i < P; i += L) {
        long p, q;
        rr_pair(N, r, i, &p, &q);
        R c = 1;
        T sg = TO_T(0);
        if (q < n) {  // the Gram matrix [[al, ga], [conj(ga), be]] of columns p, q
          R al = 0, be = 0;
          T ga = TO_T(0);
          for (long k = 0; k < m; ++k) {
            T x = EA(k, p), y = EA(k, q);
            al += ABS2(x);
            be += ABS2(y);
            ga += MUL(CONJ(x), y);
          }
          R mag = ABS(ga);
          if (mag > tol * sqrt(al * be) && mag != 0) {  // dgesvj's test
            R zeta = (be - al) / (2 * mag);
            R t = (zeta >= 0 ? (R)1 : (R)-1) / (fabs(zeta) + sqrt(1 + zeta * zeta));
            c = 1 / sqrt(1 + t * t);
            sg = (ga / mag) * (t * c);
            rotated = 1;
          }
        }
        C[i] = TO_T(c);
        S[i] = sg;
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
      for (long t = lid; t < P * (m + n); t += L) {  // columns p, q of A (rows j < m) and V (j >= m)
        long i = t / (m + n), j = t % (m + n), p, q;
        rr_pair(N, r, i, &p, &q);
        if (q >= n || IS_ZERO(S[i])) continue;
        R c = RE(C[i]);
        T sg = S[i];
        if (j < m) {
          T x = EA(j, p), y = EA(j, q);
          EA(j, p) = c * x - MUL(CONJ(sg), y);
          EA(j, q) = MUL(sg, x) + c * y;
        } else {
          long k = j - m;
          T x = V[k * n + p], y = V[k * n + q];
          V[k * n + p] = c * x - MUL(CONJ(sg), y);
          V[k * n + q] = MUL(sg, x) + c * y;
        }
      }
      barrier(CLK_GLOBAL_MEM_FENCE);
    }
    if (group_sum(rotated, red) == 0) break;
  }
  // Column norms are the singular values: descending, ties in index order. C (N >= n values)
  // takes the sorted values until every item has read the unsorted ones.
  __global R* SV = sv + s_o + b * s_bs;
  for (long i = lid; i < n; i += L) {
    R nrm = 0;
    for (long k = 0; k < m; ++k) nrm += ABS2(EA(k, i));
    SV[i] = sqrt(nrm);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  __global T* U = u + u_o + b * u_bs;
  __global T* VO = vout + vo_o + b * vo_bs;
  for (long i = lid; i < n; i += L) {
    R d = SV[i];
    long rank = 0;
    for (long j = 0; j < n; ++j) {
      R e = SV[j];
      rank += (e > d || (e == d && j < i)) ? 1 : 0;
    }
    for (long k = 0; k < m; ++k) U[k * u_rs + rank * u_cs] = d > 0 ? EA(k, i) / d : TO_T(0);
    for (long k = 0; k < n; ++k) VO[k * vo_rs + rank * vo_cs] = V[k * n + i];
    C[rank] = TO_T(d);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long i = lid; i < n; i += L) SV[i] = RE(C[i]);
#undef EA
}
