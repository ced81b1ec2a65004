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
#ifdef OCL_PTX_ATOMICS
// NVIDIA (inline PTX builds there: runtime.py defines this): the hardware's float reduction in L2. A
// compare-and-swap loop retries under contention: compiled BERT's token-type embedding gradient (8192
// rows added into 2) took 44 ms with it on an H100.
inline void ocl_atomic_add_float(volatile __global float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;" ::"l"((ulong)p), "f"(v) : "memory");
}
#else
inline void ocl_atomic_add_float(volatile __global float* p, float v) {
  union { uint u; float f; } old, upd;
  do { old.f = *p; upd.f = old.f + v; }
  while (atomic_cmpxchg((volatile __global uint*)p, old.u, upd.u) != old.u);
}
#endif
// 16-bit float atomic add: CAS on the aligned 32-bit word holding the element (the other half is
// written back unchanged). bf16 = 1: bfloat16 bits, else IEEE half bits.
inline void ocl_atomic_add_16(volatile __global ushort* p, float v, int bf16) {
  volatile __global uint* w = (volatile __global uint*)((ulong)p & ~(ulong)3);
  uint shift = ((ulong)p & 2) ? 16u : 0u, old, upd;
  do {
    old = *w;
    ushort h = (ushort)(old >> shift);
    float f = (bf16 ? ocl_bf16_to_float(h) : ocl_half_bits_to_float(h)) + v;
    ushort n = bf16 ? ocl_float_to_bf16(f) : ocl_float_to_half_bits(f);
    upd = (old & ~(0xffffu << shift)) | ((uint)n << shift);
  } while (atomic_cmpxchg(w, old, upd) != old);
}
// Philox4x32-10 (Salmon et al. 2011): counter = offset, key = seed; Inductor's fused random ops.
inline uint4 ocl_philox(ulong seed, ulong offset) {
  uint c0 = (uint)offset, c1 = (uint)(offset >> 32), c2 = 0, c3 = 0, k0 = (uint)seed, k1 = (uint)(seed >> 32);
  for (int i = 0; i < 10; ++i) {
    uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    c0 = hi1 ^ c1 ^ k0; c1 = lo1; c2 = hi0 ^ c3 ^ k1; c3 = lo0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return (uint4)(c0, c1, c2, c3);
}
inline float ocl_rand(ulong seed, ulong offset) { return (float)(ocl_philox(seed, offset).x >> 8) * 0x1.0p-24f; }
inline float ocl_randn(ulong seed, ulong offset) {
  uint4 r = ocl_philox(seed, offset);
  float u1 = (float)((r.x >> 8) + 1) * 0x1.0p-24f, u2 = (float)(r.y >> 8) * 0x1.0p-24f;
  return sqrt(-2.0f * log(u1)) * cos(6.2831853071795865f * u2);
}
inline long ocl_randint64(ulong seed, ulong offset, long low, long high) {
  uint4 r = ocl_philox(seed, offset);
  ulong v = ((ulong)r.x << 32) | r.y;
  return low + (long)(v % (ulong)(high - low));
}
// erfinv (Giles 2010, single precision): OpenCL C has no builtin.
inline float ocl_erfinv(float x) {
  float w = -log((1.0f - x) * (1.0f + x)), p;
  if (w < 5.0f) {
    w -= 2.5f;
    p = 2.81022636e-08f; p = 3.43273939e-07f + p * w; p = -3.5233877e-06f + p * w; p = -4.39150654e-06f + p * w;
    p = 0.00021858087f + p * w; p = -0.00125372503f + p * w; p = -0.00417768164f + p * w; p = 0.246640727f + p * w;
    p = 1.50140941f + p * w;
  } else {
    w = sqrt(w) - 3.0f;
    p = -0.000200214257f; p = 0.000100950558f + p * w; p = 0.00134934322f + p * w; p = -0.00367342844f + p * w;
    p = 0.00573950773f + p * w; p = -0.0076224613f + p * w; p = 0.00943887047f + p * w; p = 1.00167406f + p * w;
    p = 2.83297682f + p * w;
  }
  return p * x;
}
"""

# Accumulating stores of int64 / float64 (index_put with accumulate, scatter_add, embedding backward): added to the
# kernels that make them only, after the cl_khr_fp64 pragma where one is needed.
INT64_ATOMICS = "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
DOUBLE_ATOMIC_ADD = r"""
inline void ocl_atomic_add_double(volatile __global double* p, double v) {
  union { ulong u; double f; } old, upd;
  do { old.f = *p; upd.f = old.f + v; }
  while (atom_cmpxchg((volatile __global ulong*)p, old.u, upd.u) != old.u);
}
"""
