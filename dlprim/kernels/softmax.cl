// softmax / log_softmax and their backward along one dim. The generator (softmax.cpp)
// prepends T (compute type), IN0_T / IN1_T / OUT_T (storage), LOAD0(p) / LOAD1(p) (value at p
// as T), STORE(p, v) and MODE: 0 softmax, 1 log_softmax (x0 = input), 2 softmax backward,
// 3 log_softmax backward (x0 = grad_output, x1 = output).
//
// A work-group is TO rows x TR threads (row or column order as in reduce.cl). Pass 1 reduces
// the row (forward: running max m and s = sum exp(x - m); backward: s = sum g*y or sum g),
// the TR partial results merge in local memory, pass 2 writes the row.

// Folds (bm, bs) into (m, s): the max-shifted sum of exponentials of both.
inline void lse_merge(T* m, T* s, T bm, T bs) {
  if (bs == 0) return;
  if (*s == 0) { *m = bm; *s = bs; return; }
  if (*m == bm) *s += bs;
  else if (*m > bm) *s += bs * exp(bm - *m);
  else { *s = *s * exp(*m - bm) + bs; *m = bm; }
}

inline void lse_add(T* m, T* s, T x) {
  if (x == -INFINITY) return;
  if (x > *m) { *s = *s * exp(*m - x) + 1; *m = x; }
  else if (x == *m) *s += 1;
  else *s += exp(x - *m);
}

__kernel void softmax_rows(ulong n_rows, ulong D, uint TO, uint TR, int col_order, int rank, dl_dims64 rsz,
                           dl_dims64 r0, dl_dims64 r1, dl_dims64 ry, long d0, long d1, long dy,
                           __global const IN0_T* x0, ulong x0_o, __global const IN1_T* x1, ulong x1_o,
                           __global OUT_T* y, ulong y_o, __local T* scratch) {
  uint lid = get_local_id(0);
  uint to = col_order ? lid % TO : lid / TR;
  uint tr = col_order ? lid / TO : lid % TR;
  ulong o = get_group_id(0) * TO + to;
  bool active = o < n_rows;
  long b0 = 0, b1 = 0, by = 0;
  if (active) dl_row_offsets3(o, rank, rsz, r0, r1, ry, &b0, &b1, &by);
  __global const IN0_T* p0 = x0 + x0_o + b0;
  __global const IN1_T* p1 = x1 + x1_o + b1;
  __global OUT_T* py = y + y_o + by;
  T m = -INFINITY, s = 0;
  if (active) {
    ulong j = tr;
#if MODE < 2
    // Four elements per step: one max, at most one rescale, four exps and no per-element branch (a
    // language model's [tokens, vocabulary] rows are too long for the register kernels below). NaN and
    // +inf propagate as in lse_add: fmax skips NaN but exp(NaN - m) makes s NaN; +inf makes m +inf, and
    // the outputs NaN.
    for (; j + 3 * (ulong)TR < D; j += 4 * (ulong)TR) {
      T a0 = LOAD0(p0 + (long)j * d0), a1 = LOAD0(p0 + (long)(j + TR) * d0);
      T a2 = LOAD0(p0 + (long)(j + 2 * TR) * d0), a3 = LOAD0(p0 + (long)(j + 3 * TR) * d0);
      T bm = fmax(fmax(a0, a1), fmax(a2, a3));
      if (bm > m) {
        s *= exp(m - bm);
        m = bm;
      }
      if (m != -INFINITY) {
        s += (exp(a0 - m) + exp(a1 - m)) + (exp(a2 - m) + exp(a3 - m));
      } else {  // nothing finite yet: -inf and NaN entries follow lse_add's rules one by one
        lse_add(&m, &s, a0);
        lse_add(&m, &s, a1);
        lse_add(&m, &s, a2);
        lse_add(&m, &s, a3);
      }
    }
#endif
#if MODE >= 2
    // Four independent loads per step (one at a time leaves a long row's loop bound by memory latency).
    T s1 = 0, s2 = 0, s3 = 0;
    for (; j + 3 * (ulong)TR < D; j += 4 * (ulong)TR) {
#if MODE == 2
      s += LOAD0(p0 + (long)j * d0) * LOAD1(p1 + (long)j * d1);
      s1 += LOAD0(p0 + (long)(j + TR) * d0) * LOAD1(p1 + (long)(j + TR) * d1);
      s2 += LOAD0(p0 + (long)(j + 2 * TR) * d0) * LOAD1(p1 + (long)(j + 2 * TR) * d1);
      s3 += LOAD0(p0 + (long)(j + 3 * TR) * d0) * LOAD1(p1 + (long)(j + 3 * TR) * d1);
#else
      s += LOAD0(p0 + (long)j * d0);
      s1 += LOAD0(p0 + (long)(j + TR) * d0);
      s2 += LOAD0(p0 + (long)(j + 2 * TR) * d0);
      s3 += LOAD0(p0 + (long)(j + 3 * TR) * d0);
#endif
    }
    s = (s + s1) + (s2 + s3);
#endif
    for (; j < D; j += TR) {
#if MODE < 2
      lse_add(&m, &s, LOAD0(p0 + (long)j * d0));
#elif MODE == 2
      s += LOAD0(p0 + (long)j * d0) * LOAD1(p1 + (long)j * d1);
#else
      s += LOAD0(p0 + (long)j * d0);
#endif
    }
  }
  if (TR > 1) {
    // Tree over the TR partials of each row; scratch holds s in [0, L) and m in [L, 2L).
    uint L = get_local_size(0), step = col_order ? TO : 1;
    scratch[lid] = s;
    scratch[L + lid] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint h = TR >> 1; h > 0; h >>= 1) {
      if (tr < h) {
#if MODE < 2
        lse_merge(&m, &s, scratch[L + lid + h * step], scratch[lid + h * step]);
        scratch[L + lid] = m;
#else
        s += scratch[lid + h * step];
#endif
        scratch[lid] = s;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint first = lid - tr * step;  // the row's tr == 0 thread
    s = scratch[first];
    m = scratch[L + first];
  }
  if (!active) return;
#if MODE == 0
  // CPU semantics: a +inf in the row makes every entry NaN (exp(inf - inf)).
  T inv = (m == INFINITY) ? (T)NAN : (T)1 / s;
#define SM_ROW_OUT(a, b) (exp((a) - m) * inv)
#elif MODE == 1
  // (x - m) - log(s), as the CPU computes it, never x - (m + log(s)): x - m is exact near the row
  // max, while m + log(s) rounds to an ulp of |m| and so zeroed the dominant entry's log-probability
  // (-1.7e-6 came out 0.0 for a row max of 34), i.e. the cross-entropy gradient p - 1 of a confident
  // prediction. A +inf in the row makes every entry NaN (CPU semantics).
  T ls = (m == INFINITY) ? (T)NAN : log(s);
#define SM_ROW_OUT(a, b) (((a) - m) - ls)
#elif MODE == 2
#define SM_ROW_OUT(a, b) ((b) * ((a) - s))
#else
#define SM_ROW_OUT(a, b) ((a) - exp(b) * s)
#endif
#if MODE >= 2
#define SM_ROW_B(jj) LOAD1(p1 + (long)(jj) * d1)
#else
#define SM_ROW_B(jj) (T)0
#endif
  // Four elements per step, loads before stores (in-place safe: an element's store follows its own load).
  ulong j = tr;
  for (; j + 3 * (ulong)TR < D; j += 4 * (ulong)TR) {
    const T a0 = LOAD0(p0 + (long)j * d0), a1 = LOAD0(p0 + (long)(j + TR) * d0);
    const T a2 = LOAD0(p0 + (long)(j + 2 * TR) * d0), a3 = LOAD0(p0 + (long)(j + 3 * TR) * d0);
    const T b0 = SM_ROW_B(j), b1 = SM_ROW_B(j + TR), b2 = SM_ROW_B(j + 2 * TR), b3 = SM_ROW_B(j + 3 * TR);
    STORE(py + (long)j * dy, SM_ROW_OUT(a0, b0));
    STORE(py + (long)(j + TR) * dy, SM_ROW_OUT(a1, b1));
    STORE(py + (long)(j + 2 * TR) * dy, SM_ROW_OUT(a2, b2));
    STORE(py + (long)(j + 3 * TR) * dy, SM_ROW_OUT(a3, b3));
  }
  for (; j < D; j += TR) STORE(py + (long)j * dy, SM_ROW_OUT(LOAD0(p0 + (long)j * d0), SM_ROW_B(j)));
#undef SM_ROW_OUT
#undef SM_ROW_B
}

#if DL_GPU_KERNELS
// Register kernels for GPUs, for rows contiguous in every tensor that fit in registers: a
// work-group is TO rows x TR threads (row order); thread tr holds the row's vector slots
// tr, tr + TR, ... (at most SM_HOLD elements per tensor), so the input is read from global
// memory once. Forward: row max, then sum of exp(x - max) (two local-memory reductions over
// the TR threads of a row); backward: one sum. vw 4 (float4 loads/stores) when every
// tensor is float and each row starts 16-byte aligned, else 1.
#define SM_HOLD 16

// Sum (is_max 0) or max of v over the TR threads of a row; every thread gets the result.
inline T row_reduce(T v, const int is_max, __local T* scratch, uint lid, uint tr, uint TR) {
  if (TR == 1) return v;
  scratch[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint h = TR >> 1; h > 0; h >>= 1) {
    if (tr < h) {
      T b = scratch[lid + h];
      v = is_max ? fmax(v, b) : v + b;
      scratch[lid] = v;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return scratch[lid - tr];
}

#define SM_LOAD(dst, src_p, LOADF)                                                              \
  for (uint k = 0; k < SM_HOLD / vw; ++k) {                                                    \
    ulong v = tr + (ulong)k * TR;                                                              \
    if (active && v < nv) {                                                                    \
      if (vw == 4) {                                                                           \
        float4 q = ((__global const float4*)(src_p))[v];                                       \
        dst[4 * k] = q.s0; dst[4 * k + 1] = q.s1; dst[4 * k + 2] = q.s2; dst[4 * k + 3] = q.s3; \
      } else {                                                                                 \
        dst[k] = LOADF((src_p) + v);                                                           \
      }                                                                                        \
    }                                                                                          \
  }

inline void softmax_reg_body(const int vw, ulong n_rows, ulong D, uint TO, uint TR, int rank, dl_dims64 rsz,
                             dl_dims64 r0, dl_dims64 r1, dl_dims64 ry, __global const IN0_T* x0, ulong x0_o,
                             __global const IN1_T* x1, ulong x1_o, __global OUT_T* y, ulong y_o,
                             __local T* scratch) {
  uint lid = get_local_id(0);
  uint to = lid / TR, tr = lid % TR;
  ulong o = get_group_id(0) * TO + to;
  bool active = o < n_rows;
  long b0 = 0, b1 = 0, by = 0;
  if (active) dl_row_offsets3(o, rank, rsz, r0, r1, ry, &b0, &b1, &by);
  __global const IN0_T* p0 = x0 + x0_o + b0;
  __global OUT_T* py = y + y_o + by;
  ulong nv = D / vw;
  T a[SM_HOLD];
  SM_LOAD(a, p0, LOAD0)
#if MODE >= 2
  __global const IN1_T* p1 = x1 + x1_o + b1;
  T b[SM_HOLD];
  SM_LOAD(b, p1, LOAD1)
#endif
  // valid(i): element i of this thread exists
#define SM_VALID(i) (active && tr + (ulong)((i) / vw) * TR < nv)
  uint L = get_local_size(0);
#if MODE < 2
  T m = -INFINITY;
  for (uint i = 0; i < SM_HOLD; ++i)
    if (SM_VALID(i)) m = fmax(m, a[i]);
  m = row_reduce(m, 1, scratch, lid, tr, TR);
  T s = 0;
  for (uint i = 0; i < SM_HOLD; ++i)
    if (SM_VALID(i)) {
#if MODE == 0
      a[i] = exp(a[i] - m);
      s += a[i];
#else
      s += exp(a[i] - m);
#endif
    }
  s = row_reduce(s, 0, scratch + L, lid, tr, TR);
#if MODE == 0
  T f = (T)1 / s;  // a NaN or +inf in the row makes s NaN: every entry NaN, as on the CPU
#define SM_OUT(i) (a[i] * f)
#else
  T f = log(s);  // (x - m) - log(s): see softmax_rows
#define SM_OUT(i) ((a[i] - m) - f)
#endif
#elif MODE == 2
  T s = 0;
  for (uint i = 0; i < SM_HOLD; ++i)
    if (SM_VALID(i)) s += a[i] * b[i];
  s = row_reduce(s, 0, scratch, lid, tr, TR);
#define SM_OUT(i) (b[i] * (a[i] - s))
#else
  T s = 0;
  for (uint i = 0; i < SM_HOLD; ++i)
    if (SM_VALID(i)) s += a[i];
  s = row_reduce(s, 0, scratch, lid, tr, TR);
#define SM_OUT(i) (a[i] - exp(b[i]) * s)
#endif
  for (uint k = 0; k < SM_HOLD / vw; ++k) {
    ulong v = tr + (ulong)k * TR;
    if (!active || v >= nv) continue;
    if (vw == 4) {
      ((__global float4*)py)[v] = (float4)(SM_OUT(4 * k), SM_OUT(4 * k + 1), SM_OUT(4 * k + 2), SM_OUT(4 * k + 3));
    } else {
      STORE(py + v, SM_OUT(k));
    }
  }
#undef SM_OUT
#undef SM_VALID
}

#define SOFTMAX_REG_ARGS                                                                                 \
  ulong n_rows, ulong D, uint TO, uint TR, int rank, dl_dims64 rsz, dl_dims64 r0, dl_dims64 r1,           \
      dl_dims64 ry, __global const IN0_T *x0, ulong x0_o, __global const IN1_T *x1, ulong x1_o,          \
      __global OUT_T *y, ulong y_o, __local T *scratch
#define SOFTMAX_REG_PASS n_rows, D, TO, TR, rank, rsz, r0, r1, ry, x0, x0_o, x1, x1_o, y, y_o, scratch

__kernel void softmax_reg1(SOFTMAX_REG_ARGS) { softmax_reg_body(1, SOFTMAX_REG_PASS); }
#if SM_VEC4
__kernel void softmax_reg4(SOFTMAX_REG_ARGS) { softmax_reg_body(4, SOFTMAX_REG_PASS); }
#endif
#endif
