// Operand hooks of the tiled skeleton (gemm_tiled.cl) for plain strided GEMM.
// A(m, k) of slice o of batch entry (bi, gi) is
//   A[a_off + bi * a_bs + gi * a_gs + o * a_os + (A_KCONTIG ? m * lda + k : k * lda + m)]
// and B(k, n) likewise with B_NCONTIG (k * ldb + n) or not (n * ldb + k). Transposes are
// layouts, so no operand is ever copied. IDX_T is int when every offset inside a tile fits
// (the host checks), else long.

#define OPERAND_ARGS                                                                           \
  __global const T *A, ulong a_off, long lda, long a_bs, long a_gs, long a_os, __global const T *B, \
      ulong b_off, long ldb, long b_bs, long b_gs, long b_os

// The tile's origin (row m0 of A, column n0 of B) is computed once; OUTER_STEP(o) moves it to
// slice o when the skeleton's steps reach it, so that a K step adds only its k offset.
#if A_KCONTIG
#define A_TILE_ORIGIN ((long)m0 * lda)
#define A_K_OFF(k0) (k0)
#define A_OFF(r, kk) ((IDX_T)(r) * lda_ + (kk))
#else
#define A_TILE_ORIGIN m0
#define A_K_OFF(k0) ((long)(k0) * lda)
#define A_OFF(r, kk) ((IDX_T)(kk) * lda_ + (r))
#endif
#if B_NCONTIG
#define B_TILE_ORIGIN n0
#define B_K_OFF(k0) ((long)(k0) * ldb)
#define B_OFF(kk, c) ((IDX_T)(kk) * ldb_ + (c))
#else
#define B_TILE_ORIGIN ((long)n0 * ldb)
#define B_K_OFF(k0) (k0)
#define B_OFF(kk, c) ((IDX_T)(c) * ldb_ + (kk))
#endif

#define OPERAND_SETUP                                                             \
  A += a_off + (long)bi * a_bs + (long)gi * a_gs + A_TILE_ORIGIN;                 \
  B += b_off + (long)bi * b_bs + (long)gi * b_gs + B_TILE_ORIGIN;                 \
  const int m_max = M - 1 - m0, n_max = N - 1 - n0;                               \
  const IDX_T lda_ = (IDX_T)lda, ldb_ = (IDX_T)ldb;                               \
  __global const T *A_o = A, *B_o = B;

#define OUTER_STEP(o) A_o = A + (long)(o) * a_os, B_o = B + (long)(o) * b_os;

#define STEP_SETUP(o, k0)                               \
  __global const T *Ap = A_o + A_K_OFF(k0);             \
  __global const T *Bp = B_o + B_K_OFF(k0);             \
  const int k_left = K - (k0);

// Rows/columns past the edge are clamped to the last valid one (in bounds, results discarded);
// k past the end reads as 0 in both operands so that it adds nothing.
#define A_AT(r, kk) ((kk) < k_left ? LOAD_T(Ap, A_OFF(min((r), m_max), (kk))) : (ACC)0)
#define B_AT(kk, c) ((kk) < k_left ? LOAD_T(Bp, B_OFF((kk), min((c), n_max))) : (ACC)0)

#define A_LOAD_KFAST A_KCONTIG
#define B_LOAD_NFAST B_NCONTIG

// 4-wide staging loads (the host sets VEC4_A / VEC4_B only for float storage whose slices all
// start at multiples of 4 elements): 4 elements along the operand's unit-stride dim.
// VEC4_FULL: M, N and K are multiples of the tile, so every step qualifies.
#if VEC4_A
#define A_VEC4_AT(r, kk) (*(__global const ACC4 *)(Ap + A_OFF((r), (kk))))
#define A_VEC4_OK (VEC4_FULL || (m0 + BM <= M && k_left >= BK))
#endif
#if VEC4_B
#define B_VEC4_AT(kk, c) (*(__global const ACC4 *)(Bp + B_OFF((kk), (c))))
#define B_VEC4_OK (VEC4_FULL || (n0 + BN <= N && k_left >= BK))
#endif

// Check-free loads for steps inside the matrix (CPU vector variant of the skeleton).
#define A_AT_FAST(r, kk) LOAD_T(Ap, A_OFF(min((r), m_max), (kk)))
#if VN > 1 && B_NCONTIG
#define B_VEC_OK (n0 + ((RN / VN - 1) * TN + tx) * VN + VN - 1 < N)
#define B_VEC_FAST(kk, c) VLOAD_TN(Bp + B_OFF((kk), (c)))
#endif

// Raw-bits hooks of the matrix-engine kernel (gemm_mma.cl, built with MMA_KIND and MT, the staged type:
// float, or ushort for the 16-bit kinds, whose bits go to the engine unconverted).
#ifdef MMA_KIND
#define RAW_AT(p, i) (((__global const MT *)(p))[i])
#define A_RAW(r, kk) ((kk) < k_left ? RAW_AT(Ap, A_OFF(min((r), m_max), (kk))) : (MT)0)
#define B_RAW(kk, c) ((kk) < k_left ? RAW_AT(Bp, B_OFF((kk), min((c), n_max))) : (MT)0)
// 16 bytes along the fast dim, unchecked (VEC4_A / VEC4_B: the host checked 16-byte alignment).
// A_PTR16B / B_PTR16B: their address (cp.async staging).
#if VEC4_A
#define A_PTR16B(r, kk) ((__global const MT *)Ap + A_OFF((r), (kk)))
#define A_RAW16B(r, kk) (*(__global const uint4 *)A_PTR16B(r, kk))
#endif
#if VEC4_B
#define B_PTR16B(kk, c) ((__global const MT *)Bp + B_OFF((kk), (c)))
#define B_RAW16B(kk, c) (*(__global const uint4 *)B_PTR16B(kk, c))
#endif
#endif
