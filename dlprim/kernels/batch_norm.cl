// Batch norm over contiguous NCHW data (HW = product of the spatial dims; 1 for (N, C)
// input). Per-channel statistics: work-groups per channel (slices, below). Per-channel parameters are
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

// A work-group reduces channel c over a slice: planes (images) [n0, n1) x positions [i0, i1).
// The group's L items are laid out as L / l0 rows of l0 (l0 >= the slice's positions, a power
// of two, at most L): item (t0, t1) takes planes n0 + t1, n0 + t1 + L / l0, ... and positions
// i0 + t0, i0 + t0 + l0, ..., so every load is coalesced along a plane and no item divides per
// element (small planes such as resnet's 7x7 fill the group with several images at once).
// Slice sl of `i_slices * plane slices`: plane chunk sl / i_slices, position chunk sl % i_slices.
#define DL_BN_GEOMETRY ulong N, ulong C, ulong HW, ulong n_chunk, ulong i_chunk, ulong i_slices, ulong l0
inline void dl_bn_slice(ulong sl, DL_BN_GEOMETRY, ulong* n0, ulong* n1, ulong* i0, ulong* i1) {
  *n0 = (sl / i_slices) * n_chunk;
  *n1 = min(N, *n0 + n_chunk);
  *i0 = (sl % i_slices) * i_chunk;
  *i1 = min(HW, *i0 + i_chunk);
}

#define DL_BN_SLICE_LOOP(body)                                                                      \
  for (ulong n = n0 + get_local_id(0) / l0; n < n1; n += get_local_size(0) / l0) {                 \
    ulong base = (n * C + c) * HW;                                                                  \
    for (ulong i = i0 + get_local_id(0) % l0; i < i1; i += l0) {                                    \
      ulong a = base + i;                                                                           \
      body                                                                                          \
    }                                                                                               \
  }

// Mean and sum of squared deviations of channel c over slice `sl`, in one read: each item runs
// Welford's update over its values (no cancellation, whatever the data: a large mean or an outlier
// costs no low bits), then the group merges the items' (count, mean, m2) pairwise (Chan et al.) in
// a fixed order. For float the update's reciprocal is the hardware one refined by a Newton step
// (two FMAs instead of a division; native_recip's accuracy is the device's own, a Newton step
// squares its relative error, so even a 12-bit one ends at float precision).
#if DL_ACC_IS_DOUBLE
#define DL_BN_RECIP(v) (1.0 / (v))
#else
inline float dl_bn_recip(float v) {
  float r = native_recip(v);
  return r * (2.0f - v * r);
}
#define DL_BN_RECIP(v) dl_bn_recip(v)
#endif
inline void dl_bn_moments(__global const DL_T* x, ulong x_off, ulong c, ulong sl, DL_BN_GEOMETRY, __local DL_ACC* tmp,
                          DL_ACC* count, DL_ACC* mean, DL_ACC* m2) {
  ulong n0, n1, i0, i1;
  dl_bn_slice(sl, N, C, HW, n_chunk, i_chunk, i_slices, l0, &n0, &n1, &i0, &i1);
  DL_ACC mu = 0, sq = 0, cnt = 0;
  DL_BN_SLICE_LOOP(DL_ACC v = DL_LOAD(x, x_off + a); DL_ACC d = v - mu; cnt += 1; mu += d * DL_BN_RECIP(cnt);
                   sq += d * (v - mu);)
  size_t lid = get_local_id(0), L = get_local_size(0);
  __local DL_ACC* tn = tmp;
  __local DL_ACC* tm = tmp + L;
  __local DL_ACC* t2 = tmp + 2 * L;
  barrier(CLK_LOCAL_MEM_FENCE);
  tn[lid] = cnt;
  tm[lid] = mu;
  t2[lid] = sq;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t h = L / 2; h > 0; h >>= 1) {
    if (lid < h && tn[lid + h] > 0) {
      DL_ACC na = tn[lid], nb = tn[lid + h], nt = na + nb, d = tm[lid + h] - tm[lid];
      tm[lid] += d * (nb / nt);
      t2[lid] += t2[lid + h] + d * d * (na * nb / nt);
      tn[lid] = nt;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  *count = tn[0];
  *mean = tm[0];
  *m2 = t2[0];
}

// Mean and 1/sqrt(biased var + eps) per channel (one group per channel: a single slice);
// updates the running statistics when given.
__kernel void bn_stats(__global const DL_T* x, ulong x_off, DL_BN_GEOMETRY, DL_ACC eps, DL_ACC momentum,
                       __global DL_ACC* save_mean, ulong sm_off, __global DL_ACC* save_invstd, ulong si_off,
                       __global DL_ACC* run_mean, ulong rm_off, __global DL_ACC* run_var, ulong rv_off, int has_running,
                       __local DL_ACC* tmp) {
  save_mean += sm_off; save_invstd += si_off; run_mean += rm_off; run_var += rv_off;
  ulong c = get_group_id(0);
  DL_ACC cnt, mean, m2;
  dl_bn_moments(x, x_off, c, 0, N, C, HW, n_chunk, i_chunk, i_slices, l0, tmp, &cnt, &mean, &m2);
  if (get_local_id(0) == 0)
    dl_bn_store_stats(c, N * HW, mean, m2, eps, momentum, save_mean, save_invstd, run_mean, run_var, has_running);
}

// Split statistics (GPUs, few channels over many values): group (c, sl) writes slice sl's mean
// and sum of squared deviations; bn_stats_finish merges the slices in order (the same pairwise
// update), so the result does not depend on scheduling.
__kernel void bn_stats_part(__global const DL_T* x, ulong x_off, DL_BN_GEOMETRY, __global DL_ACC* part, ulong part_off,
                            __local DL_ACC* tmp) {
  part += part_off;
  ulong c = get_group_id(0) % C, sl = get_group_id(0) / C;
  DL_ACC cnt, mean, m2;
  dl_bn_moments(x, x_off, c, sl, N, C, HW, n_chunk, i_chunk, i_slices, l0, tmp, &cnt, &mean, &m2);
  if (get_local_id(0) == 0) {
    part[(sl * C + c) * 2] = mean;
    part[(sl * C + c) * 2 + 1] = m2;
  }
}

__kernel void bn_stats_finish(__global const DL_ACC* part, ulong part_off, DL_BN_GEOMETRY, ulong slices, DL_ACC eps,
                              DL_ACC momentum, __global DL_ACC* save_mean, ulong sm_off, __global DL_ACC* save_invstd,
                              ulong si_off, __global DL_ACC* run_mean, ulong rm_off, __global DL_ACC* run_var,
                              ulong rv_off, int has_running) {
  part += part_off; save_mean += sm_off; save_invstd += si_off; run_mean += rm_off; run_var += rv_off;
  ulong c = get_global_id(0);
  if (c >= C) return;
  DL_ACC n_a = 0, mean = 0, m2 = 0;
  for (ulong sl = 0; sl < slices; ++sl) {
    ulong n0, n1, i0, i1;
    dl_bn_slice(sl, N, C, HW, n_chunk, i_chunk, i_slices, l0, &n0, &n1, &i0, &i1);
    DL_ACC n_b = (DL_ACC)((n1 - n0) * (i1 - i0));
    DL_ACC mean_b = part[(sl * C + c) * 2], m2_b = part[(sl * C + c) * 2 + 1];
    DL_ACC n = n_a + n_b, d = mean_b - mean;
    mean += d * (n_b / n);
    m2 += m2_b + d * d * (n_a * n_b / n);
    n_a = n;
  }
  dl_bn_store_stats(c, N * HW, mean, m2, eps, momentum, save_mean, save_invstd, run_mean, run_var, has_running);
}

// The elementwise passes run on a 2-D range: dimension 1 is the (image, channel) plane, so the
// channel is one division per item; dimension 0 covers the plane's positions, `chunk` per group.
#define DL_BN_PLANE_LOOP(body)                                                      \
  ulong plane = get_global_id(1);                                                   \
  if (plane >= planes) return;                                                      \
  ulong c = plane % C;                                                              \
  ulong i0 = get_group_id(0) * chunk, i1 = min(HW, i0 + chunk);                     \
  for (ulong i = i0 + get_local_id(0); i < i1; i += get_local_size(0)) {            \
    ulong e = plane * HW + i;                                                       \
    body                                                                            \
  }

// y = (x - mean) * invstd * w + b; with from_var, `invstd` holds the running variance.
__kernel void bn_apply(__global const DL_T* x, ulong x_off, __global DL_T* y, ulong y_off, ulong planes, ulong C,
                       ulong HW, ulong chunk, __global const DL_ACC* mean, ulong m_off, __global const DL_ACC* invstd,
                       ulong i_off, int from_var, DL_ACC eps, __global const DL_ACC* w, ulong w_off,
                       __global const DL_ACC* b, ulong b_off, int has_w, int has_b) {
  mean += m_off; invstd += i_off; w += w_off; b += b_off;
  ulong pl = get_global_id(1);
  ulong ch = pl < planes ? pl % C : 0;
  DL_ACC is = from_var ? rsqrt(invstd[ch] + eps) : invstd[ch];
  // (x - mean) * scale, not x * scale + a folded shift: a channel with a large mean keeps its low bits.
  DL_ACC m = mean[ch], scale = has_w ? is * w[ch] : is, shift = has_b ? b[ch] : (DL_ACC)0;
  DL_BN_PLANE_LOOP(DL_STORE(y, y_off + e, (DL_LOAD(x, x_off + e) - m) * scale + shift);)
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

// Sums of channel c over slice `sl` (layout as dl_bn_moments), group-summed.
inline void dl_bn_bwd_sums(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off, ulong c, ulong sl,
                           DL_BN_GEOMETRY, DL_ACC m, __local DL_ACC* tmp, DL_ACC* r1, DL_ACC* r2) {
  ulong n0, n1, i0, i1;
  dl_bn_slice(sl, N, C, HW, n_chunk, i_chunk, i_slices, l0, &n0, &n1, &i0, &i1);
  DL_ACC s1 = 0, s2 = 0;
  DL_BN_SLICE_LOOP(DL_ACC gv = DL_LOAD(g, g_off + a); s1 += gv; s2 += gv * (DL_LOAD(x, x_off + a) - m);)
  *r1 = dl_bn_group_sum(tmp, s1);
  *r2 = dl_bn_group_sum(tmp, s2);
}

__kernel void bn_bwd_reduce(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off, DL_BN_GEOMETRY,
                            __global const DL_ACC* mean, ulong m_off, __local DL_ACC* tmp, DL_BN_BWD_SUMS_ARGS) {
  mean += m_off;
  ulong c = get_group_id(0);
  DL_ACC s1, s2;
  dl_bn_bwd_sums(g, g_off, x, x_off, c, 0, N, C, HW, n_chunk, i_chunk, i_slices, l0, mean[c], tmp, &s1, &s2);
  if (get_local_id(0) == 0) dl_bn_store_bwd_sums(c, s1, s2, sum_g, sg_off, sum_gx, sgx_off, invstd, i_off, gw, gw_off, has_gw);
}

// The same sums over slices (see bn_stats_part); bn_bwd_reduce_finish adds them in order.
__kernel void bn_bwd_reduce_part(__global const DL_T* g, ulong g_off, __global const DL_T* x, ulong x_off,
                                 DL_BN_GEOMETRY, __global const DL_ACC* mean, ulong m_off, __global DL_ACC* part,
                                 ulong part_off, __local DL_ACC* tmp) {
  mean += m_off; part += part_off;
  ulong c = get_group_id(0) % C, sl = get_group_id(0) / C;
  DL_ACC s1, s2;
  dl_bn_bwd_sums(g, g_off, x, x_off, c, sl, N, C, HW, n_chunk, i_chunk, i_slices, l0, mean[c], tmp, &s1, &s2);
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
                           __global DL_T* gx, ulong gx_off, ulong planes, ulong C, ulong HW, ulong chunk, ulong M,
                           __global const DL_ACC* mean, ulong m_off, __global const DL_ACC* invstd, ulong i_off,
                           __global const DL_ACC* w, ulong w_off, int has_w, __global const DL_ACC* sum_g, ulong sg_off,
                           __global const DL_ACC* sum_gx, ulong sgx_off, int training) {
  mean += m_off; invstd += i_off; w += w_off; sum_g += sg_off; sum_gx += sgx_off;
  ulong pl = get_global_id(1);
  ulong ch = pl < planes ? pl % C : 0;
  DL_ACC is = invstd[ch], scale = (has_w ? w[ch] : (DL_ACC)1) * is;
  DL_ACC mg = sum_g[ch] / (DL_ACC)M, m = mean[ch], k = is * is * sum_gx[ch] / (DL_ACC)M;
  if (training) {
    DL_BN_PLANE_LOOP(DL_STORE(gx, gx_off + e, scale * (DL_LOAD(g, g_off + e) - mg - (DL_LOAD(x, x_off + e) - m) * k));)
  } else {
    DL_BN_PLANE_LOOP(DL_STORE(gx, gx_off + e, DL_LOAD(g, g_off + e) * scale);)
  }
}
