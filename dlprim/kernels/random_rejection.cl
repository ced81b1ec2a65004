// Samplers that draw a variable number of uniforms per element (rejection methods): gamma (Marsaglia and Tsang,
// "A simple method for generating gamma variables", 2000) and Poisson (Knuth's product of uniforms below 10,
// Hoermann's transformed rejection PTRS, "The transformed rejection method for generating Poisson random
// variables", 1993, from 10), the methods ATen's CPU samplers use. Draw k of element i is word i % 4 of Philox
// at counter (i / 4, offset + (k + 1) * 2^40): the op reserves one offset, and the draws of one element never meet
// another op's (offsets count ops; the top bit is DL_WIDE_STREAM). Needs philox.cl and dl_mt (float or double).

#define DL_DRAW_STREAM(k) ((ulong)((k) + 1) << 40)
#define DL_MAX_ATTEMPTS 4096  // a bound, never reached in practice (acceptance is above 90% for every parameter)

// Uniform in (0, 1): 24 random bits in float, 53 in double (two words).
inline dl_mt dl_draw_open(ulong seed, ulong i, ulong offset, uint k) {
  uint w = dl_philox_word(seed, i, offset + DL_DRAW_STREAM(k));
#if DL_MT_DOUBLE
  uint w2 = dl_philox_word(seed, i, (offset + DL_DRAW_STREAM(k)) | DL_WIDE_STREAM);
  return ((double)(((ulong)w << 21) ^ (ulong)(w2 >> 11)) + 0.5) * 1.1102230246251565e-16;
#else
  return dl_uniform_open_f(w);
#endif
}

// Standard normal from draws k and k + 1 (Box-Muller).
inline dl_mt dl_draw_normal(ulong seed, ulong i, ulong offset, uint k) {
  dl_mt u1 = dl_draw_open(seed, i, offset, k), u2 = dl_draw_open(seed, i, offset, k + 1);
  return sqrt(-2 * log(u1)) * cospi(2 * u2);
}

// Gamma(alpha, 1); alpha below 1 is boosted (Gamma(alpha + 1) * U^(1 / alpha)). The smallest normal value of the
// type at least, as on the CPU (a zero would break Dirichlet's and Beta's normalisation); also for alpha 0,
// negative or NaN, where the CPU's sampler ends at that floor.
#if DL_MT_DOUBLE
#define DL_GAMMA_MIN 2.2250738585072014e-308
#else
#define DL_GAMMA_MIN 1.17549435e-38f
#endif
inline dl_mt dl_sample_gamma(dl_mt alpha, ulong seed, ulong i, ulong offset) {
  if (!(alpha > 0)) return DL_GAMMA_MIN;
  uint k = 0;
  dl_mt scale = 1;
  if (alpha < 1) {
    scale = pow(dl_draw_open(seed, i, offset, k++), 1 / alpha);
    alpha += 1;
  }
  const dl_mt d = alpha - (dl_mt)1 / 3, c = 1 / sqrt(9 * d);
  for (int t = 0; t < DL_MAX_ATTEMPTS; ++t) {
    dl_mt x = dl_draw_normal(seed, i, offset, k), v = 1 + c * x;
    k += 2;
    if (v <= 0) continue;
    v = v * v * v;
    dl_mt u = dl_draw_open(seed, i, offset, k++), x2 = x * x;
    if (u < 1 - (dl_mt)0.0331 * x2 * x2 || log(u) < (dl_mt)0.5 * x2 + d * (1 - v + log(v)))
      return fmax(scale * d * v, DL_GAMMA_MIN);
  }
  return NAN;
}

// Poisson(lambda) as a count in dl_mt.
inline dl_mt dl_sample_poisson(dl_mt lambda, ulong seed, ulong i, ulong offset) {
  if (isnan(lambda) || lambda < 0) return NAN;
  if (lambda == 0) return 0;
  uint k = 0;
  if (lambda < 10) {
    dl_mt limit = exp(-lambda), prod = 1, count = 0;
    for (int t = 0; t < DL_MAX_ATTEMPTS; ++t) {
      prod *= dl_draw_open(seed, i, offset, k++);
      if (prod <= limit) return count;
      count += 1;
    }
    return count;
  }
  const dl_mt slam = sqrt(lambda), loglam = log(lambda), b = (dl_mt)0.931 + (dl_mt)2.53 * slam;
  const dl_mt a = (dl_mt)-0.059 + (dl_mt)0.02483 * b, invalpha = (dl_mt)1.1239 + (dl_mt)1.1328 / (b - (dl_mt)3.4);
  const dl_mt vr = (dl_mt)0.9277 - (dl_mt)3.6224 / (b - 2);
  for (int t = 0; t < DL_MAX_ATTEMPTS; ++t) {
    dl_mt u = dl_draw_open(seed, i, offset, k++) - (dl_mt)0.5, v = dl_draw_open(seed, i, offset, k++);
    dl_mt us = (dl_mt)0.5 - fabs(u), n = floor((2 * a / us + b) * u + lambda + (dl_mt)0.43);
    if (us >= (dl_mt)0.07 && v <= vr) return n;
    if (n < 0 || (us < (dl_mt)0.013 && v > us)) continue;
    if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lambda + n * loglam - lgamma(n + 1)) return n;
  }
  return NAN;
}

// Binomial(n, p) as a count in dl_mt: waiting times of the geometric distribution (inversion) while n min(p, 1 - p)
// is below 10, else Hoermann's BTRS ("The generation of binomial random variates", 1993) with the exact acceptance
// test through lgamma; p above 1/2 counts the failures. n <= 0 or p <= 0: 0; p >= 1: n; NaN: NaN (where the CPU's
// loop would not end).
inline dl_mt dl_sample_binomial(dl_mt n, dl_mt p, ulong seed, ulong i, ulong offset) {
  if (isnan(n) || isnan(p)) return NAN;
  if (n <= 0 || p <= 0) return 0;
  if (p >= 1) return n;
  const int flip = p > (dl_mt)0.5;
  const dl_mt q0 = flip ? 1 - p : p;  // the smaller of the two probabilities
  uint k = 0;
  dl_mt result = 0;
  if (n * q0 < 10) {
    const dl_mt logq = log1p(-q0);
    dl_mt sum = 0;
    for (int t = 0; t < DL_MAX_ATTEMPTS * 16; ++t) {
      sum += ceil(log(dl_draw_open(seed, i, offset, k++)) / logq);
      if (sum > n) break;
      result += 1;
    }
  } else {
    const dl_mt q1 = 1 - q0, spq = sqrt(n * q0 * q1), b = (dl_mt)1.15 + (dl_mt)2.53 * spq;
    const dl_mt a = (dl_mt)-0.0873 + (dl_mt)0.0248 * b + (dl_mt)0.01 * q0, c = n * q0 + (dl_mt)0.5;
    const dl_mt vr = (dl_mt)0.92 - (dl_mt)4.2 / b, alpha = ((dl_mt)2.83 + (dl_mt)5.1 / b) * spq;
    const dl_mt lpq = log(q0 / q1), m = floor((n + 1) * q0), h = lgamma(m + 1) + lgamma(n - m + 1);
    result = NAN;
    for (int t = 0; t < DL_MAX_ATTEMPTS; ++t) {
      dl_mt u = dl_draw_open(seed, i, offset, k++) - (dl_mt)0.5, v = dl_draw_open(seed, i, offset, k++);
      dl_mt us = (dl_mt)0.5 - fabs(u), kk = floor((2 * a / us + b) * u + c);
      if (kk < 0 || kk > n) continue;
      if (us >= (dl_mt)0.07 && v <= vr) {
        result = kk;
        break;
      }
      v = log(v * alpha / (a / (us * us) + b));
      if (v <= h - lgamma(kk + 1) - lgamma(n - kk + 1) + (kk - m) * lpq) {
        result = kk;
        break;
      }
    }
  }
  return flip ? n - result : result;
}
