// Can OpenCL on an NVIDIA Hopper GPU run wgmma (the warpgroup matrix instruction cuBLAS uses)? NVIDIA's
// OpenCL compiler emits PTX for `.target sm_90`, where ptxas rejects wgmma (it needs sm_90a). This probe
// compiles OpenCL C whose sm_90a-only instructions are PTX comments ("// @SM90A@ <instruction>"; the compiler
// substitutes inline-asm operands inside comments too, so the registers are already named), reads the
// program binary (PTX text), uncomments them, retargets the module to sm_90a, and loads the edited PTX as a
// program binary. Then:
//   1. one m64n8k16 bf16 product with A and B in local memory through matrix descriptors, checked against the
//      host, for each way of reading the descriptor's two core-matrix strides;
//   2. the throughput of chained m64n128k16 bf16 products (2 warpgroups per work-group, 8 groups per SM), the
//      loop written in C and inside one asm statement.
//   3. a bf16 GEMM on wgmma (C = A B^T, K-major operands, into the no-swizzle core-matrix layout): synchronous
//      (cp.async, one work-group barrier a stage), with a producer warp and mbarriers, and on operands the host
//      packed so that each stage's tile is contiguous in that layout (cp.async, or one bulk copy per tile:
//      cp.async.bulk with the stage's mbarrier expecting its bytes).
// The library does not use this; it tells whether a wgmma GEMM is reachable from OpenCL (issue 16).
//
// Measured on an H200 (driver 580.159.04, 2026-11-27; cuBLAS bf16 4096^3 in the same lease 764-798 TFLOP/s):
// - the edited PTX builds and runs; m64n8k16 is exact with LBO = the K-direction core-matrix stride and SBO =
//   the row-direction one; chained m64n128k16 bf16 products run at 977 TFLOP/s (mma.sync's probe ~500);
// - every GEMM variant is exact on 2000 sampled entries of 4096^3;
// - from row-major operands (16-byte cp.async of 32-byte row slabs): 150-223 TFLOP/s, the mma.sync kernel's
//   level; the same loop without its copies runs at 653, so the feed bounds it;
// - from packed operands: cp.async 307-411 TFLOP/s; bulk copies from a producer warp with mbarriers, 2
//   warpgroups, 128 x 128 tiles, 16-deep stages, 5 stages, one stage's products in flight: 482 TFLOP/s (0.63
//   of cuBLAS; 2 or 3 stages in flight 439 / 346, 128 x 256 or 256 x 128 tiles 178-331). NVIDIA's OpenCL caps
//   local memory at 48 KiB per work-group, which bounds stages x tile.
// Packing A and B is one more pass over them (about 30 us at 4096^3 against the product's 285 us).
//   g++ -O1 -o /tmp/wgmma_probe scripts/wgmma_probe.cpp -lOpenCL && /tmp/wgmma_probe   [--source: the probe kernels]
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    std::fprintf(stderr, "%s failed: %d\n", what, err);
    std::exit(1);
  }
}

static std::string build_log(cl_program p, cl_device_id d) {
  size_t n = 0;
  clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(p, d, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
  return log;
}

// A wgmma matrix descriptor without swizzling: start address, the two core-matrix byte strides (leading / stride
// dimension, in 16-byte units) and layout type 0 in bits 62-63 (every kernel below).
static const char* kDescText = R"CL(inline ulong desc(__local const void* p, uint lbo, uint sbo) {
  const uint addr = (uint)(ulong)p;
  return (ulong)((addr >> 4) & 0x3FFF) | ((ulong)((lbo >> 4) & 0x3FFF) << 16) | ((ulong)((sbo >> 4) & 0x3FFF) << 32);
}
)CL";

// The asm operand lists of n accumulators d[0 .. n): "%0, %1, ..." and "\"+f\"(d[0]), ...".
static void acc_operands(int n, std::string* regs, std::string* ops) {
  for (int i = 0; i < n; ++i) {
    *regs += (i ? ", %" : "%") + std::to_string(i);
    *ops += (i ? ", \"+f\"(d[" : "\"+f\"(d[") + std::to_string(i) + "])";
  }
}

// The probe kernels: one m64n8k16 product (`one`) and the throughput loop (`tput`).
static std::string source() {
  std::string s = R"CL(
)CL" + std::string(kDescText) + R"CL(#define KEEP(x) asm volatile("" : "+f"(x) :: "memory")

// D (64 x 8) = A (64 x 16, row-major) B^T (B: 8 x 16, row-major); both staged as 8 x 8 core matrices of 128
// contiguous bytes: element (r, k) at (r / 8) rs + (k / 8) ks + (r % 8) 16 + (k % 8) 2 bytes.
__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void one(__global const ushort* A, __global const ushort* B,
    __global float* D, uint a_ks, uint a_rs, uint a_lbo, uint a_sbo, uint b_ks, uint b_rs, uint b_lbo, uint b_sbo) {
  __local ushort As[64 * 16 * 2] __attribute__((aligned(256)));
  __local ushort Bs[8 * 16 * 2] __attribute__((aligned(256)));
  const int t = get_local_id(0);
  for (int i = t; i < 64 * 16; i += 128) {
    const int r = i / 16, k = i % 16;
    As[((r / 8) * a_rs + (k / 8) * a_ks + (r % 8) * 16 + (k % 8) * 2) / 2] = A[i];
  }
  for (int i = t; i < 8 * 16; i += 128) {
    const int r = i / 16, k = i % 16;
    Bs[((r / 8) * b_rs + (k / 8) * b_ks + (r % 8) * 16 + (k % 8) * 2) / 2] = B[i];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const ulong da = desc(As, a_lbo, a_sbo), db = desc(Bs, b_lbo, b_sbo);
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  asm volatile("// @SM90A@ wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "// @SM90A@ wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "l"(da), "l"(db), "r"(0) : "memory");
  asm volatile("// @SM90A@ wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 0;" : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) :: "memory");
  const int w = t / 32, lane = t % 32, gid = lane / 4, tig = lane % 4, r0 = 16 * w + gid;
  D[r0 * 8 + 2 * tig] = d0, D[r0 * 8 + 2 * tig + 1] = d1;
  D[(r0 + 8) * 8 + 2 * tig] = d2, D[(r0 + 8) * 8 + 2 * tig + 1] = d3;
}
)CL";
  // Throughput: each warpgroup chains `iters` m64n128k16 products on one accumulator (64 floats a thread),
  // operands from local memory (contents irrelevant), a commit every 4 products.
  std::string regs, ops;
  acc_operands(64, &regs, &ops);
  s += R"CL(
__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void tput(__global float* out, int iters, int ptx_loop) {
  __local ushort As[2 * 64 * 16] __attribute__((aligned(256)));
  __local ushort Bs[128 * 16] __attribute__((aligned(256)));
  const int t = get_local_id(0), wg = t / 128;
  for (int i = t; i < 2 * 64 * 16; i += 256) As[i] = 0x3c00;
  for (int i = t; i < 128 * 16; i += 256) Bs[i] = 0x3c00;
  barrier(CLK_LOCAL_MEM_FENCE);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  const ulong da = desc(As + wg * 64 * 16, 128, 256), db = desc(Bs, 128, 256);
  float d[64];
  _Pragma("unroll") for (int i = 0; i < 64; ++i) d[i] = 0;
  asm volatile("// @SM90A@ wgmma.fence.sync.aligned;" : )CL" + ops + R"CL( :: "memory");
  if (ptx_loop) {  // the loop inside one asm statement: no compiler moves between the products
    asm volatile("{\n.reg .pred p, q;\n.reg .b32 n;\nmov.b32 n, %66;\nsetp.ne.b32 p, 1, 0;\nLOOP_%=:\n"
                 "// @SM90A@ wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {)CL" + regs + R"CL(}, %64, %65, p, 1, 1, 0, 0;\n"
                 "// @SM90A@ wgmma.commit_group.sync.aligned;\n"
                 "sub.s32 n, n, 1;\nsetp.ne.s32 q, n, 0;\n@q bra LOOP_%=;\n}\n"
                 : )CL" + ops + R"CL( : "l"(da), "l"(db), "r"(iters) : "memory");
  } else {  // a C loop of 4 products and a commit
    for (int it = 0; it < iters; it += 4) {
      _Pragma("unroll") for (int u = 0; u < 4; ++u)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "// @SM90A@ wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {)CL" + regs + R"CL(}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : )CL" + ops + R"CL( : "l"(da), "l"(db), "r"(1) : "memory");
      asm volatile("// @SM90A@ wgmma.commit_group.sync.aligned;" ::: "memory");
    }
  }
  asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 0;" : )CL" + ops + R"CL( :: "memory");
  float acc = 0;
  _Pragma("unroll") for (int i = 0; i < 64; ++i) acc += d[i];
  out[get_global_id(0)] = acc;
}
)CL";
  return s;
}


// A bf16 GEMM, C (M x N, fp32) = A (M x K) B^T (B: N x K), both K-major as nn.Linear's input and weight: tiles of
// BM = 64 WGS rows (WGS warpgroups, 64 rows each, m64nBNk16 products) by BN columns, BK-deep stages copied by
// cp.async into the no-swizzle core-matrix layout (8 x 8 cores of 128 bytes, K-adjacent cores 128 bytes apart =
// LBO, 8-row groups BK / 8 cores apart = SBO), STAGES buffers. wait1: each iteration leaves its products in flight
// (wgmma.wait_group 1) and refills the buffer read two iterations back; else it waits for them (wait_group 0) and
// refills the one read last; wait1 = k > 1 leaves k iterations' products in flight. Sizes: multiples of the tiles.
struct GemmCfg {
  int wgs, bn, bk, stages, wait1, ws;  // ws: the producer-warp kernel (gemm_ws_source; wait1 unused)
  int noload = 0;                      // the synchronous kernel without its main-loop copies (a wrong result): its bound
  int packed = 0;  // A and B packed by the host so that each stage's tile is contiguous in its smem layout
};
// A GEMM stage's products in the buffer `buf` (both GEMM kernels): the fence, BK / 16 m64nBNk16 products of the
// warpgroup's rows, the commit.
static std::string wgmma_stage(const GemmCfg& g, const std::string& regs, const std::string& ops) {
  const std::string A = std::to_string(g.bn / 2), B = std::to_string(g.bn / 2 + 1);
  return R"CL(    asm volatile("// @SM90A@ wgmma.fence.sync.aligned;" : )CL" + ops + R"CL( :: "memory");
    _Pragma("unroll") for (int kk = 0; kk < BK / 16; ++kk) {
      const ulong da = desc(buf + wg * 8 * SBO + kk * 256, 128, SBO), db = desc(buf + TILE_A + kk * 256, 128, SBO);
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                   "// @SM90A@ wgmma.mma_async.sync.aligned.m64n)CL" + std::to_string(g.bn) + R"CL(k16.f32.bf16.bf16 {)CL" + regs +
       "}, %" + A + ", %" + B + R"CL(, p, 1, 1, 0, 0;\n}\n"
                   : )CL" + ops + R"CL( : "l"(da), "l"(db) : "memory");
    }
    asm volatile("// @SM90A@ wgmma.commit_group.sync.aligned;" ::: "memory");
)CL";
}

static std::string gemm_source(const GemmCfg& g) {
  const int nacc = g.bn / 2;  // accumulators per thread: 64 x BN over 128 threads
  std::string regs, ops;
  acc_operands(nacc, &regs, &ops);
  std::string s = "#define WGS " + std::to_string(g.wgs) + "\n#define BN " + std::to_string(g.bn) + "\n#define BK " +
                  std::to_string(g.bk) + "\n#define STAGES " + std::to_string(g.stages) + "\n#define WAIT1 " +
                  std::to_string(g.wait1) + "\n#define NACC " + std::to_string(nacc) + "\n#define NOLOAD " +
                  std::to_string(g.noload) + "\n#define PACKED " + std::to_string(g.packed) + "\n";
  s += R"CL(
)CL" + std::string(kDescText) + R"CL(#define BM (64 * WGS)
#define NTH (128 * WGS)
#define SBO (BK / 8 * 128)
#define TILE_A (BM * BK * 2)
#define TILE_B (BN * BK * 2)
#define STAGE_BYTES (TILE_A + TILE_B)
inline void cp16(__local uchar* dst, __global const ushort* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"((uint)(ulong)dst), "l"((ulong)src) : "memory");
}
inline void load_stage(__local uchar* buf, __global const ushort* A, __global const ushort* B, int K, int m0, int n0,
                       int k0, int t) {
#if PACKED
  __global const ushort* a = A + ((ulong)(m0 / BM) * (K / BK) + k0 / BK) * (TILE_A / 2);
  __global const ushort* b = B + ((ulong)(n0 / BN) * (K / BK) + k0 / BK) * (TILE_B / 2);
  for (int q = t; q < TILE_A / 16; q += NTH) cp16(buf + q * 16, a + q * 8);
  for (int q = t; q < TILE_B / 16; q += NTH) cp16(buf + TILE_A + q * 16, b + q * 8);
  return;
#endif
  for (int q = t; q < BM * BK / 8; q += NTH) {
    const int r = q / (BK / 8), c = q % (BK / 8);
    cp16(buf + (r / 8) * SBO + c * 128 + (r % 8) * 16, A + (ulong)(m0 + r) * K + k0 + c * 8);
  }
  for (int q = t; q < BN * BK / 8; q += NTH) {
    const int r = q / (BK / 8), c = q % (BK / 8);
    cp16(buf + TILE_A + (r / 8) * SBO + c * 128 + (r % 8) * 16, B + (ulong)(n0 + r) * K + k0 + c * 8);
  }
}
#define AHEAD (STAGES - 1 - WAIT1)
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void gemm(__global const ushort* A, __global const ushort* B,
                                                                    __global float* C, int M, int N, int K) {
  __local uchar smem[STAGES * STAGE_BYTES] __attribute__((aligned(1024)));
  const int t = get_local_id(0), wg = t / 128;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN, nk = K / BK;
  float d[NACC];
  _Pragma("unroll") for (int i = 0; i < NACC; ++i) d[i] = 0;
  _Pragma("unroll") for (int s = 0; s < AHEAD; ++s) {
    if (s < nk) load_stage(smem + s * STAGE_BYTES, A, B, K, m0, n0, s * BK, t);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (int i = 0; i < nk; ++i) {
    asm volatile("cp.async.wait_group %0;" :: "n"(AHEAD - 1) : "memory");
    barrier(CLK_LOCAL_MEM_FENCE);
    // refill the buffer of iteration i - 1 - WAIT1 (every warpgroup finished its products on it before this barrier)
    const int nxt = i + AHEAD;
    if (nxt < nk && !NOLOAD) load_stage(smem + (nxt % STAGES) * STAGE_BYTES, A, B, K, m0, n0, nxt * BK, t);
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __local uchar* buf = smem + (i % STAGES) * STAGE_BYTES;
)CL" + wgmma_stage(g, regs, ops) + R"CL(    asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned )CL" + std::to_string(g.wait1) + R"CL(;" : )CL" + ops + R"CL( :: "memory");
  }
  asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 0;" : )CL" + ops + R"CL( :: "memory");
  const int w = (t % 128) / 32, lane = t % 32, gid = lane / 4, tig = lane % 4;
  _Pragma("unroll") for (int j = 0; j < BN / 8; ++j)
    _Pragma("unroll") for (int e = 0; e < 4; ++e) {
      const int r = m0 + wg * 64 + w * 16 + gid + 8 * (e >> 1), c = n0 + 8 * j + 2 * tig + (e & 1);
      C[(ulong)r * N + c] = d[4 * j + e];
    }
}
)CL";
  return s;
}

// The same GEMM with a producer warp: warps 0 .. 4 WGS - 1 multiply (WGS warpgroups), warp 4 WGS copies. Stage s
// has two mbarriers: full[s] (32 arrivals: each producer lane's cp.async of the stage completes,
// cp.async.mbarrier.arrive.noinc) and empty[s] (4 WGS arrivals: lane 0 of each consumer warp once its products
// on the stage are done), phases counted per reuse; no work-group barrier in the main loop.
static std::string gemm_ws_source(const GemmCfg& g) {
  const int nacc = g.bn / 2;
  std::string regs, ops;
  acc_operands(nacc, &regs, &ops);
  std::string s = "#define WGS " + std::to_string(g.wgs) + "\n#define BN " + std::to_string(g.bn) + "\n#define BK " +
                  std::to_string(g.bk) + "\n#define STAGES " + std::to_string(g.stages) + "\n#define NACC " +
                  std::to_string(nacc) + "\n#define PACKED " + std::to_string(g.packed) + "\n#define INFL " +
                  std::to_string(std::max(g.wait1, 1)) + "\n";
  s += R"CL(
)CL" + std::string(kDescText) + R"CL(#define BM (64 * WGS)
#define NTH (128 * WGS + 32)
#define SBO (BK / 8 * 128)
#define TILE_A (BM * BK * 2)
#define TILE_B (BN * BK * 2)
#define STAGE_BYTES (TILE_A + TILE_B)
inline uint saddr(__local const void* p) { return (uint)(ulong)p; }
inline void cp16(__local uchar* dst, __global const ushort* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(saddr(dst)), "l"((ulong)src) : "memory");
}
inline void mbar_wait(__local ulong* bar, uint parity) {
  asm volatile("{\n.reg .pred P1;\nWAIT_%=:\nmbarrier.try_wait.parity.shared::cta.b64 P1, [%0], %1;\n@P1 bra DONE_%=;\n"
               "bra WAIT_%=;\nDONE_%=:\n}\n" :: "r"(saddr(bar)), "r"(parity) : "memory");
}
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void gemm(__global const ushort* A, __global const ushort* B,
                                                                    __global float* C, int M, int N, int K) {
  __local uchar smem[STAGES * STAGE_BYTES] __attribute__((aligned(1024)));
  __local ulong full[STAGES], empty[STAGES];
  const int t = get_local_id(0), warp = t / 32, lane = t % 32;
  const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN, nk = K / BK;
  if (t == 0) {
    _Pragma("unroll") for (int s = 0; s < STAGES; ++s) {
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(saddr(full + s)), "r"(PACKED ? 1 : 32) : "memory");
      asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(saddr(empty + s)), "r"(4 * WGS) : "memory");
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
#if PACKED
  // packed operands: each stage's A and B tiles are contiguous, one bulk copy each (lane 0 of the producer warp;
  // the stage's mbarrier expects their bytes)
  if (warp == 4 * WGS) {
    if (lane == 0)
      for (int i = 0; i < nk; ++i) {
        const int s = i % STAGES;
        if (i >= STAGES) mbar_wait(empty + s, ((i / STAGES) - 1) & 1);
        __local uchar* buf = smem + s * STAGE_BYTES;
        __global const ushort* a = A + ((ulong)(m0 / BM) * nk + i) * (TILE_A / 2);
        __global const ushort* b = B + ((ulong)(n0 / BN) * nk + i) * (TILE_B / 2);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(saddr(full + s)), "r"(STAGE_BYTES)
                     : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(saddr(buf)), "l"((ulong)a), "r"(TILE_A), "r"(saddr(full + s)) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(saddr(buf + TILE_A)), "l"((ulong)b), "r"(TILE_B), "r"(saddr(full + s)) : "memory");
      }
    return;
  }
#endif
  if (warp == 4 * WGS) {  // the producer warp
    for (int i = 0; i < nk; ++i) {
      const int s = i % STAGES;
      if (i >= STAGES) mbar_wait(empty + s, ((i / STAGES) - 1) & 1);
      __local uchar* buf = smem + s * STAGE_BYTES;
      const int k0 = i * BK;
      for (int q = lane; q < BM * BK / 8; q += 32) {
        const int r = q / (BK / 8), c = q % (BK / 8);
        cp16(buf + (r / 8) * SBO + c * 128 + (r % 8) * 16, A + (ulong)(m0 + r) * K + k0 + c * 8);
      }
      for (int q = lane; q < BN * BK / 8; q += 32) {
        const int r = q / (BK / 8), c = q % (BK / 8);
        cp16(buf + TILE_A + (r / 8) * SBO + c * 128 + (r % 8) * 16, B + (ulong)(n0 + r) * K + k0 + c * 8);
      }
      asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(saddr(full + s)) : "memory");
    }
    return;
  }
  const int wg = warp / 4;
  float d[NACC];
  _Pragma("unroll") for (int i = 0; i < NACC; ++i) d[i] = 0;
  for (int i = 0; i < nk; ++i) {
    const int s = i % STAGES;
    mbar_wait(full + s, (i / STAGES) & 1);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __local uchar* buf = smem + s * STAGE_BYTES;
)CL" + wgmma_stage(g, regs, ops) + R"CL(    asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned )CL" + std::to_string(std::max(g.wait1, 1)) + R"CL(;" : )CL" + ops + R"CL( :: "memory");
    if (i >= INFL && lane == 0)  // the products of INFL stages back are done: that buffer may be refilled
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(saddr(empty + (i - INFL) % STAGES)) : "memory");
  }
  asm volatile("// @SM90A@ wgmma.wait_group.sync.aligned 0;" : )CL" + ops + R"CL( :: "memory");
  const int w = warp % 4, gid = lane / 4, tig = lane % 4;
  _Pragma("unroll") for (int j = 0; j < BN / 8; ++j)
    _Pragma("unroll") for (int e = 0; e < 4; ++e) {
      const int r = m0 + wg * 64 + w * 16 + gid + 8 * (e >> 1), c = n0 + 8 * j + 2 * tig + (e & 1);
      C[(ulong)r * N + c] = d[4 * j + e];
    }
}
)CL";
  return s;
}

// Builds `src` (options `opts`) with its sm_90a instructions commented out, uncomments them in the PTX, retargets
// the module to sm_90a (PTX ISA 8.0 at least) and builds that as a program binary; nullptr on failure.
static cl_program build_sm90a(cl_context ctx, cl_device_id dev, const std::string& src, const std::string& opts,
                              bool verbose, bool ptxas_notes = false) {
  cl_int err;
  const char* text = src.c_str();
  cl_program p0 = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
  check(err, "clCreateProgramWithSource");
  if (clBuildProgram(p0, 1, &dev, opts.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    std::printf("build (sm_90a commented) failed:\n%s\n", build_log(p0, dev).c_str());
    return nullptr;
  }
  size_t size = 0;
  check(clGetProgramInfo(p0, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr), "binary size");
  std::string ptx(size, '\0');
  unsigned char* bp = reinterpret_cast<unsigned char*>(&ptx[0]);
  check(clGetProgramInfo(p0, CL_PROGRAM_BINARIES, sizeof(bp), &bp, nullptr), "binary");
  clReleaseProgram(p0);
  while (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
  if (verbose)
    for (const char* key : {".version", ".target", ".address_size"}) {
      size_t at = ptx.find(key);
      if (at != std::string::npos) std::printf("PTX: %s\n", ptx.substr(at, ptx.find('\n', at) - at).c_str());
    }
  int n = 0;
  for (size_t at; (at = ptx.find("// @SM90A@ ")) != std::string::npos; ++n) ptx.erase(at, std::strlen("// @SM90A@ "));
  size_t at = ptx.find(".target sm_90");
  if (at == std::string::npos) {
    std::printf("no '.target sm_90' in the PTX\n");
    return nullptr;
  }
  const size_t end = at + std::strlen(".target sm_90");
  if (ptx.compare(end, 1, "a") != 0) ptx.insert(end, "a");
  at = ptx.find(".version ");
  const size_t eol = ptx.find('\n', at);
  if (std::atof(ptx.substr(at + 9, eol - at - 9).c_str()) < 8.0) ptx.replace(at, eol - at, ".version 8.0");
  if (verbose) {
    std::printf("uncommented %d sm_90a instructions; around the first wgmma:\n", n);
    const size_t w = ptx.find("wgmma.mma_async");
    const size_t from = ptx.rfind('\n', w > 300 ? w - 300 : 0);
    std::printf("%s\n---\n", ptx.substr(from == std::string::npos ? 0 : from, 500).c_str());
  }
  const unsigned char* pp = reinterpret_cast<const unsigned char*>(ptx.c_str());
  size_t plen = ptx.size() + 1;
  cl_int status = CL_SUCCESS;
  cl_program p1 = clCreateProgramWithBinary(ctx, 1, &dev, &plen, &pp, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    std::printf("clCreateProgramWithBinary: err %d status %d\n", err, status);
    return nullptr;
  }
  const cl_int b = clBuildProgram(p1, 1, &dev, "-cl-nv-verbose", nullptr, nullptr);
  const std::string log = build_log(p1, dev);
  if (verbose || b != CL_SUCCESS) std::printf("build of the edited PTX: %d\n%s\n", b, log.c_str());
  if (ptxas_notes)  // registers and the wgmma notes (C75xx: waits the compiler injected, serialized products)
    for (size_t a = 0, e; a < log.size(); a = e + 1) {
      e = log.find('\n', a);
      if (e == std::string::npos) e = log.size();
      const std::string line = log.substr(a, e - a);
      if (line.find("(C75") != std::string::npos || line.find("Used ") != std::string::npos)
        std::printf("  %s\n", line.c_str());
    }
  if (b != CL_SUCCESS) {
    clReleaseProgram(p1);
    return nullptr;
  }
  return p1;
}

static unsigned short to_bf16(float x) {
  unsigned u;
  std::memcpy(&u, &x, 4);
  return (unsigned short)(u >> 16);
}

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--source")) {  // the OpenCL C text, e.g. for clang -target nvptx64-nvidia-nvcl
    std::printf("%s", source().c_str());
    return 0;
  }
  cl_platform_id plat;
  cl_device_id dev;
  check(clGetPlatformIDs(1, &plat, nullptr), "clGetPlatformIDs");
  check(clGetDeviceIDs(plat, CL_DEVICE_TYPE_GPU, 1, &dev, nullptr), "clGetDeviceIDs");
  char name[256] = {0}, drv[128] = {0};
  clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name), name, nullptr);
  clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof(drv), drv, nullptr);
  cl_uint cus = 0;
  clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cus), &cus, nullptr);
  std::printf("device %s, driver %s, %u compute units\n", name, drv, cus);
  cl_int err;
  cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
  check(err, "clCreateContext");
  cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
  check(err, "clCreateCommandQueue");

  cl_program p1 = build_sm90a(ctx, dev, source(), "", true);
  if (!p1) return 1;

  // 4. correctness: small integers, exact in bf16 and in the sums
  std::vector<float> a(64 * 16), bm(8 * 16), ref(64 * 8, 0.f);
  std::vector<unsigned short> ah(a.size()), bh(bm.size());
  for (size_t i = 0; i < a.size(); ++i) a[i] = float((int)((i * 7 + 3) % 5) - 2), ah[i] = to_bf16(a[i]);
  for (size_t i = 0; i < bm.size(); ++i) bm[i] = float((int)((i * 3 + 1) % 7) - 3), bh[i] = to_bf16(bm[i]);
  for (int r = 0; r < 64; ++r)
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 16; ++k) ref[r * 8 + c] += a[r * 16 + k] * bm[c * 16 + k];
  cl_mem A = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, ah.size() * 2, ah.data(), &err);
  cl_mem B = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, bh.size() * 2, bh.data(), &err);
  cl_mem D = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * 8 * 4, nullptr, &err);
  cl_kernel k1 = clCreateKernel(p1, "one", &err);
  check(err, "clCreateKernel(one)");
  // staging strides (K-direction core stride ks, row-direction rs) and the descriptor's two fields, both ways
  struct Way { cl_uint a_ks, a_rs, a_lbo, a_sbo, b_ks, b_rs, b_lbo, b_sbo; const char* what; };
  const Way ways[] = {
      {128, 256, 128, 256, 128, 256, 128, 256, "LBO = K-direction core stride, SBO = row-direction"},
      {128, 256, 256, 128, 128, 256, 256, 128, "LBO = row-direction core stride, SBO = K-direction"},
      {1024, 128, 1024, 128, 128, 256, 128, 256, "A: K cores 1024 apart, rows 128 (LBO K, SBO rows)"},
  };
  for (const Way& w : ways) {
    cl_uint args[8] = {w.a_ks, w.a_rs, w.a_lbo, w.a_sbo, w.b_ks, w.b_rs, w.b_lbo, w.b_sbo};
    clSetKernelArg(k1, 0, sizeof(cl_mem), &A);
    clSetKernelArg(k1, 1, sizeof(cl_mem), &B);
    clSetKernelArg(k1, 2, sizeof(cl_mem), &D);
    for (int i = 0; i < 8; ++i) clSetKernelArg(k1, 3 + i, sizeof(cl_uint), &args[i]);
    size_t g = 128, l = 128;
    check(clEnqueueNDRangeKernel(q, k1, 1, nullptr, &g, &l, 0, nullptr, nullptr), "enqueue one");
    std::vector<float> got(64 * 8);
    check(clEnqueueReadBuffer(q, D, CL_TRUE, 0, got.size() * 4, got.data(), 0, nullptr, nullptr), "read D");
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) worst = std::fmax(worst, std::fabs(got[i] - ref[i]));
    std::printf("m64n8k16 %s: max |error| %g (D[0..3] %g %g %g %g, ref %g %g %g %g)\n", w.what, worst, got[0], got[1],
                got[2], got[3], ref[0], ref[1], ref[2], ref[3]);
  }

  // 5. throughput
  cl_kernel k2 = clCreateKernel(p1, "tput", &err);
  check(err, "clCreateKernel(tput)");
  const size_t groups = 8 * cus, local = 256, global = groups * local;
  cl_mem O = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, global * 4, nullptr, &err);
  for (int ptx_loop : {0, 1})
  for (int iters : {256, 4096}) {
    clSetKernelArg(k2, 0, sizeof(cl_mem), &O);
    clSetKernelArg(k2, 1, sizeof(int), &iters);
    clSetKernelArg(k2, 2, sizeof(int), &ptx_loop);
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      cl_event e;
      check(clEnqueueNDRangeKernel(q, k2, 1, nullptr, &global, &local, 0, nullptr, &e), "enqueue tput");
      clWaitForEvents(1, &e);
      cl_ulong t0, t1;
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
      best = std::fmin(best, (t1 - t0) * 1e-9);
      clReleaseEvent(e);
    }
    const double flop = 2.0 * 64 * 128 * 16 * iters * (groups * 2);
    std::printf("wgmma m64n128k16 bf16, %zu groups x 2 warpgroups, %d chained (%s loop): %.3f ms, %.1f TFLOP/s\n",
                groups, iters, ptx_loop ? "PTX" : "C", best * 1e3, flop / best * 1e-12);
  }

  // 6. the bf16 GEMM (C = A B^T, K-major operands): checked on sampled entries, timed per variant
  const int GM = 4096, GN = 4096, GK = 4096;
  std::vector<unsigned short> ga((size_t)GM * GK), gb((size_t)GN * GK);
  std::vector<float> fa(ga.size()), fb(gb.size());
  unsigned seed = 1;
  auto rnd = [&seed]() { seed = seed * 1664525u + 1013904223u; return float((int)(seed >> 24) % 9 - 4) / 4.0f; };
  for (size_t i = 0; i < ga.size(); ++i) fa[i] = rnd(), ga[i] = to_bf16(fa[i]);
  for (size_t i = 0; i < gb.size(); ++i) fb[i] = rnd(), gb[i] = to_bf16(fb[i]);
  cl_mem GA = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, ga.size() * 2, ga.data(), &err);
  cl_mem GB = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, gb.size() * 2, gb.data(), &err);
  cl_mem GC = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)GM * GN * 4, nullptr, &err);
  const GemmCfg cfgs[] = {{2, 128, 16, 5, 1, 1, 0, 1}, {2, 128, 16, 5, 2, 1, 0, 1}, {2, 128, 16, 5, 3, 1, 0, 1},
                           {4, 128, 16, 3, 1, 1, 0, 1}, {4, 64, 16, 4, 1, 1, 0, 1}, {1, 128, 16, 7, 2, 1, 0, 1},
                           {2, 256, 16, 3, 2, 1, 0, 1}, {4, 128, 16, 3, 2, 1, 0, 1}};
  // the packed operand of one config: each (row block, k stage) tile contiguous, in the kernel's smem layout
  auto pack = [](const std::vector<unsigned short>& x, int rows, int K, int br, int bk) {
    std::vector<unsigned short> p(x.size());
    const int nk = K / bk, sbo = bk / 8 * 128;
    for (int rb = 0; rb < rows / br; ++rb)
      for (int ks = 0; ks < nk; ++ks)
        for (int r = 0; r < br; ++r)
          for (int k = 0; k < bk; ++k) {
            const size_t off = (size_t)(r / 8) * sbo + (k / 8) * 128 + (r % 8) * 16 + (k % 8) * 2;
            p[((size_t)rb * nk + ks) * br * bk + off / 2] = x[(size_t)(rb * br + r) * K + ks * bk + k];
          }
    return p;
  };
  for (const GemmCfg& g : cfgs) {
    if ((64 * g.wgs + g.bn) * g.bk * 2 * g.stages + (g.ws ? 16 * g.stages : 0) > 48 * 1024) continue;
    if (GN % g.bn) continue;
    char opts[96];
    std::snprintf(opts, sizeof(opts), "%s%s%d warpgroups, BN %d, BK %d, %d stages, wait %d",
                  g.ws ? (g.packed ? "bulk copies, " : "producer warp, ") : "",
                  g.noload ? "NO MAIN-LOOP COPIES, " : g.packed ? "packed operands, " : "", g.wgs, g.bn, g.bk, g.stages, g.wait1);
    cl_program gp = build_sm90a(ctx, dev, g.ws ? gemm_ws_source(g) : gemm_source(g), "", false, true);
    if (!gp) continue;
    cl_kernel gk = clCreateKernel(gp, "gemm", &err);
    check(err, "clCreateKernel(gemm)");
    cl_mem PA = nullptr, PB = nullptr;
    if (g.packed) {
      std::vector<unsigned short> pa = pack(ga, GM, GK, 64 * g.wgs, g.bk), pb = pack(gb, GN, GK, g.bn, g.bk);
      PA = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, pa.size() * 2, pa.data(), &err);
      PB = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, pb.size() * 2, pb.data(), &err);
    }
    clSetKernelArg(gk, 0, sizeof(cl_mem), g.packed ? &PA : &GA);
    clSetKernelArg(gk, 1, sizeof(cl_mem), g.packed ? &PB : &GB);
    clSetKernelArg(gk, 2, sizeof(cl_mem), &GC);
    clSetKernelArg(gk, 3, sizeof(int), &GM);
    clSetKernelArg(gk, 4, sizeof(int), &GN);
    clSetKernelArg(gk, 5, sizeof(int), &GK);
    const size_t nth = 128 * (size_t)g.wgs + (g.ws ? 32 : 0);
    size_t gl[2] = {nth * (GN / g.bn), (size_t)(GM / (64 * g.wgs))}, ll[2] = {nth, 1};
    double best = 1e30;
    for (int rep = 0; rep < 8; ++rep) {
      cl_event e;
      check(clEnqueueNDRangeKernel(q, gk, 2, nullptr, gl, ll, 0, nullptr, &e), "enqueue gemm");
      clWaitForEvents(1, &e);
      cl_ulong t0, t1;
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr);
      clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr);
      best = std::fmin(best, (t1 - t0) * 1e-9);
      clReleaseEvent(e);
    }
    std::vector<float> gc((size_t)GM * GN);
    check(clEnqueueReadBuffer(q, GC, CL_TRUE, 0, gc.size() * 4, gc.data(), 0, nullptr, nullptr), "read C");
    double worst = 0;
    for (int sidx = 0; sidx < 2000; ++sidx) {
      const int r = (sidx * 2654435761u) % GM, c = (sidx * 40503u + 7) % GN;
      double ref = 0;
      for (int k = 0; k < GK; ++k) ref += (double)fa[(size_t)r * GK + k] * fb[(size_t)c * GK + k];
      worst = std::fmax(worst, std::fabs(ref - gc[(size_t)r * GN + c]));
    }
    std::printf("gemm bf16 %dx%dx%d (%s): %.3f ms, %.1f TFLOP/s, max |error| on 2000 entries %g\n", GM, GN, GK, opts,
                best * 1e3, 2.0 * GM * GN * GK / best * 1e-12, worst);
    clReleaseKernel(gk);
    clReleaseProgram(gp);
    if (PA) clReleaseMemObject(PA), clReleaseMemObject(PB);
  }
  return 0;
}
