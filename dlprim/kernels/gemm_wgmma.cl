// GEMM on Hopper's wgmma (sm_90a) from OpenCL (gemm_wgmma.cpp; PYTORCH_OCL_WGMMA): 16-bit operands, and float32
// ones as TF32 or 3xTF32. NVIDIA's OpenCL
// compiler targets sm_90, where ptxas rejects wgmma, so each sm_90a instruction is written as a PTX comment
// ("// @SM90A@ ...", operands filled in by the compiler) and the built program's PTX is edited and rebuilt
// (dlprim/src/ptx_sm90a.h). The host prepends gemm_program_head (T, ACC, LOAD_C / STORE_C, GEMM_OUT_ARGS) and:
//   WGS warpgroups of 64 rows (BM = 64 WGS), BN columns, STAGES buffers, WG_SHAPE / WG_IMM (the instruction's
//   K and types, its immediate operands), WG_TF32 (float32 operands), WG_PARTS (1, or 3 for 3xTF32), NACC = BN / 2
//   accumulators per thread, WG_ACC_REGS / WG_ACC_OPS (the asm operand lists of the accumulators), WG_DA / WG_DB
//   (the operand numbers of the two matrix descriptors); for WG_TF32, mma_common.cl (tf32 rounding, the split).
// A K stage is one instruction's K: 32 bytes of each row (BK = 16 16-bit or 8 tf32 elements).
//
// Operands are packed first (gemm_wgmma_pack): each (row block, K stage) tile of A (BM x BK) and of B^T (BN x BK)
// contiguous in the no-swizzle core-matrix layout wgmma reads (cores of 8 rows x 16 bytes; K-adjacent cores 128
// bytes apart, the descriptor's LBO; 8-row groups 2 cores apart, its SBO), zeros past M, N and K.
// 3xTF32 (WG_PARTS 3): K stage ks of the float32 operands is packed as two tiles, 2 ks (the big tf32 parts) and
// 2 ks + 1 (the small ones), and the product runs three stages per ks, reading A's (big, big, small) and B's (big,
// small, big) tiles (WG_TILE_A / WG_TILE_B), so that the plain TF32 product sums big*big + big*small + small*big
// (fp32 accuracy, as gemm_mma.cl's 3xtf32). A value the split cannot carry (inf, NaN, |x| >= MMA_SPLIT_MAX) is
// packed as (x, 0) and marks its row block in `flags`; work-groups reading a marked block sum big + small in plain
// fp32 instead (inf * x stays inf, not inf * 0). Then one
// bulk copy (cp.async.bulk) moves a tile into local memory: from row-major operands, 16-byte copies of 32-byte
// row slabs starved the products (H200: 219 against 482 TFLOP/s at 4096^3, scripts/wgmma_probe.cpp).
// Work-group: WGS consumer warpgroups and one producer warp. Stage s has two mbarriers: full[s] (the producer's
// arrival expecting the stage's bytes, completed by the copies) and empty[s] (one arrival per consumer warp once
// its products on the stage are done); no work-group barrier in the main loop.
// WG_EMULATE (devices without wgmma: CI on PoCL, Oclgrind; PYTORCH_OCL_MMA=emulate with PYTORCH_OCL_WGMMA=1): the
// same packing, tiles and epilogue; every work-item copies each stage between two barriers, and each product is
// computed by the work-item owning each accumulator from the stage's bytes read as the descriptors describe them
// (start, LBO, SBO), so the layout the packing writes and the descriptors read is checked everywhere.

#define BM (64 * WGS)
#define ROW_BYTES 32
#define SBO (ROW_BYTES / 16 * 128)
#define TILE_A (BM * ROW_BYTES)
#define TILE_B (BN * ROW_BYTES)
#define STAGE_BYTES (TILE_A + TILE_B)
#define NTH (128 * WGS + 32)
#if WG_PARTS == 3
#define PACKED_PARTS 2
// the packed tile of product stage i: stage i / 3's big tile, or its small one (A's third, B's second product)
#define WG_TILE_A(i) ((i) / 3 * 2 + ((i) % 3 == 2))
#define WG_TILE_B(i) ((i) / 3 * 2 + ((i) % 3 == 1))
#else
#define PACKED_PARTS 1
#define WG_TILE_A(i) (i)
#define WG_TILE_B(i) (i)
#endif
#if WG_TF32
#define BK 8
#define UNIT_ELEMS 4
#else
#define BK 16
#define UNIT_ELEMS 8
#endif

// Element (r, k) of a rows x K operand of entry z = bi * groups + gi at off + bi bs + gi gs + r rs + k cs, packed
// as above into P (uint4 = 16 bytes): one work-item per packed 16-byte unit (per three for 3xTF32). vec (host: cs
// == 1, and for 16-bit operands every start a multiple of 8 elements): the unit is read as one vector where it lies
// inside the operand. flags + flag_off (3xTF32): its row blocks' marks.
#if WG_TF32
__kernel void gemm_wgmma_pack(__global const float* X, ulong off, long rs, long cs, long bs, long gs, int groups,
                              int rows, int K, int nrb, int nk, int br, __global uint4* P, ulong p_off, ulong total,
                              int vec, __global int* flags, ulong flag_off) {
#else
__kernel void gemm_wgmma_pack(__global const ushort* X, ulong off, long rs, long cs, long bs, long gs, int groups,
                              int rows, int K, int nrb, int nk, int br, __global uint4* P, ulong p_off, ulong total,
                              int vec, __global int* flags, ulong flag_off) {
#endif
  const ulong i = get_global_id(0);
  if (i >= total) return;
  ulong t = i;
  const int c = (int)(t % (BK / UNIT_ELEMS));
  t /= BK / UNIT_ELEMS;
  const int r = (int)(t % br);
  t /= br;
  const int ks = (int)(t % nk);
  t /= nk;
  const int rb = (int)(t % nrb);
  const long z = (long)(t / nrb), bi = z / groups, gi = z - bi * groups;
  const int row = rb * br + r, k0 = ks * BK + c * UNIT_ELEMS;
  const long base = (long)off + bi * bs + gi * gs + (long)row * rs;
  // unit c of row r in packed stage s of this row block
#define PACKED(s) (p_off + (((ulong)z * nrb + rb) * (nk * PACKED_PARTS) + (s)) * (ulong)(br * ROW_BYTES / 16) + \
                   (r / 8) * (ROW_BYTES / 16 * 8) + c * 8 + (r % 8))
#if WG_TF32
  float4 x;
  if (vec && row < rows && k0 + 4 <= K) {
    x = vload4(0, X + base + k0);
  } else {
    x.s0 = row < rows && k0 < K ? X[base + (long)k0 * cs] : 0.0f;
    x.s1 = row < rows && k0 + 1 < K ? X[base + (long)(k0 + 1) * cs] : 0.0f;
    x.s2 = row < rows && k0 + 2 < K ? X[base + (long)(k0 + 2) * cs] : 0.0f;
    x.s3 = row < rows && k0 + 3 < K ? X[base + (long)(k0 + 3) * cs] : 0.0f;
  }
#if WG_PARTS == 1
  P[PACKED(ks)] = (uint4)(mma_tf32(x.s0), mma_tf32(x.s1), mma_tf32(x.s2), mma_tf32(x.s3));
#else
  const float v[4] = {x.s0, x.s1, x.s2, x.s3};
  uint big[4], small[4];
  bool bad = false;
  _Pragma("unroll") for (int e = 0; e < 4; ++e) {
    if (fabs(v[e]) < MMA_SPLIT_MAX) {
      const uint2 p = mma_split(v[e]);
      big[e] = p.x;
      small[e] = p.y;
    } else {
      big[e] = as_uint(v[e]);
      small[e] = 0;
      bad = true;
    }
  }
  P[PACKED(2 * ks)] = (uint4)(big[0], big[1], big[2], big[3]);
  P[PACKED(2 * ks + 1)] = (uint4)(small[0], small[1], small[2], small[3]);
  if (bad) flags[flag_off + (ulong)z * nrb + rb] = 1;
#endif
#else
  if (vec && row < rows && k0 + 8 <= K) {
    P[PACKED(ks)] = *(__global const uint4*)(X + base + k0);
    return;
  }
  uint w[4];
  _Pragma("unroll") for (int e = 0; e < 4; ++e) {
    const int ka = k0 + 2 * e, kb = ka + 1;
    const uint lo = row < rows && ka < K ? X[base + (long)ka * cs] : 0;
    const uint hi = row < rows && kb < K ? X[base + (long)kb * cs] : 0;
    w[e] = lo | (hi << 16);
  }
  P[PACKED(ks)] = (uint4)(w[0], w[1], w[2], w[3]);
#endif
#undef PACKED
}

#if WG_EMULATE
// Element (r, k) of the core-matrix tile that a descriptor (start, LBO, SBO) names, as the engine reads it.
inline float wg_elem(__local const uchar* start, int lbo, int sbo, int r, int k) {
  __local const uchar* p = start + (r / 8) * sbo + (k / UNIT_ELEMS) * lbo + (r % 8) * 16 + (k % UNIT_ELEMS) * (16 / UNIT_ELEMS);
#if WG_TF32
  return as_float(*(__local const uint*)p & 0xffffe000u);  // the engine reads 19 bits of a tf32 operand
#elif WG_BF16
  return dl_bf16_to_float(*(__local const ushort*)p);
#else
  return vload_half(0, (__local const half*)p);
#endif
}
#endif

#if !WG_EMULATE
inline uint wg_saddr(__local const void* p) { return (uint)(ulong)p; }

// A matrix descriptor without swizzling: start address, LBO, SBO (16-byte units), layout type 0.
inline ulong wg_desc(__local const void* p, uint lbo, uint sbo) {
  const uint a = wg_saddr(p);
  return (ulong)((a >> 4) & 0x3FFF) | ((ulong)((lbo >> 4) & 0x3FFF) << 16) | ((ulong)((sbo >> 4) & 0x3FFF) << 32);
}

inline void wg_wait(__local ulong* bar, uint parity) {
  asm volatile("{\n.reg .pred P1;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n@P1 bra DONE_%=;\n"
               "bra WAIT_%=;\nDONE_%=:\n}\n" :: "r"(wg_saddr(bar)), "r"(parity) : "memory");
}
#endif

#if WG_PARTS == 3
// 3xTF32 on a marked row block: element (r, k) of K stage ks as big + small (the value itself where the split could
// not carry it), from the packed tiles t (2 ks: big, 2 ks + 1: small).
inline float wg_plain(__global const float* t, int tile_units, int ks, int r, int k) {
  const ulong u = (ulong)(r / 8) * (ROW_BYTES / 16 * 8) + (k / 4) * 8 + (r % 8);
  return t[((ulong)(2 * ks) * tile_units + u) * 4 + k % 4] + t[((ulong)(2 * ks + 1) * tile_units + u) * 4 + k % 4];
}
#endif

// C = act(alpha A B + beta D) over (N / BN, M / BM, entries) work-groups of NTH work-items; PA / PB: the packed
// operands (uint4 offsets pa_off / pb_off), nk product stages (3xTF32: 3 per K stage, over 2 packed tiles); flags
// (3xTF32): the row blocks' marks of A at fa_off, of B at fb_off.
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void gemm_wgmma(
    __global const uint4* PA, ulong pa_off, __global const uint4* PB, ulong pb_off, int M, int N, int nk, int nrb_a,
    int nrb_b, int groups, __global const int* flags, ulong fa_off, ulong fb_off, GEMM_OUT_ARGS) {
  __local uchar smem[STAGES * STAGE_BYTES] __attribute__((aligned(1024)));
#if !WG_EMULATE
  __local ulong full[STAGES], empty[STAGES];
#endif
  const int t = get_local_id(0), warp = t / 32, lane = t % 32;
  const int mb = get_group_id(1), nb = get_group_id(0);
  const long z = get_group_id(2), bi = z / groups, gi = z - bi * groups;
  const int wg = warp / 4, w = warp % 4, gid = lane / 4, tig = lane % 4;
  const int ntiles = nk / WG_PARTS * PACKED_PARTS;  // packed tiles of a row block
  __global const uint4* a = PA + pa_off + ((ulong)z * nrb_a + mb) * ntiles * (TILE_A / 16);
  __global const uint4* b = PB + pb_off + ((ulong)z * nrb_b + nb) * ntiles * (TILE_B / 16);
  // accumulator j of lane (gid, tig) of warp w: row 16 w + gid (+ 8 for j % 4 >= 2), column 8 (j / 4) + 2 tig + j % 2
  const int m0 = mb * BM + wg * 64 + w * 16 + gid, n0 = nb * BN + 2 * tig;
#if WG_PARTS == 3
  if (flags[fa_off + (ulong)z * nrb_a + mb] | flags[fb_off + (ulong)z * nrb_b + nb]) {  // the same for the group
    if (warp == 4 * WGS) return;
    for (int j = 0; j < NACC; ++j) {  // stored as summed: the accumulators stay registers on the main path
      const int r = wg * 64 + w * 16 + gid + 8 * ((j >> 1) & 1), n = 8 * (j >> 2) + 2 * tig + (j & 1);
      if (mb * BM + r >= M || nb * BN + n >= N) continue;
      float acc = 0;
      for (int ks = 0; ks < nk / 3; ++ks)
        for (int k = 0; k < BK; ++k)
          acc += wg_plain((__global const float*)a, TILE_A / 16, ks, r, k) *
                 wg_plain((__global const float*)b, TILE_B / 16, ks, n, k);
      GEMM_STORE(bi, gi, mb * BM + r, nb * BN + n, (ACC)acc);
    }
    return;
  }
#endif
  float d[NACC];
  _Pragma("unroll") for (int i = 0; i < NACC; ++i) d[i] = 0;
  {
#if WG_EMULATE
    for (int i = 0; i < nk; ++i) {
      barrier(CLK_LOCAL_MEM_FENCE);  // the previous stage's products are done
      for (int u = t; u < STAGE_BYTES / 16; u += NTH)
        ((__local uint4*)smem)[u] = u < TILE_A / 16 ? a[(ulong)WG_TILE_A(i) * (TILE_A / 16) + u]
                                                    : b[(ulong)WG_TILE_B(i) * (TILE_B / 16) + u - TILE_A / 16];
      barrier(CLK_LOCAL_MEM_FENCE);
      if (warp < 4 * WGS) {
        __local const uchar* sa = smem + wg * 8 * SBO;  // the descriptors' starts, LBO 128, SBO
        __local const uchar* sb = smem + TILE_A;
        for (int j = 0; j < NACC; ++j) {
          const int r = w * 16 + gid + 8 * ((j >> 1) & 1), n = 8 * (j >> 2) + 2 * tig + (j & 1);
          float acc = d[j];
          for (int k = 0; k < BK; ++k) acc += wg_elem(sa, 128, SBO, r, k) * wg_elem(sb, 128, SBO, n, k);
          d[j] = acc;
        }
      }
    }
    if (warp == 4 * WGS) return;
#else
    if (t == 0) {
      _Pragma("unroll") for (int s = 0; s < STAGES; ++s) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(wg_saddr(full + s)) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(wg_saddr(empty + s)), "r"(4 * WGS) : "memory");
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (warp == 4 * WGS) {  // the producer: lane 0 copies each stage's two tiles once their buffer is free
      if (lane == 0) {
        for (int i = 0; i < nk; ++i) {
          const int s = i % STAGES;
          if (i >= STAGES) wg_wait(empty + s, ((i / STAGES) - 1) & 1);
          __local uchar* buf = smem + s * STAGE_BYTES;
          asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(wg_saddr(full + s)),
                       "r"(STAGE_BYTES) : "memory");
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                       :: "r"(wg_saddr(buf)), "l"((ulong)(a + (ulong)WG_TILE_A(i) * (TILE_A / 16))), "r"(TILE_A),
                       "r"(wg_saddr(full + s)) : "memory");
          asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                       :: "r"(wg_saddr(buf + TILE_A)), "l"((ulong)(b + (ulong)WG_TILE_B(i) * (TILE_B / 16))), "r"(TILE_B),
                       "r"(wg_saddr(full + s)) : "memory");
        }
      }
      return;  // no barrier follows
    }
    for (int i = 0; i < nk; ++i) {
      const int s = i % STAGES;
      wg_wait(full + s, (i / STAGES) & 1);
      __local uchar* buf = smem + s * STAGE_BYTES;
      asm volatile("// @SM90A@ wgmma.fence.sync.aligned;" : WG_ACC_OPS :: "memory");
      const ulong da = wg_desc(buf + wg * 8 * SBO, 128, SBO), db = wg_desc(buf + TILE_A, 128, SBO);
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                   "// @SM90A@ wgmma.mma_async.sync.aligned.m64n" WG_BN_STR WG_SHAPE
                   " {" WG_ACC_REGS "}, " WG_DA ", " WG_DB ", p" WG_IMM ";\n}\n"
                   : WG_ACC_OPS : "l"(da), "l"(db) : "memory");
      asm volatile("// @SM90A@ wgmma.commit_group.sync.aligned;" ::: "memory");
      // the previous stage's products are done (one group stays in flight): its buffer may be refilled
      asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 1;" : WG_ACC_OPS :: "memory");
      if (i > 0 && lane == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(wg_saddr(empty + (i - 1) % STAGES)) : "memory");
    }
    asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 0;" : WG_ACC_OPS :: "memory");
#endif
  }
  _Pragma("unroll") for (int j = 0; j < NACC; ++j) {
    const int m = m0 + 8 * ((j >> 1) & 1), n = n0 + 8 * (j >> 2) + (j & 1);
    if (m < M && n < N) GEMM_STORE(bi, gi, m, n, (ACC)d[j]);
  }
}
