// Layer norm over the last N elements of each row (rows contiguous), one work-group per
// row. DL_LOAD(p, i) / DL_STORE(p, i, v) convert between the storage type DL_T and float or
// double (DL_ACC); statistics are DL_ACC.

inline DL_ACC dl_group_sum(__local DL_ACC* tmp, DL_ACC v) {
  size_t lid = get_local_id(0), L = get_local_size(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  tmp[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = L / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return tmp[0];
}

__kernel void layer_norm_fwd(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off,
                             __global const DL_T* w, ulong w_off, __global const DL_T* b, ulong b_off,
                             __global DL_ACC* mean_out, ulong mean_off, __global DL_ACC* rstd_out, ulong rstd_off,
                             ulong N, DL_ACC eps, int has_w, int has_b, __local DL_ACC* tmp) {
  ulong row = get_group_id(0);
  size_t lid = get_local_id(0), L = get_local_size(0);
  __global const DL_T* xr = x + x_off + row * N;
  DL_ACC s = 0;
  for (ulong i = lid; i < N; i += L) s += DL_LOAD(xr, i);
  DL_ACC mean = dl_group_sum(tmp, s) / (DL_ACC)N;
  DL_ACC v = 0;
  for (ulong i = lid; i < N; i += L) { DL_ACC d = DL_LOAD(xr, i) - mean; v += d * d; }
  DL_ACC rstd = rsqrt(dl_group_sum(tmp, v) / (DL_ACC)N + eps);
  __global DL_T* yr = y + y_off + row * N;
  for (ulong i = lid; i < N; i += L) {
    DL_ACC r = (DL_LOAD(xr, i) - mean) * rstd;
    if (has_w) r *= DL_LOAD(w, w_off + i);
    if (has_b) r += DL_LOAD(b, b_off + i);
    DL_STORE(yr, i, r);
  }
  if (lid == 0) { mean_out[mean_off + row] = mean; rstd_out[rstd_off + row] = rstd; }
}

// dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w*xhat)), xhat = (x - mean) * rstd
__kernel void layer_norm_bwd_input(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off,
                                   __global const DL_T* w, ulong w_off, __global const DL_ACC* mean_in, ulong mean_off,
                                   __global const DL_ACC* rstd_in, ulong rstd_off, __global DL_T* dx, ulong dx_off,
                                   ulong N, int has_w, __local DL_ACC* tmp) {
  ulong row = get_group_id(0);
  size_t lid = get_local_id(0), L = get_local_size(0);
  __global const DL_T* gr = g + g_off + row * N;
  __global const DL_T* xr = x + x_off + row * N;
  DL_ACC mean = mean_in[mean_off + row], rstd = rstd_in[rstd_off + row];
  DL_ACC s1 = 0, s2 = 0;
  for (ulong i = lid; i < N; i += L) {
    DL_ACC gw = DL_LOAD(gr, i) * (has_w ? DL_LOAD(w, w_off + i) : (DL_ACC)1);
    s1 += gw;
    s2 += gw * (DL_LOAD(xr, i) - mean) * rstd;
  }
  DL_ACC m1 = dl_group_sum(tmp, s1) / (DL_ACC)N;
  DL_ACC m2 = dl_group_sum(tmp, s2) / (DL_ACC)N;
  __global DL_T* dr = dx + dx_off + row * N;
  for (ulong i = lid; i < N; i += L) {
    DL_ACC gw = DL_LOAD(gr, i) * (has_w ? DL_LOAD(w, w_off + i) : (DL_ACC)1);
    DL_ACC xhat = (DL_LOAD(xr, i) - mean) * rstd;
    DL_STORE(dr, i, rstd * (gw - m1 - xhat * m2));
  }
}
