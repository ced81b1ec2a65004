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
      dl_attn_strides vs, __global const ST *M, ulong mo, dl_attn_strides ms, __global const uchar *MF, \
      ulong mfo, dl_attn_strides mfs

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

// The scale-multiplied, masked score of (query i, key j), or -INFINITY where masked out. mixed == 0: the
// tile's mask block flags say every element of it is 0, so the mask is not read.
inline T attn_score(T dot, T scale, int i, int j, int L, int S, int causal, __global const ST* M, ulong mo,
                    dl_attn_strides ms, int bb, int hh, int mixed) {
  if (i >= L || j >= S || (causal && j > i)) return -INFINITY;
  T v = dot * scale;
#if HAS_MASK
  if (mixed) v += LOAD(M, (long)mo + AT(ms, bb, hh, i, j));
#endif
  return v;
}

// Mask block flags (attention_mask_blocks.cl fills them; attention.cpp launches it before the kernels): one
// byte per ATTN_MB x ATTN_MB block of the mask (queries x keys), per batch and query head of the mask
// (MF's strides: b, h, query block, key block; a dimension the mask broadcasts has stride 0): ATTN_VISIBLE
// every element 0, ATTN_MASKED every element -inf, ATTN_MIXED anything else. A kernel's tile takes the
// flags of the blocks it overlaps: all masked, the tile is skipped (its probabilities would all be 0, so
// the online softmax and the gradients are unchanged, bit for bit); all visible, the mask is not read.
#define ATTN_MB 16
#define ATTN_VISIBLE 0
#define ATTN_MASKED 1
#define ATTN_MIXED 2
#if HAS_MASK
// The flag of queries [r0, r1) x keys [c0, c1) (non-empty, inside L x S).
inline int attn_mask_tile(__global const uchar* MF, ulong mfo, dl_attn_strides mfs, int bb, int hh, int r0,
                          int r1, int c0, int c1) {
  const __global uchar* f = MF + mfo + (long)bb * mfs.b + (long)hh * mfs.h;
  const int rb0 = r0 / ATTN_MB, rb1 = mfs.l ? (r1 - 1) / ATTN_MB : rb0;
  const int cb0 = c0 / ATTN_MB, cb1 = mfs.d ? (c1 - 1) / ATTN_MB : cb0;
  uint bits = 0;  // bit f for each flag f seen
  for (int rb = rb0; rb <= rb1; ++rb)
    for (int cb = cb0; cb <= cb1; ++cb) bits |= 1u << f[(long)rb * mfs.l + (long)cb * mfs.d];
  return bits == (1u << ATTN_VISIBLE) ? ATTN_VISIBLE : bits == (1u << ATTN_MASKED) ? ATTN_MASKED : ATTN_MIXED;
}

// The first tile start t, t + step, ... below end whose tile is not all masked (end or past it if none), and
// its flag. keys: tiles of keys [t, t + step) against queries [a0, a1); else tiles of queries against keys
// [a0, a1); lim: the tiled dimension's length (L or S).
inline int attn_mask_next(__global const uchar* MF, ulong mfo, dl_attn_strides mfs, int bb, int hh, int keys,
                          int t, int step, int end, int a0, int a1, int lim, int* flag) {
  for (; t < end; t += step) {
    const int t1 = min(lim, t + step);
    const int f = keys ? attn_mask_tile(MF, mfo, mfs, bb, hh, a0, a1, t, t1)
                       : attn_mask_tile(MF, mfo, mfs, bb, hh, t, t1, a0, a1);
    if (f != ATTN_MASKED) {
      *flag = f;
      return t;
    }
  }
  *flag = ATTN_MIXED;
  return t;
}
// Inside a kernel (MF, mfo, mfs, bb, L, S in scope): the next key tile against queries [r0, r1) of query
// head hh, or the next query tile against keys [c0, c1); `flag` (an int lvalue) receives its flag. The tile
// loops find their next tile at the top of the body (and step to it in the increment): the scan's loop in a
// for's increment, behind the body's barriers, fails PoCL's barrier-region check with optimizations on.
#define ATTN_NEXT_KEYS(t, step, end, r0, r1, hh, flag) \
  attn_mask_next(MF, mfo, mfs, bb, hh, 1, t, step, end, r0, r1, S, &(flag))
#define ATTN_NEXT_QUERIES(t, step, end, c0, c1, hh, flag) \
  attn_mask_next(MF, mfo, mfs, bb, hh, 0, t, step, end, c0, c1, L, &(flag))
#else
#define ATTN_NEXT_KEYS(t, step, end, r0, r1, hh, flag) ((flag) = ATTN_VISIBLE, (t))
#define ATTN_NEXT_QUERIES(t, step, end, c0, c1, hh, flag) ((flag) = ATTN_VISIBLE, (t))
#endif

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
