// Reflection / replication padding over contiguous planes of (D, H, W) (1-D and 2-D use
// leading sizes of 1). mode 0: reflect (mirror without repeating the border), 1: replicate.
// Forward gathers the source of each output; backward gathers, for each input element,
// the outputs that read it (at most three runs per axis), so no atomics are needed.

// Source index along an axis for output o, with `p` elements padded before.
inline int dl_pad_src(int mode, int o, int I, int p) {
  int i = o - p;
  if (mode == 0) {
    if (i < 0) i = -i;
    if (i >= I) i = 2 * (I - 1) - i;
    return i;
  }
  return min(max(i, 0), I - 1);
}

// Run r (0..2) of outputs that read input i: [x, y) clipped to [0, O).
inline int2 dl_pad_run(int mode, int r, int i, int I, int O, int p) {
  int a = 0, b = 0;
  if (r == 1) { a = i + p; b = a + 1; }
  else if (mode == 0) {
    if (r == 0 && i > 0) { a = p - i; b = a + 1; }
    if (r == 2 && i < I - 1) { a = p + 2 * (I - 1) - i; b = a + 1; }
  } else {
    if (r == 0 && i == 0) { a = 0; b = p; }
    if (r == 2 && i == I - 1) { a = p + I; b = O; }
  }
  // A run that lands inside the copied range belongs to another input (cropping pads).
  if (r != 1 && a >= p && b <= p + I) b = a;
  return (int2)(max(a, 0), min(b, O));
}

__kernel void pad_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total, int4 in,
                      int4 out, int4 pad, int mode) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int ow = e % out.z, oh = (e / out.z) % out.y, od = (e / ((ulong)out.z * out.y)) % out.x;
  ulong plane = e / ((ulong)out.z * out.y * out.x);
  int id = dl_pad_src(mode, od, in.x, pad.x), ih = dl_pad_src(mode, oh, in.y, pad.y), iw = dl_pad_src(mode, ow, in.z, pad.z);
  // Through DL_ACC (exact for every type): half storage cannot be assigned without cl_khr_fp16.
  DL_STORE(y, y_off + e, DL_LOAD(x, x_off + ((plane * in.x + id) * in.y + ih) * in.z + iw));
}

__kernel void pad_bwd(__global const DL_T* gy, ulong gy_off, __global DL_T* gx, ulong gx_off, ulong total, int4 in,
                      int4 out, int4 pad, int mode) {
  ulong e = get_global_id(0);
  if (e >= total) return;
  int iw = e % in.z, ih = (e / in.z) % in.y, id = (e / ((ulong)in.z * in.y)) % in.x;
  ulong plane = e / ((ulong)in.z * in.y * in.x);
  __global const DL_T* gp = gy + gy_off + plane * (ulong)out.x * out.y * out.z;
  DL_ACC acc = 0;
  for (int rd = 0; rd < 3; ++rd) {
    int2 d = dl_pad_run(mode, rd, id, in.x, out.x, pad.x);
    for (int od = d.x; od < d.y; ++od)
      for (int rh = 0; rh < 3; ++rh) {
        int2 h = dl_pad_run(mode, rh, ih, in.y, out.y, pad.y);
        for (int oh = h.x; oh < h.y; ++oh)
          for (int rw = 0; rw < 3; ++rw) {
            int2 w = dl_pad_run(mode, rw, iw, in.z, out.z, pad.z);
            for (int ow = w.x; ow < w.y; ++ow) acc += DL_LOAD(gp, ((ulong)od * out.y + oh) * out.z + ow);
          }
      }
  }
  DL_STORE(gx, gx_off + e, acc);
}
