// The indexing family (index_select, advanced indexing, gather/scatter, index_put, take/put,
// masked ops, embedding backward, ...), all in one "keys" form:
//   rows r = 0..R-1, each with a key: an element offset into the indexed ("big") tensor;
//   inner elements e = 0..inner_n-1 of each row, at big offset key + off_big(e) and at
//   dense offset r * row_stride + off_dense(e) of the other ("dense") operand.
// A key is built from index values (wrapped when negative, checked against the dim size) and
// the row's position; an out-of-range index sets *flag and gives the row the key -1, which every
// data kernel skips, so a bad index never touches memory outside the tensor.
// Included with DL_T/DL_ACC/DL_LOAD/DL_STORE (typed_kernel): the index type for the key
// kernels, a same-size integer for pure data moves, the real type for reductions. Elements are
// only touched through DL_LOAD/DL_STORE, so the file compiles for half without cl_khr_fp16.

#define DL_UNRAVEL(e, n_rank, shape, off_a, a_s, off_b, b_s)                                 \
  {                                                                                          \
    ulong rem_ = (e);                                                                        \
    for (int d_ = (n_rank) - 1; d_ >= 0; --d_) {                                             \
      ulong sz_ = (ulong)(shape).v[d_];                                                      \
      ulong q_ = rem_ / sz_;                                                                 \
      long c_ = (long)(rem_ - q_ * sz_);                                                     \
      rem_ = q_;                                                                             \
      off_a += c_ * (a_s).v[d_];                                                             \
      off_b += c_ * (b_s).v[d_];                                                             \
    }                                                                                        \
  }

// keys[r] (+)= pos(r) + wrap(idx[r]) * stride over a row-major row shape, for indices in
// [lo, size) (lo is -size for ops that wrap negative indices, else 0); idx is a strided
// operand of type DL_T. With has_skip, rows whose index equals `skip` get key -1 (padding_idx).
__kernel void dl_index_keys(ulong n, int rank, dl_dims64 shape, __global long* keys, ulong keys_off,
                            int accumulate, __global const DL_T* idx, ulong idx_off, dl_dims64 idx_s,
                            dl_dims64 pos_s, long lo, long size, long stride, int has_skip, long skip,
                            __global int* flag, ulong flag_off) {
  ulong r = get_global_id(0);
  if (r >= n) return;
  keys += keys_off;
  flag += flag_off;
  long off_i = 0, pos = 0;
  DL_UNRAVEL(r, rank, shape, off_i, idx_s, pos, pos_s);
  long k = (long)DL_LOAD(idx, idx_off + off_i);
  long prev = accumulate ? keys[r] : 0;
  if (prev < 0 || (has_skip && k == skip)) {
    keys[r] = -1;
    return;
  }
  if (k < lo || k >= size) {
    *flag = 1;
    keys[r] = -1;
    return;
  }
  if (k < 0) k += size;
  keys[r] = prev + pos + k * stride;
}

// dense[r, e] = big[key(r) + e] (or 0 for a bad key).
__kernel void dl_index_gather(ulong n, ulong inner_n, int rank, dl_dims64 shape, __global DL_T* dense,
                              ulong dense_off, long dense_row_s, dl_dims64 dense_s, __global const DL_T* big,
                              ulong big_off, dl_dims64 big_s, __global const long* keys, ulong keys_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  keys += keys_off;
  ulong r = i / inner_n, e = i - r * inner_n;
  long off_d = 0, off_b = 0;
  DL_UNRAVEL(e, rank, shape, off_d, dense_s, off_b, big_s);
  long key = keys[r];
  DL_ACC v = key < 0 ? (DL_ACC)0 : DL_LOAD(big, big_off + key + off_b);
  DL_STORE(dense, dense_off + (long)r * dense_row_s + off_d, v);
}

// index_select in one launch, without a keys tensor: dense[r, e] = big[idx[r] * stride + e] for
// long indices in [0, size); an index outside sets *flag (as dl_index_keys) and its row reads 0.
__kernel void dl_index_gather_idx(ulong n, ulong inner_n, int rank, dl_dims64 shape, __global DL_T* dense,
                                  ulong dense_off, long dense_row_s, dl_dims64 dense_s, __global const DL_T* big,
                                  ulong big_off, dl_dims64 big_s, __global const long* idx, ulong idx_off,
                                  long idx_s, long size, long stride, __global int* flag, ulong flag_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  ulong r = i / inner_n, e = i - r * inner_n;
  long off_d = 0, off_b = 0;
  DL_UNRAVEL(e, rank, shape, off_d, dense_s, off_b, big_s);
  long k = idx[idx_off + (long)r * idx_s];
  int bad = k < 0 || k >= size;
  if (bad && e == 0) flag[flag_off] = 1;
  DL_ACC v = bad ? (DL_ACC)0 : DL_LOAD(big, big_off + k * stride + off_b);
  DL_STORE(dense, dense_off + (long)r * dense_row_s + off_d, v);
}

// big[key(r) + e] = dense[r, e]: assignment; with duplicate keys one of the writes wins.
__kernel void dl_index_scatter(ulong n, ulong inner_n, int rank, dl_dims64 shape, __global const DL_T* dense,
                               ulong dense_off, long dense_row_s, dl_dims64 dense_s, __global DL_T* big,
                               ulong big_off, dl_dims64 big_s, __global const long* keys, ulong keys_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  keys += keys_off;
  ulong r = i / inner_n, e = i - r * inner_n;
  long key = keys[r];
  if (key < 0) return;
  long off_d = 0, off_b = 0;
  DL_UNRAVEL(e, rank, shape, off_d, dense_s, off_b, big_s);
  DL_ACC v = DL_LOAD(dense, dense_off + (long)r * dense_row_s + off_d);
  DL_STORE(big, big_off + key + off_b, v);
}

// Reductions into big over rows sorted by key (ties in row order): the first row of each run
// of equal keys folds the whole run in row order, so results are deterministic and sums add in
// the same order as a sequential loop. mode: 0 sum (of alpha * value), 1 prod, 2 mean, 3 amax,
// 4 amin. include_self folds the current big value in first (and counts it for the mean).
// Each step is rounded to the storage type (16-bit floats, small ints), as the CPU computes
// these reductions in the tensor's dtype.
// (Through a ulong: a half variable needs cl_khr_fp16, a half pointer does not.)
inline DL_ACC dl_round(DL_ACC v) {
  ulong u = 0;
  __private DL_T* t = (__private DL_T*)&u;
  DL_STORE(t, 0, v);
  return DL_LOAD(t, 0);
}

#define DL_MODE_SUM 0
#define DL_MODE_PROD 1
#define DL_MODE_MEAN 2
#define DL_MODE_AMAX 3
#define DL_MODE_AMIN 4

__kernel void dl_index_reduce(ulong n, ulong inner_n, int rank, dl_dims64 shape, __global const DL_T* dense,
                              ulong dense_off, long dense_row_s, dl_dims64 dense_s, __global DL_T* big,
                              ulong big_off, dl_dims64 big_s, __global const long* keys,
                              ulong keys_off, __global const long* rows, ulong rows_off, int mode,
                              int include_self, DL_ACC alpha, ulong n_rows, ulong chunk,
                              __global const DL_T* parts, ulong parts_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  keys += keys_off;
  rows += rows_off;
  ulong j = i / inner_n, e = i - j * inner_n;
  long key = keys[j];
  if (key < 0 || (j > 0 && keys[j - 1] == key)) return;
  long off_d = 0, off_b = 0;
  DL_UNRAVEL(e, rank, shape, off_d, dense_s, off_b, big_s);
  ulong b = big_off + key + off_b;
  DL_ACC acc;
  long count = 0;
  if (include_self) {
    acc = DL_LOAD(big, b);
    count = 1;
  } else {
    acc = (DL_ACC)(mode == DL_MODE_PROD ? 1 : 0);
  }
  // The run (the rows from j on with this key; skipped rows hold -1, so keys need not ascend past it) is
  // folded 8 rows at a time: 8 keys checked, then the matching rows' values loaded together. A long run (an
  // embedding row many tokens share, e.g. BERT's 2 token types for 8192 tokens) is otherwise a chain of
  // dependent loads. The fold stays in row order. With `chunk` (sums only, see dl_index_reduce_chunks) the
  // fold stops at the next multiple of chunk, and the run's later chunks come as partial sums.
  const ulong lim = chunk ? min(n_rows, (j / chunk + 1) * chunk) : n_rows;
  for (ulong k0 = j;; k0 += 8) {
    int c = 0;
    bool run = true;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      run = run && k0 + u < lim && keys[min(k0 + u, n_rows - 1)] == key;
      c += run ? 1 : 0;
    }
    DL_ACC vb[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) vb[u] = u < c ? DL_LOAD(dense, dense_off + rows[k0 + u] * dense_row_s + off_d) : (DL_ACC)0;
    for (int u = 0; u < c; ++u) {
      const DL_ACC v = vb[u];
      if (mode == DL_MODE_SUM || mode == DL_MODE_MEAN) {
        acc = dl_round(acc + (mode == DL_MODE_SUM ? dl_round(alpha * v) : v));
      } else if (mode == DL_MODE_PROD) {
        acc = dl_round(acc * v);
      } else if (count == 0) {
        acc = v;
      } else if (mode == DL_MODE_AMAX) {
        acc = (v > acc || v != v) && acc == acc ? v : acc;  // NaN propagates
      } else {
        acc = (v < acc || v != v) && acc == acc ? v : acc;
      }
      ++count;
    }
    if (c < 8) break;
  }
  if (chunk) {
    parts += parts_off;
    for (ulong k = lim; k < n_rows && keys[k] == key; k += chunk) acc = dl_round(acc + DL_LOAD(parts, k / chunk * inner_n + e));
  }
  if (mode == DL_MODE_MEAN) {
    DL_ACC c = (DL_ACC)count;
    DL_ACC q = acc / c;
    if ((DL_ACC)0.5 == (DL_ACC)0) {  // integer types: floor division, as the CPU
      DL_ACC rest = acc - q * c;
      if (rest != 0 && (rest < 0) != (c < 0)) q = q - 1;
    }
    acc = q;
  }
  DL_STORE(big, b, acc);
}

// The partial sums of long runs for dl_index_reduce (sum mode): work-item (k, e) with row k * chunk inside a run
// (not its first row) folds rows k * chunk .. up to the next multiple of chunk or the run's end, in row order,
// into parts[k * inner_n + e]. The run's first row then adds these partials in row order after its own rows,
// so a run of R rows takes about chunk + R / chunk dependent steps instead of R, and the result is the same
// on every run (fixed association).
__kernel void dl_index_reduce_chunks(ulong n, ulong inner_n, int rank, dl_dims64 shape, __global const DL_T* dense,
                                     ulong dense_off, long dense_row_s, dl_dims64 dense_s, __global DL_T* big,
                                     ulong big_off, dl_dims64 big_s, __global const long* keys, ulong keys_off,
                                     __global const long* rows, ulong rows_off, DL_ACC alpha, ulong n_rows,
                                     ulong chunk, __global DL_T* parts, ulong parts_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  keys += keys_off;
  rows += rows_off;
  ulong kc = i / inner_n, e = i - kc * inner_n, j = kc * chunk;
  if (j == 0 || j >= n_rows) return;
  long key = keys[j];
  if (key < 0 || keys[j - 1] != key) return;
  long off_d = 0, off_b = 0;
  DL_UNRAVEL(e, rank, shape, off_d, dense_s, off_b, big_s);
  DL_ACC acc = (DL_ACC)0;
  const ulong lim = min(n_rows, j + chunk);
  for (ulong r = j; r < lim && keys[r] == key; ++r)
    acc = dl_round(acc + dl_round(alpha * DL_LOAD(dense, dense_off + rows[r] * dense_row_s + off_d)));
  DL_STORE(parts, parts_off + i, acc);
}

// The positions where a (row-major, inclusive) running count of nonzeros steps up: for each
// selected element i (its rank is cs[i] - 1), either its coordinates (coords, row-major
// (count, rank) long) or its key: sum of coordinate * key_s (keys).
__kernel void dl_index_select_positions(ulong n, int rank, dl_dims64 shape, __global const long* cs,
                                        ulong cs_off, int want_coords, __global long* coords,
                                        ulong coords_off, __global long* keys, ulong keys_off,
                                        dl_dims64 key_s) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  cs += cs_off;
  coords += coords_off;
  keys += keys_off;
  long c = cs[i];
  if (c == (i > 0 ? cs[i - 1] : 0)) return;
  long row = c - 1;
  ulong rem = i;
  long key = 0;
  for (int d = rank - 1; d >= 0; --d) {
    ulong sz = (ulong)shape.v[d];
    ulong q = rem / sz;
    long cd = (long)(rem - q * sz);
    rem = q;
    if (want_coords) coords[row * rank + d] = cd;
    key += cd * key_s.v[d];
  }
  if (!want_coords) keys[row] = key;
}

// repeat_interleave: out[cs[i] - repeats[i] .. cs[i]) = i, clipped to `total` outputs.
__kernel void dl_index_repeat(ulong n, __global const DL_T* repeats, ulong repeats_off,
                              __global const long* cs, ulong cs_off, __global long* out, ulong out_off,
                              long total) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  repeats += repeats_off;
  cs += cs_off;
  out += out_off;
  long end = min(cs[i], total);
  for (long j = cs[i] - (long)DL_LOAD(repeats, i); j < end; ++j) out[j] = (long)i;
}

// searchsorted over rows of sorted boundaries (row of value i: i / per_row, or 0 when the
// boundaries are 1-D); comparisons as the CPU ones (!(mid >= v)), so NaN sorts last.
__kernel void dl_index_searchsorted(ulong n, ulong per_row, int one_row, __global const DL_T* values,
                                    ulong values_off, __global const DL_T* bounds, ulong bounds_off, long m,
                                    int has_sorter, __global const long* sorter, ulong sorter_off, int right,
                                    __global long* out, ulong out_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  values += values_off;
  bounds += bounds_off;
  sorter += sorter_off;
  out += out_off;
  long row = one_row ? 0 : (long)(i / per_row);
  DL_ACC v = DL_LOAD(values, i);
  long lo = 0, hi = m, base = row * m;
  while (lo < hi) {
    long mid = lo + ((hi - lo) >> 1);
    long at = has_sorter ? base + sorter[base + mid] : base + mid;
    DL_ACC b = DL_LOAD(bounds, at);
    bool go_right = right ? !(b > v) : !(b >= v);
    if (go_right) lo = mid + 1; else hi = mid;
  }
  out[i] = lo;
}

// isin: out[i] = (elements[i] equals one of the m test elements) != invert. With `sorted` the
// test elements are in ascending order (NaN last, as torch.sort leaves them) and each element is
// a binary search; otherwise a linear scan, cheaper than sorting for the handful of stop/special
// tokens generate() asks about. NaN equals nothing, as on the CPU (== is false).
__kernel void dl_index_isin(ulong n, __global const DL_T* elements, ulong elements_off, __global const DL_T* test,
                            ulong test_off, long m, int sorted, int invert, __global uchar* out, ulong out_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  test += test_off;
  DL_ACC v = DL_LOAD(elements, elements_off + i);
  bool found = false;
  if (sorted) {
    long lo = 0, hi = m;
    while (lo < hi) {  // first test element not below v (a NaN is never below)
      long mid = lo + ((hi - lo) >> 1);
      if (DL_LOAD(test, mid) < v) lo = mid + 1; else hi = mid;
    }
    found = lo < m && DL_LOAD(test, lo) == v;
  } else {
    for (long j = 0; j < m && !found; ++j) found = DL_LOAD(test, j) == v;
  }
  out[out_off + i] = found != (invert != 0);
}

// histc: counts[bin] += 1 for elements start .. start + n of x (row-major over `sizes`, at
// `strides`) lying in [lo, hi] (NaN never does). The bin is the CPU's linear formula,
// (x - lo) * bins / (hi - lo) truncated, evaluated in the input's own arithmetic: round16 = 1 / 2
// rounds every step to half / bfloat16 as c10::Half / BFloat16 operators do. x == hi goes to the
// last bin; the clamp only keeps rounding from writing outside counts. uint atomics (core 1.1):
// the host launches at most 2^31 elements per call.
// f rounded to the nearest half-precision value (ties to even; subnormals, overflow to inf), as a
// float, by bit arithmetic alone (no private-pointer builtins, which Oclgrind cannot check). The
// same function is in pointwise.cl: not in common.cl, whose every change rebuilds every program.
inline float dl_round_to_half(float f) {
  if (isnan(f) || isinf(f)) return f;
  if (fabs(f) < 6.103515625e-05f) return rint(f * 16777216.0f) * 5.9604644775390625e-08f;  // multiples of 2^-24
  uint u = as_uint(f);
  float r = as_float((u + 0x0fffu + ((u >> 13) & 1u)) & ~0x1fffu);
  return fabs(r) > 65504.0f ? copysign(INFINITY, f) : r;
}

inline DL_ACC dl_histc_round(DL_ACC v, int round16) {
  if (round16 == 1) return dl_round_to_half((float)v);
  if (round16 == 2) return dl_bf16_to_float(dl_float_to_bf16((float)v));
  return v;
}

// The bin's division correctly rounded, as the CPU's: OpenCL lets float division be off by 2.5 ulp
// (NVIDIA's is), which moved values on a bin edge into the neighbouring bin (H200). A float quotient
// through double is correctly rounded (53 >= 2 * 24 + 2 bits); devices without fp64 keep a / b.
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
inline DL_ACC dl_histc_div(DL_ACC a, DL_ACC b) { return (DL_ACC)((double)a / (double)b); }
#else
inline DL_ACC dl_histc_div(DL_ACC a, DL_ACC b) { return a / b; }
#endif

__kernel void dl_index_histc(ulong start, ulong n, int rank, dl_dims64 sizes, dl_dims64 strides, __global const DL_T* x,
                             ulong x_off, DL_ACC lo, DL_ACC hi, long bins, int round16, __global uint* counts,
                             ulong counts_off) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long off, unused1, unused2;
  dl_row_offsets3(start + i, rank, sizes, strides, strides, strides, &off, &unused1, &unused2);
  DL_ACC v = DL_LOAD(x, (long)x_off + off);
  if (!(v >= lo && v <= hi)) return;
  DL_ACC scaled = dl_histc_round(dl_histc_round(v - lo, round16) * dl_histc_round((DL_ACC)bins, round16), round16);
  long pos = (long)dl_histc_round(dl_histc_div(scaled, dl_histc_round(hi - lo, round16)), round16);
  pos = pos >= bins ? bins - 1 : (pos < 0 ? 0 : pos);
  atomic_inc(counts + counts_off + pos);
}
