// GEMM paths for shapes the tiled kernel would mostly waste, with fully general strides:
// A(m, k) = A[a_off + bi * a_bs + gi * a_gs + o * a_os + m * a_sm + k * a_sk], B(k, n) likewise;
// the k_outer slices o are summed. Needs gemm_common.cl.

#define SMALL_OPERAND_ARGS                                                                                \
  __global const T *A, ulong a_off, long a_sm, long a_sk, long a_bs, long a_gs, long a_os, __global const T *B, \
      ulong b_off, long b_sk, long b_sn, long b_bs, long b_gs, long b_os

// One work-item per output. n_fast: adjacent work-items take adjacent n (else adjacent m),
// chosen by the host so that the wider operand is read coalesced.
__kernel void gemm_small(int M, int N, int K, int k_outer, int groups, int n_fast, SMALL_OPERAND_ARGS,
                         GEMM_OUT_ARGS) {
  const int i0 = (int)get_global_id(0), i1 = (int)get_global_id(1);
  const int m = n_fast ? i1 : i0, n = n_fast ? i0 : i1;
  if (m >= M || n >= N) return;
  const int z = (int)get_global_id(2), bi = z / groups, gi = z - bi * groups;
  __global const T *a = A + a_off + (long)bi * a_bs + (long)gi * a_gs + (long)m * a_sm;
  __global const T *b = B + b_off + (long)bi * b_bs + (long)gi * b_gs + (long)n * b_sn;
  ACC acc = 0;
  for (int o = 0; o < k_outer; ++o) {
    for (int k = 0; k < K; ++k) acc += LOAD_T(a, (long)k * a_sk) * LOAD_T(b, (long)k * b_sk);
    a += a_os;
    b += b_os;
  }
  GEMM_STORE(bi, gi, m, n, acc);
}

// One work-group per output, its work-items splitting K (dot products, matrix-vector with
// the matrix read along k). The local size is a power of two.
__kernel void gemm_dot(int M, int N, int K, int k_outer, int groups, SMALL_OPERAND_ARGS, GEMM_OUT_ARGS,
                       __local ACC *scratch) {
  const ulong flat = get_group_id(0);
  const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
  const int n = (int)(flat % (ulong)N);
  const ulong t = flat / (ulong)N;
  const int m = (int)(t % (ulong)M), z = (int)(t / (ulong)M);
  const int bi = z / groups, gi = z - bi * groups;
  __global const T *a = A + a_off + (long)bi * a_bs + (long)gi * a_gs + (long)m * a_sm;
  __global const T *b = B + b_off + (long)bi * b_bs + (long)gi * b_gs + (long)n * b_sn;
  ACC acc = 0;
  for (int o = 0; o < k_outer; ++o) {
    for (int k = lid; k < K; k += L) acc += LOAD_T(a, (long)k * a_sk) * LOAD_T(b, (long)k * b_sk);
    a += a_os;
    b += b_os;
  }
  scratch[lid] = acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = L / 2; s > 0; s >>= 1) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) GEMM_STORE(bi, gi, m, n, scratch[0]);
}

#ifdef GEMM_FLOAT
// GELU epilogues run as a second pass over C: inlining erf/tanh into every unrolled output
// of the tiled kernel would bloat it for a rarely used fusion.
__kernel void gemm_activation(int M, int N, int groups, ulong total, int act, __global TC *C, ulong c_off, long c_sm,
                              long c_sn, long c_bs, long c_gs) {
  ulong id = get_global_id(0);
  if (id >= total) return;
  ulong mn = (ulong)M * (ulong)N, zb = id / mn, r = id - zb * mn;
  int m = (int)(r / (ulong)N), n = (int)(r - (ulong)m * (ulong)N);
  int bi = (int)(zb / (ulong)groups), gi = (int)(zb - (ulong)bi * (ulong)groups);
  long ci = GEMM_C_INDEX(bi, gi, m, n);
  ACC v = LOAD_C(C, ci);
  if (act == 2) v = (ACC)0.5 * v * ((ACC)1 + erf(v * (ACC)0.70710678118654752440));
  else if (act == 3) v = (ACC)0.5 * v * ((ACC)1 + tanh((ACC)0.79788456080286535588 * (v + (ACC)0.044715 * v * v * v)));
  STORE_C(C, ci, v);
}
#endif

// CPU devices: one work-item per output, SIMD vectors along k when both operands are
// contiguous along k (work-group reductions cost more than they save on a CPU).
__kernel void gemm_dot_vec(int M, int N, int K, int k_outer, int groups, ulong total, SMALL_OPERAND_ARGS,
                           GEMM_OUT_ARGS) {
  const ulong flat = get_global_id(0);
  if (flat >= total) return;
  const int n = (int)(flat % (ulong)N);
  const ulong t = flat / (ulong)N;
  const int m = (int)(t % (ulong)M), z = (int)(t / (ulong)M);
  const int bi = z / groups, gi = z - bi * groups;
  __global const T *a = A + a_off + (long)bi * a_bs + (long)gi * a_gs + (long)m * a_sm;
  __global const T *b = B + b_off + (long)bi * b_bs + (long)gi * b_gs + (long)n * b_sn;
  ACC acc = 0;
  ACC16 accv = 0;
  const bool vec = a_sk == 1 && b_sk == 1;
  for (int o = 0; o < k_outer; ++o) {
    int k = 0;
    if (vec)
      for (; k + 16 <= K; k += 16) accv += VLOAD16_T(a + k) * VLOAD16_T(b + k);
    for (; k < K; ++k) acc += LOAD_T(a, (long)k * a_sk) * LOAD_T(b, (long)k * b_sk);
    a += a_os;
    b += b_os;
  }
  // The upper half by named lanes rather than .hi: Oclgrind 21.10's uninitialized-value checker
  // marks lane 11 of any shuffle of a 16-wide vector (.hi, .s89ab, ...) undefined, a false
  // report on every output; same additions in the same order, and compilers emit the same code.
  ACC8 h = accv.lo + (ACC8)(accv.s8, accv.s9, accv.sa, accv.sb, accv.sc, accv.sd, accv.se, accv.sf);
  ACC4 q = h.lo + h.hi;
  acc += (q.x + q.y) + (q.z + q.w);
  GEMM_STORE(bi, gi, m, n, acc);
}

// Copies B (K x N with any strides, per batch entry and k_outer slice) into a dense
// row-major [z][o][K][N] buffer, so that the CPU vector kernels read it along n.
__kernel void gemm_pack_b(int K, int N, int groups, int k_outer, ulong total, __global const T *B, ulong b_off,
                          long b_sk, long b_sn, long b_bs, long b_gs, long b_os, __global T *P, ulong p_off) {
  const ulong id = get_global_id(0);
  if (id >= total) return;
  const int n = (int)(id % (ulong)N);
  ulong t = id / (ulong)N;
  const int k = (int)(t % (ulong)K);
  t /= (ulong)K;
  const int o = (int)(t % (ulong)k_outer), zb = (int)(t / (ulong)k_outer);
  const int bi = zb / groups, gi = zb - bi * groups;
  const ACC v = LOAD_T(B, (long)b_off + bi * b_bs + gi * b_gs + o * b_os + k * b_sk + n * b_sn);
  STORE_T(P, p_off + id, v);
}
