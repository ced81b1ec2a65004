// Bessel functions J0, J1, Y0, Y1, I0, I1 (and exp-scaled), K0, K1 (and exp-scaled), the
// spherical j0 and Airy Ai for the pointwise op table (floating compute types only).
//
// Each function is split, per range of x, into an elementary part that carries its singularity,
// oscillation or exponential growth (log x, cos/sin x, exp(+-x), x^-1/2) and a smooth remainder
// expanded in Chebyshev polynomials; the tables and dl_cheb (special_coeffs.cl) come from
// scripts/gen_special_coeffs.py, which states each remainder and its variable t in [-1, 1].
// Edge values (0, negative x, +-inf, NaN) follow ATen's CPU kernels.

#define DL_RSQRT_PI ((dl_t)0.56418958354775628695)   // 1 / sqrt(pi)
#define DL_TWO_OVER_PI ((dl_t)0.63661977236758134308)


// ---- J and Y: Chebyshev in x^2 up to 8, then the Hankel form
//      J_k = sqrt(2/(pi x)) (P_k cos chi_k - Q_k sin chi_k), Y_k = sqrt(2/(pi x)) (P_k sin chi_k + Q_k cos chi_k),
//      chi_k = x - (2k+1) pi/4, with cos/sin chi_k formed from cos x and sin x (no rounding of x - pi/4).
static inline dl_t dl_bessel_j0(dl_t x) {
  dl_t ax = fabs(x);
  if (ax <= 8) return DL_CHEB(DL_J0_SMALL, ax * ax / 32 - 1);
  dl_t t = 16 / ax - 1, c = cos(ax), s = sin(ax);
  return sqrt(DL_RSQRT_PI * DL_RSQRT_PI / ax) * (DL_CHEB(DL_P0, t) * (c + s) - DL_CHEB(DL_Q0, t) * (s - c));
}

static inline dl_t dl_bessel_j1(dl_t x) {
  dl_t ax = fabs(x);
  if (ax <= 8) return x * DL_CHEB(DL_J1_SMALL, ax * ax / 32 - 1);
  dl_t t = 16 / ax - 1, c = cos(ax), s = sin(ax);
  dl_t r = sqrt(DL_RSQRT_PI * DL_RSQRT_PI / ax) * (DL_CHEB(DL_P1, t) * (s - c) + DL_CHEB(DL_Q1, t) * (s + c));
  return x < 0 ? -r : r;
}

static inline dl_t dl_bessel_y0(dl_t x) {
  if (x < 0) return (dl_t)NAN;
  if (x == 0) return -(dl_t)INFINITY;
  if (x <= 8) return DL_CHEB(DL_Y0_SMALL, x * x / 32 - 1) + DL_TWO_OVER_PI * log(x) * dl_bessel_j0(x);
  dl_t t = 16 / x - 1, c = cos(x), s = sin(x);
  return sqrt(DL_RSQRT_PI * DL_RSQRT_PI / x) * (DL_CHEB(DL_P0, t) * (s - c) + DL_CHEB(DL_Q0, t) * (c + s));
}

static inline dl_t dl_bessel_y1(dl_t x) {
  if (x < 0) return (dl_t)NAN;
  if (x == 0) return -(dl_t)INFINITY;
  if (x <= 8)
    return x * DL_CHEB(DL_Y1_SMALL, x * x / 32 - 1) + DL_TWO_OVER_PI * (log(x) * dl_bessel_j1(x) - 1 / x);
  dl_t t = 16 / x - 1, c = cos(x), s = sin(x);
  return sqrt(DL_RSQRT_PI * DL_RSQRT_PI / x) * (DL_CHEB(DL_Q1, t) * (s - c) - DL_CHEB(DL_P1, t) * (s + c));
}

// ---- I: exp(-x) I_k(x) (over x for I1) in x up to 8, sqrt(x) exp(-x) I_k(x) in 16/x beyond.
// The unscaled forms multiply by exp(|x|) as the CPU does (+-inf gives NaN there, as on the CPU).
static inline dl_t dl_i0e(dl_t x) {
  dl_t ax = fabs(x);
  if (ax <= 8) return DL_CHEB(DL_I0E_SMALL, ax / 4 - 1);
  return DL_CHEB(DL_I0E_LARGE, 16 / ax - 1) / sqrt(ax);
}

static inline dl_t dl_i0(dl_t x) {
  dl_t ax = fabs(x);
  if (ax <= 8) return exp(ax) * DL_CHEB(DL_I0E_SMALL, ax / 4 - 1);
  return exp(ax) * DL_CHEB(DL_I0E_LARGE, 16 / ax - 1) / sqrt(ax);
}

static inline dl_t dl_i1e(dl_t x) {
  dl_t ax = fabs(x);
  dl_t r = ax <= 8 ? ax * DL_CHEB(DL_I1E_SMALL, ax / 4 - 1) : DL_CHEB(DL_I1E_LARGE, 16 / ax - 1) / sqrt(ax);
  return x < 0 ? -r : r;
}

static inline dl_t dl_i1(dl_t x) {
  dl_t ax = fabs(x);
  dl_t r = ax <= 8 ? exp(ax) * ax * DL_CHEB(DL_I1E_SMALL, ax / 4 - 1)
                   : exp(ax) * DL_CHEB(DL_I1E_LARGE, 16 / ax - 1) / sqrt(ax);
  return x < 0 ? -r : r;
}

// ---- K: K0 = R0(x^2) - log(x/2) I0(x), K1 = R1(x^2) / x + log(x/2) I1(x) up to 2; beyond,
// sqrt(x) exp(x) K_k(x) in 4/x. `scaled` multiplies by exp(x). x < 0 is NaN, 0 is +inf.
static inline dl_t dl_bessel_k0(dl_t x, int scaled) {
  if (x < 0) return (dl_t)NAN;
  if (x == 0) return (dl_t)INFINITY;
  if (x <= 2) {
    dl_t k = DL_CHEB(DL_K0_SMALL, x * x / 2 - 1) - log(x / 2) * dl_i0(x);
    return scaled ? exp(x) * k : k;
  }
  dl_t r = DL_CHEB(DL_K0E_LARGE, 4 / x - 1);
  return scaled ? r / sqrt(x) : exp(-x) * r / sqrt(x);
}

static inline dl_t dl_bessel_k1(dl_t x, int scaled) {
  if (x < 0) return (dl_t)NAN;
  if (x == 0) return (dl_t)INFINITY;
  if (x <= 2) {
    dl_t k = DL_CHEB(DL_K1_SMALL, x * x / 2 - 1) / x + log(x / 2) * dl_i1(x);
    return scaled ? exp(x) * k : k;
  }
  dl_t r = DL_CHEB(DL_K1E_LARGE, 4 / x - 1);
  return scaled ? r / sqrt(x) : exp(-x) * r / sqrt(x);
}

// ---- spherical j0 = sin(x) / x, its Taylor series below 1/2 (no 0/0, no cancellation).
static inline dl_t dl_spherical_bessel_j0(dl_t x) {
  if (isinf(x)) return 0;
  if (fabs(x) < (dl_t)0.5) {
    dl_t z = x * x;
    return 1 - z / 6 * (1 - z / 20 * (1 - z / 42 * (1 - z / 72 * (1 - z / 110 * (1 - z / 156 * (1 - z / 210))))));
  }
  return sin(x) / x;
}

// ---- Airy Ai: Chebyshev in x on [-4, 2]; beyond 2, exp(-zeta) / (2 sqrt(pi) x^1/4) times a
// table in 1/zeta; below -4, x^-1/4 / sqrt(pi) (A sin(zeta + pi/4) - B cos(zeta + pi/4)),
// zeta = 2/3 |x|^3/2. +-inf give NaN, as on the CPU.
#define DL_AIRY_ZETA_POS ((dl_t)1.8856180831641267317)  // zeta(2)
#define DL_AIRY_ZETA_NEG ((dl_t)5.3333333333333333333)  // zeta(4)
static inline dl_t dl_airy_ai(dl_t x) {
  if (isinf(x)) return (dl_t)NAN;
  if (x > 2) {
    dl_t zeta = 2 * x * sqrt(x) / 3;
    dl_t f = DL_CHEB(DL_AI_POS, 2 * DL_AIRY_ZETA_POS / zeta - 1);
    return exp(-zeta) * f * (DL_RSQRT_PI / 2) / sqrt(sqrt(x));
  }
  if (x >= -4) return DL_CHEB(DL_AI_MID, (x + 1) / 3);
  dl_t ax = -x, zeta = 2 * ax * sqrt(ax) / 3;
  dl_t t = 2 * DL_AIRY_ZETA_NEG / zeta - 1, c = cos(zeta), s = sin(zeta);
  // sin(zeta + pi/4) = (s + c) / sqrt(2), cos(zeta + pi/4) = (c - s) / sqrt(2)
  return (DL_CHEB(DL_AI_NEG_A, t) * (s + c) - DL_CHEB(DL_AI_NEG_B, t) * (c - s)) *
         (DL_RSQRT_PI * (dl_t)0.70710678118654752440) / sqrt(sqrt(ax));
}
