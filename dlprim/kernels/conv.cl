// Convolution helpers around the GEMM (needs the gemm_program_head defines: T, ACC, LOAD_T,
// STORE_T). Activations are [N, C, H, W] with element strides (sn, sc, sh, sw); weights are
// [K, C / groups, KH, KW] contiguous; k = (ci * KH + kh) * KW + kw indexes a patch.

#define CONV_GEOMETRY                                                                                  \
  int Cg, int H, int W, int KH, int KW, int OH, int OW, int stride_h, int stride_w, int pad_h, int pad_w, \
      int dil_h, int dil_w, int groups, uint16 div_m, uchar16 div_s

// Division by the geometry's sizes in a few instructions instead of a 32-bit division's ~25 (im2col / col2im
// with a division per index digit were bound by that arithmetic: 70-100 G elements/s on the H200).
// Granlund & Montgomery, "Division by invariant integers using multiplication" (1994), fig. 4.1: for a divisor d,
// l = ceil(log2 d) and m = floor(2^32 (2^l - d) / d) + 1 (conv.cpp's add_geometry), every 32-bit u has
// u / d = (t + ((u - t) >> s1)) >> s2 with t = mul_hi(u, m), s1 = min(l, 1), s2 = max(l - 1, 0); div_s packs
// s1 | s2 << 1. The divisors' slots in div_m / div_s:
#define DV_W 0
#define DV_C 1
#define DV_CG 2
#define DV_SH 3
#define DV_SW 4
#define DV_OW 5
#define DV_KHW 6
#define DV_KW 7
#define DV_GROUPS 8
#define CONV_DIV(u, slot) CONV_DIV_(u, slot)
#define CONV_DIV_(u, slot) conv_div((uint)(u), div_m.s##slot, div_s.s##slot)
inline uint conv_div(uint u, uint m, uchar s) {
  const uint t = mul_hi(u, m);
  return (t + ((u - t) >> (s & 1))) >> (s >> 1);
}

// Patches of `images` images: cols[((b * groups + g) * Kg + k) * OH * OW + oh * OW + ow]
// = x[b, g * Cg + ci, oh * stride_h - pad_h + kh * dil_h, ow * stride_w - pad_w + kw * dil_w] (0 outside).
// GPU mapping: dimension 0 is the output pixel n (stores coalesced along it), dimension 1 the rows
// ((z * KH * KW + r) * chunks + chunk) with z = b * groups + g and r = kh * KW + kw, taken in steps of the
// dimension's size; an item copies the channels of its chunk, stepping the input a channel and the patches
// KH * KW rows at a time, so its index arithmetic is done once per chunk, not per element.
__kernel void conv_im2col(int rows, int chunks, CONV_GEOMETRY, __global const T *X, ulong x_off, long x_sn,
                          long x_sc, long x_sh, long x_sw, __global T *cols, ulong col_off) {
  const int npix = OH * OW, khw = KH * KW, kg = Cg * khw;
  const int n = get_global_id(0);
  if (n >= npix) return;
  const int oh = CONV_DIV(n, DV_OW), ow = n - oh * OW;
  const int per = (Cg + chunks - 1) / chunks;
  for (int row = get_global_id(1); row < rows; row += get_global_size(1)) {
    const int zr = row / chunks, chunk = row - zr * chunks;
    const int z = CONV_DIV(zr, DV_KHW), r = zr - z * khw;
    const int b = CONV_DIV(z, DV_GROUPS), g = z - b * groups;
    const int kh = CONV_DIV(r, DV_KW), kw = r - kh * KW;
    const int c0 = chunk * per, c1 = min(Cg, c0 + per);
    const int ih = oh * stride_h - pad_h + kh * dil_h, iw = ow * stride_w - pad_w + kw * dil_w;
    const bool in = (uint)ih < (uint)H && (uint)iw < (uint)W;
    long src = (long)x_off + b * x_sn + (long)(g * Cg + c0) * x_sc + (long)ih * x_sh + (long)iw * x_sw;
    ulong dst = col_off + ((ulong)z * kg + (ulong)c0 * khw + r) * (ulong)npix + n;
    const ulong step = (ulong)khw * npix;
    for (int ci = c0; ci < c1; ++ci, src += x_sc, dst += step) {
      ACC v = 0;
      if (in) v = LOAD_T(X, src);
      STORE_T(cols, dst, v);
    }
  }
}

// The same patches, one work-item per output row of OW entries (CPU devices: the index
// arithmetic runs once per row instead of once per element).
__kernel void conv_im2col_rows(ulong rows, CONV_GEOMETRY, __global const T *X, ulong x_off, long x_sn, long x_sc,
                               long x_sh, long x_sw, __global T *cols, ulong col_off) {
  ulong id = get_global_id(0);
  if (id >= rows) return;
  const int khw = KH * KW, kg = Cg * khw;
  const int oh = (int)(id % (ulong)OH);
  ulong t = id / (ulong)OH;
  const int k = (int)(t % (ulong)kg);
  const int z = (int)(t / (ulong)kg), b = z / groups, g = z - b * groups;
  const int ci = k / khw, r = k - ci * khw, kh = r / KW, kw = r - kh * KW;
  const int ih = oh * stride_h - pad_h + kh * dil_h;
  const ulong dst = col_off + ((ulong)z * kg + k) * (ulong)(OH * OW) + (ulong)oh * OW;
  const long src = (long)x_off + b * x_sn + (long)(g * Cg + ci) * x_sc + ih * x_sh;
  const bool row_in = (uint)ih < (uint)H;
  for (int ow = 0; ow < OW; ++ow) {
    const int iw = ow * stride_w - pad_w + kw * dil_w;
    ACC v = 0;
    if (row_in && (uint)iw < (uint)W) v = LOAD_T(X, src + iw * x_sw);
    STORE_T(cols, dst + ow, v);
  }
}

// The adjoint of conv_im2col: dx[b, c, ih, iw] = sum of the patch entries that read it. The
// patches hold unrounded sums, in the accumulation type. Dimension 0 is the input position p = ih * W + iw (its
// taps found once), dimension 1 the planes z = b * C + c, taken in steps of the dimension's size (the host
// gives an item one plane, or four where a position has at most one tap).
__kernel void conv_col2im(int planes, CONV_GEOMETRY, __global const ACC *cols, ulong col_off, __global T *DX,
                          ulong dx_off, long dx_sn, long dx_sc, long dx_sh, long dx_sw) {
  const int p = get_global_id(0);
  if (p >= H * W) return;
  const int C = Cg * groups, npix = OH * OW, khw = KH * KW, kg = Cg * khw;
  const int ih = CONV_DIV(p, DV_W), iw = p - ih * W;
  // Dilation 1: the taps that read (ih, iw) directly: kh = (ih + pad_h) mod stride_h, then every stride_h-th, the
  // output row one lower each time (no division per tap); the same order of additions as the general loop.
  const int th = ih + pad_h, tw = iw + pad_w;
  const int oh0 = CONV_DIV(th, DV_SH), ow0 = CONV_DIV(tw, DV_SW);
  const int kh0 = th - oh0 * stride_h, kw0 = tw - ow0 * stride_w;
  const long pos = (long)dx_off + (long)ih * dx_sh + (long)iw * dx_sw;
  for (int z = get_global_id(1); z < planes; z += get_global_size(1)) {
    const int b = CONV_DIV(z, DV_C), c = z - b * C;
    const int g = CONV_DIV(c, DV_CG), ci = c - g * Cg;
    __global const ACC *base = cols + col_off + ((ulong)(b * groups + g) * kg + (ulong)ci * khw) * npix;
    ACC acc = 0;
    if (dil_h == 1 && dil_w == 1) {
      for (int kh = kh0, oh = oh0; kh < KH && oh >= 0; kh += stride_h, --oh) {
        if (oh >= OH) continue;
        for (int kw = kw0, ow = ow0; kw < KW && ow >= 0; kw += stride_w, --ow) {
          if (ow >= OW) continue;
          acc += base[(long)(kh * KW + kw) * npix + oh * OW + ow];
        }
      }
    } else {
      for (int kh = 0; kh < KH; ++kh) {
        const int th = ih + pad_h - kh * dil_h;
        if (th < 0) break;
        if (th % stride_h) continue;
        const int oh = th / stride_h;
        if (oh >= OH) continue;
        for (int kw = 0; kw < KW; ++kw) {
          const int tw = iw + pad_w - kw * dil_w;
          if (tw < 0) break;
          if (tw % stride_w) continue;
          const int ow = tw / stride_w;
          if (ow >= OW) continue;
          acc += base[(long)(kh * KW + kw) * npix + oh * OW + ow];
        }
      }
    }
    STORE_T(DX, pos + b * dx_sn + (long)c * dx_sc, acc);
  }
}

// Adds the weight-gradient slices of conv_depthwise.cl in slice order.
__kernel void conv_dw_weight_sum(int E, int slices, __global const ACC *part, ulong part_off, __global T *DW,
                                 ulong dw_off) {
  const int e = (int)get_global_id(0);
  if (e >= E) return;
  ACC acc = 0;
  for (int sl = 0; sl < slices; ++sl) acc += part[part_off + (ulong)sl * E + e];
  STORE_T(DW, dw_off + e, acc);
}
