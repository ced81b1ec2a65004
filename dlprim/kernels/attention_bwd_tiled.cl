// Register-tiled dk/dv pass of the fused attention backward: attention.cl's attn_bwd_dkdv on
// register tiles. Needs attention_common.cl and attention_tiled.cl's tile macros (TM, TCOL,
// ATTN_TILE_PRODUCT); the generator (attention.cpp) prepends both, attention_tiled.cl with ATTN_DKDV
// defined so that its own kernels are left out, and the tile: BK (keys per work-group), BQ (queries
// per step, a multiple of NTC), NTC (threads across a tile's columns) and DKDV_SPLIT (1: the PZ and dS
// tiles share local memory, the dv and dk products run one after the other, one more barrier per
// step; the host sets it when that lets a tile fit the device's local memory).
//
// Thread (tr, tc) owns keys k0 + tr*4 .. + 3 of the work-group's BK and keeps TM x n register tiles
// of their dk and dv (the columns TCOL(j) of the head dims rounded up to 4 NTC). K and V are staged
// once, in their natural [key][dim] layout; per step (a tile of BQ queries of one query head):
//  - S^T = K Q^T and dP^T = V dO^T as TM x SQ tiles of dot products over the head dim, read from the
//    natural layouts of both sides (rows padded by 4 elements): per 4-vector step a thread loads
//    TM + SQ 4-vectors for 4 TM SQ FMAs, as many FMAs per local load as the outer product over
//    transposed tiles gives, and Q and dO need no transposed copy next to the natural one the dk and
//    dv products read. Thread column j is query j NTC + tc: the NTC threads of a row read
//    consecutive query rows, which the padding puts in distinct banks.
//  - P = exp(S scale + mask - lse), Z the dropout keep factor (the same Philox words as the
//    forward: a thread's 4 keys are one aligned Philox group, one call per query),
//    dS = P (Z dP - delta); PZ and dS are written transposed, [query][key], to local memory;
//  - dv += (PZ)^T dO and dk += dS^T Q: ATTN_TILE_PRODUCT over the BQ queries (one local 4-vector of
//    the [query][key] tile and n / 4 of dO or Q per 4 n FMAs).
// The G query heads of a key head (grouped-query attention) are summed in the same registers in a
// fixed order: deterministic, no atomics.
//
// The next step's Q and dO tiles (and lse, delta) are fetched into registers before the current
// step's dk/dv products, so their global latency hides behind the arithmetic (DKDV_PREFETCH), when
// they take at most 32 registers per work-item (8 4-vectors: head dims 64, BQ 32 and 128 threads);
// otherwise the fetch is issued just before the step's first barrier. (Estimated with clang's PTX
// and ptxas for sm_90 at head dims 64, fp32: BQ 32, BK 32, NTC 8 needs ~200 registers without the
// prefetch, spills with it; NTC 16 takes ~185 with it.)
// Registers per thread: dk and dv, TM (DKW + DVW) / NTC (64 at head dims 64, NTC 8); the score
// tiles, 2 TM SQ (32 at BQ 32); the dot step's TM + SQ 4-vectors (S and dP are dead during the
// products, where the prefetched tiles are live). Every private array is indexed by compile-time
// constants in fully unrolled loops.
// Local memory: BK (D + DV) + BQ (DKW + DVW) + 2 BQ BK (BQ BK with DKDV_SPLIT), plus the row pads
// (attention.cpp, dkdv_tiled_local_bytes: fp32 at head dims 64 fits NVIDIA's 48 KiB with BK = BQ = 32,
// or BK 64, BQ 16 split; the host shrinks the tile to the device's limit).

#define NTK (BK / TM * NTC)                                   // threads per work-group
#define SQ (BQ / NTC)                                         // queries per thread in a score tile
#define DV4 (((DV) + 3) / 4 * 4)
#define DKW (((D) + 4 * NTC - 1) / (4 * NTC) * (4 * NTC))     // dk columns, rounded to the tile
#define DVW (((DV) + 4 * NTC - 1) / (4 * NTC) * (4 * NTC))    // dv columns
#define KCOLS (DKW / NTC)                                     // dk columns per thread
#define VCOLS (DVW / NTC)                                     // dv columns per thread
#define KRS (DP + 4)                                          // local row strides (elements)
#define VRS (DV4 + 4)
#define QRS (DKW + 4)
#define ORS (DVW + 4)
#define BKP (BK + 4)                                          // row stride of the [query][key] tiles
#define QRN CEILDIV(BQ * DKW / 4, NTK)                        // 4-vectors per work-item: a Q tile
#define ORN CEILDIV(BQ * DVW / 4, NTK)                        // ... a dO tile
#define RN CEILDIV(BQ, NTK)                                   // lse / delta values per work-item
#ifndef DKDV_PREFETCH
#define DKDV_PREFETCH (QRN + ORN <= 8)
#endif

// A row-major tile's share: 4-vector g = lid + e NTK holds columns 4 (g % (nd / 4)) .. + 3 of row
// g / (nd / 4) of rows [r0, r0 + nr) of a [rows x dim] slice (zeros past rows / dim; addresses are
// clamped into the tensor, so no load is conditional and all are in flight at once).
inline void attn_fetch_rows(T* r, int n, int nd, __global const ST* src, ulong off, dl_attn_strides s, int bb,
                            int hh, int r0, int rows, int dim) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTK, rr = g / (nd / 4), d = (g - rr * (nd / 4)) * 4;
    const T4 v = attn_load4(src, off, s, bb, hh, r0 + rr, rows, d, dim);
    r[e * 4] = v.s0, r[e * 4 + 1] = v.s1, r[e * 4 + 2] = v.s2, r[e * 4 + 3] = v.s3;
  }
}

// attn_fetch_rows's registers to local memory, rows ld elements apart.
inline void attn_commit_rows(__local T* dst, int ld, const T* r, int n, int nr, int nd) {
  _Pragma("unroll") for (int e = 0; e < n; ++e) {
    const int g = get_local_id(0) + e * NTK, rr = g / (nd / 4), d = (g - rr * (nd / 4)) * 4;
    if (g < nr * nd / 4) *(__local T4*)(dst + rr * ld + d) = (T4)(r[e * 4], r[e * 4 + 1], r[e * 4 + 2], r[e * 4 + 3]);
  }
}

// The registers of one query step: its Q and dO tiles, lse and delta.
#define ATTN_FETCH_STEP(h_, i0_)                                                                  \
  {                                                                                               \
    const int bh_ = bb * Hq + (h_);                                                               \
    attn_fetch_rows(qr, QRN, DKW, Q, qo, qs, bb, h_, i0_, L, D);                                   \
    attn_fetch_rows(orr, ORN, DVW, DO, doo, dos, bb, h_, i0_, L, DV);                              \
    _Pragma("unroll") for (int e = 0; e < RN; ++e) {                                              \
      const int i = (i0_) + lid + e * NTK;                                                        \
      lr[e] = i < L ? LSE[lo + (ulong)bh_ * L + i] : (T)INFINITY;                                 \
      dr[e] = i < L ? DELTA[dlo + (ulong)bh_ * L + i] : (T)0;                                     \
    }                                                                                             \
  }

// The first step >= st (of the G * tiles query tiles, head-major) whose queries are not all masked against
// the work-group's keys [k0, k1) (G * tiles if none), and its mask flag (attention_common.cl).
#if HAS_MASK
inline int dkdv_next(__global const uchar* MF, ulong mfo, dl_attn_strides mfs, int bb, int hk, int G, int tiles,
                     int i_begin, int L, int k0, int k1, int st, int* flag) {
  for (; st < G * tiles; ++st) {
    const int g = st / tiles, i0 = i_begin + (st - g * tiles) * BQ;
    const int f = attn_mask_tile(MF, mfo, mfs, bb, hk * G + g, i0, min(L, i0 + BQ), k0, k1);
    if (f != ATTN_MASKED) {
      *flag = f;
      return st;
    }
  }
  *flag = ATTN_MIXED;
  return st;
}
#define DKDV_NEXT(st, flag) dkdv_next(MF, mfo, mfs, bb, hk, G, tiles, i_begin, L, k0, min(S, k0 + BK), st, &(flag))
#else
#define DKDV_NEXT(st, flag) ((flag) = ATTN_VISIBLE, (st))
#endif

// acc[a][j] += (row tr TM + a of A) . (row j NTC + tc of B) over n4 4-vectors; A4 / B4 are
// row-major local tiles of 4-vectors with row strides as4 / bs4. The four products of a step are
// separate multiply-adds on one accumulator (dot() may round differently and is not an FMA chain).
#define ATTN_ROW_DOTS(acc, A4, as4, B4, bs4, n4)                                                  \
  _Pragma("unroll 2") for (int d_ = 0; d_ < (n4); ++d_) {                                       \
    T4 x_[TM], y_[SQ];                                                                          \
    _Pragma("unroll") for (int a = 0; a < TM; ++a) x_[a] = (A4)[(tr * TM + a) * (as4) + d_];     \
    _Pragma("unroll") for (int j = 0; j < SQ; ++j) y_[j] = (B4)[(j * NTC + tc) * (bs4) + d_];    \
    _Pragma("unroll") for (int a = 0; a < TM; ++a)                                              \
      _Pragma("unroll") for (int j = 0; j < SQ; ++j) {                                          \
        acc[a][j] += x_[a].s0 * y_[j].s0;                                                       \
        acc[a][j] += x_[a].s1 * y_[j].s1;                                                       \
        acc[a][j] += x_[a].s2 * y_[j].s2;                                                       \
        acc[a][j] += x_[a].s3 * y_[j].s3;                                                       \
      }                                                                                         \
  }

// dv[j] = sum_i P_ij Z_ij dO_i and dk[j] = scale * sum_i P_ij (Z_ij dP_ij - delta_i) q_i over the
// query heads of key head hk. Grid: (NTK, ceil(S / BK), B * Hk).
__kernel __attribute__((reqd_work_group_size(NTK, 1, 1))) void attn_bwd_dkdv_tiled(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DK, ulong dko,
    dl_attn_strides dks, __global ST* DV_, ulong dvo, dl_attn_strides dvs ATTN_DROP_DECL) {
  __local T4 Ks4[BK * KRS / 4];
  __local T4 Vs4[BK * VRS / 4];
  __local T4 Qs4[BQ * QRS / 4];
  __local T4 Os4[BQ * ORS / 4];
  __local T4 Ps4[BQ * BKP / 4];   // PZ^T: [query][key]
#if DKDV_SPLIT
  __local T4* const dSs4 = Ps4;   // dS^T after the dv product is done with PZ^T
#else
  __local T4 dSs4[BQ * BKP / 4];  // dS^T
#endif
  __local T lse_t[BQ], delta_t[BQ];
  const int lid = get_local_id(0), tr = lid / NTC, tc = lid - tr * NTC;
  const int Hk = Hq / G;
  const int bhk = get_group_id(2), bb = bhk / Hk, hk = bhk - bb * Hk;
  const int k0 = get_group_id(1) * BK, j0 = k0 + tr * TM;  // the work-group's and this thread's first key
  {
    T r[CEILDIV(BK * DP / 4, NTK) * 4];
    attn_fetch_rows(r, CEILDIV(BK * DP / 4, NTK), DP, K, ko, ks, bb, hk, k0, S, D);
    attn_commit_rows((__local T*)Ks4, KRS, r, CEILDIV(BK * DP / 4, NTK), BK, DP);
  }
  {
    T r[CEILDIV(BK * DV4 / 4, NTK) * 4];
    attn_fetch_rows(r, CEILDIV(BK * DV4 / 4, NTK), DV4, V, vo, vs, bb, hk, k0, S, DV);
    attn_commit_rows((__local T*)Vs4, VRS, r, CEILDIV(BK * DV4 / 4, NTK), BK, DV4);
  }
  T dk[TM][KCOLS], dv[TM][VCOLS];
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    _Pragma("unroll") for (int j = 0; j < KCOLS; ++j) dk[a][j] = 0;
    _Pragma("unroll") for (int j = 0; j < VCOLS; ++j) dv[a][j] = 0;
  }
  // Causal: only queries i >= k0 see any of the work-group's keys (the first group, k0 = 0, has the
  // most steps and starts first). Steps: the query tiles of each of the G query heads in turn.
  const int i_begin = causal ? k0 / BQ * BQ : 0;
  const int tiles = L > i_begin ? CEILDIV(L - i_begin, BQ) : 0;
  T qr[QRN * 4], orr[ORN * 4], lr[RN], dr[RN];
  // Steps whose mask blocks are all -inf are skipped: fl is the step's flag, nstep / nfl the next step's.
  int fl, nfl;
  int step = DKDV_NEXT(0, fl);
#if DKDV_PREFETCH
  if (step < G * tiles) {
    const int g0 = step / tiles;
    ATTN_FETCH_STEP(hk * G + g0, i_begin + (step - g0 * tiles) * BQ);
  }
#endif
  for (int nstep; step < G * tiles; step = nstep, fl = nfl) {
    nstep = DKDV_NEXT(step + 1, nfl);
    const int g = step / tiles, h = hk * G + g, bh = bb * Hq + h, i0 = i_begin + (step - g * tiles) * BQ;
#if !DKDV_PREFETCH
    ATTN_FETCH_STEP(h, i0);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous step's products are done with Qs, Os, Ps, dSs
    attn_commit_rows((__local T*)Qs4, QRS, qr, QRN, BQ, DKW);
    attn_commit_rows((__local T*)Os4, ORS, orr, ORN, BQ, DVW);
    _Pragma("unroll") for (int e = 0; e < RN; ++e) {
      const int c = lid + e * NTK;
      if (c < BQ) lse_t[c] = lr[e], delta_t[c] = dr[e];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    {
      T s[TM][SQ], dp[TM][SQ];
      _Pragma("unroll") for (int a = 0; a < TM; ++a)
        _Pragma("unroll") for (int j = 0; j < SQ; ++j) s[a][j] = dp[a][j] = 0;
      ATTN_ROW_DOTS(s, Ks4, KRS / 4, Qs4, QRS / 4, DP / 4);
      ATTN_ROW_DOTS(dp, Vs4, VRS / 4, Os4, ORS / 4, DV4 / 4);
      // PZ to local memory; dS replaces S in registers.
      _Pragma("unroll") for (int j = 0; j < SQ; ++j) {
        const int qc = j * NTC + tc, i = i0 + qc;
        const T lse = lse_t[qc], delta = delta_t[qc];
        uint4 words = 0;
        ATTN_WORDS(words, bh, i, j0, 0, L, S);  // keys j0 .. j0 + 3: words 0 .. 3 of one Philox group
        T pz[TM];
        _Pragma("unroll") for (int a = 0; a < TM; ++a) {
          // 0 where masked, past L or S, or the row is all masked (lse = +inf)
          const T pr = ATTN_EXP(attn_score(s[a][j], scale, i, j0 + a, L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED) - lse);
          const T z = ATTN_Z(words, a);
          pz[a] = pr * z;
          s[a][j] = pr * (z * dp[a][j] - delta);
        }
        Ps4[qc * (BKP / 4) + tr] = (T4)(pz[0], pz[1], pz[2], pz[3]);
      }
#if DKDV_PREFETCH
      if (nstep < G * tiles) {  // the next step's tiles: in flight during the products
        const int ng = nstep / tiles;
        ATTN_FETCH_STEP(hk * G + ng, i_begin + (nstep - ng * tiles) * BQ);
      }
#endif
#if DKDV_SPLIT
      barrier(CLK_LOCAL_MEM_FENCE);
      ATTN_TILE_PRODUCT(dv, VCOLS, BQ, Ps4, 0, BKP / 4, Os4, ORS / 4);
      barrier(CLK_LOCAL_MEM_FENCE);  // dS^T goes over PZ^T
#endif
      _Pragma("unroll") for (int j = 0; j < SQ; ++j)
        dSs4[(j * NTC + tc) * (BKP / 4) + tr] = (T4)(s[0][j], s[1][j], s[2][j], s[3][j]);
      barrier(CLK_LOCAL_MEM_FENCE);
#if !DKDV_SPLIT
      ATTN_TILE_PRODUCT(dv, VCOLS, BQ, Ps4, 0, BKP / 4, Os4, ORS / 4);
#endif
      ATTN_TILE_PRODUCT(dk, KCOLS, BQ, dSs4, 0, BKP / 4, Qs4, QRS / 4);
    }
  }
  _Pragma("unroll") for (int a = 0; a < TM; ++a) {
    const int j = j0 + a;
    if (j >= S) continue;
    _Pragma("unroll") for (int c = 0; c < KCOLS; ++c) {
      const int col = TCOL(c);
      if (col < D) STORE(DK, (long)dko + AT(dks, bb, hk, j, col), dk[a][c] * scale);
    }
    _Pragma("unroll") for (int c = 0; c < VCOLS; ++c) {
      const int col = TCOL(c);
      if (col < DV) STORE(DV_, (long)dvo + AT(dvs, bb, hk, j, col), dv[a][c]);
    }
  }
}
