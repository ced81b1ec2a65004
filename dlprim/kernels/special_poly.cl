// Classical orthogonal polynomials p_n(x) for the pointwise op table (floating compute types
// only): Chebyshev T, U, V, W (and shifted, p(2x - 1)), Hermite H and He, Laguerre L, Legendre P.
// Each is its three-term recurrence; as ATen's CPU kernels: n is truncated to an integer, n < 0
// gives 0, the values at x = +-1 are exact, and for |x| < 1 the Chebyshev kinds switch to their
// trigonometric closed forms above a small n (so a huge n costs no huge loop there; the
// recurrences elsewhere stop once the value is NaN, i.e. has overflowed). A NaN or
// infinite n counts as negative (x86 turns it into INT64_MIN, which the CPU then sees).

static inline long dl_poly_n(dl_t n) {
  return (fabs(n) < (dl_t)9.2e18) ? (long)n : -1L;
}

// The recurrence p_{k+1} = 2x p_k - p_{k-1} shared by the Chebyshev kinds, from p0 = 1, p1.
static inline dl_t dl_cheb_recurrence(dl_t x, long n, dl_t p1) {
  if (n == 0) return 1;
  dl_t p = 1, q = p1;
  for (long k = 2; k <= n && !isnan(q); ++k) {
    dl_t r = (x + x) * q - p;
    p = q;
    q = r;
  }
  return q;
}

static inline dl_t dl_chebyshev_t(dl_t x, dl_t nf, int shifted) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (fabs(x) == 1) return (x > 0 || n % 2 == 0) ? (dl_t)1 : (dl_t)-1;
  if (n > 6 && fabs(x) < 1) return cos(n * acos(x));
  return dl_cheb_recurrence(x, n, x);
}

static inline dl_t dl_chebyshev_u(dl_t x, dl_t nf, int shifted) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (fabs(x) == 1) return (x > 0 || n % 2 == 0) ? (dl_t)(n + 1) : (dl_t)(-(n + 1));
  if (n > (shifted ? 6 : 8) && fabs(x) < 1) {
    dl_t th = acos(x);
    if (sin(th) != 0) return sin((n + 1) * th) / sin(th);
    return (n + 1) * cos((n + 1) * th) / x;
  }
  return dl_cheb_recurrence(x, n, x + x);
}

static inline dl_t dl_chebyshev_v(dl_t x, dl_t nf, int shifted) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  dl_t odd_end = (n % 2 == 0) ? (dl_t)(n + n + 1) : (dl_t)(-(n + n + 1));
  if (fabs(x) == 1) return x > 0 ? (dl_t)1 : odd_end;
  if (n > (shifted ? 6 : 8) && fabs(x) < 1) {
    dl_t th = acos(x);
    if (sin(th / 2) != 1) return cos((n + (dl_t)0.5) * th) / cos(th / 2);
    return odd_end;
  }
  return dl_cheb_recurrence(x, n, x + x - 1);
}

static inline dl_t dl_chebyshev_w(dl_t x, dl_t nf, int shifted) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  dl_t low_end = (n % 2 == 0) ? (dl_t)1 : (dl_t)-1;
  if (fabs(x) == 1) return x > 0 ? (dl_t)(n + n + 1) : low_end;
  if (n > (shifted ? 4 : 8) && fabs(x) < 1) {
    dl_t th = acos(x);
    if (cos(th / 2) != 1) return sin((n + (dl_t)0.5) * th) / sin(th / 2);
    return (x > 0 && !shifted) ? (dl_t)(n + n + 1) : low_end;  // the CPU's shifted form says +-1
  }
  return dl_cheb_recurrence(x, n, x + x + 1);
}

// The shifted kinds p(2x - 1) on [0, 1] are the functions above at x' = x + x - 1 (x = 0 and 1 map
// exactly onto -1 and 1) with `shifted` set: the CPU switches to the closed forms at smaller n
// there (6 for T, U, V; 4 for W).
#define dl_shifted_chebyshev(kind, x, n) dl_chebyshev_##kind((x) + (x) - 1, n, 1)

// Hermite: H_{k+1} = 2x H_k - 2k H_{k-1}, He_{k+1} = x He_k - k He_{k-1}; NaN beyond the CPU's
// limit on n (128 in float, 512 in double).
#if DL_IS_DOUBLE
#define DL_HERMITE_LIMIT 512
#else
#define DL_HERMITE_LIMIT 128
#endif
static inline dl_t dl_hermite_h(dl_t x, dl_t nf) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (n == 1) return x + x;
  if (n > DL_HERMITE_LIMIT) return (dl_t)NAN;
  dl_t p = 1, q = x + x;
  for (long k = 2; k < n + n; k += 2) {
    dl_t r = (x + x) * q - k * p;
    p = q;
    q = r;
  }
  return q;
}

static inline dl_t dl_hermite_he(dl_t x, dl_t nf) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (n == 0) return 1;
  if (n == 1) return x;
  if (n > DL_HERMITE_LIMIT) return (dl_t)NAN;
  dl_t p = 1, q = x;
  for (long k = 1; k < n; ++k) {
    dl_t r = x * q - k * p;
    p = q;
    q = r;
  }
  return q;
}

// Laguerre: (k + 1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}; L_n(0) = 1.
static inline dl_t dl_laguerre_l(dl_t x, dl_t nf) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (fabs(x) == 0 || n == 0) return 1;
  dl_t p = 1, q = 1 - x;
  for (long k = 1; k < n && !isnan(q); ++k) {
    dl_t r = (((k + k) + (1 - x)) * q - k * p) / (k + 1);
    p = q;
    q = r;
  }
  return q;
}

// Legendre: (k + 1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}.
static inline dl_t dl_legendre_p(dl_t x, dl_t nf) {
  long n = dl_poly_n(nf);
  if (n < 0) return 0;
  if (fabs(x) == 1) return (x > 0 || n % 2 == 0) ? (dl_t)1 : (dl_t)-1;
  if (n == 0) return 1;
  dl_t p = 1, q = x;
  for (long k = 1; k < n && !isnan(q); ++k) {
    dl_t r = ((k + k + 1) * x * q - k * p) / (k + 1);
    p = q;
    q = r;
  }
  return q;
}
