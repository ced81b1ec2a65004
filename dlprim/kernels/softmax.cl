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
  if (active) {
    ulong t = o;
    for (int d = rank - 1; d >= 0; --d) {
      ulong q = t / (ulong)rsz.v[d];
      long c = (long)(t - q * (ulong)rsz.v[d]);
      b0 += c * r0.v[d];
      b1 += c * r1.v[d];
      by += c * ry.v[d];
      t = q;
    }
  }
  __global const IN0_T* p0 = x0 + x0_o + b0;
  __global const IN1_T* p1 = x1 + x1_o + b1;
  __global OUT_T* py = y + y_o + by;
  T m = -INFINITY, s = 0;
  if (active) {
    for (ulong j = tr; j < D; j += TR) {
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
  for (ulong j = tr; j < D; j += TR) {
    T v = exp(LOAD0(p0 + (long)j * d0) - m) * inv;
    STORE(py + (long)j * dy, v);
  }
#elif MODE == 1
  T shift = m + ((m == INFINITY) ? (T)NAN : log(s));
  for (ulong j = tr; j < D; j += TR) {
    T v = LOAD0(p0 + (long)j * d0) - shift;
    STORE(py + (long)j * dy, v);
  }
#elif MODE == 2
  for (ulong j = tr; j < D; j += TR) {
    T v = LOAD1(p1 + (long)j * d1) * (LOAD0(p0 + (long)j * d0) - s);
    STORE(py + (long)j * dy, v);
  }
#else
  for (ulong j = tr; j < D; j += TR) {
    T v = LOAD0(p0 + (long)j * d0) - exp(LOAD1(p1 + (long)j * d1)) * s;
    STORE(py + (long)j * dy, v);
  }
#endif
}
