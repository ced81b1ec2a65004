// GEMM on the matrix engine: NVIDIA mma.sync through inline PTX (matrix_engine.h finds out whether the
// driver takes it). Same arguments, grid and split-K protocol as the FMA skeleton (gemm_tiled.cl), so the
// host launches either one the same way; only the inner product differs.
//
// A work-group computes a BM x BN tile of C with WARPS_M x WARPS_N warps (work-group shape
// (32 * WARPS_N, WARPS_M)); warp (wy, wx) owns a WM x WN sub-tile = FM x FN mma tiles of 16 x 8.
// Per K step a BK-deep slice of A and B is staged in local memory in the layout of its global fast dim
// (so staging moves 16-byte units, never transposes), the next slice prefetched into registers while
// the current one is multiplied, or (MMA_ASYNC) copied by cp.async into one of LOCAL_BUFS buffers. Fragments are read from local memory in the register layout mma.sync
// wants (PTX ISA, "Matrix fragments for mma.m16n8k8 / m16n8k16"): lane = 4 * gid + tig,
//   A 16 x KS: rows gid and gid + 8, k slots tig (+4) for tf32 / 2 tig, 2 tig + 1 (+8) for 16-bit pairs;
//   B KS x 8: column gid, the same k slots; C 16 x 8: rows gid, gid + 8, columns 2 tig, 2 tig + 1.
// A product sums over k, so which stored k sits in which slot is free as long as A and B agree: the
// 16-bit kinds put stored k 4 tig .. 4 tig + 3 in slots (2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9), so a
// lane's two registers of a row are one 8-byte local load when k is the staged fast dim.
//
// Operand kinds (MMA_KIND): 1 tf32 (fp32 inputs rounded to tf32 while staged), 2 3xtf32 (fp32 split into
// big + small tf32 parts, big*big + big*small + small*big: fp32-level accuracy), 3 bf16, 4 fp16 (raw
// 16-bit storage bits staged as they are). Accumulation is fp32 in every case.
// MMA_EMULATE replaces the PTX by a local-memory emulation with the same fragment layouts, so that
// devices without the instruction (PoCL in CI, Oclgrind) run and test every line of this kernel.
//
// Hooks from the including variant (gemm.cl): OPERAND_ARGS, OPERAND_SETUP, OUTER_STEP, STEP_SETUP,
// A_RAW(r, kk) / B_RAW(kk, c) (the stored bits of an element as MT: float for the tf32 kinds, ushort for
// 16-bit; 0 past K, any in-bounds value past M / N), optional A_RAW16B / B_RAW16B (16 bytes along the
// fast dim as a uint4, unchecked) with A_VEC4_OK / B_VEC4_OK, A_LOAD_KFAST, B_LOAD_NFAST; A_PTR16B /
// B_PTR16B (the address of those 16 bytes) let MMA_ASYNC copy them without registers.

#define NT (32 * WARPS_M * WARPS_N)
#define WM (BM / WARPS_M)
#define WN (BN / WARPS_N)
#define FM (WM / 16)
#define FN (WN / 8)
#if MMA_KIND <= 2
#define KS 8
#define G 4  // elements per 16-byte staging unit
#else
#define KS 16
#define G 8
#endif
#define UNITS_A (BM * BK / (NT * G))  // 16-byte staging units per work-item and step
#define UNITS_B (BN * BK / (NT * G))
#ifndef MMA_ASYNC
#define MMA_ASYNC 0
#endif
// MMA_ASYNC: tiles go from global to local memory by cp.async (no staging registers) through LOCAL_BUFS
// buffers, and 16-bit fragments are read by ldmatrix (standard fragment layout: no k permutation).
#define MMA_LDMATRIX (MMA_ASYNC && MMA_KIND >= 3)
#if MMA_LDMATRIX
// Unpadded rows (three 128x128x32 buffers fit 48 KiB) whose 16-byte chunks are permuted by an XOR with the
// row, so that the 8 rows an ldmatrix phase reads (or a cp.async phase writes) at one chunk position fall on
// 8 distinct chunks of a 128-byte bank window: `rows_per_window` rows share a window, so the chunk is
// XORed with (row / rows_per_window) mod (chunks per window).
#define SWZ_ROWS_PER_WINDOW(len) ((len) >= 64 ? 1 : 64 / (len))
#define SWZ_MASK(len) (((len) >= 64 ? 8 : (len) / 8) - 1)
#define SWZ(row, col, len) \
  ((row) * (len) + ((((col) >> 3) ^ (((row) / SWZ_ROWS_PER_WINDOW(len)) & SWZ_MASK(len))) << 3) + ((col) & 7))
#if A_LOAD_KFAST
#define AS_IDX(r, k) SWZ(r, k, BK)
#else
#define AS_IDX(r, k) SWZ(k, r, BM)
#endif
#if B_LOAD_NFAST
#define BS_IDX(k, c) SWZ(k, c, BN)
#else
#define BS_IDX(k, c) SWZ(c, k, BK)
#endif
#define A_BUF (BM * BK)
#define B_BUF (BN * BK)
#else
// Local row lengths (elements), padded so that a fragment load's lanes fall on distinct banks: along k,
// tf32 pads 4 (32 lanes: 8 rows x 4 k) and 16-bit 16 (8-byte loads: a half-warp's 4 rows start 8 or 24
// words apart); along m / n, 4 (tf32) or 8 (16-bit: 16-byte rows for the staging stores).
#define KPAD (MMA_KIND <= 2 ? 4 : 16)
#define MNPAD (MMA_KIND <= 2 ? 4 : 8)
#if A_LOAD_KFAST
#define A_LD (BK + KPAD)
#define AS_IDX(r, k) ((r) * A_LD + (k))
#define A_BUF (BM * A_LD)
#else
#define A_LD (BM + MNPAD)
#define AS_IDX(r, k) ((k) * A_LD + (r))
#define A_BUF (BK * A_LD)
#endif
#if B_LOAD_NFAST
#define B_LD (BN + MNPAD)
#define BS_IDX(k, c) ((k) * B_LD + (c))
#define B_BUF (BK * B_LD)
#else
#define B_LD (BK + KPAD)
#define BS_IDX(k, c) ((c) * B_LD + (k))
#define B_BUF (BN * B_LD)
#endif
#endif

// tf32 rounding, the 3xtf32 split and MMA(d, a, b) (or its emulation): mma_common.cl, prepended by the host.

// ---------------------------------------------------------------- fragments from local memory
#define PAIR16_(lo, hi) ((uint)(lo) | ((uint)(hi) << 16))
#if MMA_KIND <= 2
// The staged value as the mma operand: already tf32 (kind 1), or split here (kind 2).
#if MMA_KIND == 1 && MMA_ASYNC
// cp.async stages fp32 as it is: rounded to tf32 as fragments are read.
#define A_FRAG_AT(as, r, k) mma_tf32((as)[AS_IDX(r, k)])
#define B_FRAG_AT(bs, k, c) mma_tf32((bs)[BS_IDX(k, c)])
#else
#define A_FRAG_AT(as, r, k) as_uint((as)[AS_IDX(r, k)])
#define B_FRAG_AT(bs, k, c) as_uint((bs)[BS_IDX(k, c)])
#endif
#define LOAD_A_FRAG(fa, as, r, k0)                                          \
  (fa)[0] = A_FRAG_AT(as, r, (k0) + tig), (fa)[1] = A_FRAG_AT(as, (r) + 8, (k0) + tig), \
  (fa)[2] = A_FRAG_AT(as, r, (k0) + tig + 4), (fa)[3] = A_FRAG_AT(as, (r) + 8, (k0) + tig + 4)
#define LOAD_B_FRAG(fb, bs, k0, c) (fb)[0] = B_FRAG_AT(bs, (k0) + tig, c), (fb)[1] = B_FRAG_AT(bs, (k0) + tig + 4, c)
#elif MMA_LDMATRIX
// ldmatrix .x4: lane l gives the local address of row l % 8 of 8x8 matrix l / 8 and receives register m =
// (row l / 4, columns 2 (l % 4), + 1) of matrix m (.trans: rows 2 (l % 4), + 1 of column l / 4), i.e. the
// mma operand registers when the four matrices are A's (rows 0-7 | 8-15) x (k 0-7 | 8-15) or B's
// (k 0-7 | 8-15) x (columns 0-7 | 8-15). A k-fast tile is read as stored, an m- or n-fast one transposed.
#define LOCAL_ADDR(p) ((uint)(ulong)(p))
#if MMA_EMULATE
// The lanes' addresses go through local memory like the emulated mma's registers (uniform calls).
inline void ldsm_emu(uint *r, __local const MT *base, int idx, int trans, __local uint *emu, int tid, int lane) {
  const int gid = lane / 4, tig = lane % 4;
  emu[tid] = (uint)idx;
  barrier(CLK_LOCAL_MEM_FENCE);
  __local const uint *w = emu + (tid - lane);
  for (int m = 0; m < 4; ++m) {
    if (trans)
      r[m] = PAIR16_(base[w[8 * m + 2 * tig] + gid], base[w[8 * m + 2 * tig + 1] + gid]);
    else
      r[m] = PAIR16_(base[w[8 * m + gid] + 2 * tig], base[w[8 * m + gid] + 2 * tig + 1]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}
#define LDSM_X4(r, base, idx, trans) ldsm_emu(r, base, idx, trans, emu_regs, tid, lane)
#else
#define LDSM_ASM(r, p, t)                                                                                \
  asm volatile("ldmatrix.sync.aligned.m8n8.x4" t ".shared.b16 {%0,%1,%2,%3}, [%4];"                 \
               : "=r"((r)[0]), "=r"((r)[1]), "=r"((r)[2]), "=r"((r)[3]) : "r"(LOCAL_ADDR(p)))
#define LDSM_X4(r, base, idx, trans) \
  do {                               \
    if (trans)                       \
      LDSM_ASM(r, (base) + (idx), ".trans"); \
    else                             \
      LDSM_ASM(r, (base) + (idx), "");       \
  } while (0)
#endif
#if A_LOAD_KFAST
#define LOAD_A_FRAG(fa, as, r, k0) LDSM_X4(fa, as, AS_IDX((r) + (lane & 7) + (lane & 8), (k0) + (lane >> 4) * 8), 0)
#else
#define LOAD_A_FRAG(fa, as, r, k0) LDSM_X4(fa, as, AS_IDX((r) + (lane & 8), (k0) + (lane & 7) + (lane >> 4) * 8), 1)
#endif
// Fragments of column blocks c .. c + 7 and c + 8 .. c + 15: registers 0, 1 and 2, 3.
#if B_LOAD_NFAST
#define LOAD_B_FRAG2(f4, bs, k0, c) LDSM_X4(f4, bs, BS_IDX((k0) + (lane & 7) + (lane & 8), (c) + (lane >> 4) * 8), 1)
#else
#define LOAD_B_FRAG2(f4, bs, k0, c) LDSM_X4(f4, bs, BS_IDX((k0) + (lane & 8), (c) + (lane & 7) + (lane >> 4) * 8), 0)
#endif
#else
// A lane's two registers of a row (stored k 4 tig .. 4 tig + 3, see above) as a uint2: one 8-byte load when
// k is the staged fast dim, four 16-bit loads otherwise.
#define PAIR16(lo, hi) ((uint)(lo) | ((uint)(hi) << 16))
#if A_LOAD_KFAST
#define A_QUAD(as, r, k) (*(__local const uint2 *)((as) + AS_IDX(r, k)))
#else
#define A_QUAD(as, r, k)                                                      \
  ((uint2)(PAIR16((as)[AS_IDX(r, k)], (as)[AS_IDX(r, (k) + 1)]), \
           PAIR16((as)[AS_IDX(r, (k) + 2)], (as)[AS_IDX(r, (k) + 3)])))
#endif
#if B_LOAD_NFAST
#define B_QUAD(bs, k, c)                                                      \
  ((uint2)(PAIR16((bs)[BS_IDX(k, c)], (bs)[BS_IDX((k) + 1, c)]), \
           PAIR16((bs)[BS_IDX((k) + 2, c)], (bs)[BS_IDX((k) + 3, c)])))
#else
#define B_QUAD(bs, k, c) (*(__local const uint2 *)((bs) + BS_IDX(k, c)))
#endif
#define LOAD_A_FRAG(fa, as, r, k0)                                          \
  do {                                                                      \
    const uint2 lo_ = A_QUAD(as, r, (k0) + 4 * tig), hi_ = A_QUAD(as, (r) + 8, (k0) + 4 * tig); \
    (fa)[0] = lo_.x, (fa)[2] = lo_.y, (fa)[1] = hi_.x, (fa)[3] = hi_.y;     \
  } while (0)
#define LOAD_B_FRAG(fb, bs, k0, c)                       \
  do {                                                   \
    const uint2 q_ = B_QUAD(bs, (k0) + 4 * tig, c);      \
    (fb)[0] = q_.x, (fb)[1] = q_.y;                      \
  } while (0)
#endif

// Staged bits of a 16-byte unit: fp32 rounded to tf32 once here for kind 1 (not per fragment load); kept
// whole for kind 2, which splits them per fragment; 16-bit bits as they are.
#if MMA_KIND == 1
#define STAGE_UNIT(u) ((uint4)(mma_tf32(as_float((u).x)), mma_tf32(as_float((u).y)), mma_tf32(as_float((u).z)), \
                               mma_tf32(as_float((u).w))))
#elif MMA_KIND == 2
// Notes in `split_bad` whether a staged value is NaN, infinite or too large to split (the comparison is
// false for NaN).
inline uint4 mma_stage_checked(uint4 u, bool *split_bad) {
  const float4 a = fabs(as_float4(u));
  *split_bad |= !(a.x < MMA_SPLIT_MAX && a.y < MMA_SPLIT_MAX && a.z < MMA_SPLIT_MAX && a.w < MMA_SPLIT_MAX);
  return u;
}
#define STAGE_UNIT(u) mma_stage_checked(u, &split_bad)
#else
#define STAGE_UNIT(u) (u)
#endif
// G elements (adjacent along the operand's fast dim) packed into the 16-byte unit they fill in memory.
#if G == 8
#define PACK_ELEM(w, j, e) (w)[(j) / 2] |= (uint)(e) << (16 * ((j) % 2))
#else
#define PACK_ELEM(w, j, e) (w)[j] = as_uint(e)
#endif

// Staging positions: work-item `tid` loads units v = 0 .. UNITS - 1, each G elements adjacent along the
// operand's fast dim.
#if A_LOAD_KFAST
#define A_POS_R(v) ((tid + (v) * NT) / (BK / G))
#define A_POS_K(v) (((tid + (v) * NT) % (BK / G)) * G)
#define A_STEP_R(j) 0
#define A_STEP_K(j) (j)
#else
#define A_POS_R(v) (((tid + (v) * NT) % (BM / G)) * G)
#define A_POS_K(v) ((tid + (v) * NT) / (BM / G))
#define A_STEP_R(j) (j)
#define A_STEP_K(j) 0
#endif
#if B_LOAD_NFAST
#define B_POS_C(v) (((tid + (v) * NT) % (BN / G)) * G)
#define B_POS_K(v) ((tid + (v) * NT) / (BN / G))
#define B_STEP_C(j) (j)
#define B_STEP_K(j) 0
#else
#define B_POS_C(v) ((tid + (v) * NT) / (BK / G))
#define B_POS_K(v) (((tid + (v) * NT) % (BK / G)) * G)
#define B_STEP_C(j) 0
#define B_STEP_K(j) (j)
#endif
#ifndef OUTER_STEP
#define OUTER_STEP(o)
#endif

// Staging unit v of a step packed from checked element loads (steps at the matrix edge), and its place in a
// local buffer.
#define PACKED_UNIT(RAW, v, dst)                   \
  do {                                             \
    uint w_[4] = {0, 0, 0, 0};                     \
    _Pragma("unroll") for (int j = 0; j < G; ++j) PACK_ELEM(w_, j, RAW(v, j)); \
    dst = vload4(0, w_);                           \
  } while (0)
#define A_RAW_J(v, j) A_RAW(A_POS_R(v) + A_STEP_R(j), A_POS_K(v) + A_STEP_K(j))
#ifndef B_RAW_J  // a variant may gather a unit's elements itself (conv_implicit.cl: per-column pixels)
#define B_RAW_J(v, j) B_RAW(B_POS_K(v) + B_STEP_K(j), B_POS_C(v) + B_STEP_C(j))
#endif
#define A_LOCAL_UNIT(buf, v) (*(__local uint4 *)((buf) + AS_IDX(A_POS_R(v), A_POS_K(v))))
#define B_LOCAL_UNIT(buf, v) (*(__local uint4 *)((buf) + BS_IDX(B_POS_K(v), B_POS_C(v))))

// One K step's products from the staged tiles `as`, `bs`.
#define MMA_STEP_PRODUCTS(as, bs)                                                    \
  _Pragma("unroll") for (int kk = 0; kk < BK; kk += KS) {                           \
    uint fa[FM][4], fb[FN][2];                                                       \
    LOAD_FRAGS(as, bs, kk);                                                          \
    SPLIT_PRODUCTS;                                                                  \
    _Pragma("unroll") for (int i = 0; i < FM; ++i)                                   \
    _Pragma("unroll") for (int j = 0; j < FN; ++j) MMA(acc[i][j], fa[i], fb[j]);     \
  }
#if MMA_LDMATRIX
#define LOAD_FRAGS(as, bs, kk)                                                                     \
  _Pragma("unroll") for (int i = 0; i < FM; ++i) LOAD_A_FRAG(fa[i], as, wm + i * 16, kk);         \
  _Pragma("unroll") for (int j = 0; j < FN; j += 2) {                                              \
    uint f4_[4];                                                                                   \
    LOAD_B_FRAG2(f4_, bs, kk, wn + j * 8);                                                         \
    fb[j][0] = f4_[0], fb[j][1] = f4_[1], fb[j + 1][0] = f4_[2], fb[j + 1][1] = f4_[3];            \
  }
#else
#define LOAD_FRAGS(as, bs, kk)                                                                     \
  _Pragma("unroll") for (int i = 0; i < FM; ++i) LOAD_A_FRAG(fa[i], as, wm + i * 16 + gid, kk);   \
  _Pragma("unroll") for (int j = 0; j < FN; ++j) LOAD_B_FRAG(fb[j], bs, kk, wn + j * 8 + gid);
#endif
#if MMA_KIND == 2
// 3xtf32: x = big + small, both tf32; the small*small term is below fp32 rounding.
#define SPLIT_PRODUCTS                                                                \
  uint sa[FM][4], sb[FN][2];                                                          \
  _Pragma("unroll") for (int i = 0; i < FM; ++i)                                      \
  _Pragma("unroll") for (int e = 0; e < 4; ++e) {                                     \
    const uint2 p_ = mma_split(as_float(fa[i][e]));                                   \
    fa[i][e] = p_.x, sa[i][e] = p_.y;                                                 \
  }                                                                                   \
  _Pragma("unroll") for (int j = 0; j < FN; ++j)                                      \
  _Pragma("unroll") for (int e = 0; e < 2; ++e) {                                     \
    const uint2 p_ = mma_split(as_float(fb[j][e]));                                   \
    fb[j][e] = p_.x, sb[j][e] = p_.y;                                                 \
  }                                                                                   \
  _Pragma("unroll") for (int i = 0; i < FM; ++i)                                      \
  _Pragma("unroll") for (int j = 0; j < FN; ++j) {                                    \
    MMA(acc[i][j], sa[i], fb[j]);                                                     \
    MMA(acc[i][j], fa[i], sb[j]);                                                     \
  }
#else
#define SPLIT_PRODUCTS
#endif

#if MMA_ASYNC
// cp.async: 16 bytes global -> local without registers; groups of copies committed and waited for.
#if MMA_EMULATE
#define CP_ASYNC16(dst, src) (*(__local uint4 *)(dst) = *(__global const uint4 *)(src))
#define CP_ASYNC_COMMIT()
#define CP_ASYNC_WAIT()
#else
#define CP_ASYNC16(dst, src)                                                                        \
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"((uint)(ulong)(dst)), "l"((ulong)(src)) \
               : "memory")
#define CP_ASYNC_COMMIT() asm volatile("cp.async.commit_group;" ::: "memory")
#if LOCAL_BUFS == 2
#define CP_ASYNC_WAIT() asm volatile("cp.async.wait_group 0;" ::: "memory")
#elif LOCAL_BUFS == 3
#define CP_ASYNC_WAIT() asm volatile("cp.async.wait_group 1;" ::: "memory")
#else
#define CP_ASYNC_WAIT() asm volatile("cp.async.wait_group 2;" ::: "memory")
#endif
#endif
#define ISSUE_STEP(a_dst, b_dst)                                                                     \
  do {                                                                                               \
    const int o = next_o, k0 = next_k0;                                                              \
    STEP_SETUP(o, k0)                                                                                \
    ISSUE_A(a_dst) {                                                                                 \
      _Pragma("unroll") for (int v = 0; v < UNITS_A; ++v) {                                          \
        uint4 u_;                                                                                    \
        PACKED_UNIT(A_RAW_J, v, u_);                                                                 \
        A_LOCAL_UNIT(a_dst, v) = STAGE_UNIT(u_);                                                     \
      }                                                                                              \
    }                                                                                                \
    ISSUE_B(b_dst) {                                                                                 \
      _Pragma("unroll") for (int v = 0; v < UNITS_B; ++v) {                                          \
        uint4 u_;                                                                                    \
        PACKED_UNIT(B_RAW_J, v, u_);                                                                 \
        B_LOCAL_UNIT(b_dst, v) = STAGE_UNIT(u_);                                                     \
      }                                                                                              \
    }                                                                                                \
    GEMM_ADVANCE_STEP(next_o, next_k0)                                                               \
  } while (0)
#ifdef A_PTR16B
#define ISSUE_A(dst) \
  if (A_VEC4_OK) {   \
    _Pragma("unroll") for (int v = 0; v < UNITS_A; ++v) CP_ASYNC16((dst) + AS_IDX(A_POS_R(v), A_POS_K(v)), A_PTR16B(A_POS_R(v), A_POS_K(v))); \
  } else
#else
#define ISSUE_A(dst)
#endif
#ifdef B_PTR16B
#define ISSUE_B(dst) \
  if (B_VEC4_OK) {   \
    _Pragma("unroll") for (int v = 0; v < UNITS_B; ++v) CP_ASYNC16((dst) + BS_IDX(B_POS_K(v), B_POS_C(v)), B_PTR16B(B_POS_K(v), B_POS_C(v))); \
  } else
#else
#define ISSUE_B(dst)
#endif
#endif

__kernel __attribute__((reqd_work_group_size(32 * WARPS_N, WARPS_M, 1))) void KERNEL_NAME(
    int M, int N, int K, int ksteps, int total_steps, int steps_per_split, int splits, int groups,
    OPERAND_ARGS, GEMM_OUT_ARGS, __global ACC *W, ulong w_off, int partial) {
  const int tx = get_local_id(0), ty = get_local_id(1), tid = ty * (32 * WARPS_N) + tx;
  const int lane = tx % 32, gid = lane / 4, tig = lane % 4;
  const int wm = ty * WM, wn = (tx / 32) * WN;  // this warp's sub-tile
  // Group ids from global ids so that launches split with a global offset stay correct.
  const int n0 = (int)(get_global_id(0) / (32 * WARPS_N)) * BN, m0 = (int)(get_global_id(1) / WARPS_M) * BM;
  const int z = (int)get_global_id(2);
  const int zb = z / splits, split = z - zb * splits;
  const int bi = zb / groups, gi = zb - bi * groups;
  OPERAND_SETUP

  float acc[FM][FN][4];
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j) acc[i][j][0] = acc[i][j][1] = acc[i][j][2] = acc[i][j][3] = 0;

  __local MT As[LOCAL_BUFS * A_BUF] __attribute__((aligned(16)));
  __local MT Bs[LOCAL_BUFS * B_BUF] __attribute__((aligned(16)));
#if MMA_EMULATE
  __local uint emu_regs[NT * 6];
#endif
#if MMA_KIND == 2
  __local int group_split_bad;
  if (tid == 0) group_split_bad = 0;  // read after the loop's barriers
  bool split_bad = false;
#endif
  const int step0 = split * steps_per_split;
  const int step_end = min(total_steps, step0 + steps_per_split);
  int next_o = step0 / ksteps, next_k0 = (step0 - next_o * ksteps) * BK;
  OUTER_STEP(next_o)

#if MMA_ASYNC
  // cp.async pipeline: step s lives in buffer (s - step0) % LOCAL_BUFS; LOCAL_BUFS - 1 steps are in flight
  // while one is multiplied. Steps at the matrix edge are staged by plain local stores instead (same buffer,
  // visible after the same barrier).
  int issued = step0;
#pragma unroll
  for (int p = 0; p < LOCAL_BUFS - 1; ++p) {
    if (issued < step_end) {
      ISSUE_STEP(As + p * A_BUF, Bs + p * B_BUF);
      ++issued;
    }
    CP_ASYNC_COMMIT();
  }
  int rd = 0;  // buffer of step s
  for (int s = step0; s < step_end; ++s) {
    CP_ASYNC_WAIT();  // this work-item's copies of step s are done ...
    barrier(CLK_LOCAL_MEM_FENCE);  // ... and everyone's; everyone is also done with step s - 1's buffer
    if (issued < step_end) {
      const int wr = rd == 0 ? LOCAL_BUFS - 1 : rd - 1;
      ISSUE_STEP(As + wr * A_BUF, Bs + wr * B_BUF);
      ++issued;
    }
    CP_ASYNC_COMMIT();
    __local const MT *as = As + rd * A_BUF, *bs = Bs + rd * B_BUF;
    MMA_STEP_PRODUCTS(as, bs)
    rd = rd + 1 == LOCAL_BUFS ? 0 : rd + 1;
  }
#else
  uint4 ra[UNITS_A], rb[UNITS_B];
  __local MT *a_fill = As, *b_fill = Bs;
  __local MT *a_prev = As + (LOCAL_BUFS - 1) * A_BUF, *b_prev = Bs + (LOCAL_BUFS - 1) * B_BUF;
  for (int s = step0; s <= step_end; ++s) {
    if (s < step_end) {
      // Load step s into registers; its multiply-adds come one iteration later.
      const int o = next_o, k0 = next_k0;
      STEP_SETUP(o, k0)
#ifdef A_RAW16B
      if (A_VEC4_OK) {
#pragma unroll
        for (int v = 0; v < UNITS_A; ++v) ra[v] = A_RAW16B(A_POS_R(v), A_POS_K(v));
      } else
#endif
      {
#pragma unroll
        for (int v = 0; v < UNITS_A; ++v) PACKED_UNIT(A_RAW_J, v, ra[v]);
      }
#ifdef B_RAW16B
      if (B_VEC4_OK) {
#pragma unroll
        for (int v = 0; v < UNITS_B; ++v) rb[v] = B_RAW16B(B_POS_K(v), B_POS_C(v));
      } else
#endif
      {
#pragma unroll
        for (int v = 0; v < UNITS_B; ++v) PACKED_UNIT(B_RAW_J, v, rb[v]);
      }
      GEMM_ADVANCE_STEP(next_o, next_k0)
    }
    if (s > step0) {
      __local const MT *as = a_prev, *bs = b_prev;
      MMA_STEP_PRODUCTS(as, bs)
    }
    if (s == step_end) break;
    if (LOCAL_BUFS == 1) barrier(CLK_LOCAL_MEM_FENCE);
    // Registers to local memory: a unit's elements are adjacent there too (16-byte aligned rows).
#pragma unroll
    for (int v = 0; v < UNITS_A; ++v) A_LOCAL_UNIT(a_fill, v) = STAGE_UNIT(ra[v]);
#pragma unroll
    for (int v = 0; v < UNITS_B; ++v) B_LOCAL_UNIT(b_fill, v) = STAGE_UNIT(rb[v]);
    barrier(CLK_LOCAL_MEM_FENCE);
#if LOCAL_BUFS == 2
    a_prev = a_fill, b_prev = b_fill;
    a_fill = a_fill == As ? As + A_BUF : As, b_fill = b_fill == Bs ? Bs + B_BUF : Bs;
#endif
  }
#endif

#define MMA_OUT(m, n, v)                                                   \
  do {                                                                     \
    if (partial)                                                           \
      W[w_off + ((ulong)z * (ulong)M + (ulong)(m)) * (ulong)N + (ulong)(n)] = (v); \
    else                                                                   \
      GEMM_STORE(bi, gi, m, n, v);                                         \
  } while (0)
#if MMA_KIND == 2
  // inf, NaN or |x| >= MMA_SPLIT_MAX among the tile's inputs: the split cannot carry them (a cross term
  // would make inf * x into inf * 0 = NaN, or round to inf), so the work-group recomputes its outputs as
  // plain fp32 sums over its steps, the FMA kernel's semantics. Finite data pays one test per staged value.
  if (split_bad) group_split_bad = 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (group_split_bad) {
    for (int t = 0; t < FM * FN * 4; ++t) {
      const int i = t / (FN * 4), j = (t / 4) % FN, e = t % 4;
      const int r = wm + i * 16 + gid + 8 * (e >> 1), c = wn + j * 8 + 2 * tig + (e & 1);
      if (m0 + r >= M || n0 + c >= N) continue;
      float v = 0;
      for (int st = step0; st < step_end; ++st) {
        const int o = st / ksteps, k0 = (st - o * ksteps) * BK;
        OUTER_STEP(o)
        STEP_SETUP(o, k0)
        for (int kk = 0; kk < BK; ++kk) v += A_AT(r, kk) * B_AT(kk, c);
      }
      MMA_OUT(m0 + r, n0 + c, v);
    }
    return;
  }
#endif
#pragma unroll
  for (int i = 0; i < FM; ++i)
#pragma unroll
    for (int j = 0; j < FN; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int m = m0 + wm + i * 16 + gid + 8 * (e >> 1), n = n0 + wn + j * 8 + 2 * tig + (e & 1);
        if (m >= M || n >= N) continue;
        MMA_OUT(m, n, acc[i][j][e]);
      }
}
