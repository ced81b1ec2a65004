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

// Saves mean and 1/sqrt(var + eps) of channel c (var_sum: sum of squared deviations over M
// values) and updates the running statistics (unbiased variance) when asked.
inline void dl_bn_store_stats(ulong c, ulong M, DL_ACC mean, DL_ACC var_sum, DL_ACC eps, DL_ACC momentum,
                              __global DL_ACC* save_mean, __global DL_ACC* save_invstd, __global DL_ACC* run_mean,
                              __global DL_ACC* run_var, int has_running) {
  save_mean[c] = mean;
  save_invstd[c] = rsqrt(var_sum / (DL_ACC)M + eps);
  if (has_running) {
    run_mean[c] = (1 - momentum) * run_mean[c] + momentum * mean;
    run_var[c] = (1 - momentum) * run_var[c] + momentum * (M > 1 ? var_sum / (DL_ACC)(M - 1) : var_sum);
  }
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
  if (get_local_id(0) == 0)
    dl_bn_store_stats(c, M, mean, var, eps, momentum, save_mean, save_invstd, run_mean, run_var, has_running);
}

// Split statistics (GPUs, few channels over many positions): group (c, sl) takes positions
// [sl * chunk, (sl + 1) * chunk) of channel c's N * HW and writes its mean and sum of squared
// deviations; bn_stats_finish merges the slices in order (Chan et al.'s pairwise update), so
// the result is as accurate as the two-pass bn_stats and independent of scheduling.
inline ulong dl_bn_addr(ulong j, ulong C, ulong c, ulong HW) {
  ulong n = j / HW;
  return (n * C + c) * HW + (j - n * HW);
}

#define DL_BN_SLICE_LOOP(body)                                                            \
  for (ulong j = j0 + get_local_id(0); j < j1; j += get_local_size(0)) {                   \
    ulong a = dl_bn_addr(j, C, c, HW);                                                     \
    body                                                                                   \
  }

__kernel void bn_stats_part(__global const DL_T* x, ulong x_off, ulong N, ulong C, ulong HW, ulong chunk,
                            __global DL_ACC* part, ulong part_off, __local DL_ACC* tmp) {
  part += part_off;
  ulong c = get_group_id(0) % C, sl = get_group_id(0) / C;
  ulong j0 = sl * chunk, j1 = min(N * HW, j0 + chunk);
  DL_ACC s = 0;
  DL_BN_SLICE_LOOP(s += DL_LOAD(x, x_off + a);)
  DL_ACC mean = dl_bn_group_sum(tmp, s) / (DL_ACC)(j1 - j0);
  DL_ACC v = 0;
  DL_BN_SLICE_LOOP(DL_ACC d = DL_LOAD(x, x_off + a) - mean; v += d * d;)
  v = dl_bn_group_sum(tmp, v);
  if (get_local_id(0) == 0) {
    part[(sl * C + c) * 2] = mean;
    part[(sl * C + c) * 2 + 1] = v;
  }
}

__kernel void bn_stats_finish(__global const DL_ACC* part, ulong part_off, ulong M, ulong C, ulong chunk, ulong slices,
                              DL_ACC eps, DL_ACC momentum, __global DL_ACC* save_mean, ulong sm_off,
                              __global DL_ACC* save_invstd, ulong si_off, __global DL_ACC* run_mean, ulong rm_off,
                              __global DL_ACC* run_var, ulong rv_off, int has_running) {
  part += part_off; save_mean += sm_off; save_invstd += si_off; run_mean += rm_off; run_var += rv_off;
  ulong c = get_global_id(0);
  if (c >= C) return;
  DL_ACC n_a = 0, mean = 0, m2 = 0;
  for (ulong sl = 0; sl < slices; ++sl) {
    DL_ACC n_b = (DL_ACC)(min(M, (sl + 1) * chunk) - sl * chunk);
    DL_ACC mean_b = part[(sl * C + c) * 2], m2_b = part[(sl * C + c) * 2 + 1];
    DL_ACC n = n_a + n_b, d = mean_b - mean;
    mean += d * (n_b / n);
    m2 += m2_b + d * d * (n_a * n_b / n);
    n_a = n;
  }
  dl_bn_store_stats(c, M, mean, m2, eps, momentum, save_mean, save_invstd, run_mean, run_var, has_running);
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
// The per-channel sums of the backward pass; with has_gw, also the weight gradient sum_gx * invstd.
#define DL_BN_BWD_SUMS_ARGS                                                                          \
  __global DL_ACC *sum_g, ulong sg_off, __global DL_ACC *sum_gx, ulong sgx_off, __global const DL_ACC *invstd, \
      ulong i_off, __global DL_ACC *gw, ulong gw_off, int has_gw
inline void dl_bn_store_bwd_sums(ulong c, DL_ACC s1, DL_ACC s2, DL_BN_BWD_SUMS_ARGS) {
  sum_g[sg_off + c] = s1;
  sum_gx[sgx_off + c] = s2;
  if (has_gw) gw[gw_off + c] = s2 * invstd[i_off + c];
}

__kernel void bn_bwd_reduce(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off, ulong N, ulong C,
                            ulong HW, __global const DL_ACC* mean, ulong m_off, __local DL_ACC* tmp,
                            DL_BN_BWD_SUMS_ARGS) {
  mean += m_off;
  ulong c = get_group_id(0);
  DL_ACC m = mean[c], s1 = 0, s2 = 0;
  DL_BN_LOOP(DL_ACC gv = DL_LOAD(g, g_off + base + i); s1 += gv; s2 += gv * (DL_LOAD(x, x_off + base + i) - m);)
  s1 = dl_bn_group_sum(tmp, s1);
  s2 = dl_bn_group_sum(tmp, s2);
  if (get_local_id(0) == 0) dl_bn_store_bwd_sums(c, s1, s2, sum_g, sg_off, sum_gx, sgx_off, invstd, i_off, gw, gw_off, has_gw);
}

// The same sums over slices (see bn_stats_part); bn_bwd_reduce_finish adds them in order.
__kernel void bn_bwd_reduce_part(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off, ulong N,
                                 ulong C, ulong HW, ulong chunk, __global const DL_ACC* mean, ulong m_off,
                                 __global DL_ACC* part, ulong part_off, __local DL_ACC* tmp) {
  mean += m_off; part += part_off;
  ulong c = get_group_id(0) % C, sl = get_group_id(0) / C;
  ulong j0 = sl * chunk, j1 = min(N * HW, j0 + chunk);
  DL_ACC m = mean[c], s1 = 0, s2 = 0;
  DL_BN_SLICE_LOOP(DL_ACC gv = DL_LOAD(g, g_off + a); s1 += gv; s2 += gv * (DL_LOAD(x, x_off + a) - m);)
  s1 = dl_bn_group_sum(tmp, s1);
  s2 = dl_bn_group_sum(tmp, s2);
  if (get_local_id(0) == 0) {
    part[(sl * C + c) * 2] = s1;
    part[(sl * C + c) * 2 + 1] = s2;
  }
}

__kernel void bn_bwd_reduce_finish(__global const DL_ACC* part, ulong part_off, ulong C, ulong slices,
                                   DL_BN_BWD_SUMS_ARGS) {
  part += part_off;
  ulong c = get_global_id(0);
  if (c >= C) return;
  DL_ACC s1 = 0, s2 = 0;
  for (ulong sl = 0; sl < slices; ++sl) {
    s1 += part[(sl * C + c) * 2];
    s2 += part[(sl * C + c) * 2 + 1];
  }
  dl_bn_store_bwd_sums(c, s1, s2, sum_g, sg_off, sum_gx, sgx_off, invstd, i_off, gw, gw_off, has_gw);
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
