// Special functions of the pointwise op table (floating compute types only): erfinv, digamma,
// trigamma, Hurwitz zeta (polygamma). Written from the standard series and rational
// approximations; accuracy matches ATen's CPU kernels to the tolerance of the dtype.

#if DL_IS_DOUBLE
#define DL_EPS 1.11022302462515654042e-16
#else
#define DL_EPS 5.96046448e-08f
#endif
#define DL_PI ((dl_t)3.14159265358979323846)

// Inverse error function: a rational first guess, then two Newton steps on erf(x) - y.
static inline dl_t dl_erfinv(dl_t y) {
  if (isnan(y) || y < -1 || y > 1) return (dl_t)NAN;
  if (y == 1) return (dl_t)INFINITY;
  if (y == -1) return -(dl_t)INFINITY;
  dl_t ay = fabs(y), x;
  if (ay <= (dl_t)0.7) {
    dl_t z = y * y;
    dl_t num = (((dl_t)-0.140543331 * z + (dl_t)0.914624893) * z + (dl_t)-1.645349621) * z + (dl_t)0.886226899;
    dl_t den = ((((dl_t)0.012229801 * z + (dl_t)-0.329097515) * z + (dl_t)1.442710462) * z + (dl_t)-2.118377725) * z + 1;
    x = y * num / den;
  } else {
    dl_t z = sqrt(-log((1 - ay) / 2));
    dl_t num = (((dl_t)1.641345311 * z + (dl_t)3.429567803) * z + (dl_t)-1.624906493) * z + (dl_t)-1.970840454;
    dl_t den = ((dl_t)1.637067800 * z + (dl_t)3.543889200) * z + 1;
    x = copysign(num / den, y);
  }
  const dl_t two_over_sqrt_pi = (dl_t)1.12837916709551257390;
  x = x - (erf(x) - y) / (two_over_sqrt_pi * exp(-x * x));
  x = x - (erf(x) - y) / (two_over_sqrt_pi * exp(-x * x));
  return x;
}

// digamma: reflection for negative x, recurrence up to x >= 10, then the asymptotic series
// ln x - 1/(2x) - sum B_2k / (2k x^2k).
static inline dl_t dl_digamma_positive(dl_t x) {
  dl_t result = 0;
  while (x < 10) {
    result -= 1 / x;
    x += 1;
  }
  dl_t z = 1 / (x * x);
  dl_t series = z * ((dl_t)(1.0 / 12) +
                z * ((dl_t)(-1.0 / 120) +
                z * ((dl_t)(1.0 / 252) +
                z * ((dl_t)(-1.0 / 240) +
                z * ((dl_t)(1.0 / 132) +
                z * ((dl_t)(-691.0 / 32760) +
                z * (dl_t)(1.0 / 12)))))));
  return result + log(x) - (dl_t)0.5 / x - series;
}

static inline dl_t dl_digamma(dl_t x) {
  if (x == 0) return copysign((dl_t)INFINITY, -x);
  if (x < 0) {
    if (x == trunc(x)) return (dl_t)NAN;
    dl_t r = x - trunc(x);
    return dl_digamma_positive(1 - x) - DL_PI / tanpi(r);  // tanpi: no rounding of pi * r
  }
  return dl_digamma_positive(x);
}

// trigamma: reflection below 1/2, six recurrence steps, then the asymptotic series.
static inline dl_t dl_trigamma(dl_t x) {
  dl_t sign = 1, result = 0;
  if (x < (dl_t)0.5) {
    sign = -1;
    dl_t s = sin(DL_PI * x);  // as the CPU computes it (sinpi would differ by ~1e-5 near poles)
    result -= DL_PI * DL_PI / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; ++i) {
    result += 1 / (x * x);
    x += 1;
  }
  dl_t ixx = 1 / (x * x);
  result += (1 + 1 / (2 * x) + ixx * ((dl_t)(1.0 / 6) - ixx * ((dl_t)(1.0 / 30) - ixx * (dl_t)(1.0 / 42)))) / x;
  return sign * result;
}

// Hurwitz zeta(s, q) = sum_k (k + q)^-s: direct sum, then Euler-Maclaurin with (2k)!/B_2k.
static inline dl_t dl_zeta(dl_t s, dl_t q) {
  if (s == 1) return (dl_t)INFINITY;
  if (s < 1) return (dl_t)NAN;
  if (q <= 0) {
    if (q == floor(q)) return (dl_t)INFINITY;
    if (s != floor(s)) return (dl_t)NAN;
  }
  const dl_t fact_over_bernoulli[12] = {
      (dl_t)12.0, (dl_t)-720.0, (dl_t)30240.0, (dl_t)-1209600.0, (dl_t)47900160.0,
      (dl_t)-1.8924375803183791606e9, (dl_t)7.47242496e10, (dl_t)-2.950130727918164224e12,
      (dl_t)1.1646782814350067249e14, (dl_t)-4.5979787224074726105e15, (dl_t)1.8152105401943546773e17,
      (dl_t)-7.1661652561756670113e18};
  dl_t sum = pow(q, -s), a = q, b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = pow(a, -s);
    sum += b;
    if (fabs(b / sum) < DL_EPS) return sum;
  }
  // Every term underflowed (sum = 0). The CPU sums in double and goes on into the tail below, which
  // stays 0 for finite s and q (here, in float, the factors could overflow into inf * 0) and is
  // NaN (0 * inf) when s or q is +inf: the same answers directly.
  if (b == 0) return (isinf(s) || isinf(q)) ? (dl_t)NAN : sum;
  dl_t w = a;
  sum += b * w / (s - 1);
  sum -= (dl_t)0.5 * b;
  dl_t f = 1, k = 0;
  for (int j = 0; j < 12; ++j) {
    f *= s + k;
    b /= w;
    dl_t t = f * b / fact_over_bernoulli[j];
    sum += t;
    if (fabs(t / sum) < DL_EPS) return sum;
    k += 1;
    f *= s + k;
    b /= w;
    k += 1;
  }
  return sum;
}

// polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x) for n >= 2.
static inline dl_t dl_polygamma(dl_t n, dl_t x) {
  if (n == 0) return dl_digamma(x);
  if (n == 1) return dl_trigamma(x);
  dl_t fact = 1;
  for (int k = 2; k <= (int)n; ++k) fact *= k;
  dl_t sgn = ((int)n % 2) ? (dl_t)1 : (dl_t)-1;
  return sgn * fact * dl_zeta(n + 1, x);
}
