// What the register leaves of the recursive panels share (linalg_lu_leaf.cl, linalg_qr_leaf.cl; linalg.cpp
// puts this file between their W / LEAF_RPI defines and the leaf file): a leaf of m x w (w <= W) held as
// x[LEAF_RPI][W], item lid owning rows lid, lid + L, ... Columns are picked by comparisons, never by a runtime
// index, so the rows stay in registers.

#define AT(p, i, j) (p)[(long)(i) * rs + (long)(j) * cs]

// Column k of one row held in registers.
__attribute__((always_inline)) inline T leaf_col(const T* xr, int k) {
  T v = TO_T(0);
#pragma unroll
  for (int j = 0; j < W; ++j)
    if (j == k) v = xr[j];
  return v;
}

// x <- the leaf's rows of this item, zeros outside the m x w leaf: read once.
__attribute__((always_inline)) inline void leaf_load(T x[LEAF_RPI][W], __global const T* A, long rs, long cs, int m,
                                                     int w) {
  const int lid = get_local_id(0), L = get_local_size(0);
#pragma unroll
  for (int r = 0; r < LEAF_RPI; ++r) {
    const int i = r * L + lid;
#pragma unroll
    for (int j = 0; j < W; ++j) x[r][j] = (i < m && j < w) ? AT(A, i, j) : TO_T(0);
  }
}

// The item index for the write-back, from local memory (ids: one int an item): an index the compiler cannot
// prove equal to lid, else it keeps the W x LEAF_RPI addresses of the first read live through the whole
// factorization (twice the leaf's registers). A barrier inside: every item calls it.
__attribute__((always_inline)) inline int leaf_store_item(__local int* ids) {
  const int lid = get_local_id(0);
  ids[lid] = lid;
  barrier(CLK_LOCAL_MEM_FENCE);
  return ids[lid];
}
