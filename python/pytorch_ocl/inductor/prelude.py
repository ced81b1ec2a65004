"""OpenCL C helpers prepended to every generated kernel (OpenCL C 1.2, no cl_khr_fp16 needed)."""

PRELUDE = r"""
#define OCL_FLOORDIV(a, b) (((a) / (b)) - ((((a) % (b)) != 0) && (((a) < 0) != ((b) < 0))))
#define OCL_PYMOD(a, b) ((((a) % (b)) != 0 && ((((a) % (b)) < 0) != ((b) < 0))) ? ((a) % (b)) + (b) : ((a) % (b)))
#define OCL_REMF(a, b) ((fmod((a), (b)) != 0 && ((fmod((a), (b)) < 0) != ((b) < 0))) ? fmod((a), (b)) + (b) : fmod((a), (b)))
#define OCL_MAXF(a, b) ((isnan(a) || (a) > (b)) ? (a) : (b))
#define OCL_MINF(a, b) ((isnan(a) || (a) < (b)) ? (a) : (b))
#define OCL_MAXI(a, b) ((a) > (b) ? (a) : (b))
#define OCL_MINI(a, b) ((a) < (b) ? (a) : (b))
inline float ocl_bf16_to_float(ushort v) { return as_float(((uint)v) << 16); }
inline ushort ocl_float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
inline float ocl_round_bf16(float f) { return ocl_bf16_to_float(ocl_float_to_bf16(f)); }
inline ushort ocl_float_to_half_bits(float f) { ushort h; vstore_half_rte(f, 0, (__private half*)&h); return h; }
inline float ocl_half_bits_to_float(ushort h) { return vload_half(0, (const __private half*)&h); }
inline float ocl_round_half(float f) { return ocl_half_bits_to_float(ocl_float_to_half_bits(f)); }
inline long ocl_ipow(long a, long b) {
  if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0);
  long r = 1;
  while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
  return r;
}
inline void ocl_atomic_add_float(volatile __global float* p, float v) {
  union { uint u; float f; } old, upd;
  do { old.f = *p; upd.f = old.f + v; }
  while (atomic_cmpxchg((volatile __global uint*)p, old.u, upd.u) != old.u);
}
"""
