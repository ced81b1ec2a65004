// Multinomial sampling, one work-group per distribution (row of `n_cat` probabilities).
// Needs philox.cl; DL_T (storage type), DL_MT (math type), DL_LOAD(p, i) and DL_UNIFORM_OPEN(seed, i, offset)
// are defined by the host.
//
// With replacement: the row's running sums go to the workspace (each work-item a contiguous chunk,
// offset by the sums of the chunks before it); each sample is a binary search for u * total.
// Without replacement: key_c = p_c / E_c with E_c ~ Exp(1) (the exponential form of the Gumbel-max
// trick); the samples are the categories of the n_sample largest keys, taken one at a time.
//
// flags[row]: bit 0 an element is negative, infinite or NaN; bit 1 the sum is not positive.

#define DL_TAKEN ((DL_MT)-1)

__kernel void dl_multinomial(__global const DL_T* p, ulong po, long prs, long pcs, long n_cat,
                             __global long* out, ulong oo, long ors, long ocs, long n_sample, int replacement,
                             ulong seed, ulong philox_offset, __global DL_MT* ws, ulong wso, __global int* flags, ulong fo,
                             __local DL_MT* lval, __local long* lidx) {
  long row = get_group_id(0);
  int lid = get_local_id(0), wg = get_local_size(0);
  __global DL_MT* w = ws + wso + row * n_cat;
  long chunk = (n_cat + wg - 1) / wg;
  long lo = min(n_cat, lid * chunk), hi = min(n_cat, lo + chunk);
  DL_MT s = 0;
  long bad = 0, last_positive = -1;
  for (long c = lo; c < hi; ++c) {
    DL_MT x = DL_LOAD(p, (long)po + row * prs + c * pcs);
    if (!(x >= 0) || isinf(x)) bad = 1;
    if (x > 0) last_positive = c;
    s += x;
    if (replacement) {
      w[c] = s;
    } else {
      DL_MT e = -log(DL_UNIFORM_OPEN(seed, (ulong)(row * n_cat + c), philox_offset));
      w[c] = x > 0 ? x / e : 0;
    }
  }
  lval[lid] = s;
  lidx[lid] = bad | (last_positive + 1) << 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) {
    // Exclusive prefix of the chunk sums; lidx[0] gathers the flags and the last positive category.
    DL_MT run = 0;
    long any_bad = 0, last = -1;
    for (int t = 0; t < wg; ++t) {
      DL_MT v = lval[t];
      lval[t] = run;
      run += v;
      any_bad |= lidx[t] & 1;
      last = max(last, (lidx[t] >> 1) - 1);
    }
    int f = (int)any_bad | (run > 0 ? 0 : 2);
    flags[fo + row] = f;
    lidx[0] = f ? -1 : last;
    lval[0] = run;  // chunk 0's prefix is 0: reuse its slot for the total
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lidx[0] < 0) return;  // invalid row: the host raises
  long last = lidx[0];

  if (replacement) {
    DL_MT prefix = lid == 0 ? 0 : lval[lid];
    for (long c = lo; c < hi; ++c) w[c] += prefix;
    barrier(CLK_GLOBAL_MEM_FENCE);
    DL_MT total = w[n_cat - 1];
    for (long k = lid; k < n_sample; k += wg) {
      DL_MT u = DL_UNIFORM(seed, (ulong)(row * n_sample + k), philox_offset | DL_WIDE_STREAM) * total;
      long a = 0, b = n_cat;  // first category whose running sum exceeds u
      while (a < b) {
        long m = (a + b) >> 1;
        if (w[m] > u) b = m; else a = m + 1;
      }
      out[(long)oo + row * ors + k * ocs] = a < n_cat ? a : last;
    }
    return;
  }

  for (long k = 0; k < n_sample; ++k) {
    DL_MT best = DL_TAKEN;
    long best_c = n_cat;
    for (long c = lo; c < hi; ++c) {
      DL_MT v = w[c];
      if (v > best) { best = v; best_c = c; }  // ties: the first, lowest category of the chunk
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    lval[lid] = best;
    lidx[lid] = best_c;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int h = wg >> 1; h > 0; h >>= 1) {  // wg is a power of two
      if (lid < h) {
        DL_MT ov = lval[lid + h];
        long oc = lidx[lid + h];
        if (ov > lval[lid] || (ov == lval[lid] && oc < lidx[lid])) { lval[lid] = ov; lidx[lid] = oc; }
      }
      barrier(CLK_LOCAL_MEM_FENCE);
    }
    long chosen = lidx[0];
    if (lid == 0) out[(long)oo + row * ors + k * ocs] = chosen;
    if (chosen >= lo && chosen < hi) w[chosen] = DL_TAKEN;
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
}
