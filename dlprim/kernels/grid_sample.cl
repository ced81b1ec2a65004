// grid_sample (grid_sampler_2d / grid_sampler_3d) forward and backward, one work-item per output
// location (n, od, oh, ow) looping over the channels, as PyTorch's CUDA kernels do. 2-D calls use
// dims = 2, D = OD = 1 and no z coordinate. mode: 0 bilinear (trilinear in 3-D), 1 nearest,
// 2 bicubic (2-D only); pad: 0 zeros, 1 border, 2 reflection. The coordinate arithmetic follows
// PyTorch's published GridSampler formulas (unnormalise, clip / reflect, safe int range; bicubic
// with A = -0.75 and the taps clipped / reflected one by one), in DL_ACC.
// The backward scatters the input gradient with compare-and-swap atomics into a DL_ACC buffer
// (float32 for 16-bit dtypes, which the host rounds afterwards; float64 needs
// cl_khr_int64_base_atomics) and writes the grid gradient directly.

#if DL_ACC_IS_DOUBLE && defined(cl_khr_int64_base_atomics)
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#endif

inline void dl_gs_atomic_add(__global DL_ACC* p, DL_ACC v) {
#if DL_ACC_IS_DOUBLE
#if defined(cl_khr_int64_base_atomics)
  volatile __global ulong* q = (volatile __global ulong*)p;
  ulong old = atom_add(q, (ulong)0), seen;  // an atomic read: a plain one races with the CAS
  do {
    seen = old;
    old = atom_cmpxchg(q, seen, as_ulong(as_double(seen) + v));
  } while (old != seen);
#endif
#else
  volatile __global uint* q = (volatile __global uint*)p;
  uint old = atomic_add(q, 0u), seen;  // an atomic read: a plain one races with the CAS
  do {
    seen = old;
    old = atomic_cmpxchg(q, seen, as_uint(as_float(seen) + v));
  } while (old != seen);
#endif
}

// [-1, 1] -> pixel index; *g = d(index) / d(coord).
inline DL_ACC dl_gs_unnormalize(DL_ACC c, int size, int align, DL_ACC* g) {
  if (align) {
    *g = (DL_ACC)(size - 1) / 2;
    return ((c + 1) / 2) * (size - 1);
  }
  *g = (DL_ACC)size / 2;
  return ((c + 1) * size - 1) / 2;
}

// Clips to [0, size - 1]; the borders count as clipped for the gradient.
inline DL_ACC dl_gs_clip(DL_ACC v, int size, DL_ACC* g) {
  DL_ACC hi = (DL_ACC)(size - 1);
  if (v <= 0) { *g = 0; return 0; }
  if (v >= hi) { *g = 0; return hi; }
  *g = 1;
  return v;
}

// Reflects into [twice_low / 2, twice_high / 2].
inline DL_ACC dl_gs_reflect(DL_ACC v, int twice_low, int twice_high, DL_ACC* g) {
  if (twice_low == twice_high) { *g = 0; return 0; }
  DL_ACC lo = (DL_ACC)twice_low / 2, span = (DL_ACC)(twice_high - twice_low) / 2, sign = 1;
  v -= lo;
  if (v < 0) { sign = -1; v = -v; }
  DL_ACC extra = fmod(v, span);
  int flips = (int)floor(v / span);
  if (flips % 2 == 0) { *g = sign; return extra + lo; }
  *g = -sign;
  return span - extra + lo;
}

// Out-of-int-range and non-finite coordinates become -100: outside any image.
inline DL_ACC dl_gs_safe(DL_ACC c) { return (c > -2147483648.0f && c < 2147483646.0f) ? c : (DL_ACC)-100; }

// The padding mode applied to an unnormalised coordinate; *g is multiplied by its derivative.
inline DL_ACC dl_gs_pad(DL_ACC c, int size, int pad, int align, DL_ACC* g) {
  DL_ACC gc, gr;
  if (pad == 1) {
    c = dl_gs_clip(c, size, &gc);
    *g *= gc;
  } else if (pad == 2) {
    c = align ? dl_gs_reflect(c, 0, 2 * (size - 1), &gr) : dl_gs_reflect(c, -1, 2 * size - 1, &gr);
    c = dl_gs_clip(c, size, &gc);
    *g *= gr * gc;
  }
  return dl_gs_safe(c);
}

inline DL_ACC dl_gs_source(DL_ACC c, int size, int pad, int align, DL_ACC* g) {
  c = dl_gs_unnormalize(c, size, align, g);
  return dl_gs_pad(c, size, pad, align, g);
}

inline DL_ACC dl_gs_cubic1(DL_ACC x) { const DL_ACC A = -0.75; return ((A + 2) * x - (A + 3)) * x * x + 1; }
inline DL_ACC dl_gs_cubic2(DL_ACC x) { const DL_ACC A = -0.75; return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }
inline DL_ACC dl_gs_dcubic1(DL_ACC x) { const DL_ACC A = -0.75; return (3 * (A + 2) * x - 2 * (A + 3)) * x; }
inline DL_ACC dl_gs_dcubic2(DL_ACC x) { const DL_ACC A = -0.75; return (3 * A * x - 10 * A) * x + 8 * A; }

// The four bicubic weights of fraction t and their derivatives in t.
inline void dl_gs_cubic_coeffs(DL_ACC t, DL_ACC* w, DL_ACC* dw) {
  w[0] = dl_gs_cubic2(t + 1);
  w[1] = dl_gs_cubic1(t);
  w[2] = dl_gs_cubic1(1 - t);
  w[3] = dl_gs_cubic2(2 - t);
  dw[0] = dl_gs_dcubic2(t + 1);
  dw[1] = dl_gs_dcubic1(t);
  dw[2] = -dl_gs_dcubic1(1 - t);
  dw[3] = -dl_gs_dcubic2(2 - t);
}

// A bicubic tap's integer coordinate after padding, or -1 when it falls outside (zeros).
inline int dl_gs_tap(int i, int size, int pad, int align) {
  DL_ACC g = 1;
  int c = (int)dl_gs_pad((DL_ACC)i, size, pad, align, &g);
  return (c >= 0 && c < size) ? c : -1;
}

// Sizes: sz = (N, C, D, H, W, OD, OH, OW); cfg = (dims, mode, pad, align). Strides (elements):
// xs / ys / gos over (N, C, D, H, W); gs over (N, D, H, W, coordinate).
typedef struct {
  int n, od, oh, ow;
  DL_ACC ix, iy, iz;     // source coordinates (bicubic: unnormalised only)
  DL_ACC mx, my, mz;     // their derivatives in the grid coordinates
} dl_gs_point;

inline dl_gs_point dl_gs_locate(ulong i, int8 sz, int4 cfg, __global const DL_T* g, ulong g_off, long8 gs) {
  dl_gs_point p;
  p.ow = (int)(i % (ulong)sz.s7);
  i /= (ulong)sz.s7;
  p.oh = (int)(i % (ulong)sz.s6);
  i /= (ulong)sz.s6;
  p.od = (int)(i % (ulong)sz.s5);
  p.n = (int)(i / (ulong)sz.s5);
  ulong gp = g_off + p.n * gs.s0 + p.od * gs.s1 + p.oh * gs.s2 + p.ow * gs.s3;
  DL_ACC cx = DL_LOAD(g, gp), cy = DL_LOAD(g, gp + gs.s4);
  DL_ACC cz = cfg.s0 == 3 ? DL_LOAD(g, gp + 2 * gs.s4) : 0;
  if (cfg.s1 == 2) {
    p.ix = dl_gs_unnormalize(cx, sz.s4, cfg.s3, &p.mx);
    p.iy = dl_gs_unnormalize(cy, sz.s3, cfg.s3, &p.my);
    p.iz = 0;
    p.mz = 0;
  } else {
    p.ix = dl_gs_source(cx, sz.s4, cfg.s2, cfg.s3, &p.mx);
    p.iy = dl_gs_source(cy, sz.s3, cfg.s2, cfg.s3, &p.my);
    p.iz = 0;
    p.mz = 0;
    if (cfg.s0 == 3) p.iz = dl_gs_source(cz, sz.s2, cfg.s2, cfg.s3, &p.mz);
  }
  return p;
}

// The (up to 8) linear corners of p, k = (z, y, x) bits: integer coordinates (cx = -1 outside
// the image) and weight. Returns the corner count.
// The 4 x 4 bicubic taps around point p (2-D): weights and their derivatives along x and y, and the
// padded integer coordinates (-1: outside, reads as zero). Shared by the forward and backward kernels.
inline void dl_gs_bicubic_taps(dl_gs_point p, int8 sz, int4 cfg, DL_ACC* wx, DL_ACC* wy, DL_ACC* dwx, DL_ACC* dwy,
                               int* tx, int* ty) {
  DL_ACC fx = floor(p.ix), fy = floor(p.iy);
  dl_gs_cubic_coeffs(p.ix - fx, wx, dwx);
  dl_gs_cubic_coeffs(p.iy - fy, wy, dwy);
  for (int k = 0; k < 4; ++k) {
    tx[k] = dl_gs_tap((int)fx - 1 + k, sz.s4, cfg.s2, cfg.s3);
    ty[k] = dl_gs_tap((int)fy - 1 + k, sz.s3, cfg.s2, cfg.s3);
  }
}

inline int dl_gs_corners(dl_gs_point p, int8 sz, int dims, int* cx, int* cy, int* cz, DL_ACC* w) {
  int x0 = (int)floor(p.ix), y0 = (int)floor(p.iy), z0 = (int)floor(p.iz);
  DL_ACC wx[2] = {(DL_ACC)(x0 + 1) - p.ix, p.ix - (DL_ACC)x0};
  DL_ACC wy[2] = {(DL_ACC)(y0 + 1) - p.iy, p.iy - (DL_ACC)y0};
  DL_ACC wz[2] = {(DL_ACC)(z0 + 1) - p.iz, p.iz - (DL_ACC)z0};
  if (dims == 2) { wz[0] = 1; wz[1] = 0; }
  int k = 0;
  for (int a = 0; a < (dims == 3 ? 2 : 1); ++a)
    for (int b = 0; b < 2; ++b)
      for (int c = 0; c < 2; ++c, ++k) {
        cx[k] = x0 + c;
        cy[k] = y0 + b;
        cz[k] = dims == 3 ? z0 + a : 0;
        bool inside = cx[k] >= 0 && cx[k] < sz.s4 && cy[k] >= 0 && cy[k] < sz.s3 && cz[k] >= 0 && cz[k] < sz.s2;
        if (!inside) cx[k] = -1;
        w[k] = wx[c] * wy[b] * wz[a];
      }
  return k;
}

__kernel void dl_grid_sample_fwd(ulong total, int8 sz, int4 cfg, __global const DL_T* x, ulong x_off, long8 xs,
                                 __global const DL_T* g, ulong g_off, long8 gs, __global DL_T* y, ulong y_off,
                                 long8 ys) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  dl_gs_point p = dl_gs_locate(i, sz, cfg, g, g_off, gs);
  long xb = x_off + p.n * xs.s0;
  long yb = y_off + p.n * ys.s0 + p.od * ys.s2 + p.oh * ys.s3 + p.ow * ys.s4;
  if (cfg.s1 == 0) {
    int cx[8], cy[8], cz[8];
    DL_ACC w[8];
    int nc = dl_gs_corners(p, sz, cfg.s0, cx, cy, cz, w);
    for (int c = 0; c < sz.s1; ++c) {
      DL_ACC acc = 0;
      for (int k = 0; k < nc; ++k)
        if (cx[k] >= 0) acc += DL_LOAD(x, xb + c * xs.s1 + cz[k] * xs.s2 + cy[k] * xs.s3 + cx[k] * xs.s4) * w[k];
      DL_STORE(y, yb + c * ys.s1, acc);
    }
  } else if (cfg.s1 == 1) {
    int nx = (int)rint(p.ix), ny = (int)rint(p.iy), nz = (int)rint(p.iz);
    bool inside = nx >= 0 && nx < sz.s4 && ny >= 0 && ny < sz.s3 && nz >= 0 && nz < sz.s2;
    for (int c = 0; c < sz.s1; ++c) {
      DL_ACC v = inside ? DL_LOAD(x, xb + c * xs.s1 + nz * xs.s2 + ny * xs.s3 + nx * xs.s4) : (DL_ACC)0;
      DL_STORE(y, yb + c * ys.s1, v);
    }
  } else {
    DL_ACC wx[4], wy[4], dwx[4], dwy[4];
    int tx[4], ty[4];
    dl_gs_bicubic_taps(p, sz, cfg, wx, wy, dwx, dwy, tx, ty);
    for (int c = 0; c < sz.s1; ++c) {
      DL_ACC acc = 0;
      for (int b = 0; b < 4; ++b) {
        DL_ACC row = 0;
        for (int a = 0; a < 4; ++a) {
          DL_ACC v = (tx[a] >= 0 && ty[b] >= 0) ? DL_LOAD(x, xb + c * xs.s1 + ty[b] * xs.s3 + tx[a] * xs.s4) : 0;
          row += v * wx[a];
        }
        acc += row * wy[b];
      }
      DL_STORE(y, yb + c * ys.s1, acc);
    }
  }
}

// want = (input gradient, grid gradient). gi: contiguous [N, C, D, H, W] accumulator (zeroed);
// gg: contiguous [N, OD, OH, OW, dims].
__kernel void dl_grid_sample_bwd(ulong total, int8 sz, int4 cfg, int2 want, __global const DL_T* go, ulong go_off,
                                 long8 gos, __global const DL_T* x, ulong x_off, long8 xs, __global const DL_T* g,
                                 ulong g_off, long8 gs, __global DL_ACC* gi, ulong gi_off, __global DL_T* gg,
                                 ulong gg_off) {
  ulong i = get_global_id(0);
  if (i >= total) return;
  dl_gs_point p = dl_gs_locate(i, sz, cfg, g, g_off, gs);
  long xb = x_off + p.n * xs.s0;
  long ob = go_off + p.n * gos.s0 + p.od * gos.s2 + p.oh * gos.s3 + p.ow * gos.s4;
  long ib = gi_off + (long)p.n * sz.s1 * sz.s2 * sz.s3 * sz.s4;
  long isc = (long)sz.s2 * sz.s3 * sz.s4, isd = (long)sz.s3 * sz.s4, ish = sz.s4;
  DL_ACC gx = 0, gy = 0, gz = 0;
  if (cfg.s1 == 0) {
    int cx[8], cy[8], cz[8];
    DL_ACC w[8];
    int nc = dl_gs_corners(p, sz, cfg.s0, cx, cy, cz, w);
    // The grid gradient in the CPU kernels' product order (2-D: its vectorised form from the
    // fractions; 3-D: value * other-axis weights * gout per corner), so sums round alike.
    DL_ACC fw = p.ix - floor(p.ix), fn = p.iy - floor(p.iy), fe = 1 - fw, fs = 1 - fn;
    DL_ACC x0 = floor(p.ix), y0 = floor(p.iy), z0 = floor(p.iz);
    DL_ACC wx[2] = {x0 + 1 - p.ix, p.ix - x0}, wy[2] = {y0 + 1 - p.iy, p.iy - y0}, wz[2] = {z0 + 1 - p.iz, p.iz - z0};
    for (int c = 0; c < sz.s1; ++c) {
      DL_ACC gout = DL_LOAD(go, ob + c * gos.s1), v[8];
      for (int k = 0; k < nc; ++k) {
        v[k] = 0;
        if (cx[k] < 0) continue;
        if (want.s0) dl_gs_atomic_add(gi + ib + c * isc + cz[k] * isd + cy[k] * ish + cx[k], w[k] * gout);
        if (want.s1) v[k] = DL_LOAD(x, xb + c * xs.s1 + cz[k] * xs.s2 + cy[k] * xs.s3 + cx[k] * xs.s4);
      }
      if (!want.s1) continue;
      if (cfg.s0 == 2) {
        gx += ((v[1] - v[0]) * fs + (v[3] - v[2]) * fn) * gout;
        gy += ((v[2] - v[0]) * fe + (v[3] - v[1]) * fw) * gout;
      } else {
        for (int k = 0; k < 8; ++k) {
          int a = k >> 2, b = (k >> 1) & 1, e = k & 1;
          DL_ACC tx = v[k] * wy[b] * wz[a] * gout, ty = v[k] * wx[e] * wz[a] * gout, tz = v[k] * wx[e] * wy[b] * gout;
          gx = e ? gx + tx : gx - tx;
          gy = b ? gy + ty : gy - ty;
          gz = a ? gz + tz : gz - tz;
        }
      }
    }
  } else if (cfg.s1 == 1) {
    int nx = (int)rint(p.ix), ny = (int)rint(p.iy), nz = (int)rint(p.iz);
    bool inside = nx >= 0 && nx < sz.s4 && ny >= 0 && ny < sz.s3 && nz >= 0 && nz < sz.s2;
    if (want.s0 && inside)
      for (int c = 0; c < sz.s1; ++c)
        dl_gs_atomic_add(gi + ib + c * isc + nz * isd + ny * ish + nx, DL_LOAD(go, ob + c * gos.s1));
  } else {
    DL_ACC wx[4], wy[4], dwx[4], dwy[4];
    int tx[4], ty[4];
    dl_gs_bicubic_taps(p, sz, cfg, wx, wy, dwx, dwy, tx, ty);
    for (int c = 0; c < sz.s1; ++c) {
      DL_ACC gout = DL_LOAD(go, ob + c * gos.s1);
      for (int b = 0; b < 4; ++b)
        for (int a = 0; a < 4; ++a) {
          if (tx[a] < 0 || ty[b] < 0) continue;
          if (want.s0) dl_gs_atomic_add(gi + ib + c * isc + ty[b] * ish + tx[a], gout * wx[a] * wy[b]);
          if (want.s1) {
            DL_ACC v = DL_LOAD(x, xb + c * xs.s1 + ty[b] * xs.s3 + tx[a] * xs.s4);
            gx += v * dwx[a] * wy[b] * gout;
            gy += v * dwy[b] * wx[a] * gout;
          }
        }
    }
  }
  if (want.s1) {
    ulong o = gg_off + i * (ulong)cfg.s0;
    DL_STORE(gg, o, p.mx * gx);
    DL_STORE(gg, o + 1, p.my * gy);
    if (cfg.s0 == 3) DL_STORE(gg, o + 2, p.mz * gz);
  }
}
