// Householder QR of batches of matrices (geqrf) and the product of its reflectors (orgqr /
// linalg.householder_product). Our own kernels, LAPACK's conventions (dlarfg: beta = -sign(alpha)
// * ||(alpha, x)||, tau = (beta - alpha) / beta, v = x / (alpha - beta), v[0] = 1 implicit), so R,
// tau and Q match the CPU's up to rounding. One work-group per matrix, the matrix in global memory,
// steps separated by barriers (see linalg.cl). The generator prepends T.

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// In place: R on and above the diagonal, the reflectors' v below it; tau[b][0..min(m, n)).
// red: local scratch of one T per work-item (a power of two of them).
__kernel void linalg_geqrf(__global T* a, ulong a_o, long bs, long rs, long cs, long m, long n, __global T* tau,
                           ulong tau_o, long tau_bs, __local T* red) {
  const long b = get_group_id(0);
  const int lid = get_local_id(0), L = get_local_size(0);
  __global T* A = a + a_o + b * bs;
  __global T* TAU = tau + tau_o + b * tau_bs;
  const long kmax = min(m, n);
  for (long k = 0; k < kmax; ++k) {
    T part = 0;
    for (long i = k + 1 + lid; i < m; i += L) part += AT(A, i, k) * AT(A, i, k);
    red[lid] = part;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = L >> 1; s > 0; s >>= 1) {
      if (lid < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    const T xn2 = red[0], alpha = AT(A, k, k);
    T tk = 0, beta = alpha, scale = 0;
    if (xn2 != 0) {
      beta = -copysign(sqrt(alpha * alpha + xn2), alpha);
      tk = (beta - alpha) / beta;
      scale = 1 / (alpha - beta);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);  // alpha and red[0] read by all
    if (tk != 0)
      for (long i = k + 1 + lid; i < m; i += L) AT(A, i, k) *= scale;
    if (lid == 0) {
      AT(A, k, k) = beta;
      TAU[k] = tk;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // H = I - tau v v^T on the columns right of k: one work-item per column.
    if (tk != 0) {
      for (long j = k + 1 + lid; j < n; j += L) {
        T w = AT(A, k, j);
        for (long i = k + 1; i < m; ++i) w += AT(A, i, k) * AT(A, i, j);
        w *= tk;
        AT(A, k, j) -= w;
        for (long i = k + 1; i < m; ++i) AT(A, i, j) -= AT(A, i, k) * w;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}

// Q (m x qc) = the first qc columns of H_0 H_1 ... H_{k-1}, H_r = I - tau[r] v_r v_r^T with v_r in
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
    AT(Q, i, j) = i == j ? (T)1 : (T)0;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (long r = k - 1; r >= 0; --r) {
    const T tr = TAU[r];
    for (long j = r + lid; j < qc; j += L) {
      T w = AT(Q, r, j);
      for (long i = r + 1; i < m; ++i) w += V[i * v_rs + r * v_cs] * AT(Q, i, j);
      w *= tr;
      AT(Q, r, j) -= w;
      for (long i = r + 1; i < m; ++i) AT(Q, i, j) -= V[i * v_rs + r * v_cs] * w;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
