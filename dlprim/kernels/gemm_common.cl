// Shared by every GEMM-shaped kernel (plain GEMM, small/dot paths, implicit-GEMM convolutions).
// The host defines before this text:
//   T             storage type of A, B, C and D (half/ushort storage for f16/bf16)
//   ACC           accumulation type (float, or double for f64)
//   LOAD_T(p, i)  element i of buffer p as ACC;  STORE_T(p, i, v) stores ACC v at p[i]
//   TC, LOAD_C, STORE_C  the same for C and D (usually T; the accumulation type for
//                 intermediate results that must not be rounded to 16 bits)
//
// Output convention: C(m, n) of batch entry (bi, gi) lives at
//   c_off + bi * c_bs + gi * c_gs + m * c_sm + n * c_sn
// and likewise the optional addend D (any strides: 0 broadcasts a bias along M or N).
// result = act(alpha * acc + beta * D); has_d == 0 never reads D (beta == 0 ignores NaN in D).

#define GEMM_OUT_ARGS                                                                        \
  __global TC *C, ulong c_off, long c_sm, long c_sn, long c_bs, long c_gs, __global const TC *D, \
      ulong d_off, long d_sm, long d_sn, long d_bs, long d_gs, int has_d, int act, ACC alpha, ACC beta

#define GEMM_C_INDEX(bi, gi, m, n) \
  ((long)c_off + (long)(bi) * c_bs + (long)(gi) * c_gs + (long)(m) * c_sm + (long)(n) * c_sn)
#define GEMM_D_INDEX(bi, gi, m, n) \
  ((long)d_off + (long)(bi) * d_bs + (long)(gi) * d_gs + (long)(m) * d_sm + (long)(n) * d_sn)

// Activation fused into the epilogue: 0 none, 1 relu (NaN stays NaN, as in torch.relu).
// The GELUs (2 erf, 3 tanh) run as a second pass (gemm_activation in gemm_small.cl).
#define GEMM_ACTIVATE(v, act) ((act) == 1 && (v) < (ACC)0 ? (ACC)0 : (v))

#define GEMM_STORE(bi, gi, m, n, value)                                              \
  do {                                                                               \
    ACC v_ = alpha * (value);                                                        \
    if (has_d) v_ += beta * LOAD_C(D, GEMM_D_INDEX(bi, gi, m, n));                   \
    v_ = GEMM_ACTIVATE(v_, act);                                                     \
    STORE_C(C, GEMM_C_INDEX(bi, gi, m, n), v_);                                      \
  } while (0)

// The (slice o, k0) of the next K step of the tiled kernels (gemm_tiled.cl, gemm_mma.cl), advanced without a
// division per step: k0 moves by BK and wraps into the next slice, where the variant's OUTER_STEP(o) runs.
#define GEMM_ADVANCE_STEP(o, k0) \
  k0 += BK;                      \
  if (k0 >= ksteps * BK) {       \
    k0 = 0;                      \
    ++o;                         \
    OUTER_STEP(o)                \
  }

// Sums split-K partial results W[((zb * splits + s) * M + m) * N + n] over s and applies the
// epilogue. One work-item per (zb, m, n); zb = bi * groups + gi.
__kernel void gemm_split_reduce(int M, int N, int splits, int groups, ulong total, __global const ACC *W,
                                ulong w_off, GEMM_OUT_ARGS) {
  ulong id = get_global_id(0);
  if (id >= total) return;
  ulong mn = (ulong)M * (ulong)N;
  ulong zb = id / mn, r = id - zb * mn;
  int m = (int)(r / (ulong)N), n = (int)(r - (ulong)m * (ulong)N);
  __global const ACC *p = W + w_off + zb * (ulong)splits * mn + r;
  ACC s = 0;
  for (int k = 0; k < splits; ++k) s += p[(ulong)k * mn];
  int bi = (int)(zb / (ulong)groups), gi = (int)(zb - (ulong)bi * (ulong)groups);
  GEMM_STORE(bi, gi, m, n, s);
}
