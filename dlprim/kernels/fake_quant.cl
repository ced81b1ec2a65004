// Helpers of the fake-quantization rows of the pointwise op table (csrc/aten/PointwiseQuantOps.h):
// ATen's CPU kernels (aten/src/ATen/native/quantized/cpu/kernels/QuantizedOpKernels.cpp) step by
// step, so results agree bit for bit. Those kernels mix float, double and int64 arithmetic; the
// rows say where each step rounds.

// No a * b + c fused into one rounding unless the row asks for fma(): torch's x86-64 CPU kernels (the
// AVX2 / AVX512 builds ATen dispatches to) fuse exactly where GCC sees a product feed an addition
// in one expression, and the rows follow them there (dl_fq_fma).
#pragma OPENCL FP_CONTRACT OFF

// The quantized value q (an integer, or NaN / inf) as the CPU's static_cast<int64_t>(q) (or
// lrintf) gives it on x86, clamped to [lo, hi]: in range it is q; NaN and anything outside the
// int64 range convert to INT64_MIN, so they clamp to lo (even +inf and 1e30); other values above
// hi clamp to hi.
static inline int dl_fq_below(dl_t q, dl_t lo) { return !(q >= lo) || q >= (dl_t)0x1p63f; }
static inline dl_t dl_fq_clamp(dl_t q, dl_t lo, dl_t hi) {
  if (dl_fq_below(q, lo)) return lo;
  return q > hi ? hi : q;
}
// Whether that int64 value lies in [lo, hi] (the cached mask).
static inline int dl_fq_inside(dl_t q, dl_t lo, dl_t hi) { return q >= lo && q <= hi; }

// a + b, a * b and fused a * b + c evaluated in double when `dbl` is set (a float64 input on the
// CPU), else rounded to float as the CPU's float arithmetic does (the row may compute in double for
// a later step that the CPU evaluates in double).
static inline dl_t dl_fq_add(dl_t a, dl_t b, dl_t dbl) { return dbl != 0 ? a + b : (dl_t)((float)a + (float)b); }
static inline dl_t dl_fq_mul(dl_t a, dl_t b, dl_t dbl) { return dbl != 0 ? a * b : (dl_t)((float)a * (float)b); }
static inline dl_t dl_fq_fma(dl_t a, dl_t b, dl_t c, dl_t dbl) {
  return dbl != 0 ? fma(a, b, c) : (dl_t)fma((float)a, (float)b, (float)c);
}
