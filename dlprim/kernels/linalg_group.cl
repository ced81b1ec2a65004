// Work-group helpers of the linear-algebra kernels: linalg.cpp puts this file after the type prelude (R)
// in every linalg program.

// Sum over the work-group of `x` (red: one R per work-item, a power of two of them); every item
// gets the result.
inline R group_sum(R x, __local R* red) {
  const int lid = get_local_id(0), L = get_local_size(0);
  red[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = L >> 1; s > 0; s >>= 1) {
    if (lid < s) red[lid] += red[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  R r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
