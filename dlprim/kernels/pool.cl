// Pooling on contiguous planes of (D, H, W) (2-D pooling uses D = 1 with a 1-deep window),
// one work-item per output (forward) or per input (backward: gathers from the outputs whose
// window covers the element, so no atomics). Max pooling indices are flat offsets into a
// plane, as PyTorch's. DL_LOAD/DL_STORE convert between storage DL_T and float/double DL_ACC.

typedef struct { int D, H, W, OD, OH, OW, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw; } dl_pool_geom;

inline int dl_div_up(int a, int b) { return (a + b - 1) / b; }

// Splits a flat index over planes of (A, B, C) into plane and coordinates.
#define DL_SPLIT(e, A, B, C, a, b, c, plane) \
  int c = (e) % (C), b = ((e) / (C)) % (B), a = ((e) / ((ulong)(C) * (B))) % (A); \
  ulong plane = (e) / ((ulong)(C) * (B) * (A))

// Integer inputs (max pooling, int64 average pooling): no NaN; the initial best is never compared
// (best_i < 0 takes the first element).
#if DL_ACC_IS_FLOAT
#define DL_ISNAN(v) isnan(v)
#define DL_LOWEST (-INFINITY)
#else
#define DL_ISNAN(v) 0
#define DL_LOWEST 0
#endif

// Max updates as on the CPU: a larger value or a NaN takes the place; ties keep the first.
#define DL_MAX_UPDATE(v, at) if (best_i < 0 || v > best || DL_ISNAN(v)) { best = v; best_i = (at); }

__kernel void max_pool_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off,
                           __global long* idx, ulong idx_off, ulong total, dl_pool_geom g) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  DL_SPLIT(o, g.OD, g.OH, g.OW, od, oh, ow, plane);
  __global const DL_T* xp = x + x_off + plane * (ulong)g.D * g.H * g.W;
  DL_ACC best = DL_LOWEST;
  long best_i = -1;
  for (int a = 0; a < g.kd; ++a) {
    int id = od * g.sd - g.pd + a * g.dd;
    if (id < 0 || id >= g.D) continue;
    for (int i = 0; i < g.kh; ++i) {
      int ih = oh * g.sh - g.ph + i * g.dh;
      if (ih < 0 || ih >= g.H) continue;
      for (int j = 0; j < g.kw; ++j) {
        int iw = ow * g.sw - g.pw + j * g.dw;
        if (iw < 0 || iw >= g.W) continue;
        long at = ((long)id * g.H + ih) * g.W + iw;
        DL_ACC v = DL_LOAD(xp, at);
        DL_MAX_UPDATE(v, at);
      }
    }
  }
  DL_STORE(y, y_off + o, best);
  idx[idx_off + o] = best_i;
}

// First/last output along an axis whose window (stride s, pad p, extent k, dilation d) can reach i.
inline int2 dl_out_range(int i, int p, int k, int d, int s, int O) {
  return (int2)(max(0, dl_div_up(max(i + p - (k - 1) * d, 0), s)), min(O - 1, (i + p) / s));
}

__kernel void max_pool_bwd(__global const DL_T* gy, ulong gy_off, __global const long* idx, ulong idx_off,
                           __global DL_T* gx, ulong gx_off, ulong total, dl_pool_geom g) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  DL_SPLIT(e, g.D, g.H, g.W, id, ih, iw, plane);
  long me = ((long)id * g.H + ih) * g.W + iw;
  ulong obase = plane * (ulong)g.OD * g.OH * g.OW;
  int2 rd = dl_out_range(id, g.pd, g.kd, g.dd, g.sd, g.OD), rh = dl_out_range(ih, g.ph, g.kh, g.dh, g.sh, g.OH),
       rw = dl_out_range(iw, g.pw, g.kw, g.dw, g.sw, g.OW);
  DL_ACC acc = 0;
  for (int od = rd.x; od <= rd.y; ++od)
    for (int oh = rh.x; oh <= rh.y; ++oh)
      for (int ow = rw.x; ow <= rw.y; ++ow) {
        ulong o = obase + ((ulong)od * g.OH + oh) * g.OW + ow;
        if (idx[idx_off + o] == me) acc += DL_LOAD(gy, gy_off + o);
      }
  DL_STORE(gx, gx_off + e, acc);
}

// Divisor of an output for average pooling: the window clipped to the padded input, or to
// the input itself without count_include_pad.
inline int dl_avg_divisor(dl_pool_geom g, int od, int oh, int ow, int count_include_pad, int divisor_override) {
  if (divisor_override) return divisor_override;
  int d0 = od * g.sd - g.pd, h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int d1 = min(d0 + g.kd, g.D + g.pd), h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
  if (count_include_pad) return (d1 - d0) * (h1 - h0) * (w1 - w0);
  d0 = max(d0, 0); h0 = max(h0, 0); w0 = max(w0, 0); d1 = min(d1, g.D); h1 = min(h1, g.H); w1 = min(w1, g.W);
  return (d1 - d0) * (h1 - h0) * (w1 - w0);
}

__kernel void avg_pool_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total,
                           dl_pool_geom g, int count_include_pad, int divisor_override) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  DL_SPLIT(o, g.OD, g.OH, g.OW, od, oh, ow, plane);
  __global const DL_T* xp = x + x_off + plane * (ulong)g.D * g.H * g.W;
  int d0 = od * g.sd - g.pd, h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  DL_ACC s = 0;
  for (int id = max(d0, 0); id < min(d0 + g.kd, g.D); ++id)
    for (int ih = max(h0, 0); ih < min(h0 + g.kh, g.H); ++ih)
      for (int iw = max(w0, 0); iw < min(w0 + g.kw, g.W); ++iw) s += DL_LOAD(xp, ((ulong)id * g.H + ih) * g.W + iw);
  DL_STORE(y, y_off + o, s / (DL_ACC)dl_avg_divisor(g, od, oh, ow, count_include_pad, divisor_override));
}

__kernel void avg_pool_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total,
                           dl_pool_geom g, int count_include_pad, int divisor_override) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  DL_SPLIT(e, g.D, g.H, g.W, id, ih, iw, plane);
  ulong obase = plane * (ulong)g.OD * g.OH * g.OW;
  int2 rd = dl_out_range(id, g.pd, g.kd, 1, g.sd, g.OD), rh = dl_out_range(ih, g.ph, g.kh, 1, g.sh, g.OH),
       rw = dl_out_range(iw, g.pw, g.kw, 1, g.sw, g.OW);
  DL_ACC acc = 0;
  for (int od = rd.x; od <= rd.y; ++od)
    for (int oh = rh.x; oh <= rh.y; ++oh)
      for (int ow = rw.x; ow <= rw.y; ++ow)
        acc += DL_LOAD(gy, gy_off + obase + ((ulong)od * g.OH + oh) * g.OW + ow) /
               (DL_ACC)dl_avg_divisor(g, od, oh, ow, count_include_pad, divisor_override);
  DL_STORE(gx, gx_off + e, acc);
}

// Adaptive pooling: output o of O over I inputs reads [floor(o*I/O), ceil((o+1)*I/O)).
inline int dl_ad_start(int o, int I, int O) { return (int)(((long)o * I) / O); }
inline int dl_ad_end(int o, int I, int O) { return (int)((((long)o + 1) * I + O - 1) / O); }
// Outputs whose adaptive window can contain input i (windows overlap by at most one output).
inline int2 dl_ad_range(int i, int I, int O) {
  return (int2)(max(0, (int)(((long)i * O) / I) - 1), min(O - 1, (int)((((long)i + 1) * O + I - 1) / I)));
}
inline int dl_ad_has(int o, int i, int I, int O) { return i >= dl_ad_start(o, I, O) && i < dl_ad_end(o, I, O); }

// in / out: (D, H, W, unused). with_max: max with indices, else average.
__kernel void adaptive_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, __global long* idx,
                           ulong idx_off, ulong total, int4 in, int4 out, int with_max) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  DL_SPLIT(o, out.x, out.y, out.z, od, oh, ow, plane);
  __global const DL_T* xp = x + x_off + plane * (ulong)in.x * in.y * in.z;
  int d0 = dl_ad_start(od, in.x, out.x), d1 = dl_ad_end(od, in.x, out.x);
  int h0 = dl_ad_start(oh, in.y, out.y), h1 = dl_ad_end(oh, in.y, out.y);
  int w0 = dl_ad_start(ow, in.z, out.z), w1 = dl_ad_end(ow, in.z, out.z);
  DL_ACC s = 0, best = DL_LOWEST;
  long best_i = -1;
  for (int id = d0; id < d1; ++id)
    for (int ih = h0; ih < h1; ++ih)
      for (int iw = w0; iw < w1; ++iw) {
        long at = ((long)id * in.y + ih) * in.z + iw;
        DL_ACC v = DL_LOAD(xp, at);
        if (with_max) { DL_MAX_UPDATE(v, at); } else s += v;
      }
  if (with_max) {
    DL_STORE(y, y_off + o, best);
    idx[idx_off + o] = best_i;
  } else {
    DL_STORE(y, y_off + o, s / (DL_ACC)((d1 - d0) * (h1 - h0) * (w1 - w0)));
  }
}

__kernel void adaptive_bwd(__global const DL_T* gy, ulong gy_off, __global const long* idx, ulong idx_off,
                           __global DL_T* gx, ulong gx_off, ulong total, int4 in, int4 out, int with_max) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  DL_SPLIT(e, in.x, in.y, in.z, id, ih, iw, plane);
  long me = ((long)id * in.y + ih) * in.z + iw;
  ulong obase = plane * (ulong)out.x * out.y * out.z;
  int2 rd = dl_ad_range(id, in.x, out.x), rh = dl_ad_range(ih, in.y, out.y), rw = dl_ad_range(iw, in.z, out.z);
  DL_ACC acc = 0;
  for (int od = rd.x; od <= rd.y; ++od) {
    if (!dl_ad_has(od, id, in.x, out.x)) continue;
    int nd = dl_ad_end(od, in.x, out.x) - dl_ad_start(od, in.x, out.x);
    for (int oh = rh.x; oh <= rh.y; ++oh) {
      if (!dl_ad_has(oh, ih, in.y, out.y)) continue;
      int nh = dl_ad_end(oh, in.y, out.y) - dl_ad_start(oh, in.y, out.y);
      for (int ow = rw.x; ow <= rw.y; ++ow) {
        if (!dl_ad_has(ow, iw, in.z, out.z)) continue;
        ulong o = obase + ((ulong)od * out.y + oh) * out.z + ow;
        if (with_max) {
          if (idx[idx_off + o] == me) acc += DL_LOAD(gy, gy_off + o);
        } else {
          int nw = dl_ad_end(ow, in.z, out.z) - dl_ad_start(ow, in.z, out.z);
          acc += DL_LOAD(gy, gy_off + o) / (DL_ACC)(nd * nh * nw);
        }
      }
    }
  }
  DL_STORE(gx, gx_off + e, acc);
}

// Max unpooling: each input element goes to its index in the (zeroed) output plane of
// `out_plane` elements; indices outside the plane are skipped (the host checks them first).
__kernel void max_unpool_fwd(__global const DL_T* x, ulong x_off, __global const long* idx, ulong idx_off,
                             __global DL_T* y, ulong y_off, ulong total, ulong in_plane, ulong out_plane) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  long i = idx[idx_off + e];
  if (i < 0 || (ulong)i >= out_plane) return;
  DL_STORE(y, y_off + (e / in_plane) * out_plane + i, DL_LOAD(x, x_off + e));  // exact round trip
}
