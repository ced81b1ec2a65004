// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3").
// Counter = (element group, call offset), key = seed: stateless and reproducible.

inline uint4 dl_philox_round(uint4 c, uint2 k) {
  uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
  uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
  return (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
}

inline uint4 dl_philox(ulong seed, ulong group, ulong offset) {
  uint4 c = (uint4)((uint)group, (uint)(group >> 32), (uint)offset, (uint)(offset >> 32));
  uint2 k = (uint2)((uint)seed, (uint)(seed >> 32));
  for (int r = 0; r < 10; ++r) {
    c = dl_philox_round(c, k);
    k += (uint2)(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}

// Uniform in [0, 1) with 24 random bits.
inline float dl_uniform_f(uint x) { return (float)(x >> 8) * 5.9604644775390625e-08f; }

// Uniform in (0, 1]: safe for log().
inline float dl_uniform_open_f(uint x) { return ((float)(x >> 8) + 1.0f) * 5.9604644775390625e-08f; }

// Fills DL_PER_ITEM consecutive outputs per work-item. DL_STORE(index, float_value) and
// DL_TRANSFORM(u0, u1, u2, u3, &v0..&v3) are defined by the generator per distribution and dtype.
__kernel void dl_random_fill(__global DL_T* out, ulong out_offset, ulong n, ulong seed,
                             ulong philox_offset, DL_CT a, DL_CT b) {
  ulong g = get_global_id(0);
  ulong first = g * 4;
  if (first >= n) return;
  uint4 r = dl_philox(seed, g, philox_offset);
  DL_CT v[4];
  DL_TRANSFORM(r, a, b, v);
  for (int j = 0; j < 4; ++j) {
    ulong i = first + j;
    if (i < n) { DL_STORE(out, out_offset + i, v[j]); }
  }
}
