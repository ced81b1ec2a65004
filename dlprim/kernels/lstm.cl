// One LSTM time step per launch, the recurrent GEMM and the cell fused (csrc/aten/RnnLayer.cpp's
// whole-layer path). Built for small batches, where a step's GEMM ([B, H] x [H, 4H]) is too small
// to fill a GPU and a separate cell launch doubles the per-step launch cost.
//
// A work-group is LSTM_JB hidden units x LSTM_BB batch rows; one work-item owns one (row b,
// unit j) and keeps all four gate rows (i, f, g, o) of unit j in registers, so the cell runs in
// the same item once the K loop is done. K runs in tiles of LSTM_TK through local memory.
// Accumulation in DL_ACC (float for float32, double for float64). Operation order follows the
// unfused path (GEMM sum added to the precomputed pre-activation; Rnn.cpp's lstm_cell and
// lstm_cell_backward bodies), so results match it to rounding.
#define LSTM_JB 16
#define LSTM_BB 16
#define LSTM_TK 16

static inline DL_ACC dl_lstm_sigmoid(DL_ACC x) { return (DL_ACC)1 / ((DL_ACC)1 + exp(-x)); }

// gates [B, 4H] (this step's slice of the layer's [steps, B, 4H]): in, the input projection plus
// biases; out, the activated i, f, g, o (the workspace the backward reads). h, c: the previous
// step's [B, H]; w: W_hh [4H, H]; y, cy: this step's h and c. Global (ceil(H/JB)*JB, ceil(B/BB)*BB).
__kernel __attribute__((reqd_work_group_size(LSTM_JB, LSTM_BB, 1)))
void lstm_step_fwd(__global const DL_T* w, ulong w_off, __global DL_T* gates, ulong g_off, __global const DL_T* h,
                   ulong h_off, __global const DL_T* c, ulong c_off, __global DL_T* y, ulong y_off,
                   __global DL_T* cy, ulong cy_off, int B, int H) {
  __local DL_ACC wt[4][LSTM_JB][LSTM_TK + 1];  // +1: the items of a row read different banks
  __local DL_ACC ht[LSTM_BB][LSTM_TK + 1];
  const int lj = get_local_id(0), lb = get_local_id(1), lid = lb * LSTM_JB + lj;
  const int j0 = get_group_id(0) * LSTM_JB, b0 = get_group_id(1) * LSTM_BB;
  const int j = j0 + lj, b = b0 + lb;
  w += w_off;
  h += h_off;
  DL_ACC a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  for (int k0 = 0; k0 < H; k0 += LSTM_TK) {
    for (int e = lid; e < 4 * LSTM_JB * LSTM_TK; e += LSTM_JB * LSTM_BB) {
      const int kk = e % LSTM_TK, r = e / LSTM_TK, gi = r / LSTM_JB, jj = r % LSTM_JB;
      const int col = k0 + kk, unit = j0 + jj;
      wt[gi][jj][kk] = (unit < H && col < H) ? DL_LOAD(w, (ulong)(gi * H + unit) * H + col) : (DL_ACC)0;
    }
    for (int e = lid; e < LSTM_BB * LSTM_TK; e += LSTM_JB * LSTM_BB) {
      const int kk = e % LSTM_TK, bb = e / LSTM_TK, col = k0 + kk, row = b0 + bb;
      ht[bb][kk] = (row < B && col < H) ? DL_LOAD(h, (ulong)row * H + col) : (DL_ACC)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < LSTM_TK; ++kk) {
      const DL_ACC hv = ht[lb][kk];
      a0 += wt[0][lj][kk] * hv;
      a1 += wt[1][lj][kk] * hv;
      a2 += wt[2][lj][kk] * hv;
      a3 += wt[3][lj][kk] * hv;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (j >= H || b >= B) return;
  gates += g_off + (ulong)b * 4 * H;
  const DL_ACC ig = dl_lstm_sigmoid(DL_LOAD(gates, j) + a0), fg = dl_lstm_sigmoid(DL_LOAD(gates, H + j) + a1);
  const DL_ACC cg = tanh(DL_LOAD(gates, 2 * H + j) + a2), og = dl_lstm_sigmoid(DL_LOAD(gates, 3 * H + j) + a3);
  const ulong o = (ulong)b * H + j;
  const DL_ACC cv = (fg * DL_LOAD(c, c_off + o)) + (ig * cg);
  DL_STORE(y, y_off + o, og * tanh(cv));
  DL_STORE(cy, cy_off + o, cv);
  DL_STORE(gates, j, ig);
  DL_STORE(gates, H + j, fg);
  DL_STORE(gates, 2 * H + j, cg);
  DL_STORE(gates, 3 * H + j, og);
}

// The backward of one step, run from the last step to the first: the gradient of this step's h
// is dh_add (the output's gradient, and h_n's at the last step; has_add 0: none) plus dg_next
// [B, 4H] x W_hh [4H, H] (the gate gradients of the step after this one; has_next 0: none),
// reduced over 4H per (b, j); then the cell backward writes this step's gate gradients dg [B, 4H]
// and the running gradient of c, dc [B, H] (read from dc_in, has_dc 0: zero; dc_in may be dc).
// gates: this step's activated workspace; cy its c; cx the previous step's c.
__kernel __attribute__((reqd_work_group_size(LSTM_JB, LSTM_BB, 1)))
void lstm_step_bwd(__global const DL_T* w, ulong w_off, __global const DL_T* dg_next, ulong dn_off, int has_next,
                   __global const DL_T* dh_add, ulong da_off, int has_add, __global const DL_T* gates, ulong g_off,
                   __global const DL_T* cy, ulong cy_off, __global const DL_T* cx, ulong cx_off,
                   __global const DL_T* dc_in, ulong di_off, int has_dc, __global DL_T* dg, ulong dg_off,
                   __global DL_T* dc, ulong dc_off, int B, int H) {
  __local DL_ACC wt[LSTM_TK][LSTM_JB + 1];
  __local DL_ACC gt[LSTM_BB][LSTM_TK + 1];
  const int lj = get_local_id(0), lb = get_local_id(1), lid = lb * LSTM_JB + lj;
  const int j0 = get_group_id(0) * LSTM_JB, b0 = get_group_id(1) * LSTM_BB;
  const int j = j0 + lj, b = b0 + lb, K = 4 * H;
  DL_ACC acc = 0;
  if (has_next) {
    w += w_off;
    dg_next += dn_off;
    for (int k0 = 0; k0 < K; k0 += LSTM_TK) {
      for (int e = lid; e < LSTM_TK * LSTM_JB; e += LSTM_JB * LSTM_BB) {
        const int jj = e % LSTM_JB, kk = e / LSTM_JB, r = k0 + kk, unit = j0 + jj;
        wt[kk][jj] = (unit < H && r < K) ? DL_LOAD(w, (ulong)r * H + unit) : (DL_ACC)0;
      }
      for (int e = lid; e < LSTM_BB * LSTM_TK; e += LSTM_JB * LSTM_BB) {
        const int kk = e % LSTM_TK, bb = e / LSTM_TK, r = k0 + kk, row = b0 + bb;
        gt[bb][kk] = (row < B && r < K) ? DL_LOAD(dg_next, (ulong)row * K + r) : (DL_ACC)0;
      }
      barrier(CLK_LOCAL_MEM_FENCE);
      for (int kk = 0; kk < LSTM_TK; ++kk) acc += gt[lb][kk] * wt[kk][lj];
      barrier(CLK_LOCAL_MEM_FENCE);
    }
  }
  if (j >= H || b >= B) return;
  const ulong o = (ulong)b * H + j;
  const DL_ACC dh = has_add ? DL_LOAD(dh_add, da_off + o) + acc : acc;
  gates += g_off + (ulong)b * K;
  dg += dg_off + (ulong)b * K;
  const DL_ACC ig = DL_LOAD(gates, j), fg = DL_LOAD(gates, H + j), cg = DL_LOAD(gates, 2 * H + j);
  const DL_ACC og = DL_LOAD(gates, 3 * H + j);
  const DL_ACC t = tanh(DL_LOAD(cy, cy_off + o));
  DL_STORE(dg, 3 * H + j, dh * t * ((DL_ACC)1 - og) * og);
  const DL_ACC dcy = dh * og * ((DL_ACC)1 - t * t) + (has_dc ? DL_LOAD(dc_in, di_off + o) : (DL_ACC)0);
  DL_STORE(dg, j, dcy * cg * ((DL_ACC)1 - ig) * ig);
  DL_STORE(dg, H + j, dcy * DL_LOAD(cx, cx_off + o) * ((DL_ACC)1 - fg) * fg);
  DL_STORE(dg, 2 * H + j, dcy * ig * ((DL_ACC)1 - cg * cg));
  DL_STORE(dc, dc_off + o, dcy * fg);
}
