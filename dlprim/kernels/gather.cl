// Index-driven copies: gather along one dimension, and the stream compaction behind
// masked_select. DL_T is an unsigned type of the element's width: bits are copied as is.

// out[i] = src[coords(i) with coordinate `dim` replaced by index[i]]; i runs over the index's
// contiguous shape `sizes` (rank <= 8), src is read through its own element strides.
__kernel void gather_dim(__global const DL_T* src, ulong src_off, __global const long* index, ulong idx_off,
                         __global DL_T* out, ulong out_off, ulong n, int rank, int dim, long8 sizes_v,
                         long8 strides_v) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  long sizes[8] = {sizes_v.s0, sizes_v.s1, sizes_v.s2, sizes_v.s3, sizes_v.s4, sizes_v.s5, sizes_v.s6, sizes_v.s7};
  long strides[8] = {strides_v.s0, strides_v.s1, strides_v.s2, strides_v.s3,
                     strides_v.s4, strides_v.s5, strides_v.s6, strides_v.s7};
  long idx = index[idx_off + i];
  ulong rest = i;
  long off = 0;
  for (int d = rank - 1; d >= 0; --d) {
    long c = (long)(rest % (ulong)sizes[d]);
    rest /= (ulong)sizes[d];
    off += (d == dim ? idx : c) * strides[d];
  }
  out[out_off + i] = src[(long)src_off + off];
}

// out[pos[i] - 1] = src[i] where mask[i]; pos is the inclusive prefix sum of the mask.
__kernel void masked_compact(__global const DL_T* src, ulong src_off, __global const uchar* mask, ulong m_off,
                             __global const long* pos, ulong p_off, __global DL_T* out, ulong out_off, ulong n) {
  ulong i = get_global_id(0);
  if (i >= n) return;
  if (mask[m_off + i]) out[out_off + pos[p_off + i] - 1] = src[src_off + i];
}
