// Bitonic sort of (ulong key, long value) pairs in independent power-of-two segments.
// Pairs are ordered by key (ascending, or descending with `desc`), ties by value ascending:
// with values holding the original positions the sort is stable and deterministic.

inline bool dl_sort_after(ulong ka, long va, ulong kb, long vb, int desc) {
  if (ka != kb) return desc ? ka < kb : ka > kb;
  return va > vb;
}

// In a merge stage of size k, the pair (i, i + j) is put in ascending order when bit k of i is
// clear, else descending; from the stage that spans a whole segment on, all in ascending order.
inline bool dl_sort_up(ulong i, ulong k, ulong seg) { return (i & k) == 0 || k >= seg; }

// One compare-exchange step (k, j) over all pairs; one work-item per pair.
__kernel void dl_bitonic_step(__global ulong* keys, ulong ko, __global long* vals, ulong vo, ulong pairs,
                              ulong seg, ulong k, ulong j, int desc) {
  ulong t = get_global_id(0);
  if (t >= pairs) return;
  ulong i = ((t & ~(j - 1)) << 1) | (t & (j - 1));
  ulong p = i + j;
  ulong ka = keys[ko + i], kb = keys[ko + p];
  long va = vals[vo + i], vb = vals[vo + p];
  bool swap = dl_sort_up(i, k, seg) ? dl_sort_after(ka, va, kb, vb, desc) : dl_sort_after(kb, vb, ka, va, desc);
  if (swap) {
    keys[ko + i] = kb; keys[ko + p] = ka;
    vals[vo + i] = vb; vals[vo + p] = va;
  }
}

// Runs, in local memory, the steps with j < block (= 2 * work-group size) of the stages
// k_first..k_last: stage k_first starts at j_first, later ones at k / 2.
__kernel void dl_bitonic_local(__global ulong* keys, ulong ko, __global long* vals, ulong vo, ulong seg,
                               ulong k_first, ulong k_last, ulong j_first, int desc,
                               __local ulong* lk, __local long* lv) {
  uint lid = get_local_id(0), wg = get_local_size(0);
  ulong base = (ulong)get_group_id(0) * 2 * wg;
  lk[lid] = keys[ko + base + lid];
  lk[lid + wg] = keys[ko + base + lid + wg];
  lv[lid] = vals[vo + base + lid];
  lv[lid + wg] = vals[vo + base + lid + wg];
  for (ulong k = k_first; k <= k_last; k <<= 1) {
    for (ulong j = (k == k_first ? j_first : k >> 1); j > 0; j >>= 1) {
      barrier(CLK_LOCAL_MEM_FENCE);
      uint i = (uint)(((lid & ~(j - 1)) << 1) | (lid & (j - 1)));
      uint p = i + (uint)j;
      ulong ka = lk[i], kb = lk[p];
      long va = lv[i], vb = lv[p];
      bool swap = dl_sort_up(base + i, k, seg) ? dl_sort_after(ka, va, kb, vb, desc)
                                               : dl_sort_after(kb, vb, ka, va, desc);
      if (swap) {
        lk[i] = kb; lk[p] = ka;
        lv[i] = vb; lv[p] = va;
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  keys[ko + base + lid] = lk[lid];
  keys[ko + base + lid + wg] = lk[lid + wg];
  vals[vo + base + lid] = lv[lid];
  vals[vo + base + lid + wg] = lv[lid + wg];
}

// kthvalue: the CPU's quick_select_template (ATen/native/SortingUtils.h) on each row, one
// work-item a row, in place on the row's keys and positions, so that ties end where the CPU's do;
// afterwards element k (0-based) of the row is the k-th smallest. The CPU's comparator "x > y, or
// x NaN and y not" is plain key order (NaN keys are the largest, all equal). The median-of-three
// pivot bounds both scans; the explicit bounds only keep them inside the row regardless.
__kernel void dl_quickselect(__global ulong* keys, ulong ko, __global long* vals, ulong vo, ulong rows, long n,
                             long k) {
  ulong r = get_global_id(0);
  if (r >= rows) return;
  __global ulong* key = keys + ko + r * (ulong)n;
  __global long* val = vals + vo + r * (ulong)n;
#define DL_QS_SWAP(a, b) { long a_ = (a), b_ = (b); ulong tk = key[a_]; key[a_] = key[b_]; key[b_] = tk; \
                           long tv = val[a_]; val[a_] = val[b_]; val[b_] = tv; }
  long lo = 0, hi = n - 1;
  for (;;) {
    if (hi <= lo) return;
    if (hi == lo + 1) {
      if ((key[lo] > key[hi])) DL_QS_SWAP(lo, hi);
      return;
    }
    DL_QS_SWAP(lo + (hi - lo) / 2, lo + 1);  // median of three as pivot
    if ((key[lo + 1] > key[hi])) DL_QS_SWAP(lo + 1, hi);
    if ((key[lo] > key[hi])) DL_QS_SWAP(lo, hi);
    if ((key[lo + 1] > key[lo])) DL_QS_SWAP(lo + 1, lo);
    long i = lo + 1, j = hi;
    ulong piv = key[lo];
    for (;;) {
      do ++i; while (i < hi && (piv > key[i]));
      do --j; while (j > lo && (key[j] > piv));
      if (j < i) break;
      DL_QS_SWAP(i, j);
    }
    DL_QS_SWAP(lo, j);
    if (j <= k) lo = i;
    if (j >= k) hi = j - 1;
  }
#undef DL_QS_SWAP
}
