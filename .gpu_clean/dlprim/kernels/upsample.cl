// Upsampling (interpolation) over contiguous planes of (D, H, W); 1-D and 2-D calls use
// D = 1 (and H = 1). Every axis is separable: an output coordinate reads up to 4 "taps"
// (input indices clamped to the axis, with weights). mode: 0 nearest, 1 nearest-exact,
// 2 linear, 3 cubic (A = -0.75); 4/5 antialiased linear/cubic (2-D only, kernels at the end). The index and weight arithmetic follows PyTorch's CPU
// kernels (float for the nearest indices, DL_ACC for linear/cubic), so results match.
// Backward is a gather: each input element sums the outputs whose taps land on it.

typedef struct { int mode, align; } dl_up_cfg;

inline DL_ACC dl_cubic1(DL_ACC x, DL_ACC A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
inline DL_ACC dl_cubic2(DL_ACC x, DL_ACC A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

// Taps of output o along an axis of I inputs and O outputs: first (unclamped) index and
// weights; returns the tap count. ns: float scale for nearest, ls: scale for linear/cubic.
inline int dl_axis_taps(dl_up_cfg c, int o, int I, int O, float ns, DL_ACC ls, int* first, DL_ACC* w) {
  // Same-size axes copy in nearest and linear modes (as on the CPU, whatever the scale).
  if ((I == 1 && O == 1) || ((c.mode == 0 || c.mode == 2) && I == O)) {
    *first = o; w[0] = 1; return 1;
  }
  if (c.mode == 0) {
    *first = (O == 2 * I) ? (o >> 1) : min((int)floor((float)o * ns), I - 1);
    w[0] = 1; return 1;
  }
  if (c.mode == 1) {
    *first = min((int)floor(((float)o + 0.5f) * ns), I - 1);
    w[0] = 1; return 1;
  }
  if (c.mode == 2) {
    DL_ACC src = c.align ? ls * o : max(ls * ((DL_ACC)o + (DL_ACC)0.5) - (DL_ACC)0.5, (DL_ACC)0);
    int i0 = min((int)floor(src), I - 1);
    DL_ACC l1 = min(max(src - i0, (DL_ACC)0), (DL_ACC)1);
    *first = i0; w[0] = 1 - l1; w[1] = l1; return 2;
  }
  DL_ACC src = c.align ? ls * o : ls * ((DL_ACC)o + (DL_ACC)0.5) - (DL_ACC)0.5;
  DL_ACC f = floor(src), t = src - f, A = (DL_ACC)-0.75;
  *first = (int)f - 1;
  w[0] = dl_cubic2(t + 1, A); w[1] = dl_cubic1(t, A); w[2] = dl_cubic1(1 - t, A); w[3] = dl_cubic2(2 - t, A);
  return 4;
}

inline int dl_clampi(int v, int I) { return min(max(v, 0), I - 1); }

// Total weight with which output o reads input i along an axis; *hit says whether it reads it at all.
inline DL_ACC dl_axis_weight(dl_up_cfg c, int o, int i, int I, int O, float ns, DL_ACC ls, int* hit) {
  int first; DL_ACC w[4];
  int k = dl_axis_taps(c, o, I, O, ns, ls, &first, w);
  DL_ACC s = 0; *hit = 0;
  for (int j = 0; j < k; ++j)
    if (dl_clampi(first + j, I) == i) { s += w[j]; *hit = 1; }
  return s;
}

// Outputs that may read input i: the inverse of the (monotone) source mapping with a margin;
// the border inputs also collect the clamped taps of the outputs beyond the axis.
inline int2 dl_axis_candidates(int i, int I, int O, float ns, DL_ACC ls, dl_up_cfg c) {
  if ((c.mode == 0 || c.mode == 2) && I == O) return (int2)(i, i);
  if (O == 1) return (int2)(0, 0);
  DL_ACC s = c.mode <= 1 ? (DL_ACC)ns : ls;
  if (s <= 0) return (int2)(0, O - 1);
  // Bounds computed in floating point and clamped before conversion (tiny scales overflow int).
  DL_ACC lo = floor((DL_ACC)(i - 4) / s) - 2, hi = ceil((DL_ACC)(i + 3) / s) + 2;
  int a = (i == 0 || lo < 0) ? 0 : (lo > O - 1 ? O - 1 : (int)lo);
  int b = (i == I - 1 || hi > O - 1) ? O - 1 : (hi < 0 ? 0 : (int)hi);
  return (int2)(a, b);
}

__kernel void upsample_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total,
                           int4 in, int4 out, float4 ns, DL_ACC ls0, DL_ACC ls1, DL_ACC ls2, dl_up_cfg c) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int ow = e % out.z, oh = (e / out.z) % out.y, od = (e / ((ulong)out.z * out.y)) % out.x;
  ulong plane = e / ((ulong)out.z * out.y * out.x);
  __global const DL_T* xp = x + x_off + plane * (ulong)in.x * in.y * in.z;
  int fd, fh, fw; DL_ACC wd[4], wh[4], ww[4];
  int kd = dl_axis_taps(c, od, in.x, out.x, ns.x, ls0, &fd, wd);
  int kh = dl_axis_taps(c, oh, in.y, out.y, ns.y, ls1, &fh, wh);
  int kw = dl_axis_taps(c, ow, in.z, out.z, ns.z, ls2, &fw, ww);
  DL_ACC acc = 0;
  for (int a = 0; a < kd; ++a) {
    ulong pd = (ulong)dl_clampi(fd + a, in.x) * in.y;
    for (int b = 0; b < kh; ++b) {
      ulong ph = (pd + dl_clampi(fh + b, in.y)) * in.z;
      DL_ACC row = 0;
      for (int j = 0; j < kw; ++j) row += ww[j] * DL_LOAD(xp, ph + dl_clampi(fw + j, in.z));
      acc += wd[a] * wh[b] * row;
    }
  }
  DL_STORE(y, y_off + e, acc);
}

__kernel void upsample_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total,
                           int4 in, int4 out, float4 ns, DL_ACC ls0, DL_ACC ls1, DL_ACC ls2, dl_up_cfg c) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % in.z, ih = (e / in.z) % in.y, id = (e / ((ulong)in.z * in.y)) % in.x;
  ulong plane = e / ((ulong)in.z * in.y * in.x);
  __global const DL_T* gp = gy + gy_off + plane * (ulong)out.x * out.y * out.z;
  int2 rd = dl_axis_candidates(id, in.x, out.x, ns.x, ls0, c);
  int2 rh = dl_axis_candidates(ih, in.y, out.y, ns.y, ls1, c);
  int2 rw = dl_axis_candidates(iw, in.z, out.z, ns.z, ls2, c);
  DL_ACC acc = 0;
  int hit;
  for (int od = rd.x; od <= rd.y; ++od) {
    DL_ACC wd = dl_axis_weight(c, od, id, in.x, out.x, ns.x, ls0, &hit);
    if (!hit) continue;
    for (int oh = rh.x; oh <= rh.y; ++oh) {
      DL_ACC wh = dl_axis_weight(c, oh, ih, in.y, out.y, ns.y, ls1, &hit);
      if (!hit) continue;
      ulong row = ((ulong)od * out.y + oh) * out.z;
      for (int ow = rw.x; ow <= rw.y; ++ow) {
        DL_ACC w = dl_axis_weight(c, ow, iw, in.z, out.z, ns.z, ls2, &hit);
        if (hit) acc += wd * wh * w * DL_LOAD(gp, row + ow);
      }
    }
  }
  DL_STORE(gx, gx_off + e, acc);
}

// ---- Antialiased (mode 4: bilinear, 5: bicubic with a = -0.5) over (H, W) ----
// Output o of an axis reads inputs [xmin, xmin + xsize) around center = scale * (o + 0.5) with
// a filter stretched by the scale when downsampling, weights normalized to sum 1 (as the CPU).

inline DL_ACC dl_aa_filter(int mode, DL_ACC x) {
  x = fabs(x);
  if (mode == 4) return x < 1 ? 1 - x : (DL_ACC)0;
  DL_ACC A = (DL_ACC)-0.5;
  if (x < 1) return dl_cubic1(x, A);
  if (x < 2) return dl_cubic2(x, A);
  return 0;
}

typedef struct { int xmin, xsize; DL_ACC center, invscale, inv_total; } dl_aa_win;

inline dl_aa_win dl_aa_window(int mode, int o, int I, DL_ACC scale) {
  DL_ACC support = (mode == 4 ? 1 : 2) * (scale >= 1 ? scale : (DL_ACC)1);
  dl_aa_win w;
  w.center = scale * ((DL_ACC)o + (DL_ACC)0.5);
  w.invscale = scale >= 1 ? 1 / scale : (DL_ACC)1;
  w.xmin = max((int)(w.center - support + (DL_ACC)0.5), 0);
  w.xsize = max(min((int)(w.center + support + (DL_ACC)0.5), I) - w.xmin, 0);
  DL_ACC total = 0;
  for (int j = 0; j < w.xsize; ++j) total += dl_aa_filter(mode, ((DL_ACC)(j + w.xmin) - w.center + (DL_ACC)0.5) * w.invscale);
  w.inv_total = total != 0 ? 1 / total : (DL_ACC)1;
  return w;
}

inline DL_ACC dl_aa_weight(int mode, dl_aa_win w, int i) {
  DL_ACC v = dl_aa_filter(mode, ((DL_ACC)i - w.center + (DL_ACC)0.5) * w.invscale);
  return v * w.inv_total;
}

__kernel void upsample_aa_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total,
                              int4 in, int4 out, float4 ns, DL_ACC ls0, DL_ACC ls1, DL_ACC ls2, dl_up_cfg c) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int ow = e % out.z, oh = (e / out.z) % out.y;
  ulong plane = e / ((ulong)out.z * out.y);
  __global const DL_T* xp = x + x_off + plane * (ulong)in.y * in.z;
  dl_aa_win wh = dl_aa_window(c.mode, oh, in.y, ls1), ww = dl_aa_window(c.mode, ow, in.z, ls2);
  DL_ACC acc = 0;
  for (int a = wh.xmin; a < wh.xmin + wh.xsize; ++a) {
    DL_ACC row = 0;
    for (int b = ww.xmin; b < ww.xmin + ww.xsize; ++b) row += dl_aa_weight(c.mode, ww, b) * DL_LOAD(xp, (ulong)a * in.z + b);
    acc += dl_aa_weight(c.mode, wh, a) * row;
  }
  DL_STORE(y, y_off + e, acc);
}

// Outputs whose window can contain input i: |i + 0.5 - center(o)| <= support + 1.
inline int2 dl_aa_candidates(int mode, int i, int O, DL_ACC scale) {
  DL_ACC support = (mode == 4 ? 1 : 2) * (scale >= 1 ? scale : (DL_ACC)1);
  if (scale <= 0) return (int2)(0, O - 1);
  DL_ACC lo = floor(((DL_ACC)i - support - 1) / scale) - 2, hi = ceil(((DL_ACC)i + support + 2) / scale) + 2;
  return (int2)(lo < 0 ? 0 : (lo > O - 1 ? O - 1 : (int)lo), hi > O - 1 ? O - 1 : (hi < 0 ? 0 : (int)hi));
}

__kernel void upsample_aa_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total,
                              int4 in, int4 out, float4 ns, DL_ACC ls0, DL_ACC ls1, DL_ACC ls2, dl_up_cfg c) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % in.z, ih = (e / in.z) % in.y;
  ulong plane = e / ((ulong)in.z * in.y);
  __global const DL_T* gp = gy + gy_off + plane * (ulong)out.y * out.z;
  int2 rh = dl_aa_candidates(c.mode, ih, out.y, ls1), rw = dl_aa_candidates(c.mode, iw, out.z, ls2);
  DL_ACC acc = 0;
  for (int oh = rh.x; oh <= rh.y; ++oh) {
    dl_aa_win wh = dl_aa_window(c.mode, oh, in.y, ls1);
    if (ih < wh.xmin || ih >= wh.xmin + wh.xsize) continue;
    DL_ACC a = dl_aa_weight(c.mode, wh, ih);
    for (int ow = rw.x; ow <= rw.y; ++ow) {
      dl_aa_win ww = dl_aa_window(c.mode, ow, in.z, ls2);
      if (iw < ww.xmin || iw >= ww.xmin + ww.xsize) continue;
      acc += a * dl_aa_weight(c.mode, ww, iw) * DL_LOAD(gp, (ulong)oh * out.z + ow);
    }
  }
  DL_STORE(gx, gx_off + e, acc);
}
