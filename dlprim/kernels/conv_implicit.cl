// Operand hooks of the tiled skeleton (gemm_tiled.cl) or the matrix-engine one (gemm_mma.cl, built with
// MMA_KIND) for the implicit-GEMM convolution forward: per image bi and group gi,
// C(m, n) = sum_k W_g(m, k) * P(k, n), with m the output channel in the group, k = (ci, kh, kw) and
// n = (oh, ow). The patch matrix P is never stored: its elements are gathered from x as the tiles are staged.
// ktab[k] = (ci * x_sc + kh * dil_h * x_sh + kw * dil_w * x_sw, kh * dil_h, kw * dil_w, 0), made
// by the host once per geometry, replaces per-element divisions by one cached load.

#define OPERAND_ARGS                                                                                       \
  __global const T *A, ulong a_off, long lda, long a_gs, __global const T *X, ulong x_off, long x_bs, long x_gs, \
      long x_sh, long x_sw, __global const int4 *ktab, int in_h, int in_w, int OW, int stride_h, int stride_w,         \
      int pad_h, int pad_w

#define STEP_SETUP(o, k0)                                 \
  __global const T *Ap = A + (k0);                        \
  const int k_left = K - (k0);                            \
  const int kbase = (k0);

inline ACC conv_patch(__global const T *X, __global const int4 *ktab, int k, bool ok, int ih0, int iw0, long xcol,
                      int H, int W) {
  if (!ok) return (ACC)0;
  const int4 t = ktab[k];
  const int ih = ih0 + t.y, iw = iw0 + t.z;
  return ((uint)ih < (uint)H && (uint)iw < (uint)W) ? LOAD_T(X, xcol + t.x) : (ACC)0;
}

#define A_AT(r, kk) ((kk) < k_left ? LOAD_T(Ap, min((r), m_max) * lda_ + (kk)) : (ACC)0)
#define A_LOAD_KFAST 1
#define B_LOAD_NFAST 1

#ifdef MMA_KIND
// The matrix-engine skeleton (gemm_mma.cl): a work-item stages units of G adjacent columns (output pixels)
// at fixed columns B_POS_C(0) .. + G - 1 (the host takes configs whose work-group size is a multiple of
// BN / G, so B_POS_C(v) is the same for every unit v), whose coordinates are computed once here; B_RAW_J
// gathers element j of a unit as its stored bits (MT), 0 outside the image, past K or past N.
#define OPERAND_SETUP                                                                      \
  A += a_off + (long)gi * a_gs + (long)m0 * lda;                                           \
  X += x_off + (long)bi * x_bs + (long)gi * x_gs;                                          \
  const int m_max = M - 1 - m0;                                                            \
  const int lda_ = (int)lda;                                                               \
  int ih0_[G], iw0_[G];                                                                    \
  long xcol_[G];                                                                           \
  bool ok_[G];                                                                             \
  _Pragma("unroll") for (int j = 0; j < G; ++j) {                                          \
    const int ncol = n0 + B_POS_C(0) + j;                                                  \
    const int oh = ncol / OW, ow = ncol - (ncol / OW) * OW;                                \
    ok_[j] = ncol < N;                                                                     \
    ih0_[j] = oh * stride_h - pad_h;                                                       \
    iw0_[j] = ow * stride_w - pad_w;                                                       \
    xcol_[j] = (long)ih0_[j] * x_sh + (long)iw0_[j] * x_sw;                                \
  }

inline MT conv_patch_raw(__global const T *X, __global const int4 *ktab, int k, bool ok, int ih0, int iw0, long xcol,
                         int H, int W) {
  if (!ok) return (MT)0;
  const int4 t = ktab[k];
  const int ih = ih0 + t.y, iw = iw0 + t.z;
  return ((uint)ih < (uint)H && (uint)iw < (uint)W) ? ((__global const MT *)X)[xcol + t.x] : (MT)0;
}

#define A_RAW(r, kk) ((kk) < k_left ? ((__global const MT *)Ap)[min((r), m_max) * lda_ + (kk)] : (MT)0)
#define B_RAW_J(v, j)                                                                                          \
  conv_patch_raw(X, ktab, kbase + B_POS_K(v), B_POS_K(v) < k_left && ok_[j], ih0_[j], iw0_[j], xcol_[j], in_h, \
                 in_w)
// Any column (the 3xtf32 kernel's plain-fp32 recomputation of a tile with non-finite inputs).
inline ACC conv_patch_at(__global const T *X, __global const int4 *ktab, int k, int ncol, int N, int OW, int sh,
                         int sw, int ph, int pw, long x_sh, long x_sw, int H, int W) {
  const int oh = ncol / OW, ow = ncol - (ncol / OW) * OW;
  const int ih0 = oh * sh - ph, iw0 = ow * sw - pw;
  return conv_patch(X, ktab, k, ncol < N, ih0, iw0, (long)ih0 * x_sh + (long)iw0 * x_sw, H, W);
}
#define B_AT(kk, c)                                                                                          \
  ((kk) < k_left ? conv_patch_at(X, ktab, kbase + (kk), n0 + (c), N, OW, stride_h, stride_w, pad_h, pad_w, x_sh, \
                                 x_sw, in_h, in_w)                                                           \
                 : (ACC)0)
#else
// The tiled skeleton (gemm_tiled.cl): local-memory configs only, with (TM * TN) % BN == 0, so every
// load of a work-item reads the same output pixel, whose coordinates are computed once.
#if !USE_LOCAL
#error "the implicit convolution needs a local-memory tile config"
#endif
#if (TM * TN) % BN != 0
#error "the implicit convolution needs (TM * TN) % BN == 0"
#endif

#define OPERAND_SETUP                                                                      \
  A += a_off + (long)gi * a_gs + (long)m0 * lda;                                           \
  X += x_off + (long)bi * x_bs + (long)gi * x_gs;                                          \
  const int m_max = M - 1 - m0;                                                            \
  const int lda_ = (int)lda;                                                               \
  const int ncol = n0 + B_POS_C(0, 0);                                                     \
  const bool col_ok = ncol < N;                                                            \
  const int oh_ = ncol / OW, ow_ = ncol - (ncol / OW) * OW;                                \
  const int ih0 = oh_ * stride_h - pad_h, iw0 = ow_ * stride_w - pad_w;                    \
  const long xcol = (long)ih0 * x_sh + (long)iw0 * x_sw;

#define B_AT(kk, c) conv_patch(X, ktab, kbase + (kk), (kk) < k_left && col_ok, ih0, iw0, xcol, in_h, in_w)
#endif
