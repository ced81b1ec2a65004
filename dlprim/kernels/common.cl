// Helpers shared by every generated program.

// bfloat16 is the top half of a float; rounding to nearest even, NaN kept quiet.
inline float dl_bf16_to_float(ushort v) { return as_float(((uint)v) << 16); }

inline ushort dl_float_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}

typedef struct { int v[8]; } dl_dims32;
typedef struct { long v[8]; } dl_dims64;
