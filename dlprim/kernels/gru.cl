// One GRU time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's whole-layer
// path), built like lstm.cl's LSTM steps (read its comments: the group layout, why K is split over slices, the
// PoCL note on which items finish the rows). A work-group is KS K-slices of 16 batch lanes x GRU_U (4) hidden
// units, 64 KS items in one dimension (lane fastest, then unit, then slice); an item of a slice takes two batch
// rows (lane and lane + 16) of one unit, so a group covers 32 rows and the three gate rows (r, z, n) of 4 units.
// K runs in tiles through the slice's part of the dynamic local buffer `lm`, the next tile loaded into registers
// while the current one is used; the slices' partial sums meet in local memory and slice 0 runs the cell of
// both rows. Accumulation in DL_ACC. The math and the workspace are GruLayer's unfused path (Rnn.cpp's
// gru_cell_sum and gru_cell_backward_sum bodies, the hidden gates' GEMM including b_hh), so results match it to
// rounding.
#define GRU_LANES 16
#define GRU_U 4
#define GRU_ROWS 32                       // batch rows per group: two per item
#define GRU_ITEMS (GRU_LANES * GRU_U)     // items of one slice
#define GRU_CAT2(a, b) a##b
#define GRU_CAT(a, b) GRU_CAT2(a, b)
#define GRU_ACC4 GRU_CAT(DL_ACC, 4)
// K tiles (gru.cpp's kTileFwd / kTileBwd size the local buffer from them).
#define GRU_TKF 32  // forward, K = H
#define GRU_TKB 64  // backward, K = 3H
#define GRU_LDF (GRU_TKF / 4 + 1)  // a local row in vectors; +1 spreads the rows over banks
#define GRU_LDB (GRU_TKB / 4 + 1)

static inline DL_ACC dl_gru_sigmoid(DL_ACC x) { return (DL_ACC)1 / ((DL_ACC)1 + exp(-x)); }

// The forward cell of row b, unit j (nothing for rows past B): xg the input gates [B, 3H] (b_ih included), s_r,
// s_z, s_n the row's h W_hh^T sums (b_hh added here, as the unfused path's addmm does), h the previous step's h;
// writes y and the workspace ws [B, 4H]: r, z, n, hn + b_hn (gru_cell_sum's).
static inline void dl_gru_fwd_cell(__global const DL_T* xg, __global const DL_T* bias, int has_bias,
                                   __global const DL_T* h, __global DL_T* y, __global DL_T* ws, int b, int B, int H,
                                   int j, DL_ACC s_r, DL_ACC s_z, DL_ACC s_n) {
  if (b >= B) return;
  if (has_bias) {
    s_r += DL_LOAD(bias, j);
    s_z += DL_LOAD(bias, H + j);
    s_n += DL_LOAD(bias, 2 * H + j);
  }
  __global const DL_T* xr = xg + (ulong)b * 3 * H;
  __global DL_T* wr = ws + (ulong)b * 4 * H;
  const ulong o = (ulong)b * H + j;
  const DL_ACC rg = dl_gru_sigmoid(DL_LOAD(xr, j) + s_r), ig = dl_gru_sigmoid(DL_LOAD(xr, H + j) + s_z);
  const DL_ACC ng = tanh(DL_LOAD(xr, 2 * H + j) + rg * s_n);
  DL_STORE(y, o, ng + ig * (DL_LOAD(h, o) - ng));
  DL_STORE(wr, j, rg);
  DL_STORE(wr, H + j, ig);
  DL_STORE(wr, 2 * H + j, ng);
  DL_STORE(wr, 3 * H + j, s_n);
}

// The backward step's operands other than W_hh and dhg_next (gru_step_bwd's arguments, offsets applied).
typedef struct {
  __global const DL_T* dh_add;
  ulong da_ld;
  int has_add;
  __global const DL_T* ws;
  __global const DL_T* hp;
  __global const DL_T* dh_in;
  int has_dh;
  __global DL_T* dhg;
  __global DL_T* dxg;
  __global DL_T* dh;
  int B, H;
} dl_gru_bwd_args;

// The cell backward of row b, unit j (nothing for rows past B); sum: the row's dhg_next W_hh term. The
// gradient of this step's h is (the carried cell part + sum) + dh_add, the unfused path's order.
static inline void dl_gru_bwd_cell(dl_gru_bwd_args a, int b, int j, DL_ACC sum) {
  if (b >= a.B) return;
  const int H = a.H;
  const ulong o = (ulong)b * H + j;
  DL_ACC g = a.has_dh ? DL_LOAD(a.dh_in, o) + sum : sum;
  if (a.has_add) g = g + DL_LOAD(a.dh_add, (ulong)b * a.da_ld + j);
  __global const DL_T* wr = a.ws + (ulong)b * 4 * H;
  __global DL_T* dr = a.dhg + (ulong)b * 3 * H;
  __global DL_T* dxr = a.dxg + (ulong)b * 3 * H;
  const DL_ACC r = DL_LOAD(wr, j), z = DL_LOAD(wr, H + j), n = DL_LOAD(wr, 2 * H + j), hn = DL_LOAD(wr, 3 * H + j);
  const DL_ACC gin = g * ((DL_ACC)1 - z) * ((DL_ACC)1 - n * n);
  DL_STORE(dr, j, gin * hn * ((DL_ACC)1 - r) * r);
  DL_STORE(dr, H + j, g * (DL_LOAD(a.hp, o) - n) * ((DL_ACC)1 - z) * z);
  DL_STORE(dr, 2 * H + j, gin * r);
  DL_STORE(dxr, 2 * H + j, gin);
  DL_STORE(a.dh, o, g * z);
}

// xg [B, 3H]: this step's input gates (x W_ih^T + b_ih); bias: b_hh [3H] (has_bias 0: none); h: the previous
// step's [B, H]; w: W_hh [3H, H]; y: this step's h; ws [B, 4H]: its workspace. lm: KS x (12 + 32) x GRU_LDF
// vectors. Global (ceil(B / 32) * 64 KS, ceil(H / 4)), local (64 KS, 1).
__kernel void gru_step_fwd(__global const DL_T* w, ulong w_off, __global const DL_T* bias, ulong b_off, int has_bias,
                           __global const DL_T* xg, ulong xg_off, __global const DL_T* h, ulong h_off,
                           __global DL_T* y, ulong y_off, __global DL_T* ws, ulong ws_off, int B, int H,
                           __local GRU_ACC4* lm) {
  const int lid = get_local_id(0) % GRU_ITEMS, lb = lid % GRU_LANES, lu = lid / GRU_LANES;
  const int s = get_local_id(0) / GRU_ITEMS, KS = get_local_size(0) / GRU_ITEMS;
  const int b0 = get_group_id(0) * GRU_ROWS, j0 = get_group_id(1) * GRU_U;
  // Row r of wt is gate r / 4 of unit r % 4.
  __local GRU_ACC4* wt = lm + s * (3 * GRU_U + GRU_ROWS) * GRU_LDF;
  __local GRU_ACC4* ht = wt + 3 * GRU_U * GRU_LDF;
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* hts = (__local DL_ACC*)ht;
  const __global DL_T* wp = w + w_off;
  const __global DL_T* hp = h + h_off;
  // Tile loads: element e = lid + 64 i of the tile, row e / TK, column e % TK (TK consecutive columns a row).
#define GRU_FW_N (3 * GRU_U * GRU_TKF / GRU_ITEMS)
#define GRU_FH_N (GRU_ROWS * GRU_TKF / GRU_ITEMS)
  DL_ACC rw[GRU_FW_N], rh[GRU_FH_N];
#define GRU_FWD_LOAD(k0)                                                                                  \
  {                                                                                                       \
    for (int i = 0; i < GRU_FW_N; ++i) {                                                                  \
      const int e = lid + i * GRU_ITEMS, r = e / GRU_TKF, col = (k0) + e % GRU_TKF;                       \
      const int unit = j0 + r % GRU_U;                                                                    \
      rw[i] = (unit < H && col < H) ? DL_LOAD(wp, (ulong)((r / GRU_U) * H + unit) * H + col) : (DL_ACC)0; \
    }                                                                                                     \
    for (int i = 0; i < GRU_FH_N; ++i) {                                                                  \
      const int e = lid + i * GRU_ITEMS, r = e / GRU_TKF, col = (k0) + e % GRU_TKF;                       \
      rh[i] = (b0 + r < B && col < H) ? DL_LOAD(hp, (ulong)(b0 + r) * H + col) : (DL_ACC)0;               \
    }                                                                                                     \
  }
  DL_ACC a[3][2] = {{0, 0}, {0, 0}, {0, 0}};
  const int stride = KS * GRU_TKF;
  const int rounds = (H + stride - 1) / stride;  // the same for every item (the barriers in the loop)
  GRU_FWD_LOAD(s * GRU_TKF)
  for (int round = 0; round < rounds; ++round) {
    const int k0 = round * stride + s * GRU_TKF;
    barrier(CLK_LOCAL_MEM_FENCE);  // the previous tile's reads are done
    for (int i = 0; i < GRU_FW_N; ++i) {
      const int e = lid + i * GRU_ITEMS;
      wts[(e / GRU_TKF) * (4 * GRU_LDF) + e % GRU_TKF] = rw[i];
    }
    for (int i = 0; i < GRU_FH_N; ++i) {
      const int e = lid + i * GRU_ITEMS;
      hts[(e / GRU_TKF) * (4 * GRU_LDF) + e % GRU_TKF] = rh[i];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (round + 1 < rounds) GRU_FWD_LOAD(k0 + stride)
    for (int q = 0; q < GRU_TKF / 4; ++q) {
      const GRU_ACC4 h0 = ht[lb * GRU_LDF + q], h1 = ht[(lb + GRU_LANES) * GRU_LDF + q];
      for (int g = 0; g < 3; ++g) {
        const GRU_ACC4 wv = wt[(g * GRU_U + lu) * GRU_LDF + q];
        a[g][0] += dot(wv, h0);
        a[g][1] += dot(wv, h1);
      }
    }
  }
  // With slices, their partial sums meet in local memory (red: slice-major, then value (g, row), then lid) and
  // slice 0 finishes both rows (lstm.cl's PoCL note); no item leaves before the last barrier.
  if (KS > 1) {
    __local DL_ACC* red = (__local DL_ACC*)lm;
    barrier(CLK_LOCAL_MEM_FENCE);  // every slice's last tile is read
    for (int v = 0; v < 6; ++v) red[(s * 6 + v) * GRU_ITEMS + lid] = a[v / 2][v % 2];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int v = 0; v < 6; ++v) {
      DL_ACC t = 0;
      for (int o = 0; o < KS; ++o) t += red[(o * 6 + v) * GRU_ITEMS + lid];
      a[v / 2][v % 2] = t;
    }
  }
  const int j = j0 + lu;
  if (j < H && s == 0) {
    __global const DL_T* xgp = xg + xg_off;
    __global const DL_T* bp = bias + b_off;
    dl_gru_fwd_cell(xgp, bp, has_bias, hp, y + y_off, ws + ws_off, b0 + lb, B, H, j, a[0][0], a[1][0], a[2][0]);
    dl_gru_fwd_cell(xgp, bp, has_bias, hp, y + y_off, ws + ws_off, b0 + lb + GRU_LANES, B, H, j, a[0][1], a[1][1],
                    a[2][1]);
  }
}

// The backward of one step, run from the last step to the first: the gradient of this step's h is dh_in (the
// cell part of the step after it, g z; has_dh 0: none) + dhg_next [B, 3H] x W_hh [3H, H] (the hidden-gate
// gradients of the step after it; has_next 0: none), reduced over 3H per (b, j), + dh_add (the output's
// gradient, and h_n's at the last step; has_add 0: none; rows da_ld apart: a batch_first model's output
// gradient is strided). Then the cell backward writes this step's hidden-gate gradients dhg [B, 3H], the n
// part of its input-gate gradients dxg [B, 3H] (r and z equal dhg's: RnnLayer.cpp copies them) and the cell
// part of the previous h's gradient dh [B, H] (dh_in may be dh). ws: this step's workspace, hp the previous h.
// lm: KS x (4 + 32) x GRU_LDB vectors. Global as forward.
__kernel void gru_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dhg_next, ulong dn_off,
                           int has_next, __global const DL_T* dh_add, ulong da_off, int has_add, ulong da_ld,
                           __global const DL_T* ws, ulong ws_off, __global const DL_T* hp, ulong hp_off,
                           __global const DL_T* dh_in, ulong di_off, int has_dh, __global DL_T* dhg, ulong dhg_off,
                           __global DL_T* dxg, ulong dxg_off, __global DL_T* dh, ulong dh_off, int B, int H,
                           __local GRU_ACC4* lm) {
  const int lid = get_local_id(0) % GRU_ITEMS, lb = lid % GRU_LANES, lu = lid / GRU_LANES;
  const int s = get_local_id(0) / GRU_ITEMS, KS = get_local_size(0) / GRU_ITEMS;
  const int b0 = get_group_id(0) * GRU_ROWS, j0 = get_group_id(1) * GRU_U;
  const int K = 3 * H;
  const dl_gru_bwd_args a = {dh_add + da_off, da_ld, has_add, ws + ws_off, hp + hp_off, dh_in + di_off, has_dh,
                             dhg + dhg_off, dxg + dxg_off, dh + dh_off, B, H};
  __local GRU_ACC4* wt = lm + s * (GRU_U + GRU_ROWS) * GRU_LDB;  // W_hh's tile transposed: unit-major, K along vectors
  __local GRU_ACC4* gt = wt + GRU_U * GRU_LDB;
  __local DL_ACC* wts = (__local DL_ACC*)wt;
  __local DL_ACC* gts = (__local DL_ACC*)gt;
  DL_ACC acc[4] = {0, 0, 0, 0};
  if (has_next) {  // uniform over the launch: every item takes the barriers below or none does
    const __global DL_T* wp = w + w_off;
    const __global DL_T* dn = dhg_next + dn_off;
    // Per tile: W rows k0..k0+TK of the group's 4 units (element e = lid + 64 i: row e / 4, unit e % 4) and
    // TK columns of 32 dhg_next rows (element e: row e / TK, column e % TK).
#define GRU_BW_N (GRU_TKB * GRU_U / GRU_ITEMS)
#define GRU_BG_N (GRU_ROWS * GRU_TKB / GRU_ITEMS)
    DL_ACC rw[GRU_BW_N], rg[GRU_BG_N];
#define GRU_BWD_LOAD(k0)                                                                             \
    {                                                                                                \
      for (int i = 0; i < GRU_BW_N; ++i) {                                                           \
        const int e = lid + i * GRU_ITEMS, r = (k0) + e / GRU_U, unit = j0 + e % GRU_U;              \
        rw[i] = (unit < H && r < K) ? DL_LOAD(wp, (ulong)r * H + unit) : (DL_ACC)0;                  \
      }                                                                                              \
      for (int i = 0; i < GRU_BG_N; ++i) {                                                           \
        const int e = lid + i * GRU_ITEMS, r = e / GRU_TKB, col = (k0) + e % GRU_TKB;                \
        rg[i] = (b0 + r < B && col < K) ? DL_LOAD(dn, (ulong)(b0 + r) * K + col) : (DL_ACC)0;        \
      }                                                                                              \
    }
    const int stride = KS * GRU_TKB;
    const int rounds = (K + stride - 1) / stride;
    GRU_BWD_LOAD(s * GRU_TKB)
    for (int round = 0; round < rounds; ++round) {
      const int k0 = round * stride + s * GRU_TKB;
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int i = 0; i < GRU_BW_N; ++i) {
        const int e = lid + i * GRU_ITEMS;
        wts[(e % GRU_U) * (4 * GRU_LDB) + e / GRU_U] = rw[i];
      }
      for (int i = 0; i < GRU_BG_N; ++i) {
        const int e = lid + i * GRU_ITEMS;
        gts[(e / GRU_TKB) * (4 * GRU_LDB) + e % GRU_TKB] = rg[i];
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      if (round + 1 < rounds) GRU_BWD_LOAD(k0 + stride)
      // Two partial sums per row (even and odd vectors): four independent chains, not two.
      for (int q = 0; q < GRU_TKB / 4; q += 2) {
        const GRU_ACC4 w0 = wt[lu * GRU_LDB + q], w1 = wt[lu * GRU_LDB + q + 1];
        acc[0] += dot(gt[lb * GRU_LDB + q], w0);
        acc[1] += dot(gt[(lb + GRU_LANES) * GRU_LDB + q], w0);
        acc[2] += dot(gt[lb * GRU_LDB + q + 1], w1);
        acc[3] += dot(gt[(lb + GRU_LANES) * GRU_LDB + q + 1], w1);
      }
    }
    acc[0] += acc[2];
    acc[1] += acc[3];
  }
  // With slices, as the forward: slice 0 finishes both rows; one exit.
  if (KS > 1 && has_next) {  // (without has_next every sum is zero)
    __local DL_ACC* red = (__local DL_ACC*)lm;
    barrier(CLK_LOCAL_MEM_FENCE);  // every slice's last tile is read
    red[(s * 2) * GRU_ITEMS + lid] = acc[0];
    red[(s * 2 + 1) * GRU_ITEMS + lid] = acc[1];
    barrier(CLK_LOCAL_MEM_FENCE);
    acc[0] = acc[1] = 0;
    for (int o = 0; o < KS; ++o) {
      acc[0] += red[(o * 2) * GRU_ITEMS + lid];
      acc[1] += red[(o * 2 + 1) * GRU_ITEMS + lid];
    }
  }
  const int j = j0 + lu;
  if (j < H && s == 0) {
    dl_gru_bwd_cell(a, b0 + lb, j, acc[0]);
    dl_gru_bwd_cell(a, b0 + lb + GRU_LANES, j, acc[1]);
  }
}
