// Inclusive scans along one dim (cumsum, cumprod, cummax/cummin, logcumsumexp). The op
// prefix comes from reduce_op_text: op_merge(a, b) folds the later state b into the earlier
// prefix a (for scans the order matters), store_out writes an element's result.
//
// A work-group is TO rows x TR threads (row or column order as in reduce.cl). The row is
// walked in blocks of TR * SCAN_K elements: each thread scans SCAN_K consecutive elements in
// registers, the TR thread totals are scanned in local memory (Hillis-Steele), and the carry
// of previous blocks is folded in front.
#define SCAN_K 4

__kernel void scan_rows(ulong n_rows, ulong D, uint TO, uint TR, int col_order, int rank, dl_dims64 rsz,
                        dl_dims64 r0, dl_dims64 r1, dl_dims64 r2, long d0, long d1, long d2,
                        __global const IN_T* in, ulong in_o, __global OUT0_T* out0, ulong out0_o,
                        __global OUT1_T* out1, ulong out1_o, W w0, W w1, __local acc_t* scratch) {
  uint lid = get_local_id(0);
  uint to = col_order ? lid % TO : lid / TR;
  uint tr = col_order ? lid / TO : lid % TR;
  uint step = col_order ? TO : 1;
  uint first = lid - tr * step;  // the row's tr == 0 thread
  ulong o = get_group_id(0) * TO + to;
  bool active = o < n_rows;
  long b0 = 0, b1 = 0, b2 = 0;
  if (active) dl_row_offsets3(o, rank, rsz, r0, r1, r2, &b0, &b1, &b2);
  __global const IN_T* pin = in + in_o + b0;
  acc_t carry;
  op_init(&carry);
  ulong block = (ulong)TR * SCAN_K;
  for (ulong base = 0; base < D; base += block) {
    ulong j0 = base + (ulong)tr * SCAN_K;
    acc_t loc[SCAN_K];
    acc_t run;
    op_init(&run);
#pragma unroll
    for (int k = 0; k < SCAN_K; ++k) {
      ulong j = j0 + k;
      if (active && j < D) op_combine(&run, LOAD_P(pin + (long)j * d0), j, w0, w1);
      loc[k] = run;
    }
    acc_t excl = carry;  // everything before this thread's first element
    if (TR > 1) {
      acc_t incl = run;
      scratch[lid] = incl;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (uint off = 1; off < TR; off <<= 1) {
        if (tr >= off) {
          acc_t prev = scratch[lid - off * step];
          op_merge(&prev, &incl);
          incl = prev;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        scratch[lid] = incl;
        barrier(CLK_LOCAL_MEM_FENCE);
      }
      if (tr > 0) {
        acc_t before = scratch[lid - step];
        op_merge(&excl, &before);
      }
      acc_t total = scratch[first + (TR - 1) * step];
      op_merge(&carry, &total);
      barrier(CLK_LOCAL_MEM_FENCE);  // scratch is rewritten by the next block
    } else {
      op_merge(&carry, &run);
    }
    if (active) {
#pragma unroll
      for (int k = 0; k < SCAN_K; ++k) {
        ulong j = j0 + k;
        if (j < D) {
          acc_t r = excl;
          op_merge(&r, &loc[k]);
          store_out(&r, D, w0, w1, out0, (long)out0_o + b1 + (long)j * d1, out1, (long)out1_o + b2 + (long)j * d2);
        }
      }
    }
  }
}
