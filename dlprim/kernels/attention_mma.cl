// Fused attention forward on the matrix engine (flash-attention 2 on mma.sync; mma_common.cl): the same
// arguments, results (O and the natural-log lse, +inf for a row that sees nothing) and dropout draws as
// attention_tiled.cl's attn_fwd_tiled, so attention.cpp launches either one and the backward reads either
// lse. Needs attention_common.cl (and philox.cl with DROPOUT) and mma_common.cl before it. The generator
// (attention_mma.cpp) defines T (float), ST, LOAD / STORE, D, DV, HAS_MASK, MMA_KIND, MMA_EMULATE, NW (warps
// per work-group), BKT (keys per tile), VEC_K / VEC_V (16-byte staging loads) and PREFETCH.
//
// Warp w owns queries q0 + 16 w .. + 15 (rows gid and gid + 8 of every fragment); the work-group's NW warps
// share each key tile, staged in local memory. Per tile, S = Q K^T on mma (Q's A fragments stay in registers
// for the whole loop), the online softmax on S's C fragments (a row's 4 columns live in the 4 lanes of a
// quad: 2 xor shuffles), then O += P V with P taken straight from S's C fragments as the A operand:
//   tf32 (m16n8k8): the k slots of a product are free as long as A and B agree, so k-step t pairs slot tig
//     with key 8 t + 2 tig and slot tig + 4 with key 8 t + 2 tig + 1: a = (c0, c2, c1, c3) of n-tile t, and
//     B reads V rows 8 t + 2 tig, + 1 (no shuffle, no local round trip);
//   16-bit (m16n8k16): c of n-tiles 2 t and 2 t + 1 packed in pairs is exactly A's layout (flash-attention
//     2's trick); B wants key pairs of one column, so V is staged transposed (Vt[dv][key]): 32-bit reads.
// Scores go to the exp2 domain once (x = s * scale * log2 e): exp2 is one ex2.approx on NVIDIA.
//
// Local tiles are padded so that fragment reads hit 32 distinct banks: K[key][d] rows of DK + 4 floats
// (row stride = 4 mod 8 words: lanes (gid, tig) -> 4 gid + tig mod 8 ...) or, 16-bit, a stride of 8 mod 16
// words (8-byte reads, half-warps); V[key][dv] rows of DVN + 4 floats (two key rows 2 tig apart: 8 tig +
// gid); Vt rows of BKT + 8 halves (4 mod 8 words).
//
// What should bound it (per warp and 64-key step at D = DV = 64): 16-bit: 64 mma and 64 + 64 32-bit-lane
// local reads (K 8-byte, Vt 4-byte: ~2 shared wavefronts per mma, the same rate as flash-attention 2's
// ldmatrix) plus ~40 instructions of softmax per 32 scores per lane; so shared-memory bandwidth and the
// softmax's instruction issue, not the tensor cores. tf32: twice the mma count (k8) and 2 4-byte reads per
// B fragment; 3xtf32 3x the mma plus the splits (2 cvt + 1 sub per operand element). Global loads are
// prefetched one tile ahead in registers (PREFETCH, small heads) or issued before the barrier otherwise.

#if MMA_KIND <= 2
#define KS 8
#define UE 4          // elements per 16-byte staging unit
#define MT uint      // staged bits: fp32 (3xtf32: split when read) or tf32
#else
#define KS 16
#define UE 8
#define MT ushort
#endif
// The backward's head-dim split (attention_mma_bwd.cl; the forward keeps the defaults): DSPLIT warps share
// one 16-row block, each holding 1 / DSPLIT of its fragments and accumulators; KPAD / NPAD pad the head dims
// so that every warp of the split gets the same number of k-steps / n-tiles.
#ifndef DSPLIT
#define DSPLIT 1
#endif
#ifndef KPAD
#define KPAD KS
#endif
#ifndef NPAD
#define NPAD 8
#endif
#define NTH (32 * NW)                            // work-items per group
#define NQ (16 * NW / DSPLIT)                    // queries per group
#define CDIV(a, b) (((a) + (b) - 1) / (b))
#define DK (CDIV(D, KPAD) * KPAD)                // head dim padded to the mma's k (zeros)
#define DVN (CDIV(DV, NPAD) * NPAD)              // value dim padded to whole n-tiles
#define NKT (BKT / 8)                            // score n-tiles per key tile
#define NO (DVN / 8)                             // output n-tiles
#define NQK (DK / KS)                            // k-steps of the score product
#if MMA_KIND <= 2
#define KLD (DK + 4)
#define VLD (DVN + 4)
#define V_ELEMS (BKT * VLD)
#else
#define KLD (DK + ((DK / 2) % 16 == 0 ? 16 : 0))
#define VLD (BKT + 8)                            // Vt[dv][key]
#define V_ELEMS (DVN * VLD)
#endif
#define KUNITS (BKT * DK / UE)                    // 16-byte units of a key tile, of a value tile
#define VUNITS (BKT * DVN / UE)
#define KPT CDIV(KUNITS, NTH)
#define VPT CDIV(VUNITS, NTH)
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

// The stored bits of element i of a [rows x dim] operand (float: its fp32 bits; 16-bit: its storage bits).
#define RAW(p, i) (((__global const MT*)(p))[i])

// The 16-byte unit of row `row`, dims d .. d + UE - 1 (zeros past rows / dim), as uint4. VEC: whole units
// (dim % UE == 0, unit-strided 16-byte aligned rows: one load at a clamped address).
inline uint4 attn_mma_unit(__global const ST* src, ulong off, dl_attn_strides s, int bb, int hh, int row, int rows,
                           int d, int dim, int vec) {
  const int rc = min(row, rows - 1);
  if (vec) {
    const long i = (long)off + (long)bb * s.b + (long)hh * s.h + (long)rc * s.l + min(d, dim - UE);
    const uint4 v = *(__global const uint4*)((__global const MT*)src + i);
    return (row < rows && d < dim) ? v : (uint4)0;
  }
  uint w[4] = {0, 0, 0, 0};
  _Pragma("unroll") for (int j = 0; j < UE; ++j) {
    const int e = d + j;
    const MT x = (row < rows && e < dim) ? RAW(src, (long)off + AT(s, bb, hh, rc, min(e, dim - 1))) : (MT)0;
#if UE == 8
    w[j / 2] |= (uint)x << (16 * (j % 2));
#else
    w[j] = x;
#endif
  }
  return (uint4)(w[0], w[1], w[2], w[3]);
}

// Staging positions of unit v of this work-item: keys row-major (consecutive work-items read consecutive
// 16 bytes of a row); values key-fast (16-bit: consecutive work-items write adjacent keys of Vt's rows).
#define K_ROW(v) ((tid + (v) * NTH) / (DK / UE))
#define K_D(v) (((tid + (v) * NTH) % (DK / UE)) * UE)
#if MMA_KIND <= 2
#define V_ROW(v) ((tid + (v) * NTH) / (DVN / UE))
#define V_D(v) (((tid + (v) * NTH) % (DVN / UE)) * UE)
#else
#define V_ROW(v) ((tid + (v) * NTH) % BKT)
#define V_D(v) (((tid + (v) * NTH) / BKT) * UE)
#endif
#define FETCH_TILE(j0)                                                                                     \
  do {                                                                                                      \
    _Pragma("unroll") for (int v = 0; v < KPT; ++v) kr[v] = (tid + v * NTH < KUNITS)                         \
        ? attn_mma_unit(K, ko, ks, bb, hk, (j0) + K_ROW(v), S, K_D(v), D, VEC_K) : (uint4)0;                 \
    _Pragma("unroll") for (int v = 0; v < VPT; ++v) vr[v] = (tid + v * NTH < VUNITS)                         \
        ? attn_mma_unit(V, vo, vs, bb, hk, (j0) + V_ROW(v), S, V_D(v), DV, VEC_V) : (uint4)0;                \
  } while (0)
#if MMA_KIND == 1
#define STAGE(u) ((uint4)(mma_tf32(as_float((u).x)), mma_tf32(as_float((u).y)), mma_tf32(as_float((u).z)), mma_tf32(as_float((u).w))))
#else
#define STAGE(u) (u)
#endif
#if MMA_KIND <= 2
#define COMMIT_V(v) *(__local uint4*)(Vs + V_ROW(v) * VLD + V_D(v)) = STAGE(vr[v])
#else
#define COMMIT_V(v)                                                                 \
  do {                                                                              \
    const uint w_[4] = {vr[v].x, vr[v].y, vr[v].z, vr[v].w};                         \
    _Pragma("unroll") for (int j = 0; j < UE; ++j)                                   \
      Vs[(V_D(v) + j) * VLD + V_ROW(v)] = (ushort)(w_[j / 2] >> (16 * (j % 2)));     \
  } while (0)
#endif
#define COMMIT_TILE()                                                                                  \
  do {                                                                                                  \
    _Pragma("unroll") for (int v = 0; v < KPT; ++v) if (tid + v * NTH < KUNITS)                          \
      *(__local uint4*)(Ks + K_ROW(v) * KLD + K_D(v)) = STAGE(kr[v]);                                    \
    _Pragma("unroll") for (int v = 0; v < VPT; ++v) if (tid + v * NTH < VUNITS) COMMIT_V(v);            \
  } while (0)

// Max / sum over the 4 lanes of a quad (the lanes holding one fragment row).
#if MMA_EMULATE
#define QUAD_XOR(x, m, OP)                                   \
  do {                                                       \
    emu_regs[tid] = as_uint(x);                              \
    barrier(CLK_LOCAL_MEM_FENCE);                            \
    x = OP(x, as_float(emu_regs[tid ^ (m)]));                \
    barrier(CLK_LOCAL_MEM_FENCE);                            \
  } while (0)
#else
inline float attn_shfl_xor(float x, int m) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(x), "r"(m));
  return r;
}
#define QUAD_XOR(x, m, OP) x = OP(x, attn_shfl_xor(x, m))
#endif
#define ADD_(a, b) ((a) + (b))
#define QUAD_REDUCE(x, OP) \
  QUAD_XOR(x, 1, OP);      \
  QUAD_XOR(x, 2, OP)

#ifdef DROPOUT
// 32-bit words between the lanes of a warp (dropout's Philox words, below): xor and index shuffles.
#if MMA_EMULATE
#define LANE_SHFL_U(dst, x, src)              \
  do {                                        \
    emu_regs[tid] = (x);                      \
    barrier(CLK_LOCAL_MEM_FENCE);             \
    dst = emu_regs[tid - lane + (src)];       \
    barrier(CLK_LOCAL_MEM_FENCE);             \
  } while (0)
#else
inline uint attn_shfl_idx_u(uint x, int src) {
  uint r;
  asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(x), "r"(src));
  return r;
}
#define LANE_SHFL_U(dst, x, src) dst = attn_shfl_idx_u((x), (src))
#endif
#define ATTN_ZW(word) ((dl_uniform_f(word) >= drop_p) ? (T)1 / (T)(1 - drop_p) : (T)0)
// The dropout words of a lane's 4 scores of a row-layout C fragment (rows r_lo, r_hi; columns jd, jd + 1 with
// jd = j0 + 8 n + 2 tig): lanes tig and tig ^ 1 need the same Philox group (4 adjacent keys) of each row, so
// each draws one group (the even lane r_lo's, the odd lane r_hi's) and the two swap the words the other needs:
// half the Philox work of a call per row and lane.
#define ATTN_ROW_DROP_WORDS(zw, jd)                                                                           \
  do {                                                                                                        \
    const int odd_ = tig & 1;                                                                                 \
    const uint4 w_ = dl_philox(seed, ((ulong)((ulong)bh * L + (odd_ ? r_hi : r_lo)) * (ulong)((S + 3) & ~3) + (jd)) >> 2, \
                               offset);                                                                       \
    uint x0_, x1_;                                                                                            \
    LANE_SHFL_U(x0_, odd_ ? w_.x : w_.z, lane ^ 1);                                                           \
    LANE_SHFL_U(x1_, odd_ ? w_.y : w_.w, lane ^ 1);                                                           \
    zw[0] = odd_ ? x0_ : w_.x, zw[1] = odd_ ? x1_ : w_.y;                                                     \
    zw[2] = odd_ ? w_.z : x0_, zw[3] = odd_ ? w_.w : x1_;                                                     \
  } while (0)
#endif

// Two probabilities as a 16-bit operand register (lo: the lower k slot), rounded to nearest even.
#if MMA_KIND == 3
#if MMA_EMULATE
#define PACK_P(lo, hi) ((uint)dl_float_to_bf16(lo) | ((uint)dl_float_to_bf16(hi) << 16))
#else
inline uint attn_pack_p(float lo, float hi) {
  uint r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#define PACK_P(lo, hi) attn_pack_p(lo, hi)
#endif
#elif MMA_KIND == 4
#if MMA_EMULATE
inline uint attn_pack_p(float lo, float hi) {
  ushort h[2];
  vstore_half_rte(lo, 0, (__private half*)h);
  vstore_half_rte(hi, 1, (__private half*)h);
  return (uint)h[0] | ((uint)h[1] << 16);
}
#else
inline uint attn_pack_p(float lo, float hi) {
  uint r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
#endif
#define PACK_P(lo, hi) attn_pack_p(lo, hi)
#endif

// d += a b for the kind. 3xtf32 splits both operands into big + small tf32 parts and adds the three
// significant products: A's parts (ab, as) once per k-step (SPLIT_A), B's at each product. Q's split is
// redone in every tile on purpose: a compiler that hoisted it out of the key loop (it is loop-invariant)
// would hold Q's small parts in D / 2 more registers (D 128: past 255); OPAQUE (a volatile move, one per
// element and tile) keeps it in the loop.
#define NOOP(x) (x)
#if MMA_KIND == 2
#if MMA_EMULATE
#define OPAQUE(x) (x)
#else
inline uint attn_opaque(uint x) {
  uint r;
  asm volatile("mov.b32 %0, %1;" : "=r"(r) : "r"(x));
  return r;
}
#define OPAQUE(x) attn_opaque(x)
#endif
#define SPLIT_A(ab, as, a, X)                                  \
  _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_) {           \
    const uint2 p_ = mma_split(as_float(X((a)[e_])));          \
    ab[e_] = p_.x, as[e_] = p_.y;                              \
  }
#define MMA_X(d, ab, as, b)                                    \
  do {                                                         \
    uint bb_[2], bs_[2];                                       \
    _Pragma("unroll") for (int e_ = 0; e_ < 2; ++e_) {         \
      const uint2 p_ = mma_split(as_float((b)[e_]));           \
      bb_[e_] = p_.x, bs_[e_] = p_.y;                          \
    }                                                          \
    MMA(d, as, bb_);                                           \
    MMA(d, ab, bs_);                                           \
    MMA(d, ab, bb_);                                           \
  } while (0)
#else
#define SPLIT_A(ab, as, a, X) _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_) ab[e_] = (a)[e_];
#define MMA_X(d, ab, as, b) MMA(d, ab, b)
#endif

// The two shapes of product every pass makes, written once:
// ROWS_PRODUCT: acc[n] += A x (the NKT 8-row blocks of `tile`)^T, A in registers as `nsteps` KS-wide fragments
// `frags` (Q or dO for S and dP; K or V for their transposes), B read along the rows of `tile` (row length ld)
// from column kb on (the backward's split: this warp's part of the head dim).
#define ROW_B(b, tile, ld, key, k0)                                  \
  do {                                                               \
    __local const MT* p_ = (tile) + (key) * (ld) + (k0);             \
    if (MMA_KIND <= 2) {                                             \
      b[0] = p_[tig], b[1] = p_[tig + 4];                            \
    } else {                                                         \
      const uint2 w_ = *(__local const uint2*)(p_ + 4 * tig);        \
      b[0] = w_.x, b[1] = w_.y;                                      \
    }                                                                \
  } while (0)
#define ROWS_PRODUCT(acc, frags, nsteps, tile, ld, kb)               \
  _Pragma("unroll") for (int t_ = 0; t_ < (nsteps); ++t_) {          \
    uint fa_[4], fm_[4];                                             \
    SPLIT_A(fa_, fm_, (frags)[t_], OPAQUE);                          \
    _Pragma("unroll") for (int n_ = 0; n_ < NKT; ++n_) {             \
      uint b_[2];                                                    \
      ROW_B(b_, tile, ld, n_ * 8 + gid, (kb) + t_ * KS);             \
      MMA_X((acc)[n_], fa_, fm_, b_);                                \
    }                                                                \
  }
// C_PRODUCT: acc[n] += C x B for n < nout, C given as the C fragments c[0..NKT) of a 16 x (8 NKT) product (P
// or dS and their transposes) used directly as A operands (tf32 kinds: k slots paired as the file comment says;
// 16-bit: packed as flash-attention 2 does). B: the tf32 kinds read `tile` (row length ld) with k along its
// columns; 16-bit kinds read `tile16` (row length ld16, stored transposed) with k along its rows; output
// column nb + 8 n (the backward's split: this warp's part of the head dim).
#if MMA_KIND <= 2
#if MMA_KIND == 1
#define TF32_ROUND4(a) _Pragma("unroll") for (int r_ = 0; r_ < 4; ++r_) a[r_] = mma_tf32(as_float(a[r_]));
#else
#define TF32_ROUND4(a)
#endif
#define C_PRODUCT(acc, nout, c, tile, ld, tile16, ld16, nb)                                                 \
  _Pragma("unroll") for (int t_ = 0; t_ < NKT; ++t_) {                                                     \
    uint ca_[4] = {as_uint((c)[t_][0]), as_uint((c)[t_][2]), as_uint((c)[t_][1]), as_uint((c)[t_][3])};    \
    TF32_ROUND4(ca_)                                                                                       \
    uint fa_[4], fm_[4];                                                                                   \
    SPLIT_A(fa_, fm_, ca_, NOOP);                                                                          \
    _Pragma("unroll") for (int n_ = 0; n_ < (nout); ++n_) {                                                \
      __local const MT* p_ = (tile) + (t_ * 8 + 2 * tig) * (ld) + (nb) + n_ * 8 + gid;                     \
      uint b_[2] = {p_[0], p_[ld]};                                                                        \
      MMA_X((acc)[n_], fa_, fm_, b_);                                                                      \
    }                                                                                                      \
  }
#else
#define C_PRODUCT(acc, nout, c, tile, ld, tile16, ld16, nb)                                                 \
  _Pragma("unroll") for (int t_ = 0; t_ < NKT / 2; ++t_) {                                                 \
    uint ca_[4] = {PACK_P((c)[2 * t_][0], (c)[2 * t_][1]), PACK_P((c)[2 * t_][2], (c)[2 * t_][3]),         \
                   PACK_P((c)[2 * t_ + 1][0], (c)[2 * t_ + 1][1]), PACK_P((c)[2 * t_ + 1][2], (c)[2 * t_ + 1][3])}; \
    _Pragma("unroll") for (int n_ = 0; n_ < (nout); ++n_) {                                                \
      __local const MT* p_ = (tile16) + ((nb) + n_ * 8 + gid) * (ld16) + t_ * 16 + 2 * tig;                \
      uint b_[2] = {*(__local const uint*)p_, *(__local const uint*)(p_ + 8)};                             \
      MMA((acc)[n_], ca_, b_);                                                                             \
    }                                                                                                      \
  }
#endif

#ifndef ATTN_MMA_DQ  // the backward's dq pass (attention_mma_bwd.cl) uses the definitions above
// Grid: (NTH, ceil(L / NQ), B * Hq); key/value head = query head / G.
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void attn_fwd_mma(
    ATTN_COMMON_PARAMS, __global ST* O, ulong oo, dl_attn_strides os, __global T* LSE, ulong lo ATTN_DROP_DECL) {
  __local MT Ks[BKT * KLD] __attribute__((aligned(16)));
  __local MT Vs[V_ELEMS] __attribute__((aligned(16)));
#if MMA_EMULATE
  __local uint emu_regs[NTH * 6];
#endif
  const int tid = get_local_id(0), lane = tid % 32, gid = lane / 4, tig = lane % 4, warp = tid / 32;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int q0 = ATTN_QBLOCK(causal) * NQ;
  const int r_lo = q0 + warp * 16 + gid, r_hi = r_lo + 8;  // this lane's two fragment rows
  const float c = scale * LOG2E;

  // Q's A fragments, for the whole loop (tf32: rounded; 3xtf32: fp32, split at each use; 16-bit: stored
  // d 4 tig .. 4 tig + 3 in k slots (2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9), matching K's 8-byte reads).
  uint qf[NQK][4];
  {
    const int rl = min(r_lo, L - 1), rh = min(r_hi, L - 1);
#define QBITS(r, rc, d) (((r) < L && (d) < D) ? RAW(Q, (long)qo + AT(qs, bb, h, rc, d)) : (MT)0)
    _Pragma("unroll") for (int t = 0; t < NQK; ++t) {
#if MMA_KIND <= 2
      const int d0 = t * 8 + tig, d1 = d0 + 4;
      qf[t][0] = QBITS(r_lo, rl, d0), qf[t][1] = QBITS(r_hi, rh, d0);
      qf[t][2] = QBITS(r_lo, rl, d1), qf[t][3] = QBITS(r_hi, rh, d1);
#if MMA_KIND == 1
      _Pragma("unroll") for (int e = 0; e < 4; ++e) qf[t][e] = mma_tf32(as_float(qf[t][e]));
#endif
#else
      const int d0 = t * 16 + 4 * tig;
      qf[t][0] = (uint)QBITS(r_lo, rl, d0) | ((uint)QBITS(r_lo, rl, d0 + 1) << 16);
      qf[t][1] = (uint)QBITS(r_hi, rh, d0) | ((uint)QBITS(r_hi, rh, d0 + 1) << 16);
      qf[t][2] = (uint)QBITS(r_lo, rl, d0 + 2) | ((uint)QBITS(r_lo, rl, d0 + 3) << 16);
      qf[t][3] = (uint)QBITS(r_hi, rh, d0 + 2) | ((uint)QBITS(r_hi, rh, d0 + 3) << 16);
#endif
    }
#undef QBITS
  }

  float o[NO][4];
  _Pragma("unroll") for (int n = 0; n < NO; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0;
  float m_lo = -INFINITY, m_hi = -INFINITY, l_lo = 0, l_hi = 0;  // l: this lane's partial sums
  const int last_row = min(L, q0 + NQ) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  uint4 kr[KPT], vr[VPT];
  // Key tiles whose mask blocks are all -inf are skipped (attention_common.cl): fl is the tile's flag, jn /
  // nfl the next tile's (the prefetch's target).
  int fl, nfl;
  int j0 = ATTN_NEXT_KEYS(0, BKT, s_end, q0, last_row + 1, h, fl);
#if PREFETCH
  if (j0 < s_end) FETCH_TILE(j0);
#endif
  for (int jn; j0 < s_end; j0 = jn, fl = nfl) {
    jn = ATTN_NEXT_KEYS(j0 + BKT, BKT, s_end, q0, last_row + 1, h, nfl);
#if !PREFETCH
    FETCH_TILE(j0);  // in flight while slower warps finish the previous tile
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    COMMIT_TILE();
    barrier(CLK_LOCAL_MEM_FENCE);
#if PREFETCH
    if (jn < s_end) FETCH_TILE(jn);  // lands during this tile's products
#endif
    // S = Q K^T
    float s[NKT][4];
    _Pragma("unroll") for (int n = 0; n < NKT; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0;
    ROWS_PRODUCT(s, qf, NQK, Ks, KLD, 0);
    // Scale, mask (exp2 domain) and the tile's row maxima. Only tiles at an edge of this warp's block (the
    // last keys, queries past L, the causal diagonal) or with a mixed mask block test each score: a
    // warp-uniform branch (an all-0 mask block reads no mask).
    float mx_lo = -INFINITY, mx_hi = -INFINITY;
    const int w0 = q0 + warp * 16;
    const bool edge = (HAS_MASK && fl == ATTN_MIXED) || j0 + BKT > S || w0 + 16 > L || (causal && j0 + BKT - 1 > w0);
    _Pragma("unroll") for (int n = 0; n < NKT; ++n) {
      _Pragma("unroll") for (int e = 0; e < 4; ++e) {
        const int i = e < 2 ? r_lo : r_hi, j = j0 + n * 8 + 2 * tig + (e & 1);
        float x = s[n][e] * c;
        if (edge) {
          if (i >= L || j >= S || (causal && j > i)) x = -INFINITY;
#if HAS_MASK
          else if (fl == ATTN_MIXED) x += LOAD(M, (long)mo + AT(ms, bb, h, i, j)) * LOG2E;
#endif
        }
        s[n][e] = x;
        if (e < 2) mx_lo = fmax(mx_lo, x);
        else mx_hi = fmax(mx_hi, x);
      }
    }
    QUAD_REDUCE(mx_lo, fmax);
    QUAD_REDUCE(mx_hi, fmax);
    const float mn_lo = fmax(m_lo, mx_lo), mn_hi = fmax(m_hi, mx_hi);
    // mn == -inf: nothing visible in the row yet (o, l still 0); m == -inf gives alpha 0.
    const float a_lo = mn_lo == -INFINITY ? 1.0f : native_exp2(m_lo - mn_lo);
    const float a_hi = mn_hi == -INFINITY ? 1.0f : native_exp2(m_hi - mn_hi);
    const float sub_lo = mn_lo == -INFINITY ? 0.0f : mn_lo, sub_hi = mn_hi == -INFINITY ? 0.0f : mn_hi;
    m_lo = mn_lo, m_hi = mn_hi;
    l_lo *= a_lo, l_hi *= a_hi;
    _Pragma("unroll") for (int n = 0; n < NO; ++n) o[n][0] *= a_lo, o[n][1] *= a_lo, o[n][2] *= a_hi, o[n][3] *= a_hi;
    _Pragma("unroll") for (int n = 0; n < NKT; ++n) {
#ifdef DROPOUT
      uint zw[4];
      ATTN_ROW_DROP_WORDS(zw, j0 + n * 8 + 2 * tig);
#endif
      _Pragma("unroll") for (int e = 0; e < 4; ++e) {
        const float p = native_exp2(s[n][e] - (e < 2 ? sub_lo : sub_hi));  // exp2(-inf) = 0: masked keys
        if (e < 2) l_lo += p;  // the softmax's sum is over every key; dropout scales what reaches o
        else l_hi += p;
#ifdef DROPOUT
        s[n][e] = p * ATTN_ZW(zw[e]);
#else
        s[n][e] = p;
#endif
      }
    }
    // O += P V
    C_PRODUCT(o, NO, s, Vs, VLD, Vs, VLD, 0);
  }
  QUAD_REDUCE(l_lo, ADD_);
  QUAD_REDUCE(l_hi, ADD_);
  const float inv_lo = l_lo > 0 ? 1.0f / l_lo : 0.0f, inv_hi = l_hi > 0 ? 1.0f / l_hi : 0.0f;
  _Pragma("unroll") for (int n = 0; n < NO; ++n) {
    _Pragma("unroll") for (int e = 0; e < 4; ++e) {
      const int i = e < 2 ? r_lo : r_hi, col = n * 8 + 2 * tig + (e & 1);
      if (i < L && col < DV) STORE(O, (long)oo + AT(os, bb, h, i, col), o[n][e] * (e < 2 ? inv_lo : inv_hi));
    }
  }
  if (tig == 0) {
    if (r_lo < L) LSE[lo + (ulong)bh * L + r_lo] = l_lo > 0 ? m_lo * LN2 + log(l_lo) : (T)INFINITY;
    if (r_hi < L) LSE[lo + (ulong)bh * L + r_hi] = l_hi > 0 ? m_hi * LN2 + log(l_hi) : (T)INFINITY;
  }
}
#endif
