// Batch norm over contiguous NCHW data (HW = product of the spatial dims; 1 for (N, C)
// input). Per-channel statistics: one work-group per channel. Per-channel parameters are
// DL_ACC (float, or double for float64) buffers.

inline DL_ACC dl_bn_group_sum(__local DL_ACC* tmp, DL_ACC v) {
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

#define DL_BN_LOOP(body)                                                  \
  for (ulong n = 0; n < N; ++n) {                                         \
    ulong base = (n * C + c) * HW;                                        \
    for (ulong i = get_local_id(0); i < HW; i += get_local_size(0)) { body } \
  }

// Mean and 1/sqrt(biased var + eps) per channel; updates the running statistics when given.
__kernel void bn_stats(__global const DL_T* x, ulong x_off, ulong N, ulong C, ulong HW, DL_ACC eps, DL_ACC momentum,
                       __global DL_ACC* save_mean, ulong sm_off, __global DL_ACC* save_invstd, ulong si_off,
                       __global DL_ACC* run_mean, ulong rm_off, __global DL_ACC* run_var, ulong rv_off, int has_running,
                       __local DL_ACC* tmp) {
  save_mean += sm_off; save_invstd += si_off; run_mean += rm_off; run_var += rv_off;
  ulong c = get_group_id(0);
  ulong M = N * HW;
  DL_ACC s = 0;
  DL_BN_LOOP(s += DL_LOAD(x, x_off + base + i);)
  DL_ACC mean = dl_bn_group_sum(tmp, s) / (DL_ACC)M;
  DL_ACC v = 0;
  DL_BN_LOOP(DL_ACC d = DL_LOAD(x, x_off + base + i) - mean; v += d * d;)
  DL_ACC var = dl_bn_group_sum(tmp, v);
  if (get_local_id(0) == 0) {
    save_mean[c] = mean;
    save_invstd[c] = rsqrt(var / (DL_ACC)M + eps);
    if (has_running) {
      run_mean[c] = (1 - momentum) * run_mean[c] + momentum * mean;
      run_var[c] = (1 - momentum) * run_var[c] + momentum * (M > 1 ? var / (DL_ACC)(M - 1) : var);
    }
  }
}

// y = (x - mean) * invstd * w + b; with from_var, `invstd` holds the running variance.
__kernel void bn_apply(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong total, ulong C,
                       ulong HW, __global const DL_ACC* mean, ulong m_off, __global const DL_ACC* invstd, ulong i_off,
                       int from_var, DL_ACC eps, __global const DL_ACC* w, ulong w_off, __global const DL_ACC* b,
                       ulong b_off, int has_w, int has_b) {
  mean += m_off; invstd += i_off; w += w_off; b += b_off;
  ulong e = get_global_id(0);
  if (e >= total) return;
  ulong c = (e / HW) % C;
  DL_ACC is = from_var ? rsqrt(invstd[c] + eps) : invstd[c];
  DL_ACC r = (DL_LOAD(x, x_off + e) - mean[c]) * is;
  if (has_w) r *= w[c];
  if (has_b) r += b[c];
  DL_STORE(y, y_off + e, r);
}

// Per channel: sum(g) and sum(g * (x - mean)).
__kernel void bn_bwd_reduce(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off, ulong N, ulong C,
                            ulong HW, __global const DL_ACC* mean, ulong m_off, __global DL_ACC* sum_g, ulong sg_off,
                            __global DL_ACC* sum_gx, ulong sgx_off, __local DL_ACC* tmp) {
  mean += m_off; sum_g += sg_off; sum_gx += sgx_off;
  ulong c = get_group_id(0);
  DL_ACC m = mean[c], s1 = 0, s2 = 0;
  DL_BN_LOOP(DL_ACC gv = DL_LOAD(g, g_off + base + i); s1 += gv; s2 += gv * (DL_LOAD(x, x_off + base + i) - m);)
  s1 = dl_bn_group_sum(tmp, s1);
  s2 = dl_bn_group_sum(tmp, s2);
  if (get_local_id(0) == 0) { sum_g[c] = s1; sum_gx[c] = s2; }
}

// Training: gx = w * invstd * (g - sum_g / M - (x - mean) * invstd^2 * sum_gx / M);
// evaluation (statistics are constants): gx = g * w * invstd.
__kernel void bn_bwd_apply(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off,
                           __global DL_T* gx, ulong gx_off, ulong total, ulong C, ulong HW, ulong M,
                           __global const DL_ACC* mean, ulong m_off, __global const DL_ACC* invstd, ulong i_off,
                           __global const DL_ACC* w, ulong w_off, int has_w, __global const DL_ACC* sum_g, ulong sg_off,
                           __global const DL_ACC* sum_gx, ulong sgx_off, int training) {
  mean += m_off; invstd += i_off; w += w_off; sum_g += sg_off; sum_gx += sgx_off;
  ulong e = get_global_id(0);
  if (e >= total) return;
  ulong c = (e / HW) % C;
  DL_ACC is = invstd[c], wc = has_w ? w[c] : (DL_ACC)1;
  DL_ACC gv = DL_LOAD(g, g_off + e);
  DL_ACC r = training ? wc * is * (gv - sum_g[c] / (DL_ACC)M - (DL_LOAD(x, x_off + e) - mean[c]) * is * is * sum_gx[c] / (DL_ACC)M)
                      : gv * wc * is;
  DL_STORE(gx, gx_off + e, r);
}
