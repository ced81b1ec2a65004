// Fused scaled-dot-product attention (flash-attention style): forward with online softmax and the
// backward recomputed from the saved log-sum-exp, the L x S score matrix never in global memory.
// The generator (attention.cpp) prepends T / T4 (compute type, its 4-vector), ST (storage type of
// q/k/v/o/mask), LOAD(p, i) / STORE(p, i, v), D / DV (head dims of q,k / v), TPR (threads per
// row), BR (rows per work-group), BC (columns per tile) and HAS_MASK; the forward and the backward
// are built with their own TPR/BR/BC (attention.cpp).
//
// A row (a query in the forward and dq passes, a key in the dk/dv pass) is owned by TPR threads;
// thread p of a row holds the chunk [p DC, (p + 1) DC) of its vectors in registers as 4-vectors.
// Tiles of the other side (keys or queries) are staged in local memory with the same chunks, each
// chunk padded by 4 so that the TPR threads of a row read different banks; every row of the
// work-group reads the same tile element (a broadcast), 4 at a time (one local load per 4 FMAs).
// Dot products over the head dim are partial sums per thread, combined through local memory (X)
// when TPR > 1. Loops run over the head dim outside and the tile's columns inside, so each column
// is an independent accumulator (no dependent FMA chains).
// Causal masking is top-left aligned (query i sees keys j <= i), as torch's is_causal.
// A row with every score masked gives 0 (torch's _safe_softmax) and a log-sum-exp of +inf, which
// makes its recomputed probabilities 0 in the backward.

#define DC ((((D) + TPR - 1) / TPR + 3) / 4 * 4)
#define DVC ((((DV) + TPR - 1) / TPR + 3) / 4 * 4)
#define KS (TPR * (DC + 4))   // local row stride (elements) of a staged q/k tile
#define VS (TPR * (DVC + 4))  // ... of a staged v/dO tile
#define NT (BR * TPR)
#define XS (TPR * BC + 1)  // X row stride: +1 so that rows of one wavefront fall in different banks

// Stages rows [r0, r0 + BC) of a [rows x dim] slice into `tile` (row stride rs, TPR chunks of dc
// elements each padded by 4; zeros past `rows`/`dim`; the pads are never read). Groups of 4
// elements (attn_load4) are loaded in batches of ATTN_SB before their stores: storing each element
// right after its load waits one global latency per element.
#define ATTN_SB 4
inline void attn_stage(__local T* tile, int dim, int dc, int rs, __global const ST* src, ulong off,
                       dl_attn_strides s, int bb, int hh, int r0, int rows) {
  const int per_row4 = TPR * dc / 4, total = BC * per_row4;
  for (int base = get_local_id(0); base < total; base += ATTN_SB * NT) {
    T4 r[ATTN_SB];
    _Pragma("unroll") for (int e = 0; e < ATTN_SB; ++e) {
      const int g = base + e * NT, c = g / per_row4, d = (g - c * per_row4) * 4;
      r[e] = attn_load4(src, off, s, bb, hh, r0 + c, rows, d, dim);
    }
    _Pragma("unroll") for (int e = 0; e < ATTN_SB; ++e) {
      const int g = base + e * NT, c = g / per_row4, d = (g - c * per_row4) * 4, ch = d / dc;
      if (g < total) *(__local T4*)(tile + c * rs + ch * (dc + 4) + (d - ch * dc)) = r[e];
    }
  }
}

// Loads this thread's chunk of row `row` of a [rows x dim] slice as 4-vectors (zeros outside).
#define ATTN_LOAD_CHUNK(dst, n4, dim, src, off, s, bb, hh, row, rows)                                  \
  for (int e = 0; e < (n4); ++e) {                                                                   \
    T4 v4;                                                                                           \
    for (int t = 0; t < 4; ++t) {                                                                    \
      const int d = p * (n4) * 4 + e * 4 + t;                                                        \
      ((T*)&v4)[t] = ((row) < (rows) && d < (dim)) ? LOAD(src, (long)(off) + AT(s, bb, hh, row, d)) : (T)0; \
    }                                                                                                \
    dst[e] = v4;                                                                                     \
  }

// Stores this thread's chunk (times `mul`) into row `row` of a [rows x dim] slice.
#define ATTN_STORE_CHUNK(srcv, n4, dim, dst, off, s, bb, hh, row, mul)          \
  for (int e = 0; e < (n4); ++e)                                               \
    for (int t = 0; t < 4; ++t) {                                              \
      const int d = p * (n4) * 4 + e * 4 + t;                                  \
      if (d < (dim)) STORE(dst, (long)(off) + AT(s, bb, hh, row, d), ((T*)&srcv[e])[t] * (mul)); \
    }

// acc[c] = this thread's partial dot of its chunk `v` with column c of a staged tile.
#define ATTN_DOTS(acc, v, n4, tile4, rs4)                                      \
  for (int c = 0; c < BC; ++c) acc[c] = 0;                                     \
  for (int e = 0; e < (n4); ++e) {                                             \
    const T4 ve = v[e];                                                        \
    for (int c = 0; c < BC; ++c) acc[c] += dot(ve, tile4[c * (rs4) + p * ((n4) + 1) + e]); \
  }

// Completes partial dots over the TPR threads of each row (a no-op for TPR == 1). Every thread of
// the work-group must call it (barrier).
inline void attn_combine(__local T* X, T* acc, int r, int p) {
#if TPR > 1
  for (int c = 0; c < BC; ++c) X[r * XS + p * BC + c] = acc[c];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int c = 0; c < BC; ++c) {
    T v = 0;
    for (int pp = 0; pp < TPR; ++pp) v += X[r * XS + pp * BC + c];
    acc[c] = v;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#endif
}

#if TPR > 1
#define ATTN_X_SIZE (BR * XS)
#else
#define ATTN_X_SIZE 1
#endif

// out[i] = softmax(q_i K^T * scale + mask) V; lse[i] = log-sum-exp of the row (+inf if all masked).
// Grid: (NT, ceil(L / BR), B * Hq). Key/value head = query head / G.
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_fwd(
    ATTN_COMMON_PARAMS, __global ST* O, ulong oo, dl_attn_strides os,
    __global T* LSE, ulong lo ATTN_DROP_DECL) {
  __local T4 Kt4[BC * KS / 4];
  __local T4 Vt4[BC * VS / 4];
  __local T X[ATTN_X_SIZE];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int qb = ATTN_QBLOCK(causal), i = qb * BR + r;
  T4 q[DC / 4], o[DVC / 4];
  ATTN_LOAD_CHUNK(q, DC / 4, D, Q, qo, qs, bb, h, i, L);
  for (int e = 0; e < DVC / 4; ++e) o[e] = 0;
  T m = -INFINITY, l = 0;
  const int last_row = min(L, (qb + 1) * BR) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  int fl, nfl;  // the key tile's mask flag (attention_common.cl): all-masked tiles are skipped
  int j0 = ATTN_NEXT_KEYS(0, BC, s_end, qb * BR, last_row + 1, h, fl);
  for (int j0n; j0 < s_end; j0 = j0n, fl = nfl) {
    j0n = ATTN_NEXT_KEYS(j0 + BC, BC, s_end, qb * BR, last_row + 1, h, nfl);  // see ATTN_NEXT_KEYS
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_stage((__local T*)Kt4, D, DC, KS, K, ko, ks, bb, hk, j0, S);
    attn_stage((__local T*)Vt4, DV, DVC, VS, V, vo, vs, bb, hk, j0, S);
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[BC];
    ATTN_DOTS(s, q, DC / 4, Kt4, KS / 4);
    attn_combine(X, s, r, p);
    T mt = m;
    for (int c = 0; c < BC; ++c) {
      s[c] = attn_score(s[c], scale, i, j0 + c, L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED);
      mt = fmax(mt, s[c]);
    }
    if (mt == -INFINITY) continue;  // nothing visible yet in this row
    const T alpha = ATTN_EXP(m - mt);    // m == -inf gives 0: o and l are still 0
    l *= alpha;
    for (int e = 0; e < DVC / 4; ++e) o[e] *= alpha;
    uint4 words = 0;
    for (int c = 0; c < BC; ++c) {
      const T pc = ATTN_EXP(s[c] - mt);  // exp(-inf) = 0 for masked keys
      l += pc;  // the softmax's sum is over every key; dropout scales what reaches o
      ATTN_WORDS(words, bh, i, j0, c, L, S);
      const T pz = pc * ATTN_Z(words, c);
      for (int e = 0; e < DVC / 4; ++e) o[e] += pz * Vt4[c * (VS / 4) + p * (DVC / 4 + 1) + e];
    }
    m = mt;
  }
  if (i >= L) return;
  const T inv = l > 0 ? (T)1 / l : (T)0;
  ATTN_STORE_CHUNK(o, DVC / 4, DV, O, oo, os, bb, h, i, inv);
  if (p == 0) LSE[lo + (ulong)bh * L + i] = l > 0 ? m + log(l) : (T)INFINITY;
}

// dq[i] = scale * sum_j P_ij (dP_ij - delta_i) k_j with P recomputed from lse, dP = dO V^T,
// delta_i = dO_i . O_i. Grid as attn_fwd.
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_bwd_dq(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DQ, ulong dqo,
    dl_attn_strides dqs ATTN_DROP_DECL) {
  __local T4 Kt4[BC * KS / 4];
  __local T4 Vt4[BC * VS / 4];
  __local T X[ATTN_X_SIZE];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int qb = ATTN_QBLOCK(causal), i = qb * BR + r;
  T4 q[DC / 4], dq[DC / 4], go[DVC / 4];
  ATTN_LOAD_CHUNK(q, DC / 4, D, Q, qo, qs, bb, h, i, L);
  ATTN_LOAD_CHUNK(go, DVC / 4, DV, DO, doo, dos, bb, h, i, L);
  for (int e = 0; e < DC / 4; ++e) dq[e] = 0;
  const T lse = i < L ? LSE[lo + (ulong)bh * L + i] : (T)INFINITY;
  const T delta = i < L ? DELTA[dlo + (ulong)bh * L + i] : (T)0;
  const int last_row = min(L, (qb + 1) * BR) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  int fl, nfl;  // the key tile's mask flag (attention_common.cl): all-masked tiles are skipped
  int j0 = ATTN_NEXT_KEYS(0, BC, s_end, qb * BR, last_row + 1, h, fl);
  for (int j0n; j0 < s_end; j0 = j0n, fl = nfl) {
    j0n = ATTN_NEXT_KEYS(j0 + BC, BC, s_end, qb * BR, last_row + 1, h, nfl);  // see ATTN_NEXT_KEYS
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_stage((__local T*)Kt4, D, DC, KS, K, ko, ks, bb, hk, j0, S);
    attn_stage((__local T*)Vt4, DV, DVC, VS, V, vo, vs, bb, hk, j0, S);
    barrier(CLK_LOCAL_MEM_FENCE);
    T a[BC], b[BC];
    ATTN_DOTS(a, q, DC / 4, Kt4, KS / 4);
    ATTN_DOTS(b, go, DVC / 4, Vt4, VS / 4);
    attn_combine(X, a, r, p);
    attn_combine(X, b, r, p);
    uint4 words = 0;
    for (int c = 0; c < BC; ++c) {
      const T sc = attn_score(a[c], scale, i, j0 + c, L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED);
      ATTN_WORDS(words, bh, i, j0, c, L, S);
      // dS = P (Z dP' - delta) with dP' = dO . v; 0 where masked or the row is all masked (lse = +inf)
      const T ds = ATTN_EXP(sc - lse) * (ATTN_Z(words, c) * b[c] - delta);
      for (int e = 0; e < DC / 4; ++e) dq[e] += ds * Kt4[c * (KS / 4) + p * (DC / 4 + 1) + e];
    }
  }
  if (i >= L) return;
  ATTN_STORE_CHUNK(dq, DC / 4, D, DQ, dqo, dqs, bb, h, i, scale);
}

// dv[j] = sum_i P_ij dO_i and dk[j] = scale * sum_i P_ij (dP_ij - delta_i) q_i, summed over the G
// query heads that share key head hk (grouped-query attention) in a fixed order: deterministic, no
// atomics. Grid: (NT, ceil(S / BR), B * Hk).
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_bwd_dkdv(
    ATTN_COMMON_PARAMS, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DK, ulong dko,
    dl_attn_strides dks, __global ST* DV_, ulong dvo, dl_attn_strides dvs ATTN_DROP_DECL) {
  __local T4 Qt4[BC * KS / 4];
  __local T4 Ot4[BC * VS / 4];
  __local T X[ATTN_X_SIZE];
  __local T lse_t[BC], delta_t[BC];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int Hk = Hq / G;
  const int bhk = get_group_id(2), bb = bhk / Hk, hk = bhk - bb * Hk;
  const int j = get_group_id(1) * BR + r;
  T4 k[DC / 4], v[DVC / 4], dk[DC / 4], dv[DVC / 4];
  ATTN_LOAD_CHUNK(k, DC / 4, D, K, ko, ks, bb, hk, j, S);
  ATTN_LOAD_CHUNK(v, DVC / 4, DV, V, vo, vs, bb, hk, j, S);
  for (int e = 0; e < DC / 4; ++e) dk[e] = 0;
  for (int e = 0; e < DVC / 4; ++e) dv[e] = 0;
  // Causal: only queries i >= the work-group's first key see any of its keys.
  const int i_begin = causal ? (int)(get_group_id(1) * BR) / BC * BC : 0;
  for (int g = 0; g < G; ++g) {
    const int h = hk * G + g, bh = bb * Hq + h;
    const int k_first = get_group_id(1) * BR, k_last = min(S, k_first + BR);
    int fl, nfl;  // the query tile's mask flag: all-masked tiles are skipped
    int i0 = ATTN_NEXT_QUERIES(i_begin, BC, L, k_first, k_last, h, fl);
    for (int i0n; i0 < L; i0 = i0n, fl = nfl) {
      i0n = ATTN_NEXT_QUERIES(i0 + BC, BC, L, k_first, k_last, h, nfl);  // see ATTN_NEXT_KEYS
      barrier(CLK_LOCAL_MEM_FENCE);
      attn_stage((__local T*)Qt4, D, DC, KS, Q, qo, qs, bb, h, i0, L);
      attn_stage((__local T*)Ot4, DV, DVC, VS, DO, doo, dos, bb, h, i0, L);
      for (int c = get_local_id(0); c < BC; c += NT) {
        const int i = i0 + c;
        lse_t[c] = i < L ? LSE[lo + (ulong)bh * L + i] : (T)INFINITY;
        delta_t[c] = i < L ? DELTA[dlo + (ulong)bh * L + i] : (T)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      T a[BC], b[BC];
      ATTN_DOTS(a, k, DC / 4, Qt4, KS / 4);
      ATTN_DOTS(b, v, DVC / 4, Ot4, VS / 4);
      attn_combine(X, a, r, p);
      attn_combine(X, b, r, p);
      for (int c = 0; c < BC; ++c) {
        const T sc = attn_score(a[c], scale, i0 + c, j, L, S, causal, M, mo, ms, bb, h, fl == ATTN_MIXED);
        const T pr = ATTN_EXP(sc - lse_t[c]);
#ifdef DROPOUT
        // this thread's key j is one column of query row i0 + c: its own Philox group
        const ulong col = ((ulong)((ulong)bh * L + i0 + c)) * (ulong)((S + 3) & ~3) + j;
        const T z = (j < S && dl_uniform_f(dl_word(dl_philox(seed, col >> 2, offset), (int)(col & 3))) >= drop_p)
                        ? (T)1 / (T)(1 - drop_p) : (T)0;
#else
        const T z = 1;
#endif
        const T ds = pr * (z * b[c] - delta_t[c]);
        const T pz = pr * z;
        for (int e = 0; e < DVC / 4; ++e) dv[e] += pz * Ot4[c * (VS / 4) + p * (DVC / 4 + 1) + e];
        for (int e = 0; e < DC / 4; ++e) dk[e] += ds * Qt4[c * (KS / 4) + p * (DC / 4 + 1) + e];
      }
    }
  }
  if (j >= S) return;
  ATTN_STORE_CHUNK(dk, DC / 4, D, DK, dko, dks, bb, hk, j, scale);
  ATTN_STORE_CHUNK(dv, DVC / 4, DV, DV_, dvo, dvs, bb, hk, j, (T)1);
}
