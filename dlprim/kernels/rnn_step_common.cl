// The K-split machinery of the fused recurrent step kernels (lstm.cl, gru.cl), built in front of each of them
// (typed_kernel's prefix; lstm.cpp, gru.cpp): the item layout, each step's recurrent GEMM in K tiles over K-slices
// and the slices' reduction. The cell files keep only their cell math and kernel signatures.
//
// A work-group is KS K-slices (dlprim/src/rnn_step_launch.cpp picks KS) of 16 batch lanes x RNN_U (4) hidden
// units, 64 KS items in one dimension (item: lane fastest, then unit, then slice). Each item of a slice takes two
// batch rows (lane and lane + 16) of one unit, so a group covers 32 rows and 4 units: all G gate rows (LSTM's i,
// f, g, o; GRU's r, z, n) of its units. A step is too small to fill a GPU with one slice per group (128 groups of
// 2 warps for a 512-unit layer: each walks K alone, its latencies exposed), so the K loop is split over the
// slices, each taking every KS-th tile, and their partial sums meet in local memory; the cell runs in the items
// of the first slice. K runs in tiles through local memory (a slice's own part of the dynamic local buffer `lm`);
// each item loads the next tile into registers before it computes on the current one, and reads local memory as
// 4-vectors. Accumulation in DL_ACC (float for float32, double for float64).
//
// The GEMM and reduction are macros, not functions: they fill the kernel's private accumulator arrays in place
// (no private pointers for a GPU compiler to keep in memory), so each kernel's code is what it was when the two
// files had their own copies (the GPU timings of docs/benchmarks.md were measured on it). They read the item's
// indices from RNN_STEP_ITEM and the kernel's B (batch) and H (hidden size) arguments.
#define RNN_LANES 16
#define RNN_U 4
#define RNN_ROWS 32                    // batch rows per group: two per item
#define RNN_ITEMS (RNN_LANES * RNN_U)  // items of one slice
#define RNN_CAT2(a, b) a##b
#define RNN_CAT(a, b) RNN_CAT2(a, b)
#define DL_ACC4 RNN_CAT(DL_ACC, 4)
// K tiles (rnn_step_launch.h's kRnnTileFwd / kRnnTileBwd size the local buffer from them).
#define RNN_TKF 32                 // forward, K = H
#define RNN_TKB 64                 // backward, K = G H
#define RNN_LDF (RNN_TKF / 4 + 1)  // a local row in vectors; +1 spreads the rows over banks
#define RNN_LDB (RNN_TKB / 4 + 1)

static inline DL_ACC dl_rnn_sigmoid(DL_ACC x) { return (DL_ACC)1 / ((DL_ACC)1 + exp(-x)); }

// The item's place: lid within its slice, lane lb, unit lu, slice s of KS; the group's first row b0 and unit j0.
#define RNN_STEP_ITEM                                                                           \
  const int lid = get_local_id(0) % RNN_ITEMS, lb = lid % RNN_LANES, lu = lid / RNN_LANES;      \
  const int s = get_local_id(0) / RNN_ITEMS, KS = get_local_size(0) / RNN_ITEMS;               \
  const int b0 = get_group_id(0) * RNN_ROWS, j0 = get_group_id(1) * RNN_U;

// The forward GEMM over K = H: acc[g][r] (DL_ACC acc[G][2], zeroed) += (row gate g x H + j0 + lu of W_PTR,
// W_hh [G H, H]) . (row b0 + lb + 16 r of H_PTR, h [B, H]) over this slice's tiles. lm: KS x (G 4 + 32) x RNN_LDF
// vectors; in a slice's part, row q of wt is gate q / 4 of unit q % 4. Tile loads: element e = lid + 64 i of a
// tile, row e / TK, column e % TK (TK consecutive columns a row).
#define RNN_FWD_LOAD(G, k0)                                                                              \
  {                                                                                                      \
    for (int i = 0; i < RNN_FW_N(G); ++i) {                                                              \
      const int e = lid + i * RNN_ITEMS, r = e / RNN_TKF, col = (k0) + e % RNN_TKF;                      \
      const int unit = j0 + r % RNN_U;                                                                   \
      rw[i] = (unit < H && col < H) ? DL_LOAD(rnn_w, (ulong)((r / RNN_U) * H + unit) * H + col) : (DL_ACC)0; \
    }                                                                                                    \
    for (int i = 0; i < RNN_FH_N; ++i) {                                                                 \
      const int e = lid + i * RNN_ITEMS, r = e / RNN_TKF, col = (k0) + e % RNN_TKF;                      \
      rh[i] = (b0 + r < B && col < H) ? DL_LOAD(rnn_h, (ulong)(b0 + r) * H + col) : (DL_ACC)0;           \
    }                                                                                                    \
  }
#define RNN_FW_N(G) ((G) * RNN_U * RNN_TKF / RNN_ITEMS)
#define RNN_FH_N (RNN_ROWS * RNN_TKF / RNN_ITEMS)
#define RNN_FWD_GEMM(G, acc, W_PTR, H_PTR, lm)                                                  \
  {                                                                                             \
    __global const DL_T* const rnn_w = (W_PTR);                                                 \
    __global const DL_T* const rnn_h = (H_PTR);                                                 \
    __local DL_ACC4* wt = (lm) + s * ((G) * RNN_U + RNN_ROWS) * RNN_LDF;                        \
    __local DL_ACC4* ht = wt + (G) * RNN_U * RNN_LDF;                                           \
    __local DL_ACC* wts = (__local DL_ACC*)wt;                                                  \
    __local DL_ACC* hts = (__local DL_ACC*)ht;                                                  \
    DL_ACC rw[RNN_FW_N(G)], rh[RNN_FH_N];                                                       \
    const int stride = KS * RNN_TKF;                                                            \
    const int rounds = (H + stride - 1) / stride; /* the same for every item (the barriers) */  \
    RNN_FWD_LOAD(G, s * RNN_TKF)                                                                \
    for (int round = 0; round < rounds; ++round) {                                              \
      const int k0 = round * stride + s * RNN_TKF;                                              \
      barrier(CLK_LOCAL_MEM_FENCE); /* the previous tile's reads are done */                    \
      for (int i = 0; i < RNN_FW_N(G); ++i) {                                                   \
        const int e = lid + i * RNN_ITEMS;                                                      \
        wts[(e / RNN_TKF) * (4 * RNN_LDF) + e % RNN_TKF] = rw[i];                               \
      }                                                                                         \
      for (int i = 0; i < RNN_FH_N; ++i) {                                                      \
        const int e = lid + i * RNN_ITEMS;                                                      \
        hts[(e / RNN_TKF) * (4 * RNN_LDF) + e % RNN_TKF] = rh[i];                               \
      }                                                                                         \
      barrier(CLK_LOCAL_MEM_FENCE);                                                             \
      if (round + 1 < rounds) RNN_FWD_LOAD(G, k0 + stride)                                      \
      for (int q = 0; q < RNN_TKF / 4; ++q) {                                                   \
        const DL_ACC4 h0 = ht[lb * RNN_LDF + q], h1 = ht[(lb + RNN_LANES) * RNN_LDF + q];       \
        for (int g = 0; g < (G); ++g) {                                                         \
          const DL_ACC4 wv = wt[(g * RNN_U + lu) * RNN_LDF + q];                                \
          acc[g][0] += dot(wv, h0);                                                             \
          acc[g][1] += dot(wv, h1);                                                             \
        }                                                                                       \
      }                                                                                         \
    }                                                                                           \
  }

// The backward GEMM over K (G H): acc[r] (DL_ACC acc[4], zeroed) = (row b0 + lb + 16 r of G_PTR, the next step's
// gate gradients [B, K]) . (column j0 + lu of W_PTR, W_hh [K, H]) over this slice's tiles, as two partial sums per
// row (even and odd vectors: four independent chains, not two) added at the end; acc[2], acc[3] are spent. lm:
// KS x (4 + 32) x RNN_LDB vectors; a slice's W_hh tile is transposed: unit-major, K along vectors. Per tile: W
// rows k0..k0+TK of the group's 4 units (element e = lid + 64 i: row e / 4, unit e % 4) and TK columns of 32
// gradient rows (element e: row e / TK, column e % TK).
#define RNN_BW_N (RNN_TKB * RNN_U / RNN_ITEMS)
#define RNN_BG_N (RNN_ROWS * RNN_TKB / RNN_ITEMS)
#define RNN_BWD_LOAD(K, k0)                                                                          \
  {                                                                                                  \
    for (int i = 0; i < RNN_BW_N; ++i) {                                                             \
      const int e = lid + i * RNN_ITEMS, r = (k0) + e / RNN_U, unit = j0 + e % RNN_U;                \
      rw[i] = (unit < H && r < (K)) ? DL_LOAD(rnn_w, (ulong)r * H + unit) : (DL_ACC)0;               \
    }                                                                                                \
    for (int i = 0; i < RNN_BG_N; ++i) {                                                             \
      const int e = lid + i * RNN_ITEMS, r = e / RNN_TKB, col = (k0) + e % RNN_TKB;                  \
      rg[i] = (b0 + r < B && col < (K)) ? DL_LOAD(rnn_g, (ulong)(b0 + r) * (K) + col) : (DL_ACC)0;   \
    }                                                                                                \
  }
#define RNN_BWD_GEMM(acc, W_PTR, G_PTR, K, lm)                                                  \
  {                                                                                             \
    __global const DL_T* const rnn_w = (W_PTR);                                                 \
    __global const DL_T* const rnn_g = (G_PTR);                                                 \
    __local DL_ACC4* wt = (lm) + s * (RNN_U + RNN_ROWS) * RNN_LDB;                              \
    __local DL_ACC4* gt = wt + RNN_U * RNN_LDB;                                                 \
    __local DL_ACC* wts = (__local DL_ACC*)wt;                                                  \
    __local DL_ACC* gts = (__local DL_ACC*)gt;                                                  \
    DL_ACC rw[RNN_BW_N], rg[RNN_BG_N];                                                          \
    const int stride = KS * RNN_TKB;                                                            \
    const int rounds = ((K) + stride - 1) / stride;                                             \
    RNN_BWD_LOAD(K, s * RNN_TKB)                                                                \
    for (int round = 0; round < rounds; ++round) {                                              \
      const int k0 = round * stride + s * RNN_TKB;                                              \
      barrier(CLK_LOCAL_MEM_FENCE);                                                             \
      for (int i = 0; i < RNN_BW_N; ++i) {                                                      \
        const int e = lid + i * RNN_ITEMS;                                                      \
        wts[(e % RNN_U) * (4 * RNN_LDB) + e / RNN_U] = rw[i];                                   \
      }                                                                                         \
      for (int i = 0; i < RNN_BG_N; ++i) {                                                      \
        const int e = lid + i * RNN_ITEMS;                                                      \
        gts[(e / RNN_TKB) * (4 * RNN_LDB) + e % RNN_TKB] = rg[i];                               \
      }                                                                                         \
      barrier(CLK_LOCAL_MEM_FENCE);                                                             \
      if (round + 1 < rounds) RNN_BWD_LOAD(K, k0 + stride)                                      \
      for (int q = 0; q < RNN_TKB / 4; q += 2) {                                                \
        const DL_ACC4 w0 = wt[lu * RNN_LDB + q], w1 = wt[lu * RNN_LDB + q + 1];                 \
        acc[0] += dot(gt[lb * RNN_LDB + q], w0);                                                \
        acc[1] += dot(gt[(lb + RNN_LANES) * RNN_LDB + q], w0);                                  \
        acc[2] += dot(gt[lb * RNN_LDB + q + 1], w1);                                            \
        acc[3] += dot(gt[(lb + RNN_LANES) * RNN_LDB + q + 1], w1);                              \
      }                                                                                         \
    }                                                                                           \
    acc[0] += acc[2];                                                                           \
    acc[1] += acc[3];                                                                           \
  }

// With slices (run these only where KS > 1, in every item or none: barriers), their partial sums meet in local
// memory (red: slice-major, then value, then lid) and every item gets the group's sums, slice 0's first, which
// only slice 0 uses: it finishes both rows. (Slice 1 finishing row 1 computed wrong rows past the first group on
// PoCL 3.1's optimized builds at 4 slices, right at -O0 and on Oclgrind.) No item leaves before the last barrier.
// The forward's sums acc[G][2] (value v: acc[v / 2][v % 2]) and the backward's acc[0], acc[1] are reduced in the
// loop orders each kernel had when lstm.cl and gru.cl had their own copies (the same sums: slices in order from 0).
#define RNN_FWD_SLICE_SUM(G, acc, lm)                                                            \
  {                                                                                              \
    __local DL_ACC* red = (__local DL_ACC*)(lm);                                                 \
    barrier(CLK_LOCAL_MEM_FENCE); /* every slice's last tile is read */                          \
    for (int v = 0; v < 2 * (G); ++v) red[(s * 2 * (G) + v) * RNN_ITEMS + lid] = acc[v / 2][v % 2]; \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                \
    for (int v = 0; v < 2 * (G); ++v) {                                                          \
      DL_ACC t = 0;                                                                              \
      for (int o = 0; o < KS; ++o) t += red[(o * 2 * (G) + v) * RNN_ITEMS + lid];               \
      acc[v / 2][v % 2] = t;                                                                     \
    }                                                                                            \
  }
#define RNN_BWD_SLICE_SUM(acc, lm)                                                \
  {                                                                               \
    __local DL_ACC* red = (__local DL_ACC*)(lm);                                  \
    barrier(CLK_LOCAL_MEM_FENCE); /* every slice's last tile is read */           \
    red[(s * 2) * RNN_ITEMS + lid] = acc[0];                                      \
    red[(s * 2 + 1) * RNN_ITEMS + lid] = acc[1];                                  \
    barrier(CLK_LOCAL_MEM_FENCE);                                                 \
    acc[0] = acc[1] = 0;                                                          \
    for (int o = 0; o < KS; ++o) {                                                \
      acc[0] += red[(o * 2) * RNN_ITEMS + lid];                                   \
      acc[1] += red[(o * 2 + 1) * RNN_ITEMS + lid];                               \
    }                                                                             \
  }
