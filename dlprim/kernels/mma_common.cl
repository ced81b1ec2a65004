// The matrix-engine instruction shared by gemm_mma.cl and attention_mma.cl (the host prepends this file):
// tf32 rounding and the 3xtf32 split, and MMA(d, a, b) = one mma.sync of kind MMA_KIND (1 tf32, 2 3xtf32's
// single product, 3 bf16, 4 fp16; fp32 accumulation) on a warp's fragments, in the register layouts of the
// PTX ISA ("Matrix fragments for mma.m16n8k8 / m16n8k16"): lane = 4 gid + tig,
//   A 16 x KS: rows gid and gid + 8, k slots tig (+4) for tf32 / 2 tig, 2 tig + 1 (+8) for 16-bit pairs;
//   B KS x 8: column gid, the same k slots; C 16 x 8: rows gid, gid + 8, columns 2 tig, 2 tig + 1.
// MMA_EMULATE replaces the PTX by a local-memory emulation with the same layouts (devices without the
// instruction: PoCL in CI, Oclgrind). The emulation needs, in scope: `__local uint emu_regs[threads * 6]`,
// `tid` (the work-item's index in the group), `lane`, `gid`, `tig`; every work-item of the group must call
// MMA the same number of times (it holds barriers).

// ---------------------------------------------------------------- tf32 rounding
#if MMA_EMULATE
// Round to nearest, ties away from zero, to 10 mantissa bits (cvt.rna.tf32.f32); inf/NaN kept.
inline uint mma_tf32(float x) {
  uint u = as_uint(x);
  return (u & 0x7f800000u) == 0x7f800000u ? u : ((u + 0x1000u) & 0xffffe000u);
}
#else
inline uint mma_tf32(float x) {
  uint u;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(u) : "f"(x));
  return u;
}
#endif

// 3xtf32's split of a finite fp32 value below MMA_SPLIT_MAX into big + small tf32 parts (3 instructions:
// the inner loop's budget). Larger and non-finite values never get here: staging flags them and the
// work-group recomputes its outputs in plain fp32 (see the end of the kernel).
inline uint2 mma_split(float x) {
  const uint big = mma_tf32(x);
  return (uint2)(big, mma_tf32(x - as_float(big)));
}
// Above this, rounding to tf32 may give inf.
#define MMA_SPLIT_MAX 3.4026e38f

// ---------------------------------------------------------------- the instruction
#if MMA_KIND <= 2
#define MMA_SHAPE "m16n8k8.row.col.f32.tf32.tf32.f32"
#elif MMA_KIND == 3
#define MMA_SHAPE "m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define MMA_SHAPE "m16n8k16.row.col.f32.f16.f16.f32"
#endif

#if MMA_EMULATE
// One lane's operand register as the two (16-bit kinds) or one (tf32) values it holds.
inline float mma_emu_value(uint w, int half_index) {
#if MMA_KIND <= 2
  return as_float(w & 0xffffe000u);  // the engine reads 19 bits of a tf32 operand
#elif MMA_KIND == 3
  return as_float((half_index ? (w >> 16) : (w & 0xffffu)) << 16);
#else
  ushort h = (ushort)(half_index ? (w >> 16) : (w & 0xffffu));
  return vload_half(0, (const __private half *)&h);
#endif
}
// Element (row, k) of the warp's A (16 x KS) and (k, col) of its B (KS x 8) from the lanes' registers
// in `regs` (6 words per lane: a0..a3, b0, b1), by the fragment layouts above.
inline float mma_emu_a(__local const uint *regs, int row, int k) {
#if MMA_KIND <= 2
  int lane = (row % 8) * 4 + k % 4, reg = (row >= 8) + 2 * (k >= 4);
  return mma_emu_value(regs[lane * 6 + reg], 0);
#else
  int lane = (row % 8) * 4 + (k % 8) / 2, reg = (row >= 8) + 2 * (k >= 8);
  return mma_emu_value(regs[lane * 6 + reg], k % 2);
#endif
}
inline float mma_emu_b(__local const uint *regs, int k, int col) {
#if MMA_KIND <= 2
  return mma_emu_value(regs[(col * 4 + k % 4) * 6 + 4 + (k >= 4)], 0);
#else
  return mma_emu_value(regs[(col * 4 + (k % 8) / 2) * 6 + 4 + (k >= 8)], k % 2);
#endif
}
// Every work-item of the group calls this the same number of times (the fragment loops are uniform),
// so the barriers are legal.
#define MMA(d, a, b)                                                                          \
  do {                                                                                        \
    __local uint *mine_ = emu_regs + tid * 6;                                                 \
    mine_[0] = (a)[0], mine_[1] = (a)[1], mine_[2] = (a)[2], mine_[3] = (a)[3];               \
    mine_[4] = (b)[0], mine_[5] = (b)[1];                                                     \
    barrier(CLK_LOCAL_MEM_FENCE);                                                             \
    __local const uint *warp_ = emu_regs + (tid - lane) * 6;                                  \
    for (int e_ = 0; e_ < 4; ++e_) {                                                          \
      const int row_ = gid + 8 * (e_ >> 1), col_ = 2 * tig + (e_ & 1);                        \
      float s_ = 0;                                                                           \
      for (int k_ = 0; k_ < KS; ++k_) s_ += mma_emu_a(warp_, row_, k_) * mma_emu_b(warp_, k_, col_); \
      (d)[e_] += s_;                                                                          \
    }                                                                                         \
    barrier(CLK_LOCAL_MEM_FENCE);                                                             \
  } while (0)
#else
// Not volatile: the outputs are used, so the compiler keeps the instruction and may schedule around it.
#define MMA(d, a, b)                                                                            \
  asm("mma.sync.aligned." MMA_SHAPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
               : "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])                           \
               : "r"((a)[0]), "r"((a)[1]), "r"((a)[2]), "r"((a)[3]), "r"((b)[0]), "r"((b)[1]))
#endif

