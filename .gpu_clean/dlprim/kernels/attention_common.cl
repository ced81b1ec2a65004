// Shared by the fused attention kernels (attention.cl: a row per thread group; attention_tiled.cl:
// register tiles): element strides of a [B, H, rows, dim] operand, the masked score, the dropout
// draws and the keep-mask kernel. The generator (attention.cpp) prepends T, ST, LOAD/STORE and
// HAS_MASK (and philox.cl with DROPOUT).

typedef struct {
  long b, h, l, d;  // element strides: batch, head, sequence, head dim
} dl_attn_strides;

#define AT(s, bb, hh, ll, dd) ((long)(bb) * (s).b + (long)(hh) * (s).h + (long)(ll) * (s).l + (long)(dd) * (s).d)

// Elements [dd, dd + 4) of row `row` of a [rows x dim] slice, zeros past rows / dim; the address is
// clamped into the tensor, so the load is never conditional. ATTN_VEC (set by the generator when
// every row of q, k, v is contiguous and 16-byte aligned, head dims multiples of 4, storage = compute
// type): one vector load, whose address arithmetic is a quarter of four scalar loads' (the loads'
// instructions, not their bandwidth, cost the tiled forward a third of its time).
inline T4 attn_load4(__global const ST* src, ulong off, dl_attn_strides s, int bb, int hh, int row, int rows,
                     int dd, int dim) {
  const int rc = min(row, rows - 1);
#if ATTN_VEC
  const long i = (long)off + (long)bb * s.b + (long)hh * s.h + (long)rc * s.l + min(dd, dim - 4);
  const T4 v = *(__global const T4*)(src + i);
  return (row < rows && dd < dim) ? v : (T4)0;
#else
  T4 v;
  v.s0 = (row < rows && dd < dim) ? LOAD(src, (long)off + AT(s, bb, hh, rc, min(dd, dim - 1))) : (T)0;
  v.s1 = (row < rows && dd + 1 < dim) ? LOAD(src, (long)off + AT(s, bb, hh, rc, min(dd + 1, dim - 1))) : (T)0;
  v.s2 = (row < rows && dd + 2 < dim) ? LOAD(src, (long)off + AT(s, bb, hh, rc, min(dd + 2, dim - 1))) : (T)0;
  v.s3 = (row < rows && dd + 3 < dim) ? LOAD(src, (long)off + AT(s, bb, hh, rc, min(dd + 3, dim - 1))) : (T)0;
  return v;
#endif
}

// The parameters every attention kernel starts with (attention.cpp's add_common sets them).
#define ATTN_COMMON_PARAMS                                                                            \
  int L, int S, int Hq, int G, T scale, int causal, __global const ST *Q, ulong qo, dl_attn_strides qs, \
      __global const ST *K, ulong ko, dl_attn_strides ks, __global const ST *V, ulong vo,            \
      dl_attn_strides vs, __global const ST *M, ulong mo, dl_attn_strides ms

// The softmax's exponential. float32: the device's native exp (on NVIDIA one ex2.approx instead of a
// ten-instruction exact sequence; its relative error, ~1e-7 for the arguments attention sees, is
// below float32 attention's own rounding); float64 keeps the exact one.
#if ATTN_NATIVE_EXP
#define ATTN_EXP(x) native_exp(x)
#else
#define ATTN_EXP(x) exp(x)
#endif

// Causal work grows with the query block's index; work-groups start in index order, so a causal
// grid walks its query blocks from the last (the longest) down: the short blocks fill the tail.
#define ATTN_QBLOCK(causal) ((causal) ? (int)(get_num_groups(1) - 1 - get_group_id(1)) : (int)get_group_id(1))

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

// Dropout (DROPOUT defined: needs philox.cl): key (i, j) of head bh is kept when its uniform is >= p.
// Element (bh, i, j) takes word j % 4 of Philox group ((bh L + i) S4 + j) / 4 (S4 = S rounded up
// to 4), so the 4 columns of an aligned group share one Philox call; the backward redraws the
// same words. z = keep / (1 - p) scales the kept probabilities.
#ifdef DROPOUT
#define ATTN_DROP_DECL , T drop_p, ulong seed, ulong offset
#define ATTN_Z(words, c) ((dl_uniform_f(dl_word(words, (c) & 3)) >= drop_p) ? (T)1 / (T)(1 - drop_p) : (T)0)
#define ATTN_WORDS(words, bh, i, j0, c, L, S)                                                      \
  if (((c) & 3) == 0) words = dl_philox(seed, ((ulong)((ulong)(bh) * (L) + (i)) * (ulong)(((S) + 3) & ~3) + (j0) + (c)) >> 2, offset)
#else
#define ATTN_DROP_DECL
#define ATTN_Z(words, c) ((T)1)
#define ATTN_WORDS(words, bh, i, j0, c, L, S)
#endif

#ifdef DROPOUT
// The dropout keep mask (1 kept, 0 dropped) of every (b, h, i, j) as the kernels above draw it,
// [B, Hq, L, S] contiguous: return_debug_mask, so tests can rebuild the computation.
__kernel void attn_keep_mask(int L, int S, ulong n, __global ST* out, ulong oo ATTN_DROP_DECL) {
  const ulong id = get_global_id(0);
  if (id >= n) return;
  const ulong j = id % (ulong)S, row = id / (ulong)S;  // row = bh * L + i
  const ulong col = row * (ulong)((S + 3) & ~3) + j;
  const T keep = dl_uniform_f(dl_word(dl_philox(seed, col >> 2, offset), (int)(col & 3))) >= drop_p ? (T)1 : (T)0;
  STORE(out, (long)oo + (long)id, keep);
}
#endif
