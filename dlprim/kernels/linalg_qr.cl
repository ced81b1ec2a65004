// Householder QR of batches of matrices (geqrf) and the product of its reflectors (orgqr /
// linalg.householder_product). Our own kernels, LAPACK's conventions (?larfg: beta =
// -sign(re alpha) * ||(alpha, x)||, real; tau = (beta - alpha) / beta, v = x / (alpha - beta),
// v[0] = 1 implicit; H = I - tau v v^H, geqr2 applying H^H to the trailing columns), so R, tau and
// Q match the CPU's up to rounding, real and complex. One work-group per matrix, the matrix in
// global memory, steps separated by barriers (see linalg.cl). The generator prepends T, R and the
// arithmetic macros (linalg.cl).

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// In place: R on and above the diagonal, the reflectors' v below it; tau[b][0..min(m, n)).
// red, wsum: local scratch of one R, one T per work-item (a power of two of them). has_v: also the
// unit lower trapezoidal V into v (a's shape) with zeros in the v_top rows above it, as linalg_geqrf_leaf
// (the recursive QR panel's leaves that do not fit in registers: no tril / fill launches of their own).
__kernel void linalg_geqrf(__global T* a, ulong a_o, long bs, long rs, long cs, long m, long n, __global T* tau,
                           ulong tau_o, long tau_bs, __local R* red, __local T* wsum, int lanes, __global T* v,
                           ulong v_o, long v_bs, long v_rs, long v_cs, int has_v, long v_top) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global T* TAU = tau + tau_o + b * tau_bs;
  const long kmax = min(m, n);
  for (long k = 0; k < kmax; ++k) {
    R part = 0;
    for (long i = k + 1 + lid; i < m; i += L) {
      const T x = AT(A, i, k);
      part += RE(MUL(CONJ(x), x));  // |x|^2
    }
    red[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = L >> 1; s > 0; s >>= 1) {
      if (lid < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const R xn2 = red[0];
    const T alpha = AT(A, k, k);
    const R ar = RE(alpha), ai = IM(alpha);
    T tk = TO_T(0), new_diag = alpha, scale = TO_T(0);
    if (xn2 != 0 || ai != 0) {  // else H = I (tau 0), as ?larfg
      const R beta = -copysign(sqrt(ar * ar + ai * ai + xn2), ar);
      tk = (TO_T(beta) - alpha) / beta;
      scale = DIV(TO_T(1), alpha - TO_T(beta));
      new_diag = TO_T(beta);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);  // alpha and red[0] read by all
    if (!IS_ZERO(tk))
      for (long i = k + 1 + lid; i < m; i += L) AT(A, i, k) = MUL(AT(A, i, k), scale);
    if (lid == 0) {
      AT(A, k, k) = new_diag;
      TAU[k] = tk;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // H^H = I - conj(tau) v v^H on the columns right of k, P = `lanes` work-items per column
    // (consecutive rows: coalesced on GPUs, where the host passes 32) and L / P columns at a time, so
    // a tall matrix does not leave each work-item a serial walk down its column (CPU devices: 1, that
    // walk, cheaper there than barriers). w_j = conj(tau) (a_kj + v^H a_j) by a tree sum in wsum. The loops run even for tau = 0 (H = I, nothing written) so every barrier sits in
    // control flow the same for the whole work-group (PoCL's compiler requires it).
    {
      const int apply = !IS_ZERO(tk);
      const T ct = CONJ(tk);
      const int P = min(L, lanes), C = L / P, c = lid / P, r = lid % P;
      for (long j0 = k + 1; j0 < n; j0 += C) {
        const long j = j0 + c;
        const int mine = apply && j < n;
        T part = TO_T(0);
        if (mine)
          for (long i = k + 1 + r; i < m; i += P) part += MUL(CONJ(AT(A, i, k)), AT(A, i, j));
        wsum[lid] = part;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = P >> 1; s > 0; s >>= 1) {
          if (r < s) wsum[lid] += wsum[lid + s];
          barrier(CLK_LOCAL_MEM_FENCE);
        }
        const T w = mine ? MUL(ct, AT(A, k, j) + wsum[c * P]) : TO_T(0);
        barrier(CLK_LOCAL_MEM_FENCE);  // wsum read by all before the next columns reuse it
        if (mine) {
          for (long i = k + 1 + r; i < m; i += P) AT(A, i, j) -= MUL(AT(A, i, k), w);
          if (r == 0) AT(A, k, j) -= w;
        }
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (has_v) {
    __global T* V = v + v_o + b * v_bs;
    for (long t = lid; t < (v_top + m) * n; t += L) {
      const long i = t % (v_top + m) - v_top, j = t / (v_top + m);
      V[i * v_rs + j * v_cs] = i > j ? AT(A, i, j) : TO_T(i == j ? 1 : 0);
    }
  }
}

// Q (m x qc) = the first qc columns of H_0 H_1 ... H_{k-1}, H_r = I - tau[r] v_r v_r^H with v_r in
// column r of V below row r (1 at row r). Backward accumulation (dorg2r): H_r leaves the columns
// left of r alone, so step r updates columns r..qc-1 only.
__kernel void linalg_orgqr(__global const T* v, ulong v_o, long v_bs, long v_rs, long v_cs, __global const T* tau,
                           ulong tau_o, long tau_bs, __global T* q, ulong q_o, long q_bs, long rs, long cs, long m,
                           long qc, long k) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global const T* V = v + v_o + b * v_bs;
  __global const T* TAU = tau + tau_o + b * tau_bs;
  __global T* Q = q + q_o + b * q_bs;
  for (long t = lid; t < m * qc; t += L) {
    long i = t / qc, j = t % qc;
    AT(Q, i, j) = TO_T(i == j ? 1 : 0);
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long r = k - 1; r >= 0; --r) {
    const T tr = TAU[r];
    for (long j = r + lid; j < qc; j += L) {
      T w = AT(Q, r, j);
      for (long i = r + 1; i < m; ++i) w += MUL(CONJ(V[i * v_rs + r * v_cs]), AT(Q, i, j));
      w = MUL(tr, w);
      AT(Q, r, j) -= w;
      for (long i = r + 1; i < m; ++i) AT(Q, i, j) -= MUL(V[i * v_rs + r * v_cs], w);
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

// v <- the unit lower trapezoidal V of the reflectors stored in a (m x k, geqrf's layout): a's elements
// below the diagonal, 1 on it, 0 above; a work-item an element, `total` = batch m k of them (blocked
// orgqr's panels: one launch instead of a tril and a diagonal fill).
__kernel void linalg_unit_lower(__global const T* a, ulong a_o, long a_bs, long rs, long cs, __global T* v, ulong v_o,
                                long v_bs, long v_rs, long v_cs, long m, long k, ulong total) {
  const ulong t = get_global_id(0);
  if (t >= total) return;
  const long i = t % m, j = (t / m) % k, b = t / (m * k);
  v[v_o + b * v_bs + i * v_rs + j * v_cs] = i > j ? AT(a + a_o + b * a_bs, i, j) : TO_T(i == j ? 1 : 0);
}
