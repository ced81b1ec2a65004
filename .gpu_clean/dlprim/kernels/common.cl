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

// Offsets of row `o` (flattened over the row dims, innermost last) in three tensors whose
// strides over those dims are s0, s1, s2: the row-wise kernels (scan, softmax) share it.
inline void dl_row_offsets3(ulong o, int rank, dl_dims64 sz, dl_dims64 s0, dl_dims64 s1, dl_dims64 s2, long* b0,
                            long* b1, long* b2) {
  long a0 = 0, a1 = 0, a2 = 0;
  for (int d = rank - 1; d >= 0; --d) {
    ulong q = o / (ulong)sz.v[d];
    long c = (long)(o - q * (ulong)sz.v[d]);
    a0 += c * s0.v[d];
    a1 += c * s1.v[d];
    a2 += c * s2.v[d];
    o = q;
  }
  *b0 = a0;
  *b1 = a1;
  *b2 = a2;
}
