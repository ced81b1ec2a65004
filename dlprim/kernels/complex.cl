// Complex math for the complex rows of the pointwise table (csrc/aten/ComplexPointwise.cpp): a
// complex value is a dl_c (float2 / double2: .x real, .y imaginary) of the compute type dl_t.
// Written for this backend from the textbook identities, with the usual care where they cancel
// or overflow (Smith's division, Kahan's tanh, log1p/expm1 forms near 0, odd symmetry for the
// inverse functions so their branch cuts follow C99's signed zeros as the CPU's glibc does).

#if DL_IS_DOUBLE
typedef double2 dl_c;
#else
typedef float2 dl_c;
#endif
#define DL_C(re, im) ((dl_c)((dl_t)(re), (dl_t)(im)))
#define DL_LN2 ((dl_t)0.693147180559945309417)
#define DL_LN10 ((dl_t)2.30258509299404568402)
#define DL_CPI ((dl_t)3.14159265358979323846)

static inline dl_c dl_cmul(dl_c a, dl_c b) { return DL_C(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }

// Smith's algorithm (scales by the larger component of b, so |b| near the range does not overflow).
static inline dl_c dl_cdiv(dl_c a, dl_c b) {
  dl_t c = b.x, d = b.y;
  if (fabs(c) >= fabs(d)) {
    if (c == 0 && d == 0) return DL_C(a.x / fabs(c), a.y / fabs(d));
    dl_t r = d / c, s = 1 / (c + d * r);
    return DL_C((a.x + a.y * r) * s, (a.y - a.x * r) * s);
  }
  dl_t r = c / d, s = 1 / (d + c * r);
  return DL_C((a.x * r + a.y) * s, (a.y * r - a.x) * s);
}

static inline dl_t dl_cabs(dl_c z) { return hypot(z.x, z.y); }
static inline dl_c dl_ctimes_i(dl_c z) { return DL_C(-z.y, z.x); }       // i z
static inline dl_c dl_ctimes_minus_i(dl_c z) { return DL_C(z.y, -z.x); } // -i z

static inline dl_c dl_cexp(dl_c z) {
  if (z.y == 0) return DL_C(exp(z.x), z.y);  // real input: an exact zero imaginary part (no inf * 0)
  dl_t e = exp(z.x);
  return DL_C(e * cos(z.y), e * sin(z.y));
}

static inline dl_c dl_clog(dl_c z) { return DL_C(log(dl_cabs(z)), atan2(z.y, z.x)); }

// exp(z) - 1 without cancellation near 0: re = expm1(a) cos b - 2 sin^2(b / 2).
static inline dl_c dl_cexpm1(dl_c z) {
  dl_t s = sin(z.y / 2);
  return DL_C(expm1(z.x) * cos(z.y) - 2 * s * s, exp(z.x) * sin(z.y));
}

// log(1 + z) without cancellation near 0: |1 + z|^2 = 1 + (2a + a^2 + b^2).
static inline dl_c dl_clog1p(dl_c z) {
  dl_t a = z.x, b = z.y;
  if (fabs(a) < (dl_t)0.5 && fabs(b) < (dl_t)0.5)
    return DL_C(log1p(a * (2 + a) + b * b) / 2, atan2(b, 1 + a));
  return dl_clog(DL_C(1 + a, b));
}

// Principal square root (imaginary part takes b's sign, -0 included).
static inline dl_c dl_csqrt(dl_c z) {
  dl_t a = z.x, b = z.y;
  if (a == 0 && b == 0) return DL_C(0, b);
  if (isinf(b)) return DL_C((dl_t)INFINITY, b);
  if (isnan(a)) return DL_C(a, a);
  if (isinf(a)) {
    if (a > 0) return DL_C(a, isnan(b) ? b : copysign((dl_t)0, b));
    return DL_C(isnan(b) ? fabs(b) : 0, copysign((dl_t)INFINITY, b));
  }
  // scaled so |z| + |a| does not overflow for finite inputs near the range
  dl_t t = sqrt((fabs(a) / 2 + dl_cabs(z) / 2));
  if (a >= 0) return DL_C(t, b / (2 * t));
  return DL_C(fabs(b) / (2 * t), copysign(t, b));
}

static inline dl_c dl_crsqrt(dl_c z) { return dl_cdiv(DL_C(1, 0), dl_csqrt(z)); }

static inline dl_c dl_csinh(dl_c z) {
  if (z.y == 0) return DL_C(sinh(z.x), z.y);
  return DL_C(sinh(z.x) * cos(z.y), cosh(z.x) * sin(z.y));
}
static inline dl_c dl_ccosh(dl_c z) {
  if (z.y == 0) return DL_C(cosh(z.x), z.y * copysign((dl_t)1, z.x));
  return DL_C(cosh(z.x) * cos(z.y), sinh(z.x) * sin(z.y));
}

// Kahan's tanh: t = tan b, s = sinh a, beta = 1 + t^2, rho = sqrt(1 + s^2);
// tanh z = (beta rho s + i t) / (1 + beta s^2); for large |a| the limit (+-1, 4 sin b cos b e^-2|a|).
static inline dl_c dl_ctanh(dl_c z) {
  dl_t a = z.x, b = z.y;
  if (isnan(a) && b == 0) return z;
  if (!isfinite(a) || fabs(a) > (DL_IS_DOUBLE ? 22 : 9)) {
    if (isnan(a)) return DL_C(a, a);
    dl_t im = isfinite(b) ? 4 * sin(b) * cos(b) * exp(-2 * fabs(a)) : 0;
    return DL_C(copysign((dl_t)1, a), copysign(im, isfinite(b) ? im : b));
  }
  if (b == 0) return DL_C(tanh(a), b);
  dl_t t = tan(b), s = sinh(a), beta = 1 + t * t, rho = sqrt(1 + s * s), den = 1 + beta * s * s;
  return DL_C(beta * rho * s / den, t / den);
}

static inline dl_c dl_csin(dl_c z) { return dl_ctimes_minus_i(dl_csinh(dl_ctimes_i(z))); }  // sin z = -i sinh(iz)
static inline dl_c dl_ccos(dl_c z) { return dl_ccosh(dl_ctimes_i(z)); }                     // cos z = cosh(iz)
static inline dl_c dl_ctan(dl_c z) { return dl_ctimes_minus_i(dl_ctanh(dl_ctimes_i(z))); }  // tan z = -i tanh(iz)

// asinh z = log(z + sqrt(z^2 + 1)), evaluated for Re z >= 0 (odd symmetry for the rest, so the
// sum does not cancel); (z^2 + 1) formed as (1 + (a - b)(a + b)) + i 2ab.
static inline dl_c dl_casinh(dl_c z) {
  bool neg = signbit(z.x);
  dl_c w = neg ? -z : z;
  dl_t a = w.x, b = w.y;
  if (fabs(a) > (dl_t)1e7 || fabs(b) > (dl_t)1e7) {  // z^2 would overflow: asinh z ~ log(2z)
    dl_c l = dl_clog(w);
    dl_c r = DL_C(l.x + DL_LN2, l.y);
    return neg ? -r : r;
  }
  dl_c s = dl_csqrt(DL_C(1 + (a - b) * (a + b), 2 * a * b));
  dl_c r = dl_clog(DL_C(a + s.x, b + s.y));
  if (fabs(a) < (dl_t)0.25 && fabs(b) < (dl_t)0.25) r = dl_clog1p(DL_C(a + s.x - 1, b + s.y));
  return neg ? -r : r;
}

static inline dl_c dl_casin(dl_c z) { return dl_ctimes_minus_i(dl_casinh(dl_ctimes_i(z))); }  // asin z = -i asinh(iz)
static inline dl_c dl_cacos(dl_c z) {  // acos z = pi/2 - asin z
  dl_c s = dl_casin(z);
  return DL_C(DL_CPI / 2 - s.x, -s.y);
}

// atanh z = (log1p(z) - log1p(-z)) / 2 for Re z >= 0 (odd symmetry for the rest, so that
// 1 + 4a / |1 - z|^2 never cancels): re from log1p of that, im from atan2 of the quotient.
static inline dl_c dl_catanh(dl_c z) {
  bool neg = signbit(z.x);
  dl_t a = neg ? -z.x : z.x, b = neg ? -z.y : z.y;
  if (a == 0 && isnan(b)) return z;
  dl_t re = log1p(4 * a / ((1 - a) * (1 - a) + b * b)) / 4;  // |1 + z|^2 / |1 - z|^2 = 1 + 4a / |1 - z|^2
  dl_t im = atan2(2 * b, (1 - a) * (1 + a) - b * b) / 2;
  return neg ? DL_C(-re, -im) : DL_C(re, im);
}
static inline dl_c dl_catan(dl_c z) { return dl_ctimes_minus_i(dl_catanh(dl_ctimes_i(z))); }  // atan z = -i atanh(iz)

// acosh z = log(z + sqrt(z + 1) sqrt(z - 1)) (the product of roots keeps the principal branch).
static inline dl_c dl_cacosh(dl_c z) {
  dl_c r = dl_clog(dl_cmul(dl_csqrt(DL_C(z.x + 1, z.y)), dl_csqrt(DL_C(z.x - 1, z.y))) + z);
  if (fabs(z.x) > (dl_t)1e7 || fabs(z.y) > (dl_t)1e7) {
    dl_c l = dl_clog(z);
    r = DL_C(l.x + DL_LN2, l.y);
  }
  return r;
}

// a^b = exp(b log a); b = 0 gives 1 and a = 0 gives 0 for Re b > 0 (as the CPU).
static inline dl_c dl_cpow(dl_c a, dl_c b) {
  if (b.x == 0 && b.y == 0) return DL_C(1, 0);
  if (a.x == 0 && a.y == 0) {
    if (b.y == 0 && b.x > 0) return DL_C(0, 0);
  }
  if (b.y == 0 && b.x == 1) return a;
  if (b.y == 0 && b.x == 2) return dl_cmul(a, a);
  return dl_cexp(dl_cmul(b, dl_clog(a)));
}

static inline dl_c dl_csigmoid(dl_c z) { return dl_cdiv(DL_C(1, 0), DL_C(1, 0) + dl_cexp(-z)); }

// sinc z = sin(pi z) / (pi z), 1 at 0.
static inline dl_c dl_csinc(dl_c z) {
  if (z.x == 0 && z.y == 0) return DL_C(1, 0);
  dl_c p = DL_C(DL_CPI * z.x, DL_CPI * z.y);
  return dl_cdiv(dl_csin(p), p);
}

// log(exp(x) + exp(y)) as the CPU's complex logaddexp / logcumsumexp: ordered by real part (a
// NaN component takes over), log1p(exp(min - max)) + max; equal infinite real parts are -inf
// (min) or +inf (log of the sum of exponentials).
static inline dl_c dl_clogaddexp(dl_c x, dl_c y) {
  dl_c mn, mx;
  if (isnan(y.x) || isnan(y.y)) { mn = y; mx = y; }
  else if (isnan(x.x) || isnan(x.y)) { mn = x; mx = x; }
  else if (x.x < y.x) { mn = x; mx = y; }
  else { mn = y; mx = x; }
  if (isnan(mn.x) || isnan(mn.y)) return DL_C(NAN, NAN);
  if (!isfinite(mn.x) && mn.x == mx.x) {
    if (mn.x < 0) return mn;
    return dl_clog(dl_cexp(mn) + dl_cexp(mx));
  }
  return dl_clog1p(dl_cexp(mn - mx)) + mx;
}
