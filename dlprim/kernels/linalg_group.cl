// Work-group helpers of the linear-algebra kernels: linalg.cpp puts this file after the type prelude (R, T)
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

// U12 = L11^-1 X of the recursive LU panel's split that ends at this leaf (linalg.h's LuLeafPlace
// solve_rows / solve_cols), after the leaf: L11 the unit lower rows x rows block whose last row and column
// are the leaf's (w columns; A at the leaf's first element), X the rows x cols block right of the leaf on
// L11's rows. A work-item per column of X, forward substitution in ?trsm's order on its column in local
// memory (sx: rows x cols). Called by the whole group after the leaf's writes (the barrier shows them to all).
inline void lu_leaf_solve(__global T* A, long rs, long cs, int w, int rows, int cols, __local T* sx) {
  const int lid = get_local_id(0), L = get_local_size(0);
  barrier(CLK_GLOBAL_MEM_FENCE);
  const long o = w - rows;  // L11's first row and column, from the leaf's
  for (int j = lid; j < cols; j += L) {
    for (int i = 0; i < rows; ++i) sx[i * cols + j] = A[(o + i) * rs + (w + j) * cs];
    for (int k = 0; k < rows; ++k) {
      const T xk = sx[k * cols + j];
      for (int i = k + 1; i < rows; ++i) sx[i * cols + j] -= MUL(A[(o + i) * rs + (o + k) * cs], xk);
    }
    for (int i = 0; i < rows; ++i) A[(o + i) * rs + (w + j) * cs] = sx[i * cols + j];
  }
}
