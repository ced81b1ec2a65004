// Winograd F(4x4, 3x3) convolution transforms (needs the gemm_program_head defines: T, ACC,
// LOAD_T, STORE_T). A 3x3 stride-1 convolution is cut into 4x4 output tiles, each read from a
// 6x6 input tile; in the transformed domain a tile's output is the elementwise product of the
// transformed filter U = G g G^T and the transformed input V = B^T d B, summed over the input
// channels: for each of the 36 points one [Cout x Cin] @ [Cin x P] GEMM (run by gemm()); the
// output transform A^T m A then gives the 4x4 outputs. Points 0, +-1, +-2 (and infinity).
//
// Intermediate buffers hold the accumulation type: U [36][Cout][Cin], V [36][Cin][P],
// M [36][Cout][P], with P = images * tiles_h * tiles_w tiles (tile index fastest: coalesced).

// 1-D input transform B^T of 6 values (in place into o0..o5).
#define WINO_BT(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5) \
  do {                                                           \
    o0 = 4 * (d0) - 5 * (d2) + (d4);                             \
    o1 = -4 * ((d1) + (d2)) + (d3) + (d4);                       \
    o2 = 4 * ((d1) - (d2)) - (d3) + (d4);                        \
    o3 = 2 * ((d3) - (d1)) - (d2) + (d4);                        \
    o4 = 2 * ((d1) - (d3)) - (d2) + (d4);                        \
    o5 = 4 * (d1) - 5 * (d3) + (d5);                             \
  } while (0)

// 1-D filter transform G of 3 values into 6.
#define WINO_G(g0, g1, g2, o0, o1, o2, o3, o4, o5)                       \
  do {                                                                   \
    o0 = (g0) * ((ACC)1 / (ACC)4);                                               \
    o1 = ((g0) + (g1) + (g2)) * ((ACC)-1 / (ACC)6);                       \
    o2 = ((g0) - (g1) + (g2)) * ((ACC)-1 / (ACC)6);                       \
    o3 = (g0) * ((ACC)1 / (ACC)24) + (g1) * ((ACC)1 / (ACC)12) + (g2) * ((ACC)1 / (ACC)6); \
    o4 = (g0) * ((ACC)1 / (ACC)24) - (g1) * ((ACC)1 / (ACC)12) + (g2) * ((ACC)1 / (ACC)6); \
    o5 = (g2);                                                           \
  } while (0)

// 1-D output transform A^T of 6 values into 4.
#define WINO_AT(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3) \
  do {                                                  \
    ACC s12 = (m1) + (m2), d12 = (m1) - (m2);           \
    ACC s34 = (m3) + (m4), d34 = (m3) - (m4);           \
    o0 = (m0) + s12 + s34;                              \
    o1 = d12 + 2 * d34;                                 \
    o2 = s12 + 4 * s34;                                 \
    o3 = d12 + 8 * d34 + (m5);                          \
  } while (0)

// U[a][o][i] = (G g G^T)[a] for the filter g(r, s) = W[off + o * so + i * si + r * 3 + s], or
// g(r, s) = W[... + (2 - r) * 3 + (2 - s)] when `flip` (the input gradient's convolution).
__kernel void wino_filter(int Cout, int Cin, __global const T *W, ulong w_off, long so, long si, int flip,
                          __global ACC *U, ulong u_off) {
  const int id = get_global_id(0);
  if (id >= Cout * Cin) return;
  const int o = id / Cin, i = id - o * Cin;
  const long base = (long)w_off + o * so + i * si;
  ACC g[9];
  for (int r = 0; r < 9; ++r) g[flip ? 8 - r : r] = LOAD_T(W, base + r);
  ACC t[18];  // G g: 6 rows x 3 columns
  for (int c = 0; c < 3; ++c)
    WINO_G(g[c], g[3 + c], g[6 + c], t[c], t[3 + c], t[6 + c], t[9 + c], t[12 + c], t[15 + c]);
  __global ACC *out = U + u_off + id;
  const long step = (long)Cout * Cin;
  for (int r = 0; r < 6; ++r) {
    ACC u0, u1, u2, u3, u4, u5;
    WINO_G(t[3 * r], t[3 * r + 1], t[3 * r + 2], u0, u1, u2, u3, u4, u5);
    out[(6 * r + 0) * step] = u0;
    out[(6 * r + 1) * step] = u1;
    out[(6 * r + 2) * step] = u2;
    out[(6 * r + 3) * step] = u3;
    out[(6 * r + 4) * step] = u4;
    out[(6 * r + 5) * step] = u5;
  }
}

// V[a][c][p] = (B^T d B)[a] for tile p of images [b0, b0 + images): d is the 6x6 input window at
// (th * 4 - pad_h, tw * 4 - pad_w) of channel c (zero outside the image).
__kernel void wino_input(int C, int H, int W, int tiles_h, int tiles_w, int pad_h, int pad_w, int P,
                         __global const T *X, ulong x_off, long x_sn, long x_sc, long x_sh, long x_sw,
                         __global ACC *V, ulong v_off) {
  const ulong id = get_global_id(0);
  if (id >= (ulong)P * C) return;
  const int c = (int)(id / (ulong)P), p = (int)(id - (ulong)c * P);
  const int per_image = tiles_h * tiles_w;
  const int n = p / per_image, r = p - n * per_image, th = r / tiles_w, tw = r - th * tiles_w;
  const int h0 = th * 4 - pad_h, w0 = tw * 4 - pad_w;
  const long base = (long)x_off + n * x_sn + (long)c * x_sc;
  ACC t[36];  // B^T d: 6 rows x 6 columns
  for (int j = 0; j < 6; ++j) {
    const int w = w0 + j;
    const bool win = (uint)w < (uint)W;
    ACC d[6];
    for (int i = 0; i < 6; ++i) {
      const int h = h0 + i;
      d[i] = (win && (uint)h < (uint)H) ? LOAD_T(X, base + h * x_sh + w * x_sw) : (ACC)0;
    }
    WINO_BT(d[0], d[1], d[2], d[3], d[4], d[5], t[j], t[6 + j], t[12 + j], t[18 + j], t[24 + j], t[30 + j]);
  }
  __global ACC *out = V + v_off + (long)c * P + p;
  const long step = (long)C * P;
  for (int i = 0; i < 6; ++i) {
    ACC v0, v1, v2, v3, v4, v5;
    WINO_BT(t[6 * i], t[6 * i + 1], t[6 * i + 2], t[6 * i + 3], t[6 * i + 4], t[6 * i + 5], v0, v1, v2, v3, v4, v5);
    out[(6 * i + 0) * step] = v0;
    out[(6 * i + 1) * step] = v1;
    out[(6 * i + 2) * step] = v2;
    out[(6 * i + 3) * step] = v3;
    out[(6 * i + 4) * step] = v4;
    out[(6 * i + 5) * step] = v5;
  }
}

// Y[n, k, th * 4 + i, tw * 4 + j] = (A^T m A)[i][j] (+ bias[k]) for M[a][k][p], inside the output.
__kernel void wino_output(int K, int OH, int OW, int tiles_h, int tiles_w, int P, __global const ACC *M, ulong m_off,
                          __global const T *B, ulong b_off, int has_bias, __global T *Y, ulong y_off, long y_sn,
                          long y_sc, long y_sh, long y_sw) {
  const ulong id = get_global_id(0);
  if (id >= (ulong)P * K) return;
  const int k = (int)(id / (ulong)P), p = (int)(id - (ulong)k * P);
  const int per_image = tiles_h * tiles_w;
  const int n = p / per_image, r = p - n * per_image, th = r / tiles_w, tw = r - th * tiles_w;
  __global const ACC *in = M + m_off + (long)k * P + p;
  const long step = (long)K * P;
  ACC t[24];  // A^T m: 4 rows x 6 columns
  for (int j = 0; j < 6; ++j)
    WINO_AT(in[j * step], in[(6 + j) * step], in[(12 + j) * step], in[(18 + j) * step], in[(24 + j) * step],
            in[(30 + j) * step], t[j], t[6 + j], t[12 + j], t[18 + j]);
  const ACC bias = has_bias ? LOAD_T(B, (long)b_off + k) : (ACC)0;
  const int h0 = th * 4, w0 = tw * 4;
  const long base = (long)y_off + n * y_sn + (long)k * y_sc;
  for (int i = 0; i < 4; ++i) {
    ACC o[4];
    WINO_AT(t[6 * i], t[6 * i + 1], t[6 * i + 2], t[6 * i + 3], t[6 * i + 4], t[6 * i + 5], o[0], o[1], o[2], o[3]);
    if (h0 + i >= OH) break;
    for (int j = 0; j < 4; ++j)
      if (w0 + j < OW) STORE_T(Y, base + (h0 + i) * y_sh + (w0 + j) * y_sw, o[j] + bias);
  }
}

// Weight gradient: dw = G^T [ (A dy A^T) (.) (B^T x B) ] G summed over tiles (the forward's
// bilinear form differentiated w.r.t. the filter), so the 36 GEMMs reduce over the tiles:
// M[a][k][c] = sum_p D[a][k][p] V[a][c][p], with V from wino_input on x.

// 1-D transform A (6 x 4) of 4 values into 6.
#define WINO_A(y0, y1, y2, y3, o0, o1, o2, o3, o4, o5) \
  do {                                                 \
    ACC e02 = (y0) + (y2), e13 = (y1) + (y3);          \
    o0 = (y0);                                         \
    o1 = e02 + e13;                                    \
    o2 = e02 - e13;                                    \
    ACC f02 = (y0) + 4 * (y2), f13 = 2 * (y1) + 8 * (y3); \
    o3 = f02 + f13;                                    \
    o4 = f02 - f13;                                    \
    o5 = (y3);                                         \
  } while (0)

// 1-D transform G^T (3 x 6) of 6 values into 3.
#define WINO_GT(m0, m1, m2, m3, m4, m5, o0, o1, o2)                                              \
  do {                                                                                           \
    ACC s12 = (m1) + (m2), d12 = (m1) - (m2), s34 = (m3) + (m4), d34 = (m3) - (m4);              \
    o0 = (m0) * ((ACC)1 / (ACC)4) - s12 * ((ACC)1 / (ACC)6) + s34 * ((ACC)1 / (ACC)24);          \
    o1 = d34 * ((ACC)1 / (ACC)12) - d12 * ((ACC)1 / (ACC)6);                                     \
    o2 = (s34 - s12) * ((ACC)1 / (ACC)6) + (m5);                                                 \
  } while (0)

// D[a][k][p] = (A dy A^T)[a] for the 4x4 output-gradient tile p of channel k (zero outside).
__kernel void wino_grad_output(int K, int OH, int OW, int tiles_h, int tiles_w, int P, __global const T *DY,
                               ulong dy_off, long dy_sn, long dy_sc, long dy_sh, long dy_sw, __global ACC *D,
                               ulong d_off) {
  const ulong id = get_global_id(0);
  if (id >= (ulong)P * K) return;
  const int k = (int)(id / (ulong)P), p = (int)(id - (ulong)k * P);
  const int per_image = tiles_h * tiles_w;
  const int n = p / per_image, r = p - n * per_image, th = r / tiles_w, tw = r - th * tiles_w;
  const int h0 = th * 4, w0 = tw * 4;
  const long base = (long)dy_off + n * dy_sn + (long)k * dy_sc;
  ACC t[24];  // A dy: 6 rows x 4 columns
  for (int j = 0; j < 4; ++j) {
    const int w = w0 + j;
    ACC y[4];
    for (int i = 0; i < 4; ++i)
      y[i] = (w < OW && h0 + i < OH) ? LOAD_T(DY, base + (h0 + i) * dy_sh + w * dy_sw) : (ACC)0;
    WINO_A(y[0], y[1], y[2], y[3], t[j], t[4 + j], t[8 + j], t[12 + j], t[16 + j], t[20 + j]);
  }
  __global ACC *out = D + d_off + (long)k * P + p;
  const long step = (long)K * P;
  for (int i = 0; i < 6; ++i) {
    ACC v0, v1, v2, v3, v4, v5;
    WINO_A(t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3], v0, v1, v2, v3, v4, v5);
    out[(6 * i + 0) * step] = v0;
    out[(6 * i + 1) * step] = v1;
    out[(6 * i + 2) * step] = v2;
    out[(6 * i + 3) * step] = v3;
    out[(6 * i + 4) * step] = v4;
    out[(6 * i + 5) * step] = v5;
  }
}

// dw[k, c, r, s] = (G^T M G)[r][s] for M[a][k][c]; dw contiguous [K, C, 3, 3].
__kernel void wino_grad_weight(int K, int C, __global const ACC *M, ulong m_off, __global T *DW, ulong dw_off) {
  const int id = get_global_id(0);
  if (id >= K * C) return;
  __global const ACC *in = M + m_off + id;
  const long step = (long)K * C;
  ACC t[18];  // G^T m: 3 rows x 6 columns
  for (int j = 0; j < 6; ++j)
    WINO_GT(in[j * step], in[(6 + j) * step], in[(12 + j) * step], in[(18 + j) * step], in[(24 + j) * step],
            in[(30 + j) * step], t[j], t[6 + j], t[12 + j]);
  for (int i = 0; i < 3; ++i) {
    ACC o0, o1, o2;
    WINO_GT(t[6 * i], t[6 * i + 1], t[6 * i + 2], t[6 * i + 3], t[6 * i + 4], t[6 * i + 5], o0, o1, o2);
    STORE_T(DW, (long)dw_off + (long)id * 9 + 3 * i, o0);
    STORE_T(DW, (long)dw_off + (long)id * 9 + 3 * i + 1, o1);
    STORE_T(DW, (long)dw_off + (long)id * 9 + 3 * i + 2, o2);
  }
}
