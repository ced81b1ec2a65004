// One GRU time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's whole-layer
// path), built like lstm.cl's LSTM steps after rnn_step_common.cl: the group layout, the K-split GEMM (G = 3 gate
// rows per unit: r, z, n) and the slices' reduction are there (read its comments); this file holds the GRU cell.
// Slice 0 runs the cell of both rows. Accumulation in DL_ACC. The math and the workspace are GruLayer's unfused
// path (Rnn.cpp's gru_cell_sum and gru_cell_backward_sum bodies, the hidden gates' GEMM including b_hh), so
// results match it to rounding.

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
  const DL_ACC rg = dl_rnn_sigmoid(DL_LOAD(xr, j) + s_r), ig = dl_rnn_sigmoid(DL_LOAD(xr, H + j) + s_z);
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
  const DL_ACC dr_r = gin * hn * ((DL_ACC)1 - r) * r, dr_z = g * (DL_LOAD(a.hp, o) - n) * ((DL_ACC)1 - z) * z;
  DL_STORE(dr, j, dr_r);
  DL_STORE(dr, H + j, dr_z);
  DL_STORE(dr, 2 * H + j, gin * r);
  DL_STORE(dxr, j, dr_r);  // the input gates' r and z gradients are the hidden gates'
  DL_STORE(dxr, H + j, dr_z);
  DL_STORE(dxr, 2 * H + j, gin);
  DL_STORE(a.dh, o, g * z);
}

// xg [B, 3H]: this step's input gates (x W_ih^T + b_ih); bias: b_hh [3H] (has_bias 0: none); h: the previous
// step's [B, H]; w: W_hh [3H, H]; y: this step's h; ws [B, 4H]: its workspace. lm: KS x (12 + 32) x RNN_LDF
// vectors. Global (ceil(B / 32) * 64 KS, ceil(H / 4)), local (64 KS, 1).
__kernel void gru_step_fwd(__global const DL_T* w, ulong w_off, __global const DL_T* bias, ulong b_off, int has_bias,
                           __global const DL_T* xg, ulong xg_off, __global const DL_T* h, ulong h_off,
                           __global DL_T* y, ulong y_off, __global DL_T* ws, ulong ws_off, int B, int H,
                           __local DL_ACC4* lm) {
  RNN_STEP_ITEM
  const __global DL_T* hp = h + h_off;
  DL_ACC a[3][2] = {{0, 0}, {0, 0}, {0, 0}};  // a[g][r]: gate g of row b0 + lb + 16 r
  RNN_FWD_GEMM(3, a, w + w_off, hp, lm)
  if (KS > 1) RNN_FWD_SLICE_SUM(3, a, lm)
  const int j = j0 + lu;
  if (j < H && s == 0) {
    __global const DL_T* xgp = xg + xg_off;
    __global const DL_T* bp = bias + b_off;
    dl_gru_fwd_cell(xgp, bp, has_bias, hp, y + y_off, ws + ws_off, b0 + lb, B, H, j, a[0][0], a[1][0], a[2][0]);
    dl_gru_fwd_cell(xgp, bp, has_bias, hp, y + y_off, ws + ws_off, b0 + lb + RNN_LANES, B, H, j, a[0][1], a[1][1],
                    a[2][1]);
  }
}

// The backward of one step, run from the last step to the first: the gradient of this step's h is dh_in (the
// cell part of the step after it, g z; has_dh 0: none) + dhg_next [B, 3H] x W_hh [3H, H] (the hidden-gate
// gradients of the step after it; has_next 0: none), reduced over 3H per (b, j), + dh_add (the output's
// gradient, and h_n's at the last step; has_add 0: none; rows da_ld apart: a batch_first model's output
// gradient is strided). Then the cell backward writes this step's hidden-gate gradients dhg [B, 3H], its
// input-gate gradients dxg [B, 3H] (r and z equal dhg's: written here, not copied by the host afterwards) and the
// cell part of the previous h's gradient dh [B, H] (dh_in may be dh). ws: this step's workspace, hp the previous h.
// lm: KS x (4 + 32) x RNN_LDB vectors. Global as forward.
__kernel void gru_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dhg_next, ulong dn_off,
                           int has_next, __global const DL_T* dh_add, ulong da_off, int has_add, ulong da_ld,
                           __global const DL_T* ws, ulong ws_off, __global const DL_T* hp, ulong hp_off,
                           __global const DL_T* dh_in, ulong di_off, int has_dh, __global DL_T* dhg, ulong dhg_off,
                           __global DL_T* dxg, ulong dxg_off, __global DL_T* dh, ulong dh_off, int B, int H,
                           __local DL_ACC4* lm) {
  RNN_STEP_ITEM
  const int K = 3 * H;
  const dl_gru_bwd_args a = {dh_add + da_off, da_ld, has_add, ws + ws_off, hp + hp_off, dh_in + di_off, has_dh,
                             dhg + dhg_off, dxg + dxg_off, dh + dh_off, B, H};
  DL_ACC acc[4] = {0, 0, 0, 0};
  // has_next is uniform over the launch: every item takes the barriers or none does (without it every sum is 0).
  if (has_next) RNN_BWD_GEMM(acc, w + w_off, dhg_next + dn_off, K, lm)
  if (KS > 1 && has_next) RNN_BWD_SLICE_SUM(acc, lm)
  const int j = j0 + lu;
  if (j < H && s == 0) {
    dl_gru_bwd_cell(a, b0 + lb, j, acc[0]);
    dl_gru_bwd_cell(a, b0 + lb + RNN_LANES, j, acc[1]);
  }
}
