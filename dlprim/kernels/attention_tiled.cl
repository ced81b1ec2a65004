// Register-tiled fused attention forward (head dims up to 128): the scores and the output are
// computed as small GEMMs on per-thread TM x n register tiles, as the GEMM kernels do, so each
// value loaded from local memory feeds several FMAs (attention.cl's row kernels feed one).
// Needs attention_common.cl. The generator (attention.cpp) prepends T / T4, ST, LOAD / STORE,
// D / DV, HAS_MASK and the tile: BQ (queries per work-group), BK (keys per tile), KC (head-dim
// chunk of the score product; KC >= D keeps the work-group's queries staged for the whole loop)
// and NTC (threads across a tile's columns). Every private array is indexed by compile-time
// constants in fully unrolled loops, so the compiler keeps it in registers.
//
// Thread (tr, tc) owns rows tr*TM .. tr*TM+3 of the work-group's queries and, of every tile of
// width W (keys: BK, output: DVP), the columns b*4*NTC + tc*4 + t (b < W / (4 NTC), t < 4): each
// local load is a 4-vector, and the NTC threads of a row read adjacent 4-vectors (no conflicts).
// Per key tile: S = Q K^T (q staged transposed, Qs[d][row]; k transposed, Ks[d][key]), masked and
// scaled; the row maxima combined over the NTC threads of the row through local memory; P =
// exp(S - m) written transposed to Ps[key][row]; O = O * alpha + P V (Vs[key][dv]). The softmax
// sum stays a per-thread partial (every thread of a row scales by the same alpha) until the end.

#define TM 4
#define NTT (BQ / TM * NTC)                 // threads per work-group
#define DP (((D) + 3) / 4 * 4)
#define DVP (((DV) + 4 * NTC - 1) / (4 * NTC) * (4 * NTC))
#define SN (BK / NTC)                       // score columns per thread
#define ON (DVP / NTC)                      // output columns per thread
#define BQP (BQ + 4)                        // Ps row stride: +4 spreads the transposed writes over banks
#if KC >= DP
#define QRES 1                              // queries staged once, all of the head dim
#define QROWS DP
#define KSTEP DP
#else
#define QRES 0
#define QROWS KC
#define KSTEP KC                            // the last chunk is zero-padded past D
#endif

// Staging is two-phase: a work-item first loads its share of a tile into registers (every load in
// flight at once: addresses are clamped into the tensor, so none is conditional), and writes it to
// local memory after the next barrier. The loads of the next tile are issued before the current
// tile's arithmetic, which hides their latency. (Loading and storing element by element waits one
// global-memory latency per element: that, not arithmetic, bounded the first version.)
#define CEILDIV(a, b) (((a) + (b) - 1) / (b))
#define KN CEILDIV(BK * KSTEP / 4, NTT)     // 4-groups per work-item: a key chunk
#define QN CEILDIV(BQ * KSTEP / 4, NTT)     // ... a query chunk (streamed queries)
#define VN CEILDIV(BK * DVP / 4, NTT)       // ... a value tile

// A transposed tile's share: group g = lid + e NTT holds dims 4 (g / nr) .. + 3 of row g % nr
// (consecutive work-items: consecutive rows, so the transposed local writes hit distinct banks).
inline void attn_fetch_t(T* r, int n, int nr, int nd, __global const ST* src, ulong off, dl_attn_strides s,
                         int bb, int hh, int r0, int rows, int d0, int dim) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTT, d4 = g / nr, row = r0 + g - d4 * nr;
    const T4 v = attn_load4(src, off, s, bb, hh, row, rows, d0 + d4 * 4, dim);
    r[e * 4] = v.s0, r[e * 4 + 1] = v.s1, r[e * 4 + 2] = v.s2, r[e * 4 + 3] = v.s3;
  }
}

// dst[d * ld + row] from attn_fetch_t's registers, for the nr x nd tile.
inline void attn_commit_t(__local T* dst, int ld, const T* r, int n, int nr, int nd) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTT, d4 = g / nr, rr = g - d4 * nr;
    if (g < nr * nd / 4)
      _Pragma("unroll") for (int t = 0; t < 4; ++t) dst[(d4 * 4 + t) * ld + rr] = r[e * 4 + t];
  }
}

// A row-major tile's share (nd a multiple of 4): group g = lid + e NTT holds dims 4 (g % (nd / 4))
// .. + 3 of row g / (nd / 4).
inline void attn_fetch_n(T* r, int n, int nr, int nd, __global const ST* src, ulong off, dl_attn_strides s,
                         int bb, int hh, int r0, int rows, int dim) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTT, rr = g / (nd / 4), d = (g - rr * (nd / 4)) * 4;
    const T4 v = attn_load4(src, off, s, bb, hh, r0 + rr, rows, d, dim);
    r[e * 4] = v.s0, r[e * 4 + 1] = v.s1, r[e * 4 + 2] = v.s2, r[e * 4 + 3] = v.s3;
  }
}

inline void attn_commit_n(__local T* dst, const T* r, int n, int nr, int nd) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTT;
    if (g < nr * nd / 4) ((__local T4*)dst)[g] = (T4)(r[e * 4], r[e * 4 + 1], r[e * 4 + 2], r[e * 4 + 3]);
  }
}

// Column of register slot j (of n per thread) in a tile: 4-vector block j / 4 of this thread.
#define TCOL(j) (((j) >> 2) * 4 * NTC + tc * 4 + ((j) & 3))

// acc[a][j] += x[a] * y[j] for the TM x n tile (x, y private).
#define ATTN_OUTER(acc, x, y, n)        \
  _Pragma("unroll") for (int a = 0; a < TM; ++a) \
    _Pragma("unroll") for (int j = 0; j < (n); ++j) acc[a][j] += x[a] * y[j];

// y[0 .. n) = this thread's n columns of row `row4` (a 4-vector index) of a local tile of 4-vectors.
#define ATTN_LOAD_COLS(y, n, tile4, row4)                    \
  _Pragma("unroll") for (int b = 0; b < (n) / 4; ++b) {      \
    const T4 v4 = (tile4)[(row4) + b * NTC + tc];            \
    y[b * 4] = v4.s0; y[b * 4 + 1] = v4.s1; y[b * 4 + 2] = v4.s2; y[b * 4 + 3] = v4.s3; \
  }

#define ATTN_LOAD_ROWS(x, tile4, row4)                       \
  {                                                          \
    const T4 v4 = (tile4)[(row4) + tr];                      \
    x[0] = v4.s0; x[1] = v4.s1; x[2] = v4.s2; x[3] = v4.s3;  \
  }

// acc[TM][n] += (rows of `steps` staged lines of A)^T (this thread's n columns of B): line t of A
// is at A4 + a0 + t * as4 (4-vectors, one per 4 rows), of B at B4 + t * bs4. Both the forward's
// and the dq pass's products (scores, P V, dP, dq) and the dk/dv pass's (dv, dk) are this loop.
#define ATTN_TILE_PRODUCT(acc, n, steps, A4, a0, as4, B4, bs4) \
  _Pragma("unroll 4") for (int t_ = 0; t_ < (steps); ++t_) {    \
    T x[TM], y[n];                                                \
    ATTN_LOAD_ROWS(x, A4, (a0) + t_ * (as4));                     \
    ATTN_LOAD_COLS(y, n, B4, t_ * (bs4));                         \
    ATTN_OUTER(acc, x, y, n);                                     \
  }

#if !defined(ATTN_BWD) && !defined(ATTN_DKDV)  // ATTN_DKDV: the macros for attention_bwd_tiled.cl
// out[i] = softmax(q_i K^T * scale + mask) V; lse[i] = log-sum-exp of the row (+inf if all masked).
// Grid: (NTT, ceil(L / BQ), B * Hq). Key/value head = query head / G.
__kernel __attribute__((reqd_work_group_size(NTT, 1, 1))) void attn_fwd_tiled(
    ATTN_COMMON_PARAMS, __global ST* O, ulong oo, dl_attn_strides os,
    __global T* LSE, ulong lo ATTN_DROP_DECL) {
  __local T4 Qs4[QROWS * BQ / 4];
  // Ps shares Ks's memory: the probabilities are written after the last read of the key chunk
  // (the row-maximum barrier) and read before the next tile's keys are written (its first barrier).
  __local T4 KPs4[(KSTEP * BK > BK * BQP ? KSTEP * BK : BK * BQP) / 4];
  __local T4* const Ks4 = KPs4;
  __local T4* const Ps4 = KPs4;
  __local T4 Vs4[BK * DVP / 4];
  __local T red[BQ * NTC];
  const int lid = get_local_id(0), tr = lid / NTC, tc = lid - tr * NTC;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int q0 = ATTN_QBLOCK(causal) * BQ, i0 = q0 + tr * TM;
  T o[TM][ON], m[TM], lp[TM];
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    m[a] = -INFINITY;
    lp[a] = 0;
    _Pragma("unroll") for (int j = 0; j < ON; ++j) o[a][j] = 0;
  }
  const int last_row = min(L, q0 + BQ) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  T kr[KN * 4], vr[VN * 4];
  // Key tiles whose mask block is all -inf are skipped (attention_common.cl): fl is the current tile's flag,
  // jn / nfl the next tile's (the prefetch's target).
  int fl, nfl;
  int j0 = ATTN_NEXT_KEYS(0, BK, s_end, q0, last_row + 1, h, fl);
#if QRES
  {
    T qr[QN * 4];
    attn_fetch_t(qr, QN, BQ, DP, Q, qo, qs, bb, h, q0, L, 0, D);
    attn_commit_t((__local T*)Qs4, BQ, qr, QN, BQ, DP);
  }
#else
  T qr[QN * 4];
  if (j0 < s_end) attn_fetch_t(qr, QN, BQ, KSTEP, Q, qo, qs, bb, h, q0, L, 0, D);
#endif
  if (j0 < s_end) {
    attn_fetch_t(kr, KN, BK, KSTEP, K, ko, ks, bb, hk, j0, S, 0, D);
    attn_fetch_n(vr, VN, BK, DVP, V, vo, vs, bb, hk, j0, S, DV);
  }
  for (int jn; j0 < s_end; j0 = jn, fl = nfl) {
    jn = ATTN_NEXT_KEYS(j0 + BK, BK, s_end, q0, last_row + 1, h, nfl);
    T s[TM][SN];
    _Pragma("unroll") for (int a = 0; a < TM; ++a)
      _Pragma("unroll") for (int j = 0; j < SN; ++j) s[a][j] = 0;
    for (int d0 = 0; d0 < DP; d0 += KSTEP) {
      barrier(CLK_LOCAL_MEM_FENCE);
      attn_commit_t((__local T*)Ks4, BK, kr, KN, BK, KSTEP);
      if (d0 == 0) attn_commit_n((__local T*)Vs4, vr, VN, BK, DVP);
#if !QRES
      attn_commit_t((__local T*)Qs4, BQ, qr, QN, BQ, KSTEP);
#endif
      barrier(CLK_LOCAL_MEM_FENCE);
      // Prefetch what the next step stages: the next head-dim chunk, or the next tile's first.
      const int nd0 = d0 + KSTEP < DP ? d0 + KSTEP : 0, nj0 = nd0 ? j0 : jn;
      if (nj0 < s_end) {
        attn_fetch_t(kr, KN, BK, KSTEP, K, ko, ks, bb, hk, nj0, S, nd0, D);
        if (nd0 == 0) attn_fetch_n(vr, VN, BK, DVP, V, vo, vs, bb, hk, nj0, S, DV);
#if !QRES
        attn_fetch_t(qr, QN, BQ, KSTEP, Q, qo, qs, bb, h, q0, L, nd0, D);
#endif
      }
      const int qd = QRES ? d0 : 0;
      ATTN_TILE_PRODUCT(s, SN, KSTEP, Qs4, qd * (BQ / 4), BQ / 4, Ks4, BK / 4);
    }
    // Scale and mask; this thread's partial row maxima to local memory.
    _Pragma("unroll") for (int a = 0; a < TM; ++a) {
      T mx = -INFINITY;
      _Pragma("unroll") for (int j = 0; j < SN; ++j) {
        s[a][j] = attn_score(s[a][j], scale, i0 + a, j0 + TCOL(j), L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED);
        mx = fmax(mx, s[a][j]);
      }
      red[(tr * TM + a) * NTC + tc] = mx;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    _Pragma("unroll") for (int a = 0; a < TM; ++a) {
      T mt = m[a];
      for (int t = 0; t < NTC; ++t) mt = fmax(mt, red[(tr * TM + a) * NTC + t]);
      // mt == -inf: nothing visible in this row yet (o, lp still 0); m == -inf gives alpha 0.
      const T alpha = mt == -INFINITY ? (T)1 : ATTN_EXP(m[a] - mt);
      m[a] = mt;
      lp[a] *= alpha;
      _Pragma("unroll") for (int j = 0; j < ON; ++j) o[a][j] *= alpha;
      uint4 words = 0;
      _Pragma("unroll") for (int j = 0; j < SN; ++j) {
        const T pc = mt == -INFINITY ? (T)0 : ATTN_EXP(s[a][j] - mt);  // exp(-inf) = 0 for masked keys
        lp[a] += pc;  // the softmax's sum is over every key; dropout scales what reaches o
        ATTN_WORDS(words, bh, i0 + a, j0 + TCOL(j & ~3), j & 3, L, S);
        s[a][j] = pc * ATTN_Z(words, j);
      }
    }
    _Pragma("unroll") for (int j = 0; j < SN; ++j)
      Ps4[TCOL(j) * (BQP / 4) + tr] = (T4)(s[0][j], s[1][j], s[2][j], s[3][j]);
    barrier(CLK_LOCAL_MEM_FENCE);
    ATTN_TILE_PRODUCT(o, ON, BK, Ps4, 0, BQP / 4, Vs4, DVP / 4);
  }
  // The softmax sums: this thread's partials combined over the row's NTC threads.
  barrier(CLK_LOCAL_MEM_FENCE);
  _Pragma("unroll") for (int a = 0; a < TM; ++a) red[(tr * TM + a) * NTC + tc] = lp[a];
  barrier(CLK_LOCAL_MEM_FENCE);
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    const int i = i0 + a;
    if (i >= L) continue;
    T l = 0;
    for (int t = 0; t < NTC; ++t) l += red[(tr * TM + a) * NTC + t];
    const T inv = l > 0 ? (T)1 / l : (T)0;
    _Pragma("unroll") for (int j = 0; j < ON; ++j) {
      const int col = TCOL(j);
      if (col < DV) STORE(O, (long)oo + AT(os, bb, h, i, col), o[a][j] * inv);
    }
    if (tc == 0) LSE[lo + (ulong)bh * L + i] = l > 0 ? m[a] + log(l) : (T)INFINITY;
  }
}
#endif

#ifdef ATTN_BWD
// dq[i] = scale * sum_j P_ij (Z_ij dP_ij - delta_i) k_j with P recomputed from lse and dP = dO V^T
// (attention.cl's attn_bwd_dq on register tiles). Rows: the work-group's BQ queries (q and dO
// staged transposed for the whole loop); per key tile S = Q K^T and dP = dO V^T as in the forward,
// dS in registers, written transposed over the key tile's local memory, then dq += dS K with K's
// natural layout written over V's (both from the same fetched registers). Grid: (NTT, ceil(L / BQ),
// B * Hq).
#define DVP4 (((DV) + 3) / 4 * 4)
#define DQP (((D) + 4 * NTC - 1) / (4 * NTC) * (4 * NTC))
#define QC (DQP / NTC)                       // dq columns per thread
#define BN CEILDIV(BK * DVP4 / 4, NTT)       // 4-groups per work-item: a value tile (transposed)
__kernel __attribute__((reqd_work_group_size(NTT, 1, 1))) void attn_bwd_dq_tiled(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DQ, ulong dqo,
    dl_attn_strides dqs ATTN_DROP_DECL) {
  __local T4 Qs4[DP * BQ / 4];
  __local T4 dOs4[DVP4 * BQ / 4];
  // Ks (transposed keys) then dSs (transposed dS); Vt (transposed values) then Kn (natural keys).
  __local T4 KdS4[(DP * BK > BK * BQP ? DP * BK : BK * BQP) / 4];
  __local T4 VKn4[(DVP4 * BK > BK * DQP ? DVP4 * BK : BK * DQP) / 4];
  const int lid = get_local_id(0), tr = lid / NTC, tc = lid - tr * NTC;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int q0 = ATTN_QBLOCK(causal) * BQ, i0 = q0 + tr * TM;
  {
    T r[CEILDIV(BQ * DP / 4, NTT) * 4];
    attn_fetch_t(r, CEILDIV(BQ * DP / 4, NTT), BQ, DP, Q, qo, qs, bb, h, q0, L, 0, D);
    attn_commit_t((__local T*)Qs4, BQ, r, CEILDIV(BQ * DP / 4, NTT), BQ, DP);
  }
  {
    T r[CEILDIV(BQ * DVP4 / 4, NTT) * 4];
    attn_fetch_t(r, CEILDIV(BQ * DVP4 / 4, NTT), BQ, DVP4, DO, doo, dos, bb, h, q0, L, 0, DV);
    attn_commit_t((__local T*)dOs4, BQ, r, CEILDIV(BQ * DVP4 / 4, NTT), BQ, DVP4);
  }
  T lse[TM], delta[TM], dq[TM][QC];
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    const int i = i0 + a;
    lse[a] = i < L ? LSE[lo + (ulong)bh * L + i] : (T)INFINITY;
    delta[a] = i < L ? DELTA[dlo + (ulong)bh * L + i] : (T)0;
    _Pragma("unroll") for (int j = 0; j < QC; ++j) dq[a][j] = 0;
  }
  const int last_row = min(L, q0 + BQ) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  int fl, nfl;  // the key tile's mask flag: all-masked tiles are skipped
  int j0 = ATTN_NEXT_KEYS(0, BK, s_end, q0, last_row + 1, h, fl);
  for (int j0n; j0 < s_end; j0 = j0n, fl = nfl) {
    j0n = ATTN_NEXT_KEYS(j0 + BK, BK, s_end, q0, last_row + 1, h, nfl);  // see ATTN_NEXT_KEYS
    T kr[CEILDIV(BK * DP / 4, NTT) * 4];
    {
      T vr[BN * 4];
      attn_fetch_t(kr, CEILDIV(BK * DP / 4, NTT), BK, DP, K, ko, ks, bb, hk, j0, S, 0, D);
      attn_fetch_t(vr, BN, BK, DVP4, V, vo, vs, bb, hk, j0, S, 0, DV);
      barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's dq product is done with dSs and Kn
      attn_commit_t((__local T*)KdS4, BK, kr, CEILDIV(BK * DP / 4, NTT), BK, DP);
      attn_commit_t((__local T*)VKn4, BK, vr, BN, BK, DVP4);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[TM][SN], dp[TM][SN];
    _Pragma("unroll") for (int a = 0; a < TM; ++a)
      _Pragma("unroll") for (int j = 0; j < SN; ++j) s[a][j] = dp[a][j] = 0;
    ATTN_TILE_PRODUCT(s, SN, DP, Qs4, 0, BQ / 4, KdS4, BK / 4);
    ATTN_TILE_PRODUCT(dp, SN, DVP4, dOs4, 0, BQ / 4, VKn4, BK / 4);
    // dS = P (Z dP - delta); 0 where masked or the row is all masked (lse = +inf).
    _Pragma("unroll") for (int a = 0; a < TM; ++a) {
      uint4 words = 0;
      _Pragma("unroll") for (int j = 0; j < SN; ++j) {
        const T sc = attn_score(s[a][j], scale, i0 + a, j0 + TCOL(j), L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED);
        ATTN_WORDS(words, bh, i0 + a, j0 + TCOL(j & ~3), j & 3, L, S);
        s[a][j] = ATTN_EXP(sc - lse[a]) * (ATTN_Z(words, j) * dp[a][j] - delta[a]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);  // every read of Ks and Vt is done
    _Pragma("unroll") for (int j = 0; j < SN; ++j)
      KdS4[TCOL(j) * (BQP / 4) + tr] = (T4)(s[0][j], s[1][j], s[2][j], s[3][j]);
    // Kn[key][d] from the fetched key registers; columns D..DQP zero.
    _Pragma("unroll") for (int e = 0; e < CEILDIV(BK * DP / 4, NTT); ++e) {
      const int g = lid + e * NTT, d4 = g / BK, key = g - d4 * BK;
      if (g < BK * DP / 4)
        VKn4[key * (DQP / 4) + d4] = (T4)(kr[e * 4], kr[e * 4 + 1], kr[e * 4 + 2], kr[e * 4 + 3]);
    }
#if DQP > DP
    for (int g = lid; g < BK * (DQP - DP) / 4; g += NTT) {
      const int key = g / ((DQP - DP) / 4), d4 = DP / 4 + g - key * ((DQP - DP) / 4);
      VKn4[key * (DQP / 4) + d4] = (T4)0;
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    ATTN_TILE_PRODUCT(dq, QC, BK, KdS4, 0, BQP / 4, VKn4, DQP / 4);
  }
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    const int i = i0 + a;
    if (i >= L) continue;
    _Pragma("unroll") for (int j = 0; j < QC; ++j) {
      const int col = TCOL(j);
      if (col < D) STORE(DQ, (long)dqo + AT(dqs, bb, h, i, col), dq[a][j] * scale);
    }
  }
}
#endif
