// Negative log likelihood over log-probabilities laid out (B, C, S) contiguous (S = spatial
// size, 1 for (B, C) input); one work-item per sample (b, s). Targets are int64; an
// out-of-range target yields NaN (there is no way to raise from the device).

__kernel void nll_per_sample(__global const DL_T* x, ulong x_off, __global const long* target, ulong t_off,
                             __global const DL_T* w, ulong w_off, int has_w, __global DL_ACC* loss, ulong l_off,
                             __global DL_ACC* weight_used, ulong wu_off, ulong n, long C, ulong S, long ignore_index) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long t = target[t_off + i];
  DL_ACC l = 0, wt = 0;
  if (t != ignore_index) {
    if (t < 0 || t >= C) {
      l = NAN;
      wt = NAN;
    } else {
      wt = has_w ? DL_LOAD(w, w_off + t) : (DL_ACC)1;
      ulong b = i / S, s = i % S;
      l = -wt * DL_LOAD(x, x_off + ((ulong)b * C + t) * S + s);
    }
  }
  loss[l_off + i] = l;
  weight_used[wu_off + i] = wt;
}

// grad_input must be zero-filled; writes the one non-zero entry of each sample's row.
// per_sample: grad_output has one value per sample (reduction none), else one scalar;
// with divide, the gradient is divided by the total weight (mean reduction), read on the device.
__kernel void nll_backward(__global const DL_T* g, ulong g_off, int per_sample, __global const DL_T* tw, ulong tw_off,
                           int divide,
                           __global const long* target, ulong t_off, __global const DL_T* w, ulong w_off, int has_w,
                           __global DL_T* gx, ulong gx_off, ulong n, long C, ulong S, long ignore_index) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long t = target[t_off + i];
  if (t == ignore_index || t < 0 || t >= C) return;
  DL_ACC wt = has_w ? DL_LOAD(w, w_off + t) : (DL_ACC)1;
  DL_ACC gv = DL_LOAD(g, g_off + (per_sample ? i : 0));
  ulong b = i / S, s = i % S;
  if (divide) gv /= DL_LOAD(tw, tw_off);
  DL_STORE(gx, gx_off + ((ulong)b * C + t) * S + s, -wt * gv);
}
