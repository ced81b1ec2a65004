// 2-D pooling on contiguous NCHW planes, one work-item per output (forward) or per input
// (backward: gathers from the outputs whose window covers the element, so no atomics).
// DL_LOAD/DL_STORE convert between storage DL_T and float/double DL_ACC.

typedef struct { int H, W, OH, OW, kh, kw, sh, sw, ph, pw, dh, dw; } dl_pool_geom;

// The window of output (oh, ow) in input coordinates; avg pooling clips it to the padded input.
inline int dl_div_up(int a, int b) { return (a + b - 1) / b; }

__kernel void max_pool_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off,
                           __global long* idx, ulong idx_off, ulong total, dl_pool_geom g) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  int ow = o % g.OW, oh = (o / g.OW) % g.OH;
  ulong plane = o / ((ulong)g.OW * g.OH);
  __global const DL_T* xp = x + x_off + plane * (ulong)g.H * g.W;
  DL_ACC best = -INFINITY;
  long best_i = -1;
  for (int i = 0; i < g.kh; ++i) {
    int ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int j = 0; j < g.kw; ++j) {
      int iw = ow * g.sw - g.pw + j * g.dw;
      if (iw < 0 || iw >= g.W) continue;
      DL_ACC v = DL_LOAD(xp, ih * g.W + iw);
      // NaN wins, as on the CPU; the first maximum wins ties.
      if (best_i < 0 || v > best || isnan(v)) { best = v; best_i = (long)ih * g.W + iw; if (isnan(v)) { i = g.kh; break; } }
    }
  }
  DL_STORE(y, y_off + o, best);
  idx[idx_off + o] = best_i;
}

__kernel void max_pool_bwd(__global const DL_T* gy, ulong gy_off, __global const long* idx, ulong idx_off,
                           __global DL_T* gx, ulong gx_off, ulong total, dl_pool_geom g) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % g.W, ih = (e / g.W) % g.H;
  ulong plane = e / ((ulong)g.W * g.H);
  long me = (long)ih * g.W + iw;
  ulong obase = plane * (ulong)g.OH * g.OW;
  // Outputs whose window can reach (ih, iw): oh*sh - ph <= ih <= oh*sh - ph + (kh-1)*dh.
  int oh0 = max(0, dl_div_up(ih + g.ph - (g.kh - 1) * g.dh, g.sh)), oh1 = min(g.OH - 1, (ih + g.ph) / g.sh);
  int ow0 = max(0, dl_div_up(iw + g.pw - (g.kw - 1) * g.dw, g.sw)), ow1 = min(g.OW - 1, (iw + g.pw) / g.sw);
  DL_ACC acc = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow) {
      ulong o = obase + (ulong)oh * g.OW + ow;
      if (idx[idx_off + o] == me) acc += DL_LOAD(gy, gy_off + o);
    }
  DL_STORE(gx, gx_off + e, acc);
}

// Divisor of output (oh, ow) for average pooling; window clipped to the padded input.
inline int dl_avg_divisor(dl_pool_geom g, int oh, int ow, int count_include_pad, int divisor_override) {
  if (divisor_override) return divisor_override;
  int h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  int h1 = min(h0 + g.kh, g.H + g.ph), w1 = min(w0 + g.kw, g.W + g.pw);
  int pool = (h1 - h0) * (w1 - w0);
  if (count_include_pad) return pool;
  h0 = max(h0, 0); w0 = max(w0, 0); h1 = min(h1, g.H); w1 = min(w1, g.W);
  return (h1 - h0) * (w1 - w0);
}

__kernel void avg_pool_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total,
                           dl_pool_geom g, int count_include_pad, int divisor_override) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  int ow = o % g.OW, oh = (o / g.OW) % g.OH;
  ulong plane = o / ((ulong)g.OW * g.OH);
  __global const DL_T* xp = x + x_off + plane * (ulong)g.H * g.W;
  int h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
  DL_ACC s = 0;
  for (int ih = max(h0, 0); ih < min(h0 + g.kh, g.H); ++ih)
    for (int iw = max(w0, 0); iw < min(w0 + g.kw, g.W); ++iw) s += DL_LOAD(xp, ih * g.W + iw);
  DL_STORE(y, y_off + o, s / (DL_ACC)dl_avg_divisor(g, oh, ow, count_include_pad, divisor_override));
}

__kernel void avg_pool_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total,
                           dl_pool_geom g, int count_include_pad, int divisor_override) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % g.W, ih = (e / g.W) % g.H;
  ulong plane = e / ((ulong)g.W * g.H);
  ulong obase = plane * (ulong)g.OH * g.OW;
  int oh0 = max(0, dl_div_up(ih + g.ph - g.kh + 1, g.sh)), oh1 = min(g.OH - 1, (ih + g.ph) / g.sh);
  int ow0 = max(0, dl_div_up(iw + g.pw - g.kw + 1, g.sw)), ow1 = min(g.OW - 1, (iw + g.pw) / g.sw);
  DL_ACC acc = 0;
  for (int oh = oh0; oh <= oh1; ++oh)
    for (int ow = ow0; ow <= ow1; ++ow)
      acc += DL_LOAD(gy, gy_off + obase + (ulong)oh * g.OW + ow) /
             (DL_ACC)dl_avg_divisor(g, oh, ow, count_include_pad, divisor_override);
  DL_STORE(gx, gx_off + e, acc);
}

// Adaptive average pooling: window [floor(o*I/O), ceil((o+1)*I/O)).
inline int dl_ad_start(int o, int I, int O) { return (int)(((long)o * I) / O); }
inline int dl_ad_end(int o, int I, int O) { return (int)((((long)o + 1) * I + O - 1) / O); }

__kernel void adaptive_avg_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total,
                               int H, int W, int OH, int OW) {
  ulong o = get_global_id(0);
  if (o >= total) return;
  int ow = o % OW, oh = (o / OW) % OH;
  ulong plane = o / ((ulong)OW * OH);
  __global const DL_T* xp = x + x_off + plane * (ulong)H * W;
  int h0 = dl_ad_start(oh, H, OH), h1 = dl_ad_end(oh, H, OH), w0 = dl_ad_start(ow, W, OW), w1 = dl_ad_end(ow, W, OW);
  DL_ACC s = 0;
  for (int ih = h0; ih < h1; ++ih)
    for (int iw = w0; iw < w1; ++iw) s += DL_LOAD(xp, ih * W + iw);
  DL_STORE(y, y_off + o, s / (DL_ACC)((h1 - h0) * (w1 - w0)));
}

__kernel void adaptive_avg_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total,
                               int H, int W, int OH, int OW) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % W, ih = (e / W) % H;
  ulong plane = e / ((ulong)W * H);
  ulong obase = plane * (ulong)OH * OW;
  DL_ACC acc = 0;
  // Windows overlap by at most one output on each side of (ih * O / I).
  for (int oh = max(0, (int)(((long)ih * OH) / H) - 1); oh < min(OH, (int)((((long)ih + 1) * OH + H - 1) / H) + 1); ++oh) {
    int h0 = dl_ad_start(oh, H, OH), h1 = dl_ad_end(oh, H, OH);
    if (ih < h0 || ih >= h1) continue;
    for (int ow = max(0, (int)(((long)iw * OW) / W) - 1); ow < min(OW, (int)((((long)iw + 1) * OW + W - 1) / W) + 1); ++ow) {
      int w0 = dl_ad_start(ow, W, OW), w1 = dl_ad_end(ow, W, OW);
      if (iw < w0 || iw >= w1) continue;
      acc += DL_LOAD(gy, gy_off + obase + (ulong)oh * OW + ow) / (DL_ACC)((h1 - h0) * (w1 - w0));
    }
  }
  DL_STORE(gx, gx_off + e, acc);
}
