// Depthwise convolution (needs the gemm_program_head defines T, ACC, LOAD_T, STORE_T), for GPUs and CPUs.
// Built per layer shape class with the kernel size, the width stride and the width dilation as
// constants (DKH, DKW, DSW, DDW) so that every tap loop unrolls, VW outputs per work-item along the
// width sharing one register row of inputs, and the work mapping CHAN_FAST: 1 puts consecutive
// channels on consecutive work-items (channels-last tensors: the loads of a warp are contiguous),
// 0 puts consecutive columns there (NCHW tensors).
// x [N, C, H, W] and y [N, K, OH, OW] (K = C * mult) come with element strides; weights are
// [K, 1, DKH, DKW] contiguous. The host keeps every work-item count below 2^31.

#define DW_TAPS (DKH * DKW)
// Input columns that one work-item's VW outputs read in one kernel row.
#define DW_SPAN ((VW - 1) * DSW + (DKW - 1) * DDW + 1)

#define DW_GEOMETRY int mult, int H, int W, int OH, int OW, int stride_h, int pad_h, int pad_w, int dil_h
#define DW_TENSOR(p) __global const T *p, ulong p##_off, long p##_sn, long p##_sc, long p##_sh, long p##_sw
#define DW_OUT(p) __global T *p, ulong p##_off, long p##_sn, long p##_sc, long p##_sh, long p##_sw

// Work-item `id` -> channel c_ of `chans`, column block q_ of `blocks`, row r_ of `rows`, image b_.
#if CHAN_FAST
#define DW_DECODE(id, chans, blocks, rows)      \
  const int c_ = (int)((id) % (uint)(chans));   \
  uint t_ = (id) / (uint)(chans);               \
  const int q_ = (int)(t_ % (uint)(blocks));    \
  t_ /= (uint)(blocks);                         \
  const int r_ = (int)(t_ % (uint)(rows)), b_ = (int)(t_ / (uint)(rows));
#else
#define DW_DECODE(id, chans, blocks, rows)      \
  const int q_ = (int)((id) % (uint)(blocks));  \
  uint t_ = (id) / (uint)(blocks);              \
  const int r_ = (int)(t_ % (uint)(rows));      \
  t_ /= (uint)(rows);                           \
  const int c_ = (int)(t_ % (uint)(chans)), b_ = (int)(t_ / (uint)(chans));
#endif

// y[b, co, oh, ow0 .. ow0 + VW) for one work-item; `K` output channels.
__kernel void dw_forward(uint total, int K, DW_GEOMETRY, DW_TENSOR(X), __global const T *Wt, ulong w_off,
                         __global const T *bias, ulong b_off, int has_bias, DW_OUT(Y)) {
  const uint id = get_global_id(0);
  if (id >= total) return;
  const int blocks = (OW + VW - 1) / VW;
  DW_DECODE(id, K, blocks, OH)
  const int co = c_, oh = r_, ow0 = q_ * VW, b = b_;
  __global const T *x = X + X_off + b * X_sn + (co / mult) * X_sc;
  __global const T *w = Wt + w_off + co * DW_TAPS;
  const ACC init = has_bias ? LOAD_T(bias, b_off + co) : (ACC)0;
  ACC acc[VW];
#pragma unroll
  for (int v = 0; v < VW; ++v) acc[v] = init;
  const int iw0 = ow0 * DSW - pad_w;
#pragma unroll
  for (int kh = 0; kh < DKH; ++kh) {
    const int ih = oh * stride_h - pad_h + kh * dil_h;
    if ((uint)ih >= (uint)H) continue;
    __global const T *xr = x + ih * X_sh;
    ACC row[DW_SPAN];
#pragma unroll
    for (int i = 0; i < DW_SPAN; ++i) row[i] = (uint)(iw0 + i) < (uint)W ? LOAD_T(xr, (iw0 + i) * X_sw) : (ACC)0;
#pragma unroll
    for (int kw = 0; kw < DKW; ++kw) {
      const ACC wv = LOAD_T(w, kh * DKW + kw);
#pragma unroll
      for (int v = 0; v < VW; ++v) acc[v] += row[v * DSW + kw * DDW] * wv;
    }
  }
  __global T *y = Y + Y_off + b * Y_sn + co * Y_sc + oh * Y_sh;
#pragma unroll
  for (int v = 0; v < VW; ++v)
    if (ow0 + v < OW) STORE_T(y, (ow0 + v) * Y_sw, acc[v]);
}

// dx[b, ci, ih, iw0 .. iw0 + VW) for one work-item: the taps of every output that read it.
__kernel void dw_backward_data(uint total, int C, DW_GEOMETRY, DW_TENSOR(DY), __global const T *Wt, ulong w_off,
                               DW_OUT(DX)) {
  const uint id = get_global_id(0);
  if (id >= total) return;
  const int blocks = (W + VW - 1) / VW;
  DW_DECODE(id, C, blocks, H)
  const int ci = c_, ih = r_, iw0 = q_ * VW, b = b_;
  ACC acc[VW];
#pragma unroll
  for (int v = 0; v < VW; ++v) acc[v] = 0;
  for (int m = 0; m < mult; ++m) {
    const int co = ci * mult + m;
    __global const T *dy = DY + DY_off + b * DY_sn + co * DY_sc;
    __global const T *w = Wt + w_off + co * DW_TAPS;
#pragma unroll
    for (int kh = 0; kh < DKH; ++kh) {
      const int th = ih + pad_h - kh * dil_h;
      if (th < 0 || th % stride_h) continue;
      const int oh = th / stride_h;
      if (oh >= OH) continue;
      __global const T *dyr = dy + oh * DY_sh;
#if DSW == 1
      // Output columns iw0 + pw - (DKW - 1) * DDW + i for i < DW_SPAN cover every (v, kw) pair.
      const int ow_lo = iw0 + pad_w - (DKW - 1) * DDW;
      ACC row[DW_SPAN];
#pragma unroll
      for (int i = 0; i < DW_SPAN; ++i) row[i] = (uint)(ow_lo + i) < (uint)OW ? LOAD_T(dyr, (ow_lo + i) * DY_sw) : (ACC)0;
#pragma unroll
      for (int kw = 0; kw < DKW; ++kw) {
        const ACC wv = LOAD_T(w, kh * DKW + kw);
#pragma unroll
        for (int v = 0; v < VW; ++v) acc[v] += row[v + (DKW - 1 - kw) * DDW] * wv;
      }
#else
#pragma unroll
      for (int kw = 0; kw < DKW; ++kw) {
        const ACC wv = LOAD_T(w, kh * DKW + kw);
#pragma unroll
        for (int v = 0; v < VW; ++v) {
          const int tw = iw0 + v + pad_w - kw * DDW;
          if (tw >= 0 && tw % DSW == 0 && tw / DSW < OW) acc[v] += LOAD_T(dyr, (tw / DSW) * DY_sw) * wv;
        }
      }
#endif
    }
  }
  __global T *dx = DX + DX_off + b * DX_sn + ci * DX_sc + ih * DX_sh;
#pragma unroll
  for (int v = 0; v < VW; ++v)
    if (iw0 + v < W) STORE_T(dx, (iw0 + v) * DX_sw, acc[v]);
}

// Adds dy[b, co, oh, ow] * x[b, ci, ih, iw] for every tap into acc over the positions of output
// rows [r0, r1) of the flattened (image, output row) range, taken in (row, column) order from
// position `first` of row r0 in steps of `step`: with step = the work-group size a warp reads
// consecutive columns whatever the image width. The row advances without divisions.
inline void dw_wgrad_walk(ACC *acc, int r0, int r1, int first, int step, int co, int ci, int H, int W, int OH, int OW,
                          int stride_h, int pad_h, int pad_w, int dil_h, __global const T *X, ulong X_off, long X_sn,
                          long X_sc, long X_sh, long X_sw, __global const T *DY, ulong DY_off, long DY_sn, long DY_sc,
                          long DY_sh, long DY_sw) {
  int r = r0 + first / OW, ow = first % OW;
  int b = r / OH, oh = r - b * OH;
  while (r < r1) {
    const ACC d = LOAD_T(DY, (long)DY_off + b * DY_sn + co * DY_sc + oh * DY_sh + ow * DY_sw);
    __global const T *x = X + X_off + b * X_sn + ci * X_sc;
    const int iw0 = ow * DSW - pad_w;
#pragma unroll
    for (int kh = 0; kh < DKH; ++kh) {
      const int ih = oh * stride_h - pad_h + kh * dil_h;
      if ((uint)ih >= (uint)H) continue;
#pragma unroll
      for (int kw = 0; kw < DKW; ++kw) {
        const int iw = iw0 + kw * DDW;
        if ((uint)iw < (uint)W) acc[kh * DKW + kw] += d * LOAD_T(x, ih * X_sh + iw * X_sw);
      }
    }
    ow += step;
    while (ow >= OW) {
      ow -= OW;
      ++r;
      if (++oh == OH) {
        oh = 0;
        ++b;
      }
    }
  }
}

#define DW_WGRAD_ARGS(r0, r1, first, step) \
  acc, r0, r1, first, step, co, ci, H, W, OH, OW, stride_h, pad_h, pad_w, dil_h, X, X_off, X_sn, X_sc, X_sh, X_sw, DY, \
      DY_off, DY_sn, DY_sc, DY_sh, DY_sw

// Writes one channel's tap sums: to DW when there is one slice, else to part[slice][co][tap]
// (conv_dw_weight_sum adds the slices in order, so the result does not depend on scheduling).
#define DW_WGRAD_STORE(tap, value)                                                 \
  if (slices == 1) {                                                               \
    STORE_T(DW, dw_off + co * DW_TAPS + (tap), (value));                           \
  } else {                                                                         \
    part[part_off + (ulong)sl * K * DW_TAPS + co * DW_TAPS + (tap)] = (value);     \
  }

// Channels-last weight gradient: work-item (co, slice) with co fastest sums `rows_per` output rows.
// (VW and CHAN_FAST are unused here: the host builds it with the forward's variant.)
__kernel void dw_backward_weight_items(uint total, int K, int rows_per, int slices, DW_GEOMETRY, int N, DW_TENSOR(X),
                                       DW_TENSOR(DY), __global T *DW, ulong dw_off, __global ACC *part,
                                       ulong part_off) {
  const uint id = get_global_id(0);
  if (id >= total) return;
  const int co = (int)(id % (uint)K), sl = (int)(id / (uint)K), ci = co / mult;
  ACC acc[DW_TAPS];
#pragma unroll
  for (int t = 0; t < DW_TAPS; ++t) acc[t] = 0;
  const int r0 = sl * rows_per, r1 = min(N * OH, r0 + rows_per);
  dw_wgrad_walk(DW_WGRAD_ARGS(r0, r1, 0, 1));
#pragma unroll
  for (int t = 0; t < DW_TAPS; ++t) { DW_WGRAD_STORE(t, acc[t]) }
}

// NCHW weight gradient: work-group (co, slice) whose items take every L-th position of
// `rows_per` output rows, then add their tap sums through local memory in item order.
__kernel void dw_backward_weight_groups(int K, int rows_per, int slices, DW_GEOMETRY, int N, DW_TENSOR(X),
                                        DW_TENSOR(DY), __global T *DW, ulong dw_off, __global ACC *part, ulong part_off,
                                        __local ACC *scratch) {
  const int co = (int)(get_group_id(0) % (uint)K), sl = (int)(get_group_id(0) / (uint)K), ci = co / mult;
  const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
  ACC acc[DW_TAPS];
#pragma unroll
  for (int t = 0; t < DW_TAPS; ++t) acc[t] = 0;
  const int r0 = sl * rows_per, r1 = min(N * OH, r0 + rows_per);
  dw_wgrad_walk(DW_WGRAD_ARGS(r0, r1, lid, L));
  // Item-major rows of DW_TAPS (odd strides keep the banks apart in both passes).
#pragma unroll
  for (int t = 0; t < DW_TAPS; ++t) scratch[lid * DW_TAPS + t] = acc[t];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int t = lid; t < DW_TAPS; t += L) {
    ACC s = 0;
    for (int i = 0; i < L; ++i) s += scratch[i * DW_TAPS + t];
    DW_WGRAD_STORE(t, s)
  }
}
