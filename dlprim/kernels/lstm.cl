// One LSTM time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's
// whole-layer path). Built for small batches, where a step's GEMM ([B, H] x [H, 4H]) is too small
// to fill a GPU and a separate cell launch doubles the per-step launch cost. Built after
// rnn_step_common.cl (shared with gru.cl): the group layout, the K-split GEMM and the slices' reduction are
// there (read its comments); this file holds the LSTM cell (G = 4 gate rows per unit: i, f, g, o).
// The operation order follows the unfused path (GEMM sum added to the precomputed pre-activation;
// Rnn.cpp's lstm_cell and lstm_cell_backward bodies), so results match it to rounding.

// The cell of row b, unit j (nothing for rows past B): pre-activations gr (row b of gates) plus the GEMM sums
// s_i..s_o, activated into gr; c the previous step's c.
static inline void dl_lstm_fwd_cell(__global DL_T* gates, __global const DL_T* c, __global DL_T* y, __global DL_T* cy,
                                    int b, int B, int H, int j, DL_ACC s_i, DL_ACC s_f, DL_ACC s_g, DL_ACC s_o) {
  if (b >= B) return;
  __global DL_T* gr = gates + (ulong)b * 4 * H;
  const DL_ACC ig = dl_rnn_sigmoid(DL_LOAD(gr, j) + s_i), fg = dl_rnn_sigmoid(DL_LOAD(gr, H + j) + s_f);
  const DL_ACC cg = tanh(DL_LOAD(gr, 2 * H + j) + s_g), og = dl_rnn_sigmoid(DL_LOAD(gr, 3 * H + j) + s_o);
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
// step's [B, H]; w: W_hh [4H, H]; y, cy: this step's h and c. lm: KS x (16 + 32) x RNN_LDF vectors.
// Global (ceil(B / 32) * 64 KS, ceil(H / 4)), local (64 KS, 1).
__kernel void lstm_step_fwd(__global const DL_T* w, ulong w_off, __global DL_T* gates, ulong g_off,
                            __global const DL_T* h, ulong h_off, __global const DL_T* c, ulong c_off,
                            __global DL_T* y, ulong y_off, __global DL_T* cy, ulong cy_off, int B, int H,
                            __local DL_ACC4* lm) {
  RNN_STEP_ITEM
  DL_ACC a[4][2] = {{0, 0}, {0, 0}, {0, 0}, {0, 0}};  // a[g][r]: gate g of row b0 + lb + 16 r
  RNN_FWD_GEMM(4, a, w + w_off, h + h_off, lm)
  if (KS > 1) RNN_FWD_SLICE_SUM(4, a, lm)
  const int j = j0 + lu;
  if (j < H && s == 0) {
    __global DL_T* gr = gates + g_off;
    dl_lstm_fwd_cell(gr, c + c_off, y + y_off, cy + cy_off, b0 + lb, B, H, j, a[0][0], a[1][0], a[2][0], a[3][0]);
    dl_lstm_fwd_cell(gr, c + c_off, y + y_off, cy + cy_off, b0 + lb + RNN_LANES, B, H, j, a[0][1], a[1][1], a[2][1],
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
// RNN_LDB vectors. Global as forward.
__kernel void lstm_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dg_next, ulong dn_off, int has_next,
                            __global const DL_T* dh_add, ulong da_off, int has_add, ulong da_ld, __global const DL_T* gates,
                            ulong g_off, __global const DL_T* cy, ulong cy_off, __global const DL_T* cx, ulong cx_off,
                            __global const DL_T* dc_in, ulong di_off, int has_dc, __global DL_T* dg, ulong dg_off,
                            __global DL_T* dc, ulong dc_off, int B, int H, __local DL_ACC4* lm) {
  RNN_STEP_ITEM
  const int K = 4 * H;
  const dl_lstm_bwd_args a = {dh_add + da_off, da_ld, has_add, gates + g_off, cy + cy_off, cx + cx_off, dc_in + di_off,
                              has_dc, dg + dg_off, dc + dc_off, B, H};
  DL_ACC acc[4] = {0, 0, 0, 0};
  // has_next is uniform over the launch: every item takes the barriers or none does (without it every sum is 0).
  if (has_next) RNN_BWD_GEMM(acc, w + w_off, dg_next + dn_off, K, lm)
  if (KS > 1 && has_next) RNN_BWD_SLICE_SUM(acc, lm)
  const int j = j0 + lu;
  if (j < H && s == 0) {
    dl_lstm_bwd_cell(a, b0 + lb, j, acc[0]);
    dl_lstm_bwd_cell(a, b0 + lb + RNN_LANES, j, acc[1]);
  }
}
