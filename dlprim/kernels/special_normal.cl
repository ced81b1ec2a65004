// The normal distribution's special functions for the pointwise op table (floating compute
// types only): erfcx (scaled complementary error function), log_ndtr (log of the normal CDF) and
// ndtri (its inverse). Needs special_coeffs.cl (DL_ERFCX) and dl_cheb (special_bessel.cl).
// Edge values follow ATen's CPU kernels.

#define DL_SQRT1_2 ((dl_t)0.70710678118654752440)
#define DL_SQRT_2PI ((dl_t)2.50662827463100050242)

// erfcx(x) = exp(x^2) erfc(x). x >= 0: a Chebyshev table in u = (x - 4) / (x + 4) up to 50, the
// asymptotic series 1/(x sqrt(pi)) sum (-1)^k (2k-1)!! / (2x^2)^k beyond (five terms reach double
// precision there). x < 0: 2 exp(x^2) - erfcx(-x), where the CPU's cut-offs are kept: the second
// term is dropped below -6.1 and the result is +inf below -26.7.
#define DL_ERFCX_UEND ((dl_t)0.85185185185185185185)  // u(50) = 46/54
static inline dl_t dl_erfcx_pos(dl_t x) {
  if (x < 50) {
    dl_t u = (x - 4) / (x + 4);
    return DL_CHEB(DL_ERFCX, (u + 1) * (2 / (DL_ERFCX_UEND + 1)) - 1);
  }
  dl_t a = 1 / (2 * x * x);
  return (1 - a * (1 - 3 * a * (1 - 5 * a * (1 - 7 * a)))) * ((dl_t)0.56418958354775628695 / x);
}

static inline dl_t dl_erfcx(dl_t x) {
  if (x >= 0 || isnan(x)) return dl_erfcx_pos(x);
  if (x < (dl_t)-26.7) return (dl_t)INFINITY;
  dl_t e = 2 * exp(x * x);
  return x < (dl_t)-6.1 ? e : e - dl_erfcx_pos(-x);
}

// log(ndtr(x)): below -1 through erfcx (no underflow of the CDF), else log1p of the upper tail.
static inline dl_t dl_log_ndtr(dl_t x) {
  dl_t t = x * DL_SQRT1_2;
  if (x < -1) return log(dl_erfcx(-t) / 2) - t * t;
  return log1p(-erfc(t) / 2);
}

// ndtri(p) = the x with ndtr(x) = p. For p <= 1/2: the rational estimate of Abramowitz & Stegun
// 26.2.23 in s = sqrt(-2 log p) (error < 4.5e-4), then Halley steps on ndtr(x) - p with ndtr(x)
// from erfc (relative accuracy in the tail); p > 1/2 by symmetry (1 - p is exact there).
static inline dl_t dl_ndtri(dl_t p) {
  if (p == 0) return -(dl_t)INFINITY;
  if (p == 1) return (dl_t)INFINITY;
  if (!(p > 0 && p < 1)) return (dl_t)NAN;
  int upper = p > (dl_t)0.5;
  dl_t q = upper ? 1 - p : p;
  dl_t lq = log(q), s = sqrt(-2 * lq);
  dl_t x = -(s - ((dl_t)2.515517 + (dl_t)0.802853 * s + (dl_t)0.010328 * s * s) /
                     (1 + (dl_t)1.432788 * s + (dl_t)0.189269 * s * s + (dl_t)0.001308 * s * s * s));
  for (int i = 0; i < 3; ++i) {
    // u = (ndtr(x) - q) / pdf(x), with q folded into the exponential (pdf(x) underflows in the tail)
    dl_t u = (erfc(-x * DL_SQRT1_2) / (2 * q) - 1) * DL_SQRT_2PI * exp(x * x / 2 + lq);
    x = x - u / (1 + x * u / 2);
  }
  return upper ? -x : x;
}
