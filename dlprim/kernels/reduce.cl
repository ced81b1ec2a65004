// Reduction kernels. The generator (reduce.cpp) prepends the op: T (accumulate type),
// W (parameter type), acc_t (state), IN_T / OUT0_T / OUT1_T (storage types), LOAD_P(p)
// (value at p as T), VEC / IN_VEC_T / COMBINE_VEC (vector loads), op_init, op_combine,
// op_merge and store_out (finalize + store).
//
// A work-group is a tile of TO outputs x TR threads splitting the reduced range of each.
// Row order (tr fastest) makes adjacent threads read adjacent reduced elements: used when
// the reduced dim is the contiguous one. Column order (to fastest) makes them read adjacent
// outputs: used when a kept dim is the contiguous one. A long reduced range is split into
// `chunks`; their states go to `part` and red_merge combines and finalises them.

// `part` is passed as bytes + byte offset: the caching allocator hands out sub-ranges whose
// offset need not be a multiple of sizeof(acc_t) (only of its alignment).
#define PART ((__global acc_t*)(part_p + part_off))
#define COLS_OB 128

// Offsets of output `o` (flattened over the kept dims, innermost last).
inline void kept_offsets(ulong o, int krank, dl_dims64 ksz, dl_dims64 kin, dl_dims64 kout0, dl_dims64 kout1,
                         long* ib, long* ob0, long* ob1) {
  long i = 0, a = 0, b = 0;
  for (int d = krank - 1; d >= 0; --d) {
    ulong q = o / (ulong)ksz.v[d];
    long c = (long)(o - q * (ulong)ksz.v[d]);
    i += c * kin.v[d];
    a += c * kout0.v[d];
    b += c * kout1.v[d];
    o = q;
  }
  *ib = i;
  *ob0 = a;
  *ob1 = b;
}

// Input offset of the outer reduced index `jo` (the reduced dims except the innermost).
inline long outer_offset(ulong jo, int rrank, dl_dims64 rsz, dl_dims64 rin) {
  long off = 0;
  for (int d = rrank - 1; d >= 0; --d) {
    ulong q = jo / (ulong)rsz.v[d];
    off += (long)(jo - q * (ulong)rsz.v[d]) * rin.v[d];
    jo = q;
  }
  return off;
}

// Merges the TR states of each output of the tile in local memory (tree), leaving the
// result in the tr == 0 thread's `acc`.
inline void tile_merge(acc_t* acc, __local acc_t* scratch, uint lid, uint tr, uint TR, uint partner_step) {
  if (TR == 1) return;
  scratch[lid] = *acc;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = TR >> 1; s > 0; s >>= 1) {
    if (tr < s) {
      acc_t b = scratch[lid + s * partner_step];
      op_merge(acc, &b);
      scratch[lid] = *acc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

#define BLOCK_N 256

// Called when a block of BLOCK_N steps is complete: moves it into the next level.
inline void block_tick(acc_t* acc, acc_t* mid, acc_t* blk, uint* c2) {
  op_merge(mid, blk);
  op_init(blk);
  if (++*c2 < BLOCK_N) return;
  *c2 = 0;
  op_merge(acc, mid);
  op_init(mid);
}

inline void tile_body(const int vectorised, ulong n_out, ulong R, ulong Ri, long si, ulong chunks,
                      ulong chunk_len, uint TO, uint TR, int col_order, int krank, dl_dims64 ksz,
                      dl_dims64 kin, dl_dims64 kout0, dl_dims64 kout1, int rrank, dl_dims64 rsz,
                      dl_dims64 rin, __global const IN_T* in, ulong in_o, __global OUT0_T* out0,
                      ulong out0_o, __global OUT1_T* out1, ulong out1_o, __global acc_t* part, W w0, W w1,
                      __local acc_t* scratch) {
  uint lid = get_local_id(0);
  uint to = col_order ? lid % TO : lid / TR;
  uint tr = col_order ? lid / TO : lid % TR;
  ulong g = get_group_id(0);
  ulong tile = g / chunks, c = g - tile * chunks;
  ulong o = tile * TO + to;
  acc_t acc;
  op_init(&acc);
  long ib = 0, ob0 = 0, ob1 = 0;
  if (o < n_out) {
    kept_offsets(o, krank, ksz, kin, kout0, kout1, &ib, &ob0, &ob1);
    ulong start = c * chunk_len, end = min(R, start + chunk_len);
    __global const IN_T* base = in + in_o + ib;
    // Blocked accumulation: `blk` takes BLOCK_N steps, then merges into `mid`, which merges
    // into `acc` every BLOCK_N blocks. Serial spans of a work-item can be millions long on
    // CPU devices; this keeps the rounding error of sums near that of a 3-level tree.
    acc_t mid;
    op_init(&mid);
    uint c2 = 0;
    ulong block = (ulong)BLOCK_N * TR;  // index span of one block of a work-item's steps
    if (vectorised) {
      // One contiguous reduced dim; base is VEC-aligned and chunk starts are multiples of
      // VEC. Each lane has its own state (independent dependency chains).
      __global const IN_VEC_T* pv = (__global const IN_VEC_T*)base;
      acc_t lanes[VEC];
      for (int k = 0; k < VEC; ++k) op_init(&lanes[k]);
      ulong ve = end / VEC;
      for (ulong v = start / VEC + tr; v < ve;) {
        ulong stop = min(ve, v + block);
#pragma unroll 4
        for (; v < stop; v += TR) {
          IN_VEC_T q = pv[v];
          COMBINE_VEC(lanes, q, v * VEC);
        }
        for (int k = 1; k < VEC; ++k) {
          op_merge(&lanes[0], &lanes[k]);
          op_init(&lanes[k]);
        }
        block_tick(&acc, &mid, &lanes[0], &c2);
      }
      for (ulong j = ve * VEC + tr; j < end; j += TR) op_combine(&lanes[0], LOAD_P(base + j), j, w0, w1);
      op_merge(&mid, &lanes[0]);
    } else if (rrank == 0) {
      // One reduced dim: walk a pointer.
      __global const IN_T* p = base + (long)(start + tr) * si;
      long step = (long)TR * si;
      acc_t blk;
      op_init(&blk);
      for (ulong j = start + tr; j < end;) {
        ulong stop = min(end, j + block);
#pragma unroll 4
        for (; j < stop; j += TR, p += step) op_combine(&blk, LOAD_P(p), j, w0, w1);
        block_tick(&acc, &mid, &blk, &c2);
      }
    } else {
      // Several reduced dims: step along the innermost, recompute the outer offset only
      // when a row is crossed.
      acc_t blk;
      op_init(&blk);
      uint c1 = 0;
      ulong j = start + tr;
      ulong jo = j / Ri, ji = j - jo * Ri;
      long ooff = outer_offset(jo, rrank, rsz, rin);
      for (; j < end; j += TR) {
        op_combine(&blk, LOAD_P(base + ooff + (long)ji * si), j, w0, w1);
        if (++c1 == BLOCK_N) {
          c1 = 0;
          block_tick(&acc, &mid, &blk, &c2);
        }
        ji += TR;
        if (ji >= Ri) {
          ulong q = ji / Ri;
          jo += q;
          ji -= q * Ri;
          ooff = outer_offset(jo, rrank, rsz, rin);
        }
      }
      op_merge(&mid, &blk);
    }
    op_merge(&acc, &mid);
  }
  tile_merge(&acc, scratch, lid, tr, TR, col_order ? TO : 1);
  if (tr == 0 && o < n_out) {
    if (chunks == 1)
      store_out(&acc, R, w0, w1, out0, (long)out0_o + ob0, out1, (long)out1_o + ob1);
    else
      part[o * chunks + c] = acc;
  }
}

#define RED_TILE_ARGS                                                                                     \
  ulong n_out, ulong R, ulong Ri, long si, ulong chunks, ulong chunk_len, uint TO, uint TR, int col_order, \
      int krank, dl_dims64 ksz, dl_dims64 kin, dl_dims64 kout0, dl_dims64 kout1, int rrank, dl_dims64 rsz,  \
      dl_dims64 rin, __global const IN_T *in, ulong in_o, __global OUT0_T *out0, ulong out0_o,             \
      __global OUT1_T *out1, ulong out1_o, __global uchar *part_p, ulong part_off, W w0, W w1,             \
      __local acc_t *scratch
#define RED_TILE_PASS                                                                                   \
  n_out, R, Ri, si, chunks, chunk_len, TO, TR, col_order, krank, ksz, kin, kout0, kout1, rrank, rsz, rin, \
      in, in_o, out0, out0_o, out1, out1_o, part, w0, w1, scratch

__kernel void red_tile(RED_TILE_ARGS) { __global acc_t* part = PART; tile_body(0, RED_TILE_PASS); }
__kernel void red_tile_vec(RED_TILE_ARGS) { __global acc_t* part = PART; tile_body(1, RED_TILE_PASS); }

// Second pass: part holds [n_out][chunks] states; TR threads merge the chunks of one output.
__kernel void red_merge(ulong n_out, ulong chunks, ulong R, uint TR, int krank, dl_dims64 ksz,
                        dl_dims64 kout0, dl_dims64 kout1, __global const uchar* part_p, ulong part_off,
                        __global OUT0_T* out0, ulong out0_o, __global OUT1_T* out1, ulong out1_o, W w0, W w1,
                        __local acc_t* scratch) {
  __global const acc_t* part = (__global const acc_t*)(part_p + part_off);
  uint lid = get_local_id(0);
  uint to = lid / TR, tr = lid % TR;
  ulong o = get_group_id(0) * (get_local_size(0) / TR) + to;
  acc_t acc;
  op_init(&acc);
  if (o < n_out) {
    for (ulong c = tr; c < chunks; c += TR) {
      acc_t b = part[o * chunks + c];
      op_merge(&acc, &b);
    }
  }
  tile_merge(&acc, scratch, lid, tr, TR, 1);
  if (tr == 0 && o < n_out) {
    long ib, ob0, ob1;
    kept_offsets(o, krank, ksz, kout0, kout0, kout1, &ib, &ob0, &ob1);
    store_out(&acc, R, w0, w1, out0, (long)out0_o + ob0, out1, (long)out1_o + ob1);
  }
}

#if DL_CPU_KERNELS
// For CPU devices, whose work-items run one after another: a work-item owns COLS_OB adjacent
// outputs and walks its chunk of the reduced range row by row, so each step reads adjacent
// memory (the column plan of the tile kernel would make each work-item stride through memory).
__kernel void red_cols(ulong n_out, ulong R, ulong Ri, long si, ulong chunks, ulong chunk_len, int krank,
                       dl_dims64 ksz, dl_dims64 kin, dl_dims64 kout0, dl_dims64 kout1, int rrank, dl_dims64 rsz,
                       dl_dims64 rin, __global const IN_T* in, ulong in_o, __global OUT0_T* out0, ulong out0_o,
                       __global OUT1_T* out1, ulong out1_o, __global uchar* part_p, ulong part_off, W w0, W w1) {
  __global acc_t* part = PART;
  ulong g = get_global_id(0);
  ulong tile = g / chunks, c = g - tile * chunks;
  ulong o0 = tile * COLS_OB;
  if (o0 >= n_out) return;
  int nb = (int)min((ulong)COLS_OB, n_out - o0);
  long ib[COLS_OB];
  acc_t acc[COLS_OB], mid[COLS_OB], blk[COLS_OB];  // blocked accumulation as in tile_body
  for (int k = 0; k < nb; ++k) {
    long ob0, ob1;
    kept_offsets(o0 + k, krank, ksz, kin, kout0, kout1, &ib[k], &ob0, &ob1);
    op_init(&acc[k]);
    op_init(&mid[k]);
    op_init(&blk[k]);
  }
  uint c1 = 0, c2 = 0;
  // Outputs in one run of the innermost kept dim with unit stride: plain indexing. Every offset is
  // checked: with a broadcast (stride-0) kept dim the end points alone can look like a run (offsets
  // 0 0 3 3 from kept strides 3 and 0).
  int unit = nb > 1;
  for (int k = 1; k < nb && unit; ++k) unit = ib[k] == ib[0] + k;
  ulong start = c * chunk_len, end = min(R, start + chunk_len);
  ulong jo = Ri ? start / Ri : 0, ji = start - jo * Ri;
  long ooff = outer_offset(jo, rrank, rsz, rin);
  __global const IN_T* base = in + in_o;
  for (ulong j = start; j < end; ++j) {
    __global const IN_T* row = base + ooff + (long)ji * si;
    if (unit) {
      __global const IN_T* p = row + ib[0];
      for (int k = 0; k < nb; ++k) op_combine(&blk[k], LOAD_P(p + k), j, w0, w1);
    } else {
      for (int k = 0; k < nb; ++k) op_combine(&blk[k], LOAD_P(row + ib[k]), j, w0, w1);
    }
    if (++c1 == BLOCK_N) {
      c1 = 0;
      int up = ++c2 == BLOCK_N;
      if (up) c2 = 0;
      for (int k = 0; k < nb; ++k) {
        op_merge(&mid[k], &blk[k]);
        op_init(&blk[k]);
        if (up) {
          op_merge(&acc[k], &mid[k]);
          op_init(&mid[k]);
        }
      }
    }
    if (++ji == Ri) {
      ji = 0;
      ooff = outer_offset(++jo, rrank, rsz, rin);
    }
  }
  for (int k = 0; k < nb; ++k) {
    op_merge(&mid[k], &blk[k]);
    op_merge(&acc[k], &mid[k]);
  }
  for (int k = 0; k < nb; ++k) {
    ulong o = o0 + k;
    if (chunks == 1) {
      long i, ob0, ob1;
      kept_offsets(o, krank, ksz, kin, kout0, kout1, &i, &ob0, &ob1);
      store_out(&acc[k], R, w0, w1, out0, (long)out0_o + ob0, out1, (long)out1_o + ob1);
    } else {
      part[o * chunks + c] = acc[k];
    }
  }
}
#endif

#if DL_GPU_KERNELS
// Column reduction for GPUs (the innermost kept dim has unit input stride, one reduced dim).
// A work-group is TX threads along adjacent columns x TY threads along the reduced dim; a
// thread owns `vectorised ? VEC : 1` adjacent columns and reads them with one vector load
// per row, so a warp row-load is 32 x 16 contiguous bytes. Four rows are loaded before they
// are combined (independent loads in flight hide memory latency); the TY partial states of a
// column merge in local memory. Groups: (outer kept index, column block, chunk of rows).
inline void colv_body(const int vectorised, ulong n_out, ulong C, ulong R, long si, ulong chunks,
                      ulong chunk_len, uint TX, uint TY, int krank, dl_dims64 ksz, dl_dims64 kin,
                      dl_dims64 kout0, dl_dims64 kout1, __global const IN_T* in, ulong in_o,
                      __global OUT0_T* out0, ulong out0_o, __global OUT1_T* out1, ulong out1_o,
                      __global acc_t* part, W w0, W w1, __local acc_t* scratch) {
  const uint nl = vectorised ? VEC : 1;  // columns per thread
  uint lid = get_local_id(0);
  uint tx = lid % TX, ty = lid / TX;
  ulong g = get_group_id(0);
  ulong tile = g / chunks, c = g - tile * chunks;
  ulong span = (ulong)TX * nl;
  ulong cblocks = (C + span - 1) / span;
  ulong ko = tile / cblocks, cb = tile - ko * cblocks;
  ulong col = cb * span + (ulong)tx * nl;
  ulong o = ko * C + col;
  bool active = col < C;
  acc_t acc[VEC], blk[VEC];
  for (uint k = 0; k < VEC; ++k) {
    op_init(&acc[k]);
    op_init(&blk[k]);
  }
  long ib = 0, ob0 = 0, ob1 = 0;
  if (active) {
    kept_offsets(o, krank, ksz, kin, kout0, kout1, &ib, &ob0, &ob1);
    ulong start = c * chunk_len, end = min(R, start + chunk_len);
    __global const IN_T* base = in + in_o + ib;
    long step = (long)TY * si;
    for (ulong j = start + ty; j < end;) {
      // Blocks of BLOCK_N rows per thread keep long sums accurate (as in tile_body).
      ulong stop = min(end, j + (ulong)BLOCK_N * TY);
      __global const IN_T* p = base + (long)j * si;
      if (vectorised) {
        for (; j + 3 * (ulong)TY < stop; j += 4 * (ulong)TY, p += 4 * step) {
          IN_VEC_T q0 = *(__global const IN_VEC_T*)p;
          IN_VEC_T q1 = *(__global const IN_VEC_T*)(p + step);
          IN_VEC_T q2 = *(__global const IN_VEC_T*)(p + 2 * step);
          IN_VEC_T q3 = *(__global const IN_VEC_T*)(p + 3 * step);
          COMBINE_COLS(blk, q0, j);
          COMBINE_COLS(blk, q1, j + TY);
          COMBINE_COLS(blk, q2, j + 2 * TY);
          COMBINE_COLS(blk, q3, j + 3 * TY);
        }
        for (; j < stop; j += TY, p += step) {
          IN_VEC_T q0 = *(__global const IN_VEC_T*)p;
          COMBINE_COLS(blk, q0, j);
        }
      } else {
        for (; j + 3 * (ulong)TY < stop; j += 4 * (ulong)TY, p += 4 * step) {
          T x0 = LOAD_P(p), x1 = LOAD_P(p + step), x2 = LOAD_P(p + 2 * step), x3 = LOAD_P(p + 3 * step);
          op_combine(&blk[0], x0, j, w0, w1);
          op_combine(&blk[0], x1, j + TY, w0, w1);
          op_combine(&blk[0], x2, j + 2 * TY, w0, w1);
          op_combine(&blk[0], x3, j + 3 * TY, w0, w1);
        }
        for (; j < stop; j += TY, p += step) op_combine(&blk[0], LOAD_P(p), j, w0, w1);
      }
      for (uint k = 0; k < nl; ++k) {
        op_merge(&acc[k], &blk[k]);
        op_init(&blk[k]);
      }
    }
  }
  for (uint k = 0; k < nl; ++k) tile_merge(&acc[k], scratch, lid, ty, TY, TX);
  if (ty != 0 || !active) return;
  long os0 = krank > 0 ? kout0.v[krank - 1] : 0, os1 = krank > 0 ? kout1.v[krank - 1] : 0;
  for (uint k = 0; k < nl; ++k) {
    if (chunks == 1)
      store_out(&acc[k], R, w0, w1, out0, (long)out0_o + ob0 + (long)k * os0, out1, (long)out1_o + ob1 + (long)k * os1);
    else
      part[(o + k) * chunks + c] = acc[k];
  }
}

#define RED_COLV_ARGS                                                                                   \
  ulong n_out, ulong C, ulong R, long si, ulong chunks, ulong chunk_len, uint TX, uint TY, int krank,    \
      dl_dims64 ksz, dl_dims64 kin, dl_dims64 kout0, dl_dims64 kout1, __global const IN_T *in,            \
      ulong in_o, __global OUT0_T *out0, ulong out0_o, __global OUT1_T *out1, ulong out1_o,              \
      __global uchar *part_p, ulong part_off, W w0, W w1, __local acc_t *scratch
#define RED_COLV_PASS                                                                              \
  n_out, C, R, si, chunks, chunk_len, TX, TY, krank, ksz, kin, kout0, kout1, in, in_o, out0, out0_o, \
      out1, out1_o, part, w0, w1, scratch

__kernel void red_colv(RED_COLV_ARGS) { __global acc_t* part = PART; colv_body(1, RED_COLV_PASS); }
__kernel void red_col1(RED_COLV_ARGS) { __global acc_t* part = PART; colv_body(0, RED_COLV_PASS); }
#endif
