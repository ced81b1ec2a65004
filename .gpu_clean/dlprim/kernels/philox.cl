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

// The second, independent stream of words used where one value needs 64 random bits
// (float64 uniforms, integer ranges of 2^32 or more): the top bit of the offset selects it.
#define DL_WIDE_STREAM 0x8000000000000000UL

inline uint dl_word(uint4 r, int j) { return j == 0 ? r.x : (j == 1 ? r.y : (j == 2 ? r.z : r.w)); }

// Uniform in [0, 1) with 24 random bits, and in the open interval (0, 1) (safe for log()).
inline float dl_uniform_f(uint x) { return (float)(x >> 8) * 5.9604644775390625e-08f; }
inline float dl_uniform_open_f(uint x) { return ((float)(x >> 8) + 0.5f) * 5.9604644775390625e-08f; }

// One 32-bit word of element `i` of a stream where element i uses word i % 4 of group i / 4.
inline uint dl_philox_word(ulong seed, ulong i, ulong offset) {
  return dl_word(dl_philox(seed, i >> 2, offset), (int)(i & 3));
}
