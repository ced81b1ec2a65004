// Probes whether the driver's OpenCL compiler takes inline PTX tensor-core instructions and runs
// them right (matrix_engine.cpp builds it only for NVIDIA devices of compute capability >= 8.0, one
// kernel per define). One warp; A and B all ones, so every element of D is the reduction length
// K: 8 for TF32 m16n8k8, 16 for the 16-bit m16n8k16 shapes. Each lane writes its 4 accumulators.
#if defined(MMA_TF32)
#define MMA_SHAPE "m16n8k8.row.col.f32.tf32.tf32.f32"
#elif defined(MMA_BF16)
#define MMA_SHAPE "m16n8k16.row.col.f32.bf16.bf16.f32"
#elif defined(MMA_FP16)
#define MMA_SHAPE "m16n8k16.row.col.f32.f16.f16.f32"
#endif
// Every probed shape takes 4 A registers and 2 B registers and accumulates 4 floats per lane.
#define MMA_ASM(d0, d1, d2, d3, a, b)                                                                  \
  asm volatile("mma.sync.aligned." MMA_SHAPE " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};" \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                                \
               : "r"(a), "r"(a), "r"(a), "r"(a), "r"(b), "r"(b))

__kernel __attribute__((reqd_work_group_size(32, 1, 1))) void mma_probe(__global float* out, uint one) {
  // `one` comes from the host (matrix_engine.cpp), so the compiler cannot fold the instruction away.
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  const uint a = one, b = one;
  MMA_ASM(d0, d1, d2, d3, a, b);
  const int lane = get_local_id(0);
  out[lane * 4 + 0] = d0;
  out[lane * 4 + 1] = d1;
  out[lane * 4 + 2] = d2;
  out[lane * 4 + 3] = d3;
}
