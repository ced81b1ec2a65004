// Fused scaled-dot-product attention (flash-attention style): forward with online softmax and the
// backward recomputed from the saved log-sum-exp, the L x S score matrix never in global memory.
// The generator (attention.cpp) prepends T (compute type), ST (storage type of q/k/v/o/mask),
// LOAD(p, i) / STORE(p, i, v), D / DV (head dims of q,k / v), TPR (threads per row), BR (rows per
// work-group), BC (columns per tile) and HAS_MASK.
//
// A row (a query in the forward and dq passes, a key in the dk/dv pass) is owned by TPR threads;
// thread p of a row holds dims p, p + TPR, p + 2 TPR, ... of its vectors in registers, so a head
// dim of 256 costs each thread 256 / TPR registers per vector. Dot products over the head dim are
// partial sums per thread, combined through local memory (X). Tiles of the other side (keys or
// queries) are staged in local memory, read by every row (broadcast reads).
// Causal masking is top-left aligned (query i sees keys j <= i), as torch's is_causal.
// A row with every score masked gives 0 (torch's _safe_softmax) and a log-sum-exp of +inf, which
// makes its recomputed probabilities 0 in the backward.

#define DC ((D + TPR - 1) / TPR)
#define DVC ((DV + TPR - 1) / TPR)
#define DP (DC * TPR)
#define DVP (DVC * TPR)
#define NT (BR * TPR)
#define XS (TPR * BC + 1)  // X row stride: +1 so that rows of one wavefront fall in different banks

typedef struct {
  long b, h, l, d;  // element strides: batch, head, sequence, head dim
} dl_attn_strides;

#define AT(s, bb, hh, ll, dd) ((long)(bb) * (s).b + (long)(hh) * (s).h + (long)(ll) * (s).l + (long)(dd) * (s).d)

// Stages rows [r0, r0 + BC) of a [rows x dim] slice into tile[BC][dim_p] (zeros past `rows`/`dim`).
inline void attn_stage(__local T* tile, int dim, int dim_p, __global const ST* src, ulong off, dl_attn_strides s,
                       int bb, int hh, int r0, int rows) {
  for (int idx = get_local_id(0); idx < BC * dim_p; idx += NT) {
    int c = idx / dim_p, d = idx - c * dim_p, r = r0 + c;
    tile[idx] = (r < rows && d < dim) ? LOAD(src, (long)off + AT(s, bb, hh, r, d)) : (T)0;
  }
}

// The scale-multiplied, masked score of (query i, key j), or -INFINITY where masked out.
inline T attn_score(T dot, T scale, int i, int j, int L, int S, int causal, __global const ST* M, ulong mo,
                    dl_attn_strides ms, int bb, int hh) {
  if (i >= L || j >= S || (causal && j > i)) return -INFINITY;
  T v = dot * scale;
#if HAS_MASK
  v += LOAD(M, (long)mo + AT(ms, bb, hh, i, j));
#endif
  return v;
}

// out[i] = softmax(q_i K^T * scale + mask) V; lse[i] = log-sum-exp of the row (+inf if all masked).
// Grid: (NT, ceil(L / BR), B * Hq). Key/value head = query head / G.
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_fwd(
    int L, int S, int Hq, int G, T scale, int causal, __global const ST* Q, ulong qo, dl_attn_strides qs,
    __global const ST* K, ulong ko, dl_attn_strides ks, __global const ST* V, ulong vo, dl_attn_strides vs,
    __global const ST* M, ulong mo, dl_attn_strides ms, __global ST* O, ulong oo, dl_attn_strides os,
    __global T* LSE, ulong lo) {
  __local T Kt[BC * DP];
  __local T Vt[BC * DVP];
  __local T X[BR * XS];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int i = get_group_id(1) * BR + r;
  T q[DC], o[DVC];
  for (int e = 0; e < DC; ++e) {
    int d = e * TPR + p;
    q[e] = (i < L && d < D) ? LOAD(Q, (long)qo + AT(qs, bb, h, i, d)) : (T)0;
  }
  for (int e = 0; e < DVC; ++e) o[e] = 0;
  T m = -INFINITY, l = 0;
  const int last_row = min(L, (int)(get_group_id(1) + 1) * BR) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  for (int j0 = 0; j0 < s_end; j0 += BC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_stage(Kt, D, DP, K, ko, ks, bb, hk, j0, S);
    attn_stage(Vt, DV, DVP, V, vo, vs, bb, hk, j0, S);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < BC; ++c) {
      T acc = 0;
      for (int e = 0; e < DC; ++e) acc += q[e] * Kt[c * DP + e * TPR + p];
      X[r * XS + p * BC + c] = acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T s[BC];
    T mt = m;
    for (int c = 0; c < BC; ++c) {
      T dot = 0;
      for (int pp = 0; pp < TPR; ++pp) dot += X[r * XS + pp * BC + c];
      s[c] = attn_score(dot, scale, i, j0 + c, L, S, causal, M, mo, ms, bb, h);
      mt = fmax(mt, s[c]);
    }
    if (mt == -INFINITY) continue;  // nothing visible yet in this row
    const T alpha = exp(m - mt);    // m == -inf gives 0: o and l are still 0
    l *= alpha;
    for (int e = 0; e < DVC; ++e) o[e] *= alpha;
    for (int c = 0; c < BC; ++c) {
      const T pc = exp(s[c] - mt);  // exp(-inf) = 0 for masked keys
      l += pc;
      for (int e = 0; e < DVC; ++e) o[e] += pc * Vt[c * DVP + e * TPR + p];
    }
    m = mt;
  }
  if (i >= L) return;
  const T inv = l > 0 ? (T)1 / l : (T)0;
  for (int e = 0; e < DVC; ++e) {
    int d = e * TPR + p;
    if (d < DV) STORE(O, (long)oo + AT(os, bb, h, i, d), o[e] * inv);
  }
  if (p == 0) LSE[lo + (ulong)bh * L + i] = l > 0 ? m + log(l) : (T)INFINITY;
}

// dq[i] = scale * sum_j P_ij (dP_ij - delta_i) k_j with P recomputed from lse, dP = dO V^T,
// delta_i = dO_i . O_i. Grid as attn_fwd. dQ is contiguous [B, Hq, L, D].
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_bwd_dq(
    int L, int S, int Hq, int G, T scale, int causal, __global const ST* Q, ulong qo, dl_attn_strides qs,
    __global const ST* K, ulong ko, dl_attn_strides ks, __global const ST* V, ulong vo, dl_attn_strides vs,
    __global const ST* M, ulong mo, dl_attn_strides ms, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DQ, ulong dqo,
    dl_attn_strides dqs) {
  __local T Kt[BC * DP];
  __local T Vt[BC * DVP];
  __local T X[BR * XS];
  __local T Y[BR * XS];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int bh = get_group_id(2), bb = bh / Hq, h = bh - bb * Hq, hk = h / G;
  const int i = get_group_id(1) * BR + r;
  T q[DC], dq[DC], go[DVC];
  for (int e = 0; e < DC; ++e) {
    int d = e * TPR + p;
    q[e] = (i < L && d < D) ? LOAD(Q, (long)qo + AT(qs, bb, h, i, d)) : (T)0;
    dq[e] = 0;
  }
  for (int e = 0; e < DVC; ++e) {
    int d = e * TPR + p;
    go[e] = (i < L && d < DV) ? LOAD(DO, (long)doo + AT(dos, bb, h, i, d)) : (T)0;
  }
  const T lse = i < L ? LSE[lo + (ulong)bh * L + i] : (T)INFINITY;
  const T delta = i < L ? DELTA[dlo + (ulong)bh * L + i] : (T)0;
  const int last_row = min(L, (int)(get_group_id(1) + 1) * BR) - 1;
  const int s_end = causal ? min(S, last_row + 1) : S;
  for (int j0 = 0; j0 < s_end; j0 += BC) {
    barrier(CLK_LOCAL_MEM_FENCE);
    attn_stage(Kt, D, DP, K, ko, ks, bb, hk, j0, S);
    attn_stage(Vt, DV, DVP, V, vo, vs, bb, hk, j0, S);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < BC; ++c) {
      T a = 0, b = 0;
      for (int e = 0; e < DC; ++e) a += q[e] * Kt[c * DP + e * TPR + p];
      for (int e = 0; e < DVC; ++e) b += go[e] * Vt[c * DVP + e * TPR + p];
      X[r * XS + p * BC + c] = a;
      Y[r * XS + p * BC + c] = b;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int c = 0; c < BC; ++c) {
      T a = 0, b = 0;
      for (int pp = 0; pp < TPR; ++pp) {
        a += X[r * XS + pp * BC + c];
        b += Y[r * XS + pp * BC + c];
      }
      const T sc = attn_score(a, scale, i, j0 + c, L, S, causal, M, mo, ms, bb, h);
      const T pr = exp(sc - lse);  // 0 where masked (-inf) or the row is all masked (lse = +inf)
      const T ds = pr * (b - delta);
      for (int e = 0; e < DC; ++e) dq[e] += ds * Kt[c * DP + e * TPR + p];
    }
  }
  if (i >= L) return;
  for (int e = 0; e < DC; ++e) {
    int d = e * TPR + p;
    if (d < D) STORE(DQ, (long)dqo + AT(dqs, bb, h, i, d), dq[e] * scale);
  }
}

// dv[j] = sum_i P_ij dO_i and dk[j] = scale * sum_i P_ij (dP_ij - delta_i) q_i, summed over the G
// query heads that share key head hk (grouped-query attention) in a fixed order: deterministic, no
// atomics. Grid: (NT, ceil(S / BR), B * Hk). dK, dV contiguous [B, Hk, S, D / DV].
__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void attn_bwd_dkdv(
    int L, int S, int Hq, int G, T scale, int causal, __global const ST* Q, ulong qo, dl_attn_strides qs,
    __global const ST* K, ulong ko, dl_attn_strides ks, __global const ST* V, ulong vo, dl_attn_strides vs,
    __global const ST* M, ulong mo, dl_attn_strides ms, __global const ST* DO, ulong doo, dl_attn_strides dos,
    __global const T* LSE, ulong lo, __global const T* DELTA, ulong dlo, __global ST* DK, ulong dko,
    dl_attn_strides dks, __global ST* DV_, ulong dvo, dl_attn_strides dvs) {
  __local T Qt[BC * DP];
  __local T Ot[BC * DVP];
  __local T X[BR * XS];
  __local T Y[BR * XS];
  __local T lse_t[BC], delta_t[BC];
  const int lid = get_local_id(0), r = lid / TPR, p = lid - r * TPR;
  const int Hk = Hq / G;
  const int bhk = get_group_id(2), bb = bhk / Hk, hk = bhk - bb * Hk;
  const int j = get_group_id(1) * BR + r;
  T k[DC], v[DVC], dk[DC], dv[DVC];
  for (int e = 0; e < DC; ++e) {
    int d = e * TPR + p;
    k[e] = (j < S && d < D) ? LOAD(K, (long)ko + AT(ks, bb, hk, j, d)) : (T)0;
    dk[e] = 0;
  }
  for (int e = 0; e < DVC; ++e) {
    int d = e * TPR + p;
    v[e] = (j < S && d < DV) ? LOAD(V, (long)vo + AT(vs, bb, hk, j, d)) : (T)0;
    dv[e] = 0;
  }
  // Causal: only queries i >= the work-group's first key see any of its keys.
  const int i_begin = causal ? (int)(get_group_id(1) * BR) / BC * BC : 0;
  for (int g = 0; g < G; ++g) {
    const int h = hk * G + g, bh = bb * Hq + h;
    for (int i0 = i_begin; i0 < L; i0 += BC) {
      barrier(CLK_LOCAL_MEM_FENCE);
      attn_stage(Qt, D, DP, Q, qo, qs, bb, h, i0, L);
      attn_stage(Ot, DV, DVP, DO, doo, dos, bb, h, i0, L);
      for (int c = get_local_id(0); c < BC; c += NT) {
        const int i = i0 + c;
        lse_t[c] = i < L ? LSE[lo + (ulong)bh * L + i] : (T)INFINITY;
        delta_t[c] = i < L ? DELTA[dlo + (ulong)bh * L + i] : (T)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int c = 0; c < BC; ++c) {
        T a = 0, b = 0;
        for (int e = 0; e < DC; ++e) a += k[e] * Qt[c * DP + e * TPR + p];
        for (int e = 0; e < DVC; ++e) b += v[e] * Ot[c * DVP + e * TPR + p];
        X[r * XS + p * BC + c] = a;
        Y[r * XS + p * BC + c] = b;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int c = 0; c < BC; ++c) {
        T a = 0, b = 0;
        for (int pp = 0; pp < TPR; ++pp) {
          a += X[r * XS + pp * BC + c];
          b += Y[r * XS + pp * BC + c];
        }
        const T sc = attn_score(a, scale, i0 + c, j, L, S, causal, M, mo, ms, bb, h);
        const T pr = exp(sc - lse_t[c]);
        const T ds = pr * (b - delta_t[c]);
        for (int e = 0; e < DVC; ++e) dv[e] += pr * Ot[c * DVP + e * TPR + p];
        for (int e = 0; e < DC; ++e) dk[e] += ds * Qt[c * DP + e * TPR + p];
      }
    }
  }
  if (j >= S) return;
  for (int e = 0; e < DC; ++e) {
    int d = e * TPR + p;
    if (d < D) STORE(DK, (long)dko + AT(dks, bb, hk, j, d), dk[e] * scale);
  }
  for (int e = 0; e < DVC; ++e) {
    int d = e * TPR + p;
    if (d < DV) STORE(DV_, (long)dvo + AT(dvs, bb, hk, j, d), dv[e]);
  }
}
