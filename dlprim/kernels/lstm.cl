// One LSTM time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's
// whole-layer path). Built for small batches, where a step's GEMM ([B, H] x [H, 4H]) is too small
// to fill a GPU and a separate cell launch doubles the per-step launch cost.
//
// A work-group is KS K-slices (dlprim/src/rnn_step_launch.cpp picks KS) of 16 batch lanes x LSTM_U (4) hidden units,
// 64 KS items in one dimension (item: lane fastest, then unit, then slice). Each item of a slice takes two batch rows (lane and
// lane + 16) of one unit, so a group covers 32 rows and 4 units: all four gate rows (i, f, g, o)
// of its units. A step is too small to fill a GPU with one slice per group (128 groups of 2 warps
// for a 512-unit layer: each walks K alone, its latencies exposed), so the K loop is split over
// the slices, each taking every KS-th tile, and their partial sums meet in local memory; the
// cell runs in the items of the first slice. K runs in tiles through local memory (a slice's own
// part of the dynamic local buffer `lm`); each item loads the next tile into registers before it
// computes on the current one, and reads local memory as 4-vectors.
// Accumulation in DL_ACC (float for float32, double for float64). The operation order follows
// the unfused path (GEMM sum added to the precomputed pre-activation; Rnn.cpp's lstm_cell and
// lstm_cell_backward bodies), so results match it to rounding.
#define LSTM_LANES 16
#define LSTM_U 4
#define LSTM_ROWS 32  // batch rows per group: two per item
#define LSTM_ITEMS (LSTM_LANES * LSTM_U)  // items of one slice
#define LSTM_CAT2(a, b) a##b
#define LSTM_CAT(a, b) LSTM_CAT2(a, b)
#define DL_ACC4 LSTM_CAT(DL_ACC, 4)
// K tiles (lstm.cpp's kTileFwd / kTileBwd size the local buffer from them).
#define LSTM_TKF 32  // forward, K = H
#define LSTM_TKB 64  // backward, K = 4H
#define LSTM_LDF (LSTM_TKF / 4 + 1)  // a local row in vectors; +1 spreads the rows over banks
#define LSTM_LDB (LSTM_TKB / 4 + 1)

static inline DL_ACC dl_lstm_sigmoid(DL_ACC x) { return (DL_ACC)1 / ((DL_ACC)1 + exp(-x)); }

// The cell of row b, unit j (nothing for rows past B): pre-activations gr (row b of gates) plus the GEMM sums
// s_i..s_o, activated into gr; c the previous step's c.
static inline void dl_lstm_fwd_cell(__global DL_T* gates, __global const DL_T* c, __global DL_T* y, __global DL_T* cy,
                                    int b, int B, int H, int j, DL_ACC s_i, DL_ACC s_f, DL_ACC s_g, DL_ACC s_o) {
  if (b >= B) return;
  __global DL_T* gr = gates + (ulong)b * 4 * H;
  const DL_ACC ig = dl_lstm_sigmoid(DL_LOAD(gr, j) + s_i), fg = dl_lstm_sigmoid(DL_LOAD(gr, H + j) + s_f);
  const DL_ACC cg = tanh(DL_LOAD(gr, 2 * H + j) + s_g), og = dl_lstm_sigmoid(DL_LOAD(gr, 3 * H + j) + s_o);
  const ulong o = (ulong)b * H + j;
  const DL_ACC cv = (fg * DL_LOAD(c, o)) + (ig * cg);
  DL_STORE(y, o, og * tanh(cv));
  DL_STORE(cy, o, cv);
  DL_STORE(gr, j, ig);
  DL_STORE(gr, H + j, fg);
  DL_STORE(gr, 2 * H + j, cg);
  DL_STORE(gr, 3 * H + j, og);
}

// The backward step's operands other than W_hh and dg_next (lstm_step_bwd's arguments, offsets applied).
typedef struct {
  __global const DL_T* dh_add;
  ulong da_ld;
  int has_add;
  __global const DL_T* gates;
  __global const DL_T* cy;
  __global const DL_T* cx;
  __global const DL_T* dc_in;
  int has_dc;
  __global DL_T* dg;
  __global DL_T* dc;
  int B, H;
} dl_lstm_bwd_args;

// The cell backward of row b, unit j (nothing for rows past B); sum: the row's dg_next W_hh term.
static inline void dl_lstm_bwd_cell(dl_lstm_bwd_args a, int b, int j, DL_ACC sum) {
  if (b >= a.B) return;
  const int H = a.H, K = 4 * H;
  const ulong o = (ulong)b * H + j;
  const DL_ACC dh = a.has_add ? DL_LOAD(a.dh_add, (ulong)b * a.da_ld + j) + sum : sum;
  __global const DL_T* gr = a.gates + (ulong)b * K;
  __global DL_T* dr = a.dg + (ulong)b * K;
  const DL_ACC ig = DL_LOAD(gr, j), fg = DL_LOAD(gr, H + j), cg = DL_LOAD(gr, 2 * H + j), og = DL_LOAD(gr, 3 * H + j);
  const DL_ACC t = tanh(DL_LOAD(a.cy, o));
  DL_STORE(dr, 3 * H + j, dh * t * ((DL_ACC)1 - og) * og);
  const DL_ACC dcy = dh * og * ((DL_ACC)1 - t * t) + (a.has_dc ? DL_LOAD(a.dc_in, o) : (DL_ACC)0);
  DL_STORE(dr, j, dcy * cg * ((DL_ACC)1 - ig) * ig);
  DL_STORE(dr, H + j, dcy * DL_LOAD(a.cx, o) * ((DL_ACC)1 - fg) * fg);
  DL_STORE(dr, 2 * H + j, dcy * ig * ((DL_ACC)1 - cg * cg));
  DL_STORE(a.dc, o, dcy * fg);
}

// gates [B, 4H] (this step's slice of the layer's [steps, B, 4H]): in, the input projection plus
// biases; out, the activated i, f, g, o (the workspace the backward reads). h, c: the previous
// step's [B, H]; w: W_hh [4H, H]; y, cy: this step's h and c. lm: KS x (16 + 32) x LSTM_LDF vectors.
// Global (ceil(B / 32) * 64 KS, ceil(H / 4)), local (64 KS, 1).
__kernel void lstm_step_fwd(__global const DL_T* w, ulong w_off, __global DL_T* gates, ulong g_off,
                            __global const DL_T* h, ulong h_off, __global const DL_T* c, ulong c_off,
                            __global DL_T* y, ulong y_off, __global DL_T* cy, ulong cy_off, int B, int H,
                            __local DL_ACC4* lm) {
  const int lid = get_local_id(0) % LSTM_ITEMS, lb = lid % LSTM_LANES, lu = lid / LSTM_LANES;
  const int s = get_local_id(0) / LSTM_ITEMS, KS = get_local_size(0) / LSTM_ITEMS;
  const int b0 = get_group_id(0) * LSTM_ROWS, j0 = get_group_id(1) * LSTM_U;
  // Row r of wt is gate r / 4 of unit r % 4.
  __local DL_ACC4* wt = lm + s * (4 * LSTM_U + LSTM_ROWS) * LSTM_LDF;
  __local DL_ACC4* ht = wt + 4 * LSTM_U * LSTM_LDF;
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* hts = (__local DL_ACC*)ht;
  w += w_off;
  h += h_off;
  // Tile loads: element e = lid + 64 i of the tile, row e / TK, column e % TK (TK consecutive columns a row).
#define LSTM_FW_N (4 * LSTM_U * LSTM_TKF / LSTM_ITEMS)
#define LSTM_FH_N (LSTM_ROWS * LSTM_TKF / LSTM_ITEMS)
  DL_ACC rw[LSTM_FW_N], rh[LSTM_FH_N];
#define LSTM_FWD_LOAD(k0)                                                                        \
  {                                                                                              \
    for (int i = 0; i < LSTM_FW_N; ++i) {                                                        \
      const int e = lid + i * LSTM_ITEMS, r = e / LSTM_TKF, col = (k0) + e % LSTM_TKF;           \
      const int unit = j0 + r % LSTM_U;                                                          \
      rw[i] = (unit < H && col < H) ? DL_LOAD(w, (ulong)((r / LSTM_U) * H + unit) * H + col) : (DL_ACC)0; \
    }                                                                                            \
    for (int i = 0; i < LSTM_FH_N; ++i) {                                                        \
      const int e = lid + i * LSTM_ITEMS, r = e / LSTM_TKF, col = (k0) + e % LSTM_TKF;           \
      rh[i] = (b0 + r < B && col < H) ? DL_LOAD(h, (ulong)(b0 + r) * H + col) : (DL_ACC)0;       \
    }                                                                                            \
  }
  DL_ACC a[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};
  const int stride = KS * LSTM_TKF;
  const int rounds = (H + stride - 1) / stride;  // the same for every item (the barriers in the loop)
  LSTM_FWD_LOAD(s * LSTM_TKF)
  for (int round = 0; round < rounds; ++round) {
    const int k0 = round * stride + s * LSTM_TKF;
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads are done
    for (int i = 0; i < LSTM_FW_N; ++i) {
      const int e = lid + i * LSTM_ITEMS;
      wts[(e / LSTM_TKF) * (4 * LSTM_LDF) + e % LSTM_TKF] = rw[i];
    }
    for (int i = 0; i < LSTM_FH_N; ++i) {
      const int e = lid + i * LSTM_ITEMS;
      hts[(e / LSTM_TKF) * (4 * LSTM_LDF) + e % LSTM_TKF] = rh[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (round + 1 < rounds) LSTM_FWD_LOAD(k0 + stride)
    for (int q = 0; q < LSTM_TKF / 4; ++q) {
      const DL_ACC4 h0 = ht[lb * LSTM_LDF + q], h1 = ht[(lb + LSTM_LANES) * LSTM_LDF + q];
      for (int g = 0; g < 4; ++g) {
        const DL_ACC4 wv = wt[(g * LSTM_U + lu) * LSTM_LDF + q];
        a[g][0] += dot(wv, h0);
        a[g][1] += dot(wv, h1);
      }
    }
  }
  // With slices, their partial sums meet in local memory (red: slice-major, then value (g, row), then lid) and
  // slice 0 finishes both rows. (Slice 1 finishing row 1 computed wrong rows past the first group on PoCL 3.1's
  // optimized builds at 4 slices, right at -O0 and on Oclgrind.) No item leaves before the last barrier.
  if (KS > 1) {
    __local DL_ACC* red = (__local DL_ACC*)lm;
    barrier(CLK_LOCAL_MEM_FENCE);  // every slice's last tile is read
    for (int v = 0; v < 8; ++v) red[(s * 8 + v) * LSTM_ITEMS + lid] = a[v / 2][v % 2];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int v = 0; v < 8; ++v) {
      DL_ACC t = 0;
      for (int o = 0; o < KS; ++o) t += red[(o * 8 + v) * LSTM_ITEMS + lid];
      a[v / 2][v % 2] = t;
    }
  }
  const int j = j0 + lu;
  if (j < H && s == 0) {
    __global DL_T* gr = gates + g_off;
    dl_lstm_fwd_cell(gr, c + c_off, y + y_off, cy + cy_off, b0 + lb, B, H, j, a[0][0], a[1][0], a[2][0], a[3][0]);
    dl_lstm_fwd_cell(gr, c + c_off, y + y_off, cy + cy_off, b0 + lb + LSTM_LANES, B, H, j, a[0][1], a[1][1], a[2][1],
                     a[3][1]);
  }
}

// The backward of one step, run from the last step to the first: the gradient of this step's h
// is dh_add (the output's gradient, and h_n's at the last step; has_add 0: none; rows da_ld
// apart: a batch_first model's output gradient is strided) plus dg_next
// [B, 4H] x W_hh [4H, H] (the gate gradients of the step after this one; has_next 0: none),
// reduced over 4H per (b, j); then the cell backward writes this step's gate gradients dg [B, 4H]
// and the running gradient of c, dc [B, H] (read from dc_in, has_dc 0: zero; dc_in may be dc).
// gates: this step's activated workspace; cy its c; cx the previous step's c. lm: KS x (4 + 32) x
// LSTM_LDB vectors. Global as forward.
__kernel void lstm_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dg_next, ulong dn_off, int has_next,
                            __global const DL_T* dh_add, ulong da_off, int has_add, ulong da_ld, __global const DL_T* gates,
                            ulong g_off, __global const DL_T* cy, ulong cy_off, __global const DL_T* cx, ulong cx_off,
                            __global const DL_T* dc_in, ulong di_off, int has_dc, __global DL_T* dg, ulong dg_off,
                            __global DL_T* dc, ulong dc_off, int B, int H, __local DL_ACC4* lm) {
  const int lid = get_local_id(0) % LSTM_ITEMS, lb = lid % LSTM_LANES, lu = lid / LSTM_LANES;
  const int s = get_local_id(0) / LSTM_ITEMS, KS = get_local_size(0) / LSTM_ITEMS;
  const int b0 = get_group_id(0) * LSTM_ROWS, j0 = get_group_id(1) * LSTM_U;
  const int K = 4 * H;
  const dl_lstm_bwd_args a = {dh_add + da_off, da_ld, has_add, gates + g_off, cy + cy_off, cx + cx_off, dc_in + di_off,
                              has_dc, dg + dg_off, dc + dc_off, B, H};
  __local DL_ACC4* wt = lm + s * (LSTM_U + LSTM_ROWS) * LSTM_LDB;  // W_hh's tile transposed: unit-major, K along vectors
  __local DL_ACC4* gt = wt + LSTM_U * LSTM_LDB;
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* gts = (__local DL_ACC*)gt;
  DL_ACC acc[4] = {0, 0, 0, 0};
  if (has_next) {  // uniform over the launch: every item takes the barriers below or none does
    w += w_off;
    dg_next += dn_off;
    // Per tile: W rows k0..k0+TK of the group's 4 units (element e = lid + 64 i: row e / 4, unit e % 4) and
    // TK columns of 32 dg_next rows (element e: row e / TK, column e % TK).
#define LSTM_BW_N (LSTM_TKB * LSTM_U / LSTM_ITEMS)
#define LSTM_BG_N (LSTM_ROWS * LSTM_TKB / LSTM_ITEMS)
    DL_ACC rw[LSTM_BW_N], rg[LSTM_BG_N];
#define LSTM_BWD_LOAD(k0)                                                                        \
    {                                                                                            \
      for (int i = 0; i < LSTM_BW_N; ++i) {                                                      \
        const int e = lid + i * LSTM_ITEMS, r = (k0) + e / LSTM_U, unit = j0 + e % LSTM_U;       \
        rw[i] = (unit < H && r < K) ? DL_LOAD(w, (ulong)r * H + unit) : (DL_ACC)0;              \
      }                                                                                          \
      for (int i = 0; i < LSTM_BG_N; ++i) {                                                      \
        const int e = lid + i * LSTM_ITEMS, r = e / LSTM_TKB, col = (k0) + e % LSTM_TKB;         \
        rg[i] = (b0 + r < B && col < K) ? DL_LOAD(dg_next, (ulong)(b0 + r) * K + col) : (DL_ACC)0; \
      }                                                                                          \
    }
    const int stride = KS * LSTM_TKB;
    const int rounds = (K + stride - 1) / stride;
    LSTM_BWD_LOAD(s * LSTM_TKB)
    for (int round = 0; round < rounds; ++round) {
      const int k0 = round * stride + s * LSTM_TKB;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int i = 0; i < LSTM_BW_N; ++i) {
        const int e = lid + i * LSTM_ITEMS;
        wts[(e % LSTM_U) * (4 * LSTM_LDB) + e / LSTM_U] = rw[i];
      }
      for (int i = 0; i < LSTM_BG_N; ++i) {
        const int e = lid + i * LSTM_ITEMS;
        gts[(e / LSTM_TKB) * (4 * LSTM_LDB) + e % LSTM_TKB] = rg[i];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (round + 1 < rounds) LSTM_BWD_LOAD(k0 + stride)
      // Two partial sums per row (even and odd vectors): four independent chains, not two.
      for (int q = 0; q < LSTM_TKB / 4; q += 2) {
        const DL_ACC4 w0 = wt[lu * LSTM_LDB + q], w1 = wt[lu * LSTM_LDB + q + 1];
        acc[0] += dot(gt[lb * LSTM_LDB + q], w0);
        acc[1] += dot(gt[(lb + LSTM_LANES) * LSTM_LDB + q], w0);
        acc[2] += dot(gt[lb * LSTM_LDB + q + 1], w1);
        acc[3] += dot(gt[(lb + LSTM_LANES) * LSTM_LDB + q + 1], w1);
      }
    }
    acc[0] += acc[2];
    acc[1] += acc[3];
  }
  // With slices, as the forward: slice 0 finishes both rows; one exit.
  if (KS > 1 && has_next) {  // (without has_next every sum is zero)
    __local DL_ACC* red = (__local DL_ACC*)lm;
    barrier(CLK_LOCAL_MEM_FENCE);  // every slice's last tile is read
    red[(s * 2) * LSTM_ITEMS + lid] = acc[0];
    red[(s * 2 + 1) * LSTM_ITEMS + lid] = acc[1];
    barrier(CLK_LOCAL_MEM_FENCE);
    acc[0] = acc[1] = 0;
    for (int o = 0; o < KS; ++o) {
      acc[0] += red[(o * 2) * LSTM_ITEMS + lid];
      acc[1] += red[(o * 2 + 1) * LSTM_ITEMS + lid];
    }
  }
  const int j = j0 + lu;
  if (j < H && s == 0) {
    dl_lstm_bwd_cell(a, b0 + lb, j, acc[0]);
    dl_lstm_bwd_cell(a, b0 + lb + LSTM_LANES, j, acc[1]);
  }
}
