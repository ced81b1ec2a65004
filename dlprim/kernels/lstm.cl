// One LSTM time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's
// whole-layer path). Built for small batches, where a step's GEMM ([B, H] x [H, 4H]) is too small
// to fill a GPU and a separate cell launch doubles the per-step launch cost.
//
// A work-group is 64 items: 16 batch lanes x LSTM_U (4) hidden units, each item two batch rows
// (lane and lane + 16) of one unit, so a group covers 32 rows and 4 units: all four gate rows
// (i, f, g, o) of its units, and the cell runs in the item that summed them. Small groups of few
// units give a 512-unit layer 128 groups per step (a GPU's compute units all busy). K runs in
// tiles through local memory; each item loads the next tile into registers before it computes on
// the current one (one L2 round trip per tile, overlapped), and reads local memory as 4-vectors.
// Accumulation in DL_ACC (float for float32, double for float64). The operation order follows
// the unfused path (GEMM sum added to the precomputed pre-activation; Rnn.cpp's lstm_cell and
// lstm_cell_backward bodies), so results match it to rounding.
#define LSTM_LANES 16
#define LSTM_U 4
#define LSTM_ROWS 32  // batch rows per group: two per item
#define LSTM_ITEMS (LSTM_LANES * LSTM_U)
#define LSTM_CAT2(a, b) a##b
#define LSTM_CAT(a, b) LSTM_CAT2(a, b)
#define DL_ACC4 LSTM_CAT(DL_ACC, 4)
#define LSTM_TKF 64  // forward K tile (K = H): one column per item
#if LSTM_TKF != LSTM_ITEMS
#error "the forward's tile loads give each item one column"
#endif
#if DL_ACC_IS_DOUBLE
#define LSTM_TKB 64  // backward K tile (K = 4H); double keeps local memory under 32 KiB
#else
#define LSTM_TKB 128
#endif

static inline DL_ACC dl_lstm_sigmoid(DL_ACC x) { return (DL_ACC)1 / ((DL_ACC)1 + exp(-x)); }

// gates [B, 4H] (this step's slice of the layer's [steps, B, 4H]): in, the input projection plus
// biases; out, the activated i, f, g, o (the workspace the backward reads). h, c: the previous
// step's [B, H]; w: W_hh [4H, H]; y, cy: this step's h and c.
// Global (ceil(B / 32) * 16, ceil(H / 4) * 4).
__kernel __attribute__((reqd_work_group_size(LSTM_LANES, LSTM_U, 1)))
void lstm_step_fwd(__global const DL_T* w, ulong w_off, __global DL_T* gates, ulong g_off, __global const DL_T* h,
                   ulong h_off, __global const DL_T* c, ulong c_off, __global DL_T* y, ulong y_off,
                   __global DL_T* cy, ulong cy_off, int B, int H) {
  // Row r of wt is gate r / 4 of unit r % 4; +1 vector of padding spreads the rows over banks.
  __local DL_ACC4 wt[4 * LSTM_U][LSTM_TKF / 4 + 1];
  __local DL_ACC4 ht[LSTM_ROWS][LSTM_TKF / 4 + 1];
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* hts = (__local DL_ACC*)ht;
  const int lb = get_local_id(0), lu = get_local_id(1), lid = lu * LSTM_LANES + lb;
  const int b0 = get_group_id(0) * LSTM_ROWS, j0 = get_group_id(1) * LSTM_U;
  const int ld = LSTM_TKF + 4;  // a local row in scalars
  w += w_off;
  h += h_off;
  // Tile loads: item lid takes column lid of every tile row (64 consecutive columns a row).
  DL_ACC rw[4 * LSTM_U], rh[LSTM_ROWS];
#define LSTM_FWD_LOAD(k0)                                                                        \
  {                                                                                              \
    const int col = (k0) + lid;                                                                  \
    for (int r = 0; r < 4 * LSTM_U; ++r) {                                                       \
      const int unit = j0 + r % LSTM_U;                                                          \
      rw[r] = (unit < H && col < H) ? DL_LOAD(w, (ulong)((r / LSTM_U) * H + unit) * H + col) : (DL_ACC)0; \
    }                                                                                            \
    for (int r = 0; r < LSTM_ROWS; ++r)                                                          \
      rh[r] = (b0 + r < B && col < H) ? DL_LOAD(h, (ulong)(b0 + r) * H + col) : (DL_ACC)0;        \
  }
  DL_ACC a[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  LSTM_FWD_LOAD(0)
  for (int k0 = 0; k0 < H; k0 += LSTM_TKF) {
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads are done
    for (int r = 0; r < 4 * LSTM_U; ++r) wts[r * ld + lid] = rw[r];
    for (int r = 0; r < LSTM_ROWS; ++r) hts[r * ld + lid] = rh[r];
    barrier(CLK_LOCAL_MEM_FENCE);
    if (k0 + LSTM_TKF < H) LSTM_FWD_LOAD(k0 + LSTM_TKF)
    for (int q = 0; q < LSTM_TKF / 4; ++q) {
      const DL_ACC4 h0 = ht[lb][q], h1 = ht[lb + LSTM_LANES][q];
      for (int g = 0; g < 4; ++g) {
        const DL_ACC4 wv = wt[g * LSTM_U + lu][q];
        a[g][0] += dot(wv, h0);
        a[g][1] += dot(wv, h1);
      }
    }
  }
  const int j = j0 + lu;
  if (j >= H) return;
  for (int s = 0; s < 2; ++s) {
    const int b = b0 + lb + s * LSTM_LANES;
    if (b >= B) break;
    __global DL_T* gr = gates + g_off + (ulong)b * 4 * H;
    const DL_ACC ig = dl_lstm_sigmoid(DL_LOAD(gr, j) + a[0][s]), fg = dl_lstm_sigmoid(DL_LOAD(gr, H + j) + a[1][s]);
    const DL_ACC cg = tanh(DL_LOAD(gr, 2 * H + j) + a[2][s]), og = dl_lstm_sigmoid(DL_LOAD(gr, 3 * H + j) + a[3][s]);
    const ulong o = (ulong)b * H + j;
    const DL_ACC cv = (fg * DL_LOAD(c, c_off + o)) + (ig * cg);
    DL_STORE(y, y_off + o, og * tanh(cv));
    DL_STORE(cy, cy_off + o, cv);
    DL_STORE(gr, j, ig);
    DL_STORE(gr, H + j, fg);
    DL_STORE(gr, 2 * H + j, cg);
    DL_STORE(gr, 3 * H + j, og);
  }
}

// The backward of one step, run from the last step to the first: the gradient of this step's h
// is dh_add (the output's gradient, and h_n's at the last step; has_add 0: none; rows da_ld
// apart: a batch_first model's output gradient is strided) plus dg_next
// [B, 4H] x W_hh [4H, H] (the gate gradients of the step after this one; has_next 0: none),
// reduced over 4H per (b, j); then the cell backward writes this step's gate gradients dg [B, 4H]
// and the running gradient of c, dc [B, H] (read from dc_in, has_dc 0: zero; dc_in may be dc).
// gates: this step's activated workspace; cy its c; cx the previous step's c. Global as forward.
__kernel __attribute__((reqd_work_group_size(LSTM_LANES, LSTM_U, 1)))
void lstm_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dg_next, ulong dn_off, int has_next,
                   __global const DL_T* dh_add, ulong da_off, int has_add, ulong da_ld, __global const DL_T* gates, ulong g_off,
                   __global const DL_T* cy, ulong cy_off, __global const DL_T* cx, ulong cx_off,
                   __global const DL_T* dc_in, ulong di_off, int has_dc, __global DL_T* dg, ulong dg_off,
                   __global DL_T* dc, ulong dc_off, int B, int H) {
  __local DL_ACC4 wt[LSTM_U][LSTM_TKB / 4 + 1];  // W_hh's tile transposed: unit-major, K along vectors
  __local DL_ACC4 gt[LSTM_ROWS][LSTM_TKB / 4 + 1];
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* gts = (__local DL_ACC*)gt;
  const int lb = get_local_id(0), lu = get_local_id(1), lid = lu * LSTM_LANES + lb;
  const int b0 = get_group_id(0) * LSTM_ROWS, j0 = get_group_id(1) * LSTM_U;
  const int K = 4 * H, ld = LSTM_TKB + 4;
  DL_ACC acc[4] = {0, 0, 0, 0};
  if (has_next) {
    w += w_off;
    dg_next += dn_off;
    // Per tile: W rows k0..k0+TK of the group's 4 units (item lid: element lid + 64 i, unit
    // fastest) and TK columns of 32 dg_next rows (item lid: columns lid + 64 i of each row).
    DL_ACC rw[LSTM_TKB * LSTM_U / LSTM_ITEMS], rg[LSTM_ROWS * (LSTM_TKB / LSTM_ITEMS)];
#define LSTM_BWD_LOAD(k0)                                                                        \
    {                                                                                            \
      for (int i = 0; i < LSTM_TKB * LSTM_U / LSTM_ITEMS; ++i) {                                 \
        const int e = lid + i * LSTM_ITEMS, r = (k0) + e / LSTM_U, unit = j0 + e % LSTM_U;       \
        rw[i] = (unit < H && r < K) ? DL_LOAD(w, (ulong)r * H + unit) : (DL_ACC)0;              \
      }                                                                                          \
      for (int r = 0; r < LSTM_ROWS; ++r)                                                        \
        for (int i = 0; i < LSTM_TKB / LSTM_ITEMS; ++i) {                                        \
          const int col = (k0) + lid + i * LSTM_ITEMS;                                           \
          rg[r * (LSTM_TKB / LSTM_ITEMS) + i] =                                                  \
              (b0 + r < B && col < K) ? DL_LOAD(dg_next, (ulong)(b0 + r) * K + col) : (DL_ACC)0; \
        }                                                                                        \
    }
    LSTM_BWD_LOAD(0)
    for (int k0 = 0; k0 < K; k0 += LSTM_TKB) {
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int i = 0; i < LSTM_TKB * LSTM_U / LSTM_ITEMS; ++i) {
        const int e = lid + i * LSTM_ITEMS;
        wts[(e % LSTM_U) * ld + e / LSTM_U] = rw[i];
      }
      for (int r = 0; r < LSTM_ROWS; ++r)
        for (int i = 0; i < LSTM_TKB / LSTM_ITEMS; ++i) gts[r * ld + lid + i * LSTM_ITEMS] = rg[r * (LSTM_TKB / LSTM_ITEMS) + i];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (k0 + LSTM_TKB < K) LSTM_BWD_LOAD(k0 + LSTM_TKB)
      // Two partial sums per row (even and odd vectors): four independent chains, not two.
      for (int q = 0; q < LSTM_TKB / 4; q += 2) {
        const DL_ACC4 w0 = wt[lu][q], w1 = wt[lu][q + 1];
        acc[0] += dot(gt[lb][q], w0);
        acc[1] += dot(gt[lb + LSTM_LANES][q], w0);
        acc[2] += dot(gt[lb][q + 1], w1);
        acc[3] += dot(gt[lb + LSTM_LANES][q + 1], w1);
      }
    }
    acc[0] += acc[2];
    acc[1] += acc[3];
  }
  const int j = j0 + lu;
  if (j >= H) return;
  for (int s = 0; s < 2; ++s) {
    const int b = b0 + lb + s * LSTM_LANES;
    if (b >= B) break;
    const ulong o = (ulong)b * H + j;
    const DL_ACC dh = has_add ? DL_LOAD(dh_add, da_off + (ulong)b * da_ld + j) + acc[s] : acc[s];
    __global const DL_T* gr = gates + g_off + (ulong)b * K;
    __global DL_T* dr = dg + dg_off + (ulong)b * K;
    const DL_ACC ig = DL_LOAD(gr, j), fg = DL_LOAD(gr, H + j), cg = DL_LOAD(gr, 2 * H + j), og = DL_LOAD(gr, 3 * H + j);
    const DL_ACC t = tanh(DL_LOAD(cy, cy_off + o));
    DL_STORE(dr, 3 * H + j, dh * t * ((DL_ACC)1 - og) * og);
    const DL_ACC dcy = dh * og * ((DL_ACC)1 - t * t) + (has_dc ? DL_LOAD(dc_in, di_off + o) : (DL_ACC)0);
    DL_STORE(dr, j, dcy * cg * ((DL_ACC)1 - ig) * ig);
    DL_STORE(dr, H + j, dcy * DL_LOAD(cx, cx_off + o) * ((DL_ACC)1 - fg) * fg);
    DL_STORE(dr, 2 * H + j, dcy * ig * ((DL_ACC)1 - cg * cg));
    DL_STORE(dc, dc_off + o, dcy * fg);
  }
}
