// The mask block flags the fused attention kernels read (attention_common.cl's ATTN_MB x ATTN_MB blocks of
// queries x keys): one work-group of ATTN_MB x ATTN_MB work-items per block, each reading one element of the
// additive mask (ST, converted to T by LOAD). Flag: ATTN_VISIBLE when every element is 0, ATTN_MASKED when
// every element is -inf, ATTN_MIXED otherwise (finite non-zero values, +inf, NaN). The generator
// (attention_mask.cpp) prepends T, ST, LOAD and attention_common.cl.
// Grid: (ATTN_MB FK, ATTN_MB FQ, FB FH); `rows` / `cols`: the query / key extent read (1 for a dimension the
// mask broadcasts); F: the flags, contiguous [FB, FH, FQ, FK].
__kernel __attribute__((reqd_work_group_size(ATTN_MB, ATTN_MB, 1))) void attn_mask_blocks(
    int FH, int rows, int cols, __global const ST* M, ulong mo, dl_attn_strides ms, __global uchar* F, ulong fo) {
  __local uint bits;  // bit f for every flag f of an element
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int cb = get_group_id(0), rb = get_group_id(1), z = get_group_id(2), fb = z / FH, fh = z - fb * FH;
  const int i = rb * ATTN_MB + ly, j = cb * ATTN_MB + lx;
  if (lx == 0 && ly == 0) bits = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < rows && j < cols) {
    const T v = LOAD(M, (long)mo + AT(ms, fb, fh, i, j));
    const uint b = v == (T)0 ? 1u << ATTN_VISIBLE : v == (T)-INFINITY ? 1u << ATTN_MASKED : 1u << ATTN_MIXED;
    atomic_or(&bits, b);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lx == 0 && ly == 0) {
    const uint w = bits;
    F[fo + (((ulong)z * get_num_groups(1) + rb) * get_num_groups(0) + cb)] =
        (uchar)(w == (1u << ATTN_VISIBLE) ? ATTN_VISIBLE : w == (1u << ATTN_MASKED) ? ATTN_MASKED : ATTN_MIXED);
  }
}
