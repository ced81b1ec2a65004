// The tiled, register-blocked GEMM skeleton shared by plain GEMM and the implicit-GEMM
// convolutions. Each work-group computes a BM x BN tile of C with TM x TN work-items; each
// work-item holds RM x RN = (BM/TM) x (BN/TN) accumulators. Its rows are RM/VM chunks of VM
// adjacent rows, chunk c at tile row (c * TM + ty) * VM (likewise columns): VM/VN > 1 lets the
// inner loop read local memory as vectors, VM/VN == 1 gives the classic strided mapping.
// Per K step a BK-deep slice of A and B is staged in local memory (USE_LOCAL) with the next
// slice prefetched into registers while the current one is multiplied; with LOCAL_BUFS == 2
// the slices alternate between two buffers, so a step needs one barrier instead of two.
// Without USE_LOCAL (CPU devices, whose caches do the staging) operands are read straight
// from global memory.
//
// The K loop runs over `total_steps` = k_outer * ksteps steps of BK; step s covers slice
// o = s / ksteps (the k_outer products summed into one output) and k0 = (s % ksteps) * BK.
// Split-K: work-group z = zb * splits + split runs steps [split * steps_per_split, ...) and
// writes raw partial sums to W (reduced by gemm_split_reduce) when `partial` is set.
//
// Hooks defined by the including variant (plain GEMM in gemm.cl, convolutions in conv.cl):
//   OPERAND_ARGS           kernel parameters describing A and B
//   OPERAND_SETUP          statements run once (bi, gi, m0, n0 known)
//   OUTER_STEP(o)          (optional) statements run before the first step of slice o
//   STEP_SETUP(o, k0)      statements run once per K step (declares what A_AT/B_AT use,
//                          and k_left = K - k0)
//   A_AT(r, kk)            element (m0 + r, k0 + kk) of op(A) as ACC; 0 for k >= K; any finite or
//                          in-bounds value for rows >= M (those outputs are discarded)
//   B_AT(kk, c)            element (k0 + kk, n0 + c) of op(B); 0 for k >= K
//   A_LOAD_KFAST, B_LOAD_NFAST   which tile dim adjacent work-items read (coalescing)
// Tile macros from the host: BM BN BK TM TN VM VN PAD_A PAD_B USE_LOCAL KERNEL_NAME,
// ACCV_M / ACCV_N (ACC vector types of width VM / VN when > 1).

#define NT (TM * TN)

// A vector of VN adjacent columns of B built element by element (variants may define a
// faster B_VEC_AT with vector loads).
#if VN == 2
#define B_GATHER(kk, c) ((ACCV_N)(B_AT(kk, c), B_AT(kk, (c) + 1)))
#elif VN == 4
#define B_GATHER(kk, c) ((ACCV_N)(B_AT(kk, c), B_AT(kk, (c) + 1), B_AT(kk, (c) + 2), B_AT(kk, (c) + 3)))
#elif VN == 8
#define B_GATHER(kk, c)                                                                              \
  ((ACCV_N)(B_AT(kk, c), B_AT(kk, (c) + 1), B_AT(kk, (c) + 2), B_AT(kk, (c) + 3), B_AT(kk, (c) + 4), \
            B_AT(kk, (c) + 5), B_AT(kk, (c) + 6), B_AT(kk, (c) + 7)))
#elif VN == 16
#define B_GATHER(kk, c)                                                                               \
  ((ACCV_N)(B_AT(kk, c), B_AT(kk, (c) + 1), B_AT(kk, (c) + 2), B_AT(kk, (c) + 3), B_AT(kk, (c) + 4),  \
            B_AT(kk, (c) + 5), B_AT(kk, (c) + 6), B_AT(kk, (c) + 7), B_AT(kk, (c) + 8), B_AT(kk, (c) + 9), \
            B_AT(kk, (c) + 10), B_AT(kk, (c) + 11), B_AT(kk, (c) + 12), B_AT(kk, (c) + 13),            \
            B_AT(kk, (c) + 14), B_AT(kk, (c) + 15)))
#endif
// Optional 4-wide staging loads (local-memory configs): A_VEC4_AT(r, kk) / B_VEC4_AT(kk, c)
// return 4 elements along the operand's fast dim (k when A_LOAD_KFAST, else m; n when
// B_LOAD_NFAST, else k) as an ACC4, without checks; A_VEC4_OK / B_VEC4_OK say whether this
// step's whole tile slice may be read that way. The work-items then stage groups of 4
// elements along the fast dim instead of single elements.
// Optional faster hooks (CPU variant): B_VEC_OK (this work-item's columns all lie inside B),
// B_VEC_FAST(kk, c) (an unchecked vector load, used when B_VEC_OK and the whole K step is
// inside the matrix) and A_AT_FAST(r, kk) (A_AT without the k check).
#ifndef B_VEC_OK
#define B_VEC_OK 0
#define B_VEC_FAST(kk, c) B_GATHER(kk, c)
#endif
#ifndef A_AT_FAST
#define A_AT_FAST(r, kk) A_AT(r, kk)
#endif
#define RM (BM / TM)
#define RN (BN / TN)
#define LOADS_A (BM * BK / NT)
#define LOADS_B (BN * BK / NT)
#define A_LD (BM + PAD_A)
#define B_LD (BN + PAD_B)

#define ROW_OF(i) ((((i) / VM) * TM + ty) * VM + (i) % VM)
#define COL_OF(j) ((((j) / VN) * TN + tx) * VN + (j) % VN)

// Staging positions: a work-item loads groups v = 0 .. LOADS / G - 1 of G elements adjacent
// along the operand's fast dim (G = 4 with the vector hooks, else 1); element j of group v.
#ifdef A_VEC4_AT
#define A_G 4
#else
#define A_G 1
#endif
#ifdef B_VEC4_AT
#define B_G 4
#else
#define B_G 1
#endif
#define A_LIN(v) (tid + (v) * NT)
#define B_LIN(v) (tid + (v) * NT)
#if A_LOAD_KFAST
#define A_POS_R(v, j) (A_LIN(v) / (BK / A_G))
#define A_POS_K(v, j) ((A_LIN(v) % (BK / A_G)) * A_G + (j))
#else
#define A_POS_R(v, j) ((A_LIN(v) % (BM / A_G)) * A_G + (j))
#define A_POS_K(v, j) (A_LIN(v) / (BM / A_G))
#endif
#if B_LOAD_NFAST
#define B_POS_C(v, j) ((B_LIN(v) % (BN / B_G)) * B_G + (j))
#define B_POS_K(v, j) (B_LIN(v) / (BN / B_G))
#else
#define B_POS_C(v, j) (B_LIN(v) / (BK / B_G))
#define B_POS_K(v, j) ((B_LIN(v) % (BK / B_G)) * B_G + (j))
#endif
#ifndef LOCAL_BUFS
#define LOCAL_BUFS 1
#endif
#ifndef OUTER_STEP
#define OUTER_STEP(o)
#endif

#if VM == 1
#define LOAD_A_CHUNK(dst, src) (dst)[0] = *(src)
#else
#define LOAD_A_CHUNK(dst, src) VSTORE_M(*(__local const ACCV_M *)(src), 0, (dst))
#endif
#if VN == 1
#define LOAD_B_CHUNK(dst, src) (dst)[0] = *(src)
#else
#define LOAD_B_CHUNK(dst, src) VSTORE_N(*(__local const ACCV_N *)(src), 0, (dst))
#endif

// Grid order: with local staging, dim 0 walks the N tiles; without it (CPU-style configs, whose
// operands come from caches) dim 0 walks the M tiles, so that the work-groups a core runs one
// after another share the K x BN panel of B and find it cached instead of streaming all of B
// again for every BM rows of A.
#if USE_LOCAL
#define GRID_N 0
#define GRID_M 1
__kernel __attribute__((reqd_work_group_size(TN, TM, 1))) void KERNEL_NAME(
#else
#define GRID_N 1
#define GRID_M 0
__kernel __attribute__((reqd_work_group_size(TM, TN, 1))) void KERNEL_NAME(
#endif
    int M, int N, int K, int ksteps, int total_steps, int steps_per_split, int splits, int groups,
    OPERAND_ARGS, GEMM_OUT_ARGS, __global ACC *W, ulong w_off, int partial) {
  const int tx = get_local_id(GRID_N), ty = get_local_id(GRID_M), tid = ty * TN + tx;
  // Group ids from global ids so that launches split with a global offset stay correct.
  const int n0 = (int)(get_global_id(GRID_N) / TN) * BN, m0 = (int)(get_global_id(GRID_M) / TM) * BM;
  const int z = (int)get_global_id(2);
  const int zb = z / splits, split = z - zb * splits;
  const int bi = zb / groups, gi = zb - bi * groups;
  OPERAND_SETUP

#if USE_LOCAL || VN == 1
  ACC acc[RM][RN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int j = 0; j < RN; ++j) acc[i][j] = 0;
#endif

  const int step0 = split * steps_per_split;
  const int step_end = min(total_steps, step0 + steps_per_split);
#if USE_LOCAL
  __local ACC As[LOCAL_BUFS * BK * A_LD] __attribute__((aligned(64)));
  __local ACC Bs[LOCAL_BUFS * BK * B_LD] __attribute__((aligned(64)));
  ACC ra[LOADS_A], rb[LOADS_B];
  // Iteration s loads step s into registers, multiplies step s - 1 out of local memory while
  // those loads are in flight, then moves the registers into local memory.
  // (o, k0) of the next step to load, advanced without a division per step.
  int next_o = step0 / ksteps, next_k0 = (step0 - next_o * ksteps) * BK;
  OUTER_STEP(next_o)
  // Where the step being loaded is staged, and where the previous one was (the same buffer
  // when there is one; the two swap after every step when there are two).
  __local ACC *a_fill = As, *b_fill = Bs;
  __local ACC *a_prev = As + (LOCAL_BUFS - 1) * (BK * A_LD), *b_prev = Bs + (LOCAL_BUFS - 1) * (BK * B_LD);
  for (int s = step0; s <= step_end; ++s) {
    if (s < step_end) {
      const int o = next_o, k0 = next_k0;
      STEP_SETUP(o, k0)
#ifdef A_VEC4_AT
      if (A_VEC4_OK) {
#pragma unroll
        for (int v = 0; v < LOADS_A / 4; ++v) {
          vstore4(A_VEC4_AT(A_POS_R(v, 0), A_POS_K(v, 0)), 0, ra + 4 * v);
        }
      } else
#endif
      {
#pragma unroll
        for (int v = 0; v < LOADS_A / A_G; ++v)
#pragma unroll
          for (int j = 0; j < A_G; ++j) ra[v * A_G + j] = A_AT(A_POS_R(v, j), A_POS_K(v, j));
      }
#ifdef B_VEC4_AT
      if (B_VEC4_OK) {
#pragma unroll
        for (int v = 0; v < LOADS_B / 4; ++v) {
          vstore4(B_VEC4_AT(B_POS_K(v, 0), B_POS_C(v, 0)), 0, rb + 4 * v);
        }
      } else
#endif
      {
#pragma unroll
        for (int v = 0; v < LOADS_B / B_G; ++v)
#pragma unroll
          for (int j = 0; j < B_G; ++j) rb[v * B_G + j] = B_AT(B_POS_K(v, j), B_POS_C(v, j));
      }
      GEMM_ADVANCE_STEP(next_o, next_k0)
    }
    if (s > step0) {
      __local const ACC *as = a_prev, *bs = b_prev;
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) {
        ACC a[RM], b[RN];
#pragma unroll
        for (int c = 0; c < RM / VM; ++c) LOAD_A_CHUNK(a + c * VM, as + kk * A_LD + (c * TM + ty) * VM);
#pragma unroll
        for (int c = 0; c < RN / VN; ++c) LOAD_B_CHUNK(b + c * VN, bs + kk * B_LD + (c * TN + tx) * VN);
#pragma unroll
        for (int i = 0; i < RM; ++i)
#pragma unroll
          for (int j = 0; j < RN; ++j) acc[i][j] += a[i] * b[j];
      }
    }
    if (s == step_end) break;
    // One buffer: wait until everyone has multiplied it before overwriting. Two: the buffer
    // written now was last read in iteration s - 1, before the barrier that ended it.
    if (LOCAL_BUFS == 1) barrier(CLK_LOCAL_MEM_FENCE);
    __local ACC *as = a_fill, *bs = b_fill;
#pragma unroll
    for (int v = 0; v < LOADS_A / A_G; ++v) {
#if A_G == 4 && !A_LOAD_KFAST
      *(__local ACC4 *)(as + A_POS_K(v, 0) * A_LD + A_POS_R(v, 0)) =
          (ACC4)(ra[4 * v], ra[4 * v + 1], ra[4 * v + 2], ra[4 * v + 3]);
#else
#pragma unroll
      for (int j = 0; j < A_G; ++j) as[A_POS_K(v, j) * A_LD + A_POS_R(v, j)] = ra[v * A_G + j];
#endif
    }
#pragma unroll
    for (int v = 0; v < LOADS_B / B_G; ++v) {
#if B_G == 4 && B_LOAD_NFAST
      *(__local ACC4 *)(bs + B_POS_K(v, 0) * B_LD + B_POS_C(v, 0)) =
          (ACC4)(rb[4 * v], rb[4 * v + 1], rb[4 * v + 2], rb[4 * v + 3]);
#else
#pragma unroll
      for (int j = 0; j < B_G; ++j) bs[B_POS_K(v, j) * B_LD + B_POS_C(v, j)] = rb[v * B_G + j];
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
#if LOCAL_BUFS == 2
    a_prev = a_fill, b_prev = b_fill;
    a_fill = as == As ? As + BK * A_LD : As, b_fill = bs == Bs ? Bs + BK * B_LD : Bs;
#endif
  }
#elif VN > 1
  // CPU-style: explicit vectors of VN adjacent columns (one SIMD register each), operands
  // straight from global memory; the caches do the staging.
  ACCV_N accv[RM][RN / VN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int c = 0; c < RN / VN; ++c) accv[i][c] = 0;
  const bool cols_ok = B_VEC_OK;
  for (int s = step0; s < step_end; ++s) {
    const int o = s / ksteps, k0 = (s - o * ksteps) * BK;
    OUTER_STEP(o)
    STEP_SETUP(o, k0)
    if (cols_ok && k_left >= BK) {
      // Whole step inside the matrix: no bounds checks, vector loads.
      for (int kk = 0; kk < BK; ++kk) {
        ACCV_N bv[RN / VN];
#pragma unroll
        for (int c = 0; c < RN / VN; ++c) bv[c] = B_VEC_FAST(kk, (c * TN + tx) * VN);
#pragma unroll
        for (int i = 0; i < RM; ++i) {
          const ACC a = A_AT_FAST(ROW_OF(i), kk);
#pragma unroll
          for (int c = 0; c < RN / VN; ++c) accv[i][c] += (ACCV_N)(a) * bv[c];
        }
      }
    } else {
      const int kn = min(BK, k_left);
      for (int kk = 0; kk < kn; ++kk) {
        ACCV_N bv[RN / VN];
#pragma unroll
        for (int c = 0; c < RN / VN; ++c) bv[c] = B_GATHER(kk, (c * TN + tx) * VN);
#pragma unroll
        for (int i = 0; i < RM; ++i) {
          const ACC a = A_AT(ROW_OF(i), kk);
#pragma unroll
          for (int c = 0; c < RN / VN; ++c) accv[i][c] += (ACCV_N)(a) * bv[c];
        }
      }
    }
  }
  ACC acc[RM][RN];
#pragma unroll
  for (int i = 0; i < RM; ++i)
#pragma unroll
    for (int c = 0; c < RN / VN; ++c) VSTORE_N(accv[i][c], 0, &acc[i][c * VN]);
#else
  for (int s = step0; s < step_end; ++s) {
    const int o = s / ksteps, k0 = (s - o * ksteps) * BK;
    OUTER_STEP(o)
    STEP_SETUP(o, k0)
    for (int kk = 0; kk < BK; ++kk) {
      ACC a[RM], b[RN];
#pragma unroll
      for (int i = 0; i < RM; ++i) a[i] = A_AT(ROW_OF(i), kk);
#pragma unroll
      for (int j = 0; j < RN; ++j) b[j] = B_AT(kk, COL_OF(j));
#pragma unroll
      for (int i = 0; i < RM; ++i)
#pragma unroll
        for (int j = 0; j < RN; ++j) acc[i][j] += a[i] * b[j];
    }
  }
#endif

  // Unrolled on GPUs so that acc stays in registers; CPU variants keep it in memory anyway and
  // an unrolled epilogue (with 16-bit rounding code per element) costs minutes of compile time.
#if USE_LOCAL
#pragma unroll
#endif
  for (int i = 0; i < RM; ++i) {
    const int m = m0 + ROW_OF(i);
    if (m >= M) continue;
#if USE_LOCAL
#pragma unroll
#endif
    for (int j = 0; j < RN; ++j) {
      const int n = n0 + COL_OF(j);
      if (n >= N) continue;
      if (partial)
        W[w_off + ((ulong)z * (ulong)M + (ulong)m) * (ulong)N + (ulong)n] = acc[i][j];
      else
        GEMM_STORE(bi, gi, m, n, acc[i][j]);
    }
  }
}
