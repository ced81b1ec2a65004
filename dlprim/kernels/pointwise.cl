// Helpers of the pointwise op table (csrc/aten/PointwiseOps.h). The generator defines dl_t (the
// compute type) and DL_IS_FLOAT / DL_IS_DOUBLE / DL_IS_BOOL / DL_IS_SIGNED / DL_BITS before this
// file, so each helper compiles to the semantics ATen's CPU kernels have for that dtype.

#define DL_ONE ((dl_t)1)
#define DL_ZERO ((dl_t)0)

#if DL_IS_FLOAT
#define DL_NAN ((dl_t)NAN)
#define DL_INF ((dl_t)INFINITY)
static inline int dl_isnan(dl_t x) { return isnan(x); }
static inline int dl_isinf(dl_t x) { return isinf(x); }
static inline dl_t dl_abs(dl_t x) { return fabs(x); }
#else
static inline int dl_isnan(dl_t x) { return 0; }
static inline int dl_isinf(dl_t x) { return 0; }
#if DL_IS_SIGNED
static inline dl_t dl_abs(dl_t x) { return x < 0 ? (dl_t)(-x) : x; }
#else
static inline dl_t dl_abs(dl_t x) { return x; }
#endif
#endif

#if DL_IS_BOOL
static inline dl_t dl_bitwise_not(dl_t x) { return !x; }
#elif DL_IS_FLOAT
static inline dl_t dl_bitwise_not(dl_t x) { return x; }
#else
static inline dl_t dl_bitwise_not(dl_t x) { return ~x; }
#endif

#if DL_IS_FLOAT
static inline int dl_signbit(dl_t x) { return signbit(x); }
#elif DL_IS_SIGNED
static inline int dl_signbit(dl_t x) { return x < 0; }
#else
static inline int dl_signbit(dl_t x) { return 0; }
#endif

// sign: NaN gives 0 as on the CPU.
static inline dl_t dl_sign(dl_t x) { return (dl_t)((DL_ZERO < x) - (x < DL_ZERO)); }

#if DL_IS_FLOAT
static inline dl_t dl_floor(dl_t x) { return floor(x); }
static inline dl_t dl_ceil(dl_t x) { return ceil(x); }
static inline dl_t dl_trunc(dl_t x) { return trunc(x); }
static inline dl_t dl_round(dl_t x) { return rint(x); }  // half to even, like std::nearbyint
#else
static inline dl_t dl_floor(dl_t x) { return x; }
static inline dl_t dl_ceil(dl_t x) { return x; }
static inline dl_t dl_trunc(dl_t x) { return x; }
static inline dl_t dl_round(dl_t x) { return x; }
#endif

// round(x, decimals): w = decimals as a float.
static inline dl_t dl_round_decimals(dl_t x, dl_t decimals) {
#if DL_IS_FLOAT
  int d = (int)decimals;
  if (d < 0) {
    dl_t p = pow((dl_t)10, (dl_t)(-d));
    return rint(x / p) * p;
  }
  dl_t p = pow((dl_t)10, (dl_t)d);
  return rint(x * p) / p;
#else
  return x;
#endif
}

// maximum/minimum propagate NaN; fmax/fmin ignore it (OpenCL's fmax/fmin do).
static inline dl_t dl_maximum(dl_t a, dl_t b) {
  if (dl_isnan(a) || dl_isnan(b)) return dl_isnan(a) ? a : b;
  return a > b ? a : b;
}
static inline dl_t dl_minimum(dl_t a, dl_t b) {
  if (dl_isnan(a) || dl_isnan(b)) return dl_isnan(a) ? a : b;
  return a < b ? a : b;
}
#if DL_IS_FLOAT
static inline dl_t dl_fmax(dl_t a, dl_t b) { return fmax(a, b); }
static inline dl_t dl_fmin(dl_t a, dl_t b) { return fmin(a, b); }
#else
static inline dl_t dl_fmax(dl_t a, dl_t b) { return a > b ? a : b; }
static inline dl_t dl_fmin(dl_t a, dl_t b) { return a < b ? a : b; }
#endif

// Division with ATen's rounding modes. Integer division by zero has no trap on the device:
// it gives 0 (the CPU raises ZeroDivisionError), and MIN / -1 wraps.
static inline dl_t dl_int_div(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  return a / b;
#else
  if (b == 0) return 0;
#if DL_IS_SIGNED
  if (b == (dl_t)-1) return (dl_t)(-a);
#endif
  return a / b;
#endif
}
#if !DL_IS_FLOAT
static inline dl_t dl_int_rem(dl_t a, dl_t b) {
  if (b == 0) return 0;
#if DL_IS_SIGNED
  if (b == (dl_t)-1) return 0;
#endif
  return a % b;
}
#endif

static inline dl_t dl_div_trunc(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  return trunc(a / b);
#else
  return dl_int_div(a, b);
#endif
}

static inline dl_t dl_div_floor(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  if (b == 0) return a / b;
  dl_t mod = fmod(a, b);
  dl_t div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
  dl_t fl;
  if (div != 0) {
    fl = floor(div);
    if (div - fl > (dl_t)0.5) fl += 1;
  } else {
    fl = copysign((dl_t)0, a / b);
  }
  return fl;
#else
#if DL_IS_SIGNED
  if (b == 0) return 0;
  dl_t q = dl_int_div(a, b);
  if ((a < 0) != (b < 0) && q * b != a) q -= 1;
  return q;
#else
  return dl_int_div(a, b);
#endif
#endif
}

// Python's modulus: the result takes the divisor's sign.
static inline dl_t dl_remainder(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  dl_t m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
#else
  dl_t m = dl_int_rem(a, b);
#if DL_IS_SIGNED
  if (m != 0 && (b < 0) != (m < 0)) m += b;
#endif
  return m;
#endif
}

static inline dl_t dl_fmod(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  return fmod(a, b);
#else
  return dl_int_rem(a, b);
#endif
}

// pow: integers by squaring with the CPU's rules for negative exponents. Floats take the
// CPU's (and CUDA's) exact shortcuts for the common exponents: a driver's pow() may be a few
// ulp off, which gradients such as atanh's 1 / (1 - x^2) amplify near the poles.
static inline dl_t dl_pow(dl_t a, dl_t b) {
#if DL_IS_FLOAT
  if (b == (dl_t)2) return a * a;
  if (b == (dl_t)3) return a * a * a;
  if (b == (dl_t)0.5) return sqrt(a);
  if (b == (dl_t)-0.5) return (dl_t)1 / sqrt(a);
  if (b == (dl_t)-1) return (dl_t)1 / a;
  if (b == (dl_t)-2) return (dl_t)1 / (a * a);
  return pow(a, b);
#else
#if DL_IS_SIGNED
  if (b < 0) {
    if (a == 1) return 1;
    if (a == (dl_t)-1) return (b & 1) ? (dl_t)-1 : (dl_t)1;
    return 0;
  }
#endif
  dl_t r = 1;
  while (b) {
    if (b & 1) r *= a;
    b >>= 1;
    a *= a;
  }
  return r;
#endif
}

// gcd / lcm (integers): the CPU's Euclid in the element type on absolute values; lcm's
// |a / g * b| in C's promoted type (int up to 32 bits), as the CPU evaluates it.
static inline dl_t dl_gcd(dl_t a, dl_t b) {
#if DL_IS_FLOAT || DL_IS_BOOL
  return a;
#else
#if DL_IS_SIGNED
  a = a < 0 ? (dl_t)-a : a;
  b = b < 0 ? (dl_t)-b : b;
#endif
  while (a != 0) {
    dl_t c = a;
    a = (dl_t)(b % a);
    b = c;
  }
  return b;
#endif
}
static inline dl_t dl_lcm(dl_t a, dl_t b) {
#if DL_IS_FLOAT || DL_IS_BOOL
  return a;
#else
  dl_t g = dl_gcd(a, b);
  if (g == 0) return 0;
#if DL_BITS == 64
  dl_t t = a / g * b;
#else
  int t = (int)a / (int)g * (int)b;
#endif
  return (dl_t)(t < 0 ? -t : t);
#endif
}

// Shifts: out-of-range counts give 0 (left) or the sign fill (right), as on the CPU.
static inline dl_t dl_shift_left(dl_t a, dl_t b) {
#if DL_IS_FLOAT || DL_IS_BOOL
  return a;
#else
  if ((long)b < 0 || (long)b >= DL_BITS) return 0;
  return (dl_t)(a << b);
#endif
}
static inline dl_t dl_shift_right(dl_t a, dl_t b) {
#if DL_IS_FLOAT || DL_IS_BOOL
  return a;
#else
  const long max_shift = DL_BITS - DL_IS_SIGNED;
  if ((long)b < 0 || (long)b >= max_shift) return (dl_t)(a >> max_shift);
  return (dl_t)(a >> b);
#endif
}

#if DL_IS_FLOAT
static inline dl_t dl_logaddexp(dl_t a, dl_t b) {
  if (isinf(a) && a == b) return a;
  dl_t m = fmax(a, b);
  return m + log1p(exp(-fabs(a - b)));
}
static inline dl_t dl_logaddexp2(dl_t a, dl_t b) {
  if (isinf(a) && a == b) return a;
  dl_t m = fmax(a, b);
  return m + log1p(exp2(-fabs(a - b))) / log((dl_t)2);
}
static inline dl_t dl_xlogy(dl_t x, dl_t y) {
  if (isnan(y)) return y;
  if (x == 0) return 0;
  return x * log(y);
}
static inline dl_t dl_sigmoid(dl_t x) { return DL_ONE / (DL_ONE + exp(-x)); }

// clamp with NaN in x propagated (scalar bounds); fmin/fmax would drop it.
static inline dl_t dl_clamp(dl_t x, dl_t lo, dl_t hi) {
  if (isnan(x)) return x;
  return fmin(fmax(x, lo), hi);
}
#else
static inline dl_t dl_clamp(dl_t x, dl_t lo, dl_t hi) {
  x = x < lo ? lo : x;
  return x > hi ? hi : x;
}
#endif

#if DL_IS_FLOAT
// nextafter at the precision of the output's storage (16-bit floats step by a 16-bit ulp).
static inline float dl_f16_bits_to_float(ushort h) {
  return vload_half(0, (const __private half*)&h);
}
static inline ushort dl_float_to_f16_bits(float f) {
  ushort h;
  vstore_half_rte(f, 0, (__private half*)&h);
  return h;
}
static inline dl_t dl_nextafter(dl_t a, dl_t b) {
#if DL_Y0_F16 || DL_Y0_BF16
  if (isnan(a) || isnan(b)) return a + b;
  if (a == b) return b;
#if DL_Y0_F16
  ushort u = dl_float_to_f16_bits((float)a);
#else
  ushort u = dl_float_to_bf16((float)a);
#endif
  if (a == 0) {
    u = (ushort)((b < 0 ? 0x8000 : 0) | 1);
  } else if ((a < b) == (a > 0)) {
    u += 1;
  } else {
    u -= 1;
  }
#if DL_Y0_F16
  return dl_f16_bits_to_float(u);
#else
  return dl_bf16_to_float(u);
#endif
#else
  return nextafter(a, b);
#endif
}
#endif

// f rounded to the nearest half-precision value, as a float (the same function as in index.cl;
// see there).
static inline float dl_round_to_half(float f) {
  if (isnan(f) || isinf(f)) return f;
  if (fabs(f) < 6.103515625e-05f) return rint(f * 16777216.0f) * 5.9604644775390625e-08f;  // multiples of 2^-24
  uint u = as_uint(f);
  float r = as_float((u + 0x0fffu + ((u >> 13) & 1u)) & ~0x1fffu);
  return fabs(r) > 65504.0f ? copysign(INFINITY, f) : r;
}

// v rounded to output 0's storage precision, for bodies whose CPU kernel rounds intermediate
// results to a 16-bit dtype (c10::Half / BFloat16 arithmetic rounds after every operation).
#if DL_IS_FLOAT && DL_Y0_F16
static inline dl_t dl_round_y0(dl_t v) { return dl_round_to_half((float)v); }
#elif DL_IS_FLOAT && DL_Y0_BF16
static inline dl_t dl_round_y0(dl_t v) { return dl_bf16_to_float(dl_float_to_bf16((float)v)); }
#else
#define dl_round_y0(v) (v)
#endif
