// The attention backward's dq pass on the matrix engine (after attention_mma.cl with ATTN_MMA_DQ defined):
// attention_tiled.cl's attn_bwd_dq_tiled on mma.sync, same arguments and grid shape,
//   dq_i = scale * sum_j P_ij (Z_ij dP_ij - delta_i) k_j,  P_ij = exp(s_ij - lse_i) recomputed, dP = dO V^T.
// Warp w owns queries q0 + 16 w .. + 15 as in the forward: Q's and dO's A fragments stay in registers; per key
// tile S = Q K^T and dP = dO V^T (K and V staged [key][dim], read as B fragments like the forward's K), dS in
// the C fragments, then dq += dS K with dS as the A operand the way the forward feeds P (tf32: k slots paired
// with keys 2 tig, 2 tig + 1; 16-bit: packed pairs) and K as B: tf32 reads the same K tile by key rows (its
// stride is 4 mod 8 words, conflict-free both ways); 16-bit reads a transposed copy Kt[d][key].
//
// Heads over 64 (DSPLIT 2, set by attention_mma.cpp): the fragments and accumulators of a 16-row block would
// pass 255 registers (fp32 dk/dv at D 128: K, V, dk, dv 64 each), so a pair of warps shares each block: warp
// half hw holds the A fragments of its half of the head dims (k-steps hw NQKH ..) and accumulates its half of
// the output columns (n-tiles hw NDQH ..). The two partial S and dP of a tile are summed through local
// memory (EXCHANGE: one barrier), after which both warps form the same P and dS. The mma count is that of one
// unsplit warp, and a lane's registers are those of the D 64 kernels; the elementwise dS work is done twice.

#define DVK (CDIV(DV, KPAD) * KPAD)               // value dim padded to the mma's k (dP's product)
#define NDK (DVK / KS)
#define DN (CDIV(D, NPAD) * NPAD)                 // dq's n-tiles
#define NDQ (DN / 8)
#define NQKH (NQK / DSPLIT)                       // this warp's share of the split (all of it without)
#define NDKH (NDK / DSPLIT)
#define NDQH (NDQ / DSPLIT)
#define NOH (NO / DSPLIT)

// a[NKT][4] += the partner warp's a, b likewise (DSPLIT 2): own + other in both warps, so both hold the same
// sums. Slot-major per warp: a warp's 32 lanes write 32 consecutive words. The next write comes after the
// next tile's staging barrier, which the partner reaches only after its reads.
#if DSPLIT > 1
#define XCH_WORDS (NW * 2 * NKT * 4 * 32)
#define EXCHANGE(a, b)                                                                     \
  do {                                                                                     \
    __local float* mine_ = xch + warp * (2 * NKT * 4 * 32) + lane;                         \
    _Pragma("unroll") for (int n_ = 0; n_ < NKT; ++n_)                                     \
      _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_) {                                   \
        mine_[(n_ * 4 + e_) * 32] = (a)[n_][e_];                                           \
        mine_[((NKT + n_) * 4 + e_) * 32] = (b)[n_][e_];                                   \
      }                                                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                                          \
    __local const float* other_ = xch + (warp ^ 1) * (2 * NKT * 4 * 32) + lane;            \
    _Pragma("unroll") for (int n_ = 0; n_ < NKT; ++n_)                                     \
      _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_) {                                   \
        (a)[n_][e_] += other_[(n_ * 4 + e_) * 32];                                         \
        (b)[n_][e_] += other_[((NKT + n_) * 4 + e_) * 32];                                 \
      }                                                                                    \
  } while (0)
#else
#define EXCHANGE(a, b)
#endif
#if MMA_KIND <= 2
#define VKLD (DVK + 4)
#define KTLD 0
#else
#define VKLD (DVK + ((DVK / 2) % 16 == 0 ? 16 : 0))
#define KTLD (BKT + 8)
#endif
#define VKUNITS (BKT * DVK / UE)
#define VKPT CDIV(VKUNITS, NTH)
#define VK_ROW(v) ((tid + (v) * NTH) / (DVK / UE))
#define VK_D(v) (((tid + (v) * NTH) % (DVK / UE)) * UE)

#ifndef ATTN_ONEPASS  // the one-pass program holds the dk/dv kernel alone
// Grid: (NTH, ceil(L / NQ), B * Hq).
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void attn_bwd_dq_mma(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos, __global const T* LSE, ulong lo,
    __global const T* DELTA, ulong dlo, __global ST* DQ, ulong dqo, dl_attn_strides dqs ATTN_DROP_DECL) {
  __local MT Ks[BKT * KLD] __attribute__((aligned(16)));
  __local MT Vk[BKT * VKLD] __attribute__((aligned(16)));
#if MMA_KIND >= 3
  __local MT Kt[DN * KTLD] __attribute__((aligned(16)));
#endif
#if DSPLIT > 1
  __local float xch[XCH_WORDS];
#endif
#if MMA_EMULATE
  __local uint emu_regs[NTH * 6];
#endif
  const int tid = get_local_id(0), lane = tid % 32, gid = lane / 4, tig = lane % 4, warp = tid / 32;
  const int hw = warp % DSPLIT;  // this warp's half of the head dims (0 without the split)
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int q0 = ATTN_QBLOCK(causal) * NQ;
  const int r_lo = q0 + warp / DSPLIT * 16 + gid, r_hi = r_lo + 8;
  const float c = scale * LOG2E;
  const int rl = min(r_lo, L - 1), rh = min(r_hi, L - 1);

  // A fragments of Q (over D) and dO (over DV), in the forward's slot order (this warp's k-steps).
  uint qf[NQKH][4], df[NDKH][4];
#define BITS(P, po, ps, r, rc, d, dim) (((r) < L && (d) < (dim)) ? RAW(P, (long)po + AT(ps, bb, h, rc, d)) : (MT)0)
#if MMA_KIND <= 2
#define A_FRAG(f, P, po, ps, t, dim)                                                                  \
  f[0] = BITS(P, po, ps, r_lo, rl, (t) * 8 + tig, dim), f[1] = BITS(P, po, ps, r_hi, rh, (t) * 8 + tig, dim), \
  f[2] = BITS(P, po, ps, r_lo, rl, (t) * 8 + tig + 4, dim), f[3] = BITS(P, po, ps, r_hi, rh, (t) * 8 + tig + 4, dim)
#else
#define PAIR_AT(P, po, ps, r, rc, d, dim) \
  ((uint)BITS(P, po, ps, r, rc, d, dim) | ((uint)BITS(P, po, ps, r, rc, (d) + 1, dim) << 16))
#define A_FRAG(f, P, po, ps, t, dim)                                                                          \
  f[0] = PAIR_AT(P, po, ps, r_lo, rl, (t) * 16 + 4 * tig, dim), f[1] = PAIR_AT(P, po, ps, r_hi, rh, (t) * 16 + 4 * tig, dim), \
  f[2] = PAIR_AT(P, po, ps, r_lo, rl, (t) * 16 + 4 * tig + 2, dim), f[3] = PAIR_AT(P, po, ps, r_hi, rh, (t) * 16 + 4 * tig + 2, dim)
#endif
  _Pragma("unroll") for (int t = 0; t < NQKH; ++t) {
    A_FRAG(qf[t], Q, qo, qs, hw * NQKH + t, D);
#if MMA_KIND == 1
    _Pragma("unroll") for (int e = 0; e < 4; ++e) qf[t][e] = mma_tf32(as_float(qf[t][e]));
#endif
  }
  _Pragma("unroll") for (int t = 0; t < NDKH; ++t) {
    A_FRAG(df[t], DO, doo, dos, hw * NDKH + t, DV);
#if MMA_KIND == 1
    _Pragma("unroll") for (int e = 0; e < 4; ++e) df[t][e] = mma_tf32(as_float(df[t][e]));
#endif
  }
  // lse in the exp2 domain (+inf: a row that saw nothing, P = 0), delta.
  const float l2_lo = r_lo < L ? LSE[lo + (ulong)bh * L + r_lo] * LOG2E : INFINITY;
  const float l2_hi = r_hi < L ? LSE[lo + (ulong)bh * L + r_hi] * LOG2E : INFINITY;
  const float dl_lo = r_lo < L ? DELTA[dlo + (ulong)bh * L + r_lo] : 0.0f;
  const float dl_hi = r_hi < L ? DELTA[dlo + (ulong)bh * L + r_hi] : 0.0f;

  float dq[NDQH][4];
  _Pragma("unroll") for (int n = 0; n < NDQH; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0;
  const int last_row = min(L, q0 + NQ) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  int fl, nfl;  // the key tile's mask flag (attention_common.cl): all-masked tiles are skipped
  int j0 = ATTN_NEXT_KEYS(0, BKT, s_end, q0, last_row + 1, h, fl);
  for (int j0n; j0 < s_end; j0 = j0n, fl = nfl) {
    j0n = ATTN_NEXT_KEYS(j0 + BKT, BKT, s_end, q0, last_row + 1, h, nfl);  // see ATTN_NEXT_KEYS
    uint4 kr[KPT], vr[VKPT];
    _Pragma("unroll") for (int v = 0; v < KPT; ++v) kr[v] = (tid + v * NTH < KUNITS)
        ? attn_mma_unit(K, ko, ks, bb, hk, j0 + K_ROW(v), S, K_D(v), D, VEC_K) : (uint4)0;
    _Pragma("unroll") for (int v = 0; v < VKPT; ++v) vr[v] = (tid + v * NTH < VKUNITS)
        ? attn_mma_unit(V, vo, vs, bb, hk, j0 + VK_ROW(v), S, VK_D(v), DV, VEC_V) : (uint4)0;
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads are done
    _Pragma("unroll") for (int v = 0; v < KPT; ++v) if (tid + v * NTH < KUNITS) {
      *(__local uint4*)(Ks + K_ROW(v) * KLD + K_D(v)) = STAGE(kr[v]);
#if MMA_KIND >= 3
      const uint w_[4] = {kr[v].x, kr[v].y, kr[v].z, kr[v].w};
      _Pragma("unroll") for (int j = 0; j < UE; ++j) if (K_D(v) + j < DN)
        Kt[(K_D(v) + j) * KTLD + K_ROW(v)] = (ushort)(w_[j / 2] >> (16 * (j % 2)));
#endif
    }
    _Pragma("unroll") for (int v = 0; v < VKPT; ++v) if (tid + v * NTH < VKUNITS)
      *(__local uint4*)(Vk + VK_ROW(v) * VKLD + VK_D(v)) = STAGE(vr[v]);
    barrier(CLK_LOCAL_MEM_FENCE);

    // S = Q K^T and dP = dO V^T
    float s[NKT][4], dp[NKT][4];
    _Pragma("unroll") for (int n = 0; n < NKT; ++n)
      _Pragma("unroll") for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0;
    ROWS_PRODUCT(s, qf, NQKH, Ks, KLD, hw * NQKH * KS);
    ROWS_PRODUCT(dp, df, NDKH, Vk, VKLD, hw * NDKH * KS);
    EXCHANGE(s, dp);
    // dS = P (Z dP - delta), 0 where masked.
    _Pragma("unroll") for (int n = 0; n < NKT; ++n) {
      const int jd = j0 + n * 8 + 2 * tig;
#ifdef DROPOUT
      // Two draws per lane as before: sharing them as the forward does measured slower here (H200, GPT-2 small:
      // 10.8 -> 11.8 ms per step in this pass).
      const ulong S4 = (ulong)((S + 3) & ~3);
      const uint4 w_lo = dl_philox(seed, ((ulong)((ulong)bh * L + r_lo) * S4 + jd) >> 2, offset);
      const uint4 w_hi = dl_philox(seed, ((ulong)((ulong)bh * L + r_hi) * S4 + jd) >> 2, offset);
#endif
      _Pragma("unroll") for (int e = 0; e < 4; ++e) {
        const int i = e < 2 ? r_lo : r_hi, j = jd + (e & 1);
        float x = s[n][e] * c;
        if (i >= L || j >= S || (causal && j > i)) x = -INFINITY;
#if HAS_MASK
        else if (fl == ATTN_MIXED) x += LOAD(M, (long)mo + AT(ms, bb, h, i, j)) * LOG2E;
#endif
        const float p = native_exp2(x - (e < 2 ? l2_lo : l2_hi));
#ifdef DROPOUT
        const float z = ATTN_Z(e < 2 ? w_lo : w_hi, j & 3);
#else
        const float z = 1.0f;
#endif
        s[n][e] = p * (z * dp[n][e] - (e < 2 ? dl_lo : dl_hi));
      }
    }
    // dq += dS K
    C_PRODUCT(dq, NDQH, s, Ks, KLD, Kt, KTLD, hw * NDQH * 8);
  }
  _Pragma("unroll") for (int n = 0; n < NDQH; ++n) {
    _Pragma("unroll") for (int e = 0; e < 4; ++e) {
      const int i = e < 2 ? r_lo : r_hi, col = (hw * NDQH + n) * 8 + 2 * tig + (e & 1);
      if (i < L && col < D) STORE(DQ, (long)dqo + AT(dqs, bb, h, i, col), dq[n][e] * scale);
    }
  }
}
#endif

// The dk / dv pass (attn_bwd_dkdv_tiled's arguments and grid: (NTH, ceil(S / NQ), B * Hk)): warp w owns keys
// k0 + 16 w .. + 15, whose K and V A fragments stay in registers; for every query head of the key head's
// group and every BKT-query tile (Q and dO staged [query][dim], 16-bit also transposed; lse and delta in
// local memory), S^T = K Q^T and dP^T = V dO^T on the engine, then
//   dv += (Z P)^T dO,  dk += scale * dS^T Q,  dS^T = P^T (Z dP^T - delta),
// with P^T and dS^T fed from their C fragments as the forward feeds P. Built with ATTN_ONEPASS (after
// attention_mma_onepass.cl) it is attn_bwd_onepass_mma, which also adds each tile's dq in turn (that file).
#define KA_FRAG(f, P, po, ps, hh, t, dim)                                                                       \
  do {                                                                                                         \
    const int kl_ = min(k_lo, S - 1), kh_ = min(k_hi, S - 1);                                                  \
    _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_) {                                                         \
      const int r_ = (e_ & 1) ? k_hi : k_lo, rc_ = (e_ & 1) ? kh_ : kl_;                                       \
      KA_ELEM(f, e_, P, po, ps, hh, r_, rc_, t, dim);                                                          \
    }                                                                                                          \
  } while (0)
#define KBITS(P, po, ps, hh, r, rc, d, dim) (((r) < S && (d) < (dim)) ? RAW(P, (long)po + AT(ps, bb, hh, rc, d)) : (MT)0)
#if MMA_KIND <= 2
#define KA_ELEM(f, e, P, po, ps, hh, r, rc, t, dim) f[e] = KBITS(P, po, ps, hh, r, rc, (t) * 8 + tig + 4 * ((e) >> 1), dim)
#else
#define KA_ELEM(f, e, P, po, ps, hh, r, rc, t, dim)                              \
  f[e] = (uint)KBITS(P, po, ps, hh, r, rc, (t) * 16 + 4 * tig + 2 * ((e) >> 1), dim) | \
         ((uint)KBITS(P, po, ps, hh, r, rc, (t) * 16 + 4 * tig + 2 * ((e) >> 1) + 1, dim) << 16)
#endif

#if ATTN_ONEPASS
#define DKDV_KERNEL attn_bwd_onepass_mma
#define ONEPASS_DECL , __global ST *DQ, ulong dqo, dl_attn_strides dqs, __global uint *CNT, ulong cnto, \
                     __global float *ACC, ulong acco
#else
#define DKDV_KERNEL attn_bwd_dkdv_mma
#define ONEPASS_DECL
#endif
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void DKDV_KERNEL(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos, __global const T* LSE, ulong lo,
    __global const T* DELTA, ulong dlo, __global ST* dKp, ulong dko, dl_attn_strides dks, __global ST* dVp,
    ulong dvo, dl_attn_strides dvs ONEPASS_DECL ATTN_DROP_DECL) {
#if ATTN_ONEPASS
  // Q's and dO's tiles in one array: after a tile's products the one-pass kernel gathers its dq there (qb)
  __local MT QOs[OP_QO_ELEMS] __attribute__((aligned(16)));
#else
  __local MT QOs[BKT * (KLD + VKLD)] __attribute__((aligned(16)));
#endif
  __local MT* const Qs = QOs;
  __local MT* const Os = QOs + BKT * KLD;
#if MMA_KIND >= 3
  __local MT Qt[DN * KTLD] __attribute__((aligned(16)));
  __local MT Ot[DVN * KTLD] __attribute__((aligned(16)));
#endif
  __local float lse_s[BKT], del_s[BKT];
#if DSPLIT > 1
  __local float xch[XCH_WORDS];
#endif
#if MMA_EMULATE
  __local uint emu_regs[NTH * 6];
#endif
  const int tid = get_local_id(0), lane = tid % 32, gid = lane / 4, tig = lane % 4, warp = tid / 32;
  const int hw = warp % DSPLIT;  // this warp's half of the head dims (0 without the split)
#if ATTN_ONEPASS
  __local MT Kb[OP_K_ELEMS] __attribute__((aligned(16)));   // the block's keys (B of dq = dS K)
  __local MT dsl[BKT * OP_DSLD] __attribute__((aligned(16)));  // the tile's dS [query][key]
  __local uint op_ticket;
  __local float* const qb = (__local float*)QOs;  // a tile's dq after its products (attention_mma_onepass.cl)
  ONEPASS_TICKET(bhk, kb);
  const int op_rb = warp / OP_WPR, op_nb = (warp % OP_WPR) * OP_NPW;  // this warp's part of a tile's dq
#else
  const int bhk = get_group_id(2), kb = get_group_id(1);
#endif
  const int Hk = Hq / G, bb = bhk / Hk, hk = bhk - bb * Hk;
  const int k0 = kb * NQ;
  const int k_lo = k0 + warp / DSPLIT * 16 + gid, k_hi = k_lo + 8;  // this lane's two fragment rows (keys)
  const float c = scale * LOG2E;
#if ATTN_ONEPASS
  // The key block for dq's product; the barrier keeps its loads from overlapping the fragments' below (ptxas:
  // 8 fewer spilled words at 3xtf32, none at bf16, scripts/ptx_registers.py attnmmaonepass=...).
  ONEPASS_STAGE_K();
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
  // A fragments of K (over D) and V (over DV), this warp's k-steps; register e of a fragment: row
  // (e & 1 ? k_hi : k_lo).
  uint kf[NQKH][4], vf[NDKH][4];
  _Pragma("unroll") for (int t = 0; t < NQKH; ++t) {
    KA_FRAG(kf[t], K, ko, ks, hk, hw * NQKH + t, D);
#if MMA_KIND == 1
    _Pragma("unroll") for (int e = 0; e < 4; ++e) kf[t][e] = mma_tf32(as_float(kf[t][e]));
#endif
  }
  _Pragma("unroll") for (int t = 0; t < NDKH; ++t) {
    KA_FRAG(vf[t], V, vo, vs, hk, hw * NDKH + t, DV);
#if MMA_KIND == 1
    _Pragma("unroll") for (int e = 0; e < 4; ++e) vf[t][e] = mma_tf32(as_float(vf[t][e]));
#endif
  }
  float dk[NDQH][4], dv[NOH][4];
  _Pragma("unroll") for (int n = 0; n < NDQH; ++n) dk[n][0] = dk[n][1] = dk[n][2] = dk[n][3] = 0;
  _Pragma("unroll") for (int n = 0; n < NOH; ++n) dv[n][0] = dv[n][1] = dv[n][2] = dv[n][3] = 0;
  const int i_start = causal ? k0 / BKT * BKT : 0;  // earlier queries see none of these keys
  for (int g = 0; g < G; ++g) {
    const int h = hk * G + g, bh = bb * Hq + h;
    int fl, nfl;  // the query tile's mask flag: all-masked tiles are skipped
    int i0 = ATTN_NEXT_QUERIES(i_start, BKT, L, k0, min(S, k0 + NQ), h, fl);
#if ATTN_ONEPASS
    int ip = i_start;  // the next tile whose dq turn this work-group has not taken
#endif
    for (int i0n; i0 < L; i0 = i0n, fl = nfl) {
      i0n = ATTN_NEXT_QUERIES(i0 + BKT, BKT, L, k0, min(S, k0 + NQ), h, nfl);  // see ATTN_NEXT_KEYS
#if ATTN_ONEPASS
      ONEPASS_PASS(ip, i0);  // tiles skipped as all masked
#endif
      uint4 qr[KPT], dr[VKPT];
      _Pragma("unroll") for (int v = 0; v < KPT; ++v) qr[v] = (tid + v * NTH < KUNITS)
          ? attn_mma_unit(Q, qo, qs, bb, h, i0 + K_ROW(v), L, K_D(v), D, VEC_Q) : (uint4)0;
      _Pragma("unroll") for (int v = 0; v < VKPT; ++v) dr[v] = (tid + v * NTH < VKUNITS)
          ? attn_mma_unit(DO, doo, dos, bb, h, i0 + VK_ROW(v), L, VK_D(v), DV, VEC_DO) : (uint4)0;
      barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads are done
      _Pragma("unroll") for (int v = 0; v < KPT; ++v) if (tid + v * NTH < KUNITS) {
        *(__local uint4*)(Qs + K_ROW(v) * KLD + K_D(v)) = STAGE(qr[v]);
#if MMA_KIND >= 3
        const uint w_[4] = {qr[v].x, qr[v].y, qr[v].z, qr[v].w};
        _Pragma("unroll") for (int j = 0; j < UE; ++j) if (K_D(v) + j < DN)
          Qt[(K_D(v) + j) * KTLD + K_ROW(v)] = (ushort)(w_[j / 2] >> (16 * (j % 2)));
#endif
      }
      _Pragma("unroll") for (int v = 0; v < VKPT; ++v) if (tid + v * NTH < VKUNITS) {
        *(__local uint4*)(Os + VK_ROW(v) * VKLD + VK_D(v)) = STAGE(dr[v]);
#if MMA_KIND >= 3
        const uint w_[4] = {dr[v].x, dr[v].y, dr[v].z, dr[v].w};
        _Pragma("unroll") for (int j = 0; j < UE; ++j) if (VK_D(v) + j < DVN)
          Ot[(VK_D(v) + j) * KTLD + VK_ROW(v)] = (ushort)(w_[j / 2] >> (16 * (j % 2)));
#endif
      }
      if (tid < BKT) {
        const int i = i0 + tid;
        lse_s[tid] = i < L ? LSE[lo + (ulong)bh * L + i] * LOG2E : INFINITY;
        del_s[tid] = i < L ? DELTA[dlo + (ulong)bh * L + i] : 0.0f;
      }
      barrier(CLK_LOCAL_MEM_FENCE);

      // S^T = K Q^T, dP^T = V dO^T (columns: the tile's queries)
      float s[NKT][4], dp[NKT][4];
      _Pragma("unroll") for (int n = 0; n < NKT; ++n)
        _Pragma("unroll") for (int e = 0; e < 4; ++e) s[n][e] = dp[n][e] = 0;
      ROWS_PRODUCT(s, kf, NQKH, Qs, KLD, hw * NQKH * KS);
      ROWS_PRODUCT(dp, vf, NDKH, Os, VKLD, hw * NDKH * KS);
      EXCHANGE(s, dp);
      // P^T (Z applied: s) and dS^T (dp); 0 where masked.
      _Pragma("unroll") for (int n = 0; n < NKT; ++n) {
#ifdef DROPOUT
        // The lanes gid = 4 a + q (q = 0..3, one tig) need word q of the same 4 Philox groups (element e: query
        // i0 + 8 n + 2 tig + (e & 1), keys (e < 2 ? k_lo : k_hi) rounded down to 4; k0 is a multiple of 4):
        // lane q draws element q's group, and 4 index shuffles give every lane its word of each (round r:
        // lane q sends word q + r of its group to lane q + r, and receives from lane q - r).
        uint zw[4] = {0, 0, 0, 0};
        {
          const int q = gid & 3;
          const int iq = i0 + n * 8 + 2 * tig + (q & 1), jq = (q < 2 ? k_lo : k_hi) & ~3;
          const uint4 w = dl_philox(seed, ((ulong)((ulong)bh * L + iq) * (ulong)((S + 3) & ~3) + jq) >> 2, offset);
          _Pragma("unroll") for (int r = 0; r < 4; ++r) {
            const int from = (q - r) & 3;
            uint x;
            LANE_SHFL_U(x, dl_word(w, (q + r) & 3), lane + 4 * (from - q));
            zw[0] = from == 0 ? x : zw[0], zw[1] = from == 1 ? x : zw[1];
            zw[2] = from == 2 ? x : zw[2], zw[3] = from == 3 ? x : zw[3];
          }
        }
#endif
        _Pragma("unroll") for (int e = 0; e < 4; ++e) {
          const int j = (e < 2) ? k_lo : k_hi, ci = n * 8 + 2 * tig + (e & 1), i = i0 + ci;
          float x = s[n][e] * c;
          if (i >= L || j >= S || (causal && j > i)) x = -INFINITY;
#if HAS_MASK
          else if (fl == ATTN_MIXED) x += LOAD(M, (long)mo + AT(ms, bb, h, i, j)) * LOG2E;
#endif
          const float p = native_exp2(x - lse_s[ci]);
#ifdef DROPOUT
          const float z = ATTN_ZW(zw[e]);
#else
          const float z = 1.0f;
#endif
          s[n][e] = p * z;
          dp[n][e] = p * (z * dp[n][e] - del_s[ci]);
        }
      }
#if ATTN_ONEPASS
      ONEPASS_PUT_DS(dp);
#endif
      // dv += (Z P)^T dO, dk += dS^T Q
      C_PRODUCT(dv, NOH, s, Os, VKLD, Ot, KTLD, hw * NOH * 8);
      C_PRODUCT(dk, NDQH, dp, Qs, KLD, Qt, KTLD, hw * NDQH * 8);
#if ATTN_ONEPASS
      // dq's part of this tile: dS through local memory, dS K, added in turn (attention_mma_onepass.cl)
      barrier(CLK_LOCAL_MEM_FENCE);  // dS complete; every warp past its reads of Qs and Os (qb's space)
      {
        float qacc[OP_NPW][4];
        ONEPASS_PRODUCT(qacc);
        ONEPASS_PUT_Q(qacc);
      }
      ONEPASS_ADD(i0, 1);
      ip = i0 + BKT;
#endif
    }
#if ATTN_ONEPASS
    ONEPASS_PASS(ip, L);
#endif
  }
  _Pragma("unroll") for (int e = 0; e < 4; ++e) {
    const int j = e < 2 ? k_lo : k_hi;
    if (j >= S) continue;
    _Pragma("unroll") for (int n = 0; n < NDQH; ++n) {
      const int col = (hw * NDQH + n) * 8 + 2 * tig + (e & 1);
      if (col < D) STORE(dKp, (long)dko + AT(dks, bb, hk, j, col), dk[n][e] * scale);
    }
    _Pragma("unroll") for (int n = 0; n < NOH; ++n) {
      const int col = (hw * NOH + n) * 8 + 2 * tig + (e & 1);
      if (col < DV) STORE(dVp, (long)dvo + AT(dvs, bb, hk, j, col), dv[n][e]);
    }
  }
}
