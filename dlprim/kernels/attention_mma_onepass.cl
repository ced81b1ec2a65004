// The one-pass attention backward (attention_mma_bwd.cl's dk/dv kernel built with ATTN_ONEPASS, kernel
// attn_bwd_onepass_mma): the dk/dv pass also produces dq, so S and dP are computed once per (key block, query
// tile) pair (5 tile products, flash-attention 2's count) instead of once in each of the two passes (7).
// The host (attention_mma.cpp's Pass::OnePass, attention.cpp's launch) puts this file before attention_mma_bwd.cl
// in the program text; the macros below are used inside that kernel. Heads up to 64 (no DSPLIT).
//
// Per query tile (BKT queries) the work-group holds dS^T (its NQ keys x the tile's queries) in C fragments.
// It writes dS to local memory (dsl[query][key]), and the tile's dq contribution dS K (BKT x D, K's block
// staged once in local memory for the whole kernel) is one product over the NQ keys, split over the warps:
// warp w takes the 16-row block w / WPR of the tile and n-tiles (w % WPR) NPW ... of the head dim.
//
// The contributions of the key blocks to one query tile are added in a fixed order, so dq is bit-for-bit
// reproducible: descending key block (the last block first). A counter per (batch * query head, query tile)
// holds the number of blocks that have passed the tile; the block whose turn it is (turn = jmax - kb, jmax the
// tile's highest contributing block) adds its contribution into the float32 accumulator ACC (turn 0 stores,
// so ACC needs no zeroing) or, as the last one (block 0), writes dq = scale * (ACC + its part) in the input
// dtype; the others then advance the counter. Tiles a block skips (mask flags: all masked) still take their turn with a
// zero contribution, so the turns of a tile are always jmax + 1.
//   Why descending: causal attention's block kb reaches the tiles it shares with block kb + 1 after that block
// did (it starts at its diagonal, kb + 1 one tile row later), so a co-resident block never waits for a whole
// tile; in ascending order block kb would wait kb tile-rows at its first tile. Non-causal rows pipeline either
// way (block kb trails kb + 1 by one accumulate).
//   No deadlock whatever the hardware's scheduling: a work-group takes its (head, key block) from a ticket
// (atomic_inc on CNT[0]) in head-major, descending-block order, so every block it waits for holds an earlier
// ticket: it has started, and (by induction on the ticket) it finishes.
//   Memory: the writer's stores, a work-group barrier, then one work-item's release store of the counter
// (gpu scope: cumulative over the group's stores that the barrier ordered before it); the reader's work-item 0 acquires the counter, a barrier, then the accumulator is read past the
// SM's L1 (not coherent across SMs on NVIDIA): relaxed gpu-scope loads. The emulation (PoCL, Oclgrind) uses
// OpenCL atomics for the counter and the accumulator instead (Oclgrind's race checker then accepts them).
//
// ONEPASS_ATOMIC (PYTORCH_OCL_ATTN_BWD_ONEPASS=atomic): no turns. Each key block adds its part into ACC (zero at
// launch) with float atomics in whatever order blocks come, then arrives at the tile's counter (acq_rel); the
// block that arrives last (jmax + 1 arrivals, skipped tiles arrive without adding) reads ACC and writes dq. No
// block waits for another, but float addition's order varies from run to run: dq is not bit-reproducible
// (flash-attention 2's backward does the same; torch.use_deterministic_algorithms keeps the ordered kernel).
//
// CNT: 1 + B * Hq * ceil(L / BKT) uints, zero at launch (the host's fill); ACC: B * Hq * L * D floats, any
// (emulated: initialized, as Oclgrind's uninitialized-value checker counts an atomic exchange on fresh memory as
// a write of an uninitialized value; the host fills NaN, so a read before a tile's first store would show).

#if DSPLIT > 1
#error "the one-pass backward takes heads up to 64 (no head-dim split)"
#endif
#define OP_QLD (DN + 8)                 // qb's rows (a tile's dq gathered in floats over Q's and dO's tiles)
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_QO_ELEMS OP_MAX(BKT * (KLD + VKLD), BKT * OP_QLD * 4 / (int)sizeof(MT))
#define OP_RB (BKT / 16)                // 16-row blocks of a query tile
#define OP_WPR (NW / OP_RB)             // warps per row block (the host checks NW % OP_RB == 0)
#define OP_NPW CDIV(NDQ, OP_WPR)        // dq n-tiles per warp
#if MMA_KIND <= 2
#define OP_KLD KLD                      // K block [key][d]: B reads conflict-free (4 mod 8 words)
#define OP_DSLD (NQ + 4)                // dsl rows (a query's keys): A reads conflict-free
#define OP_K_ELEMS (NQ * OP_KLD)
#else
#define OP_DSLD (NQ + ((NQ / 2) % 16 == 0 ? 16 : 0))  // 8-byte reads over half-warps (8 mod 16 words)
#define OP_KLD OP_DSLD                  // K block transposed [d][key]
#define OP_K_ELEMS (DN * OP_KLD)
#endif

// ---------------------------------------------------------------- ordering and the accumulator
#if MMA_EMULATE
inline uint op_load_turn(__global uint* p) { return atomic_or((volatile __global uint*)p, 0u); }
inline void op_release(__global uint* p, uint v) {
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  atomic_xchg((volatile __global uint*)p, v);
}
inline float op_acc_load(__global float* p) { return as_float(atomic_or((volatile __global uint*)p, 0u)); }
inline void op_acc_store(__global float* p, float v) { atomic_xchg((volatile __global uint*)p, as_uint(v)); }
inline void op_wait(__global uint* p, uint turn) {
  while (op_load_turn(p) != turn) {
  }
}
inline uint op_arrive(__global uint* p) {
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  const uint r = atomic_inc((volatile __global uint*)p);
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  return r;
}
inline void op_acc_add(__global float* p, float v) {
  volatile __global uint* u = (volatile __global uint*)p;
  uint seen = atomic_or(u, 0u), want;
  do {
    want = seen;
    seen = atomic_cmpxchg(u, want, as_uint(as_float(want) + v));
  } while (seen != want);
}
#else
inline uint op_load_turn(__global uint* p) {
  uint r;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(r) : "l"((ulong)p) : "memory");
  return r;
}
inline void op_release(__global uint* p, uint v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"((ulong)p), "r"(v) : "memory");
}
inline float op_acc_load(__global float* p) {
  float r;
  asm volatile("ld.relaxed.gpu.global.f32 %0, [%1];" : "=f"(r) : "l"((ulong)p) : "memory");
  return r;
}
inline void op_acc_store(__global float* p, float v) {
  asm volatile("st.relaxed.gpu.global.f32 [%0], %1;" ::"l"((ulong)p), "f"(v) : "memory");
}
inline void op_wait(__global uint* p, uint turn) {
  while (op_load_turn(p) != turn) asm volatile("nanosleep.u32 64;");
}
inline uint op_arrive(__global uint* p) {
  uint r;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(r) : "l"((ulong)p) : "memory");
  return r;
}
inline void op_acc_add(__global float* p, float v) {
  asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"((ulong)p), "f"(v) : "memory");
}
#endif

// The work-group's key head (bhk) and key block (kb) from the ticket, head-major, blocks descending.
#define ONEPASS_TICKET(bhk, kb)                                                 \
  if (tid == 0) op_ticket = atomic_inc((volatile __global uint*)(CNT + cnto));  \
  barrier(CLK_LOCAL_MEM_FENCE);                                                 \
  const int bhk = (int)(op_ticket / get_num_groups(1));                         \
  const int kb = (int)get_num_groups(1) - 1 - (int)(op_ticket % get_num_groups(1))

// The work-group's NQ keys into local memory, once (tf32 kinds [key][d] as STAGE rounds them; 16-bit
// transposed [d][key]); read after the first tile's staging barriers.
#if MMA_KIND <= 2
#define OP_PUT_K(row, d, u4) *(__local uint4*)(Kb + (row) * OP_KLD + (d)) = STAGE(u4)
#else
#define OP_PUT_K(row, d, u4)                                                         \
  do {                                                                               \
    const uint w_[4] = {(u4).x, (u4).y, (u4).z, (u4).w};                             \
    _Pragma("unroll") for (int j_ = 0; j_ < UE; ++j_) if ((d) + j_ < DN)             \
      Kb[((d) + j_) * OP_KLD + (row)] = (ushort)(w_[j_ / 2] >> (16 * (j_ % 2)));     \
  } while (0)
#endif
#define ONEPASS_STAGE_K()                                                                     \
  for (int u_ = tid; u_ < NQ * DK / UE; u_ += NTH) {                                          \
    const int row_ = u_ / (DK / UE), d_ = (u_ % (DK / UE)) * UE;                              \
    const uint4 u4_ = attn_mma_unit(K, ko, ks, bb, hk, k0 + row_, S, d_, D, VEC_K);           \
    OP_PUT_K(row_, d_, u4_);                                                                  \
  }

// dS^T (the C fragments ds: rows = this warp's keys, columns = the tile's queries) into dsl[query][key]:
// tf32 rounded / fp32 bits (3xtf32 splits when reading) / 16-bit.
#if MMA_KIND == 1
#define OP_DS_BITS(x) mma_tf32(x)
#elif MMA_KIND == 2
#define OP_DS_BITS(x) as_uint(x)
#else
#define OP_DS_BITS(x) ((ushort)PACK_P((x), 0.0f))
#endif
#define ONEPASS_PUT_DS(ds)                                                                          \
  _Pragma("unroll") for (int n_ = 0; n_ < NKT; ++n_)                                                \
    _Pragma("unroll") for (int e_ = 0; e_ < 4; ++e_)                                                \
      dsl[(n_ * 8 + 2 * tig + (e_ & 1)) * OP_DSLD + warp * 16 + gid + 8 * (e_ >> 1)] = OP_DS_BITS((ds)[n_][e_])

// acc[i] = the tile's dq (dS K, unscaled) at rows op_rb 16 + (gid, gid + 8), n-tile op_nb + i: A = dS from dsl
// (16 rows x KS keys), B = K's block. n-tiles past NDQ (a warp's last ones) repeat the last (every work-item
// makes the same mma calls: the emulation's barriers) and are not stored.
#if MMA_KIND <= 2
#define OP_A(a, ks)                                                                      \
  do {                                                                                   \
    __local const MT* p_ = dsl + (op_rb * 16 + gid) * OP_DSLD + (ks) * 8 + tig;          \
    a[0] = p_[0], a[1] = p_[8 * OP_DSLD], a[2] = p_[4], a[3] = p_[8 * OP_DSLD + 4];      \
  } while (0)
#define OP_B(b, ks, n)                                                                   \
  do {                                                                                   \
    __local const MT* p_ = Kb + ((ks) * 8 + tig) * OP_KLD + (n) * 8 + gid;               \
    b[0] = p_[0], b[1] = p_[4 * OP_KLD];                                                 \
  } while (0)
#else
// keys 4 tig .. 4 tig + 3 of a k-step in slots (2 tig, 2 tig + 1, 2 tig + 8, 2 tig + 9) for A and B alike
#define OP_A(a, ks)                                                                      \
  do {                                                                                   \
    __local const MT* p_ = dsl + (op_rb * 16 + gid) * OP_DSLD + (ks) * 16 + 4 * tig;     \
    const uint2 lo_ = *(__local const uint2*)p_, hi_ = *(__local const uint2*)(p_ + 8 * OP_DSLD); \
    a[0] = lo_.x, a[1] = hi_.x, a[2] = lo_.y, a[3] = hi_.y;                              \
  } while (0)
#define OP_B(b, ks, n)                                                                   \
  do {                                                                                   \
    const uint2 w_ = *(__local const uint2*)(Kb + ((n) * 8 + gid) * OP_KLD + (ks) * 16 + 4 * tig); \
    b[0] = w_.x, b[1] = w_.y;                                                            \
  } while (0)
#endif
#define ONEPASS_PRODUCT(acc)                                                   \
  _Pragma("unroll") for (int i_ = 0; i_ < OP_NPW; ++i_)                        \
    acc[i_][0] = acc[i_][1] = acc[i_][2] = acc[i_][3] = 0;                     \
  _Pragma("unroll") for (int ks_ = 0; ks_ < NQ / KS; ++ks_) {                  \
    uint a_[4], fa_[4], fm_[4];                                                \
    OP_A(a_, ks_);                                                             \
    SPLIT_A(fa_, fm_, a_, NOOP);                                               \
    _Pragma("unroll") for (int i_ = 0; i_ < OP_NPW; ++i_) {                    \
      uint b_[2];                                                              \
      OP_B(b_, ks_, min(op_nb + i_, NDQ - 1));                                 \
      MMA_X(acc[i_], fa_, fm_, b_);                                            \
    }                                                                          \
  }

// The warps' dq fragments into qb[query][d] (row length OP_QLD: float2 writes over half-warps hit distinct banks),
// so the accumulation below walks the tile's rows linearly: coalesced loads and stores of the accumulator.
#define ONEPASS_PUT_Q(acc)                                                                      \
  _Pragma("unroll") for (int i_ = 0; i_ < OP_NPW; ++i_) {                                       \
    if (op_nb + i_ >= NDQ) continue;                                                            \
    __local float* q_ = qb + (op_rb * 16 + gid) * OP_QLD + (op_nb + i_) * 8 + 2 * tig;          \
    q_[0] = acc[i_][0], q_[1] = acc[i_][1], q_[8 * OP_QLD] = acc[i_][2], q_[8 * OP_QLD + 1] = acc[i_][3]; \
  }

#if ONEPASS_ATOMIC
// Adds query tile ti0's part (qb; nothing without `has`) into ACC, then arrives; the last block to arrive writes dq.
#define ONEPASS_ADD(ti0, has)                                                                            \
  do {                                                                                                   \
    const int nblk_ = (int)get_num_groups(1);                                                            \
    const int jmax_ = causal ? min(nblk_ - 1, (min(L, (ti0) + BKT) - 1) / NQ) : nblk_ - 1;               \
    __global uint* cnt_ = CNT + cnto + 1 + (ulong)bh * (ulong)CDIV(L, BKT) + (ti0) / BKT;               \
    __global float* a_ = ACC + acco + ((ulong)bh * L + (ti0)) * D;  /* the tile's rows, contiguous */    \
    const int n_ = min(BKT, L - (ti0)) * D;                                                              \
    barrier(CLK_LOCAL_MEM_FENCE);  /* qb is complete */                                                  \
    if (has)                                                                                             \
      for (int x_ = tid; x_ < n_; x_ += NTH) {                                                           \
        const int r_ = x_ / D;                                                                           \
        op_acc_add(a_ + x_, qb[r_ * OP_QLD + x_ - r_ * D]);                                              \
      }                                                                                                  \
    barrier(CLK_GLOBAL_MEM_FENCE);  /* every add of the group before the arrival */                      \
    if (tid == 0) op_ticket = op_arrive(cnt_) == (uint)jmax_;                                            \
    barrier(CLK_LOCAL_MEM_FENCE);                                                                        \
    if (op_ticket) {                                                                                     \
      for (int x_ = tid; x_ < n_; x_ += NTH) {                                                           \
        const int r_ = x_ / D;                                                                           \
        STORE(DQ, (long)dqo + AT(dqs, bb, h, (ti0) + r_, x_ - r_ * D), op_acc_load(a_ + x_) * scale);    \
      }                                                                                                  \
    }                                                                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);  /* op_ticket read before the next tile's arrival */                   \
  } while (0)
#else
// Adds query tile ti0's part (qb, or zeros without `has`) for head bh in this work-group's turn (the file comment).
#define ONEPASS_ADD(ti0, has)                                                                            \
  do {                                                                                                   \
    const int nblk_ = (int)get_num_groups(1);                                                            \
    const int jmax_ = causal ? min(nblk_ - 1, (min(L, (ti0) + BKT) - 1) / NQ) : nblk_ - 1;               \
    const uint turn_ = (uint)(jmax_ - kb);                                                               \
    __global uint* cnt_ = CNT + cnto + 1 + (ulong)bh * (ulong)CDIV(L, BKT) + (ti0) / BKT;               \
    if (tid == 0) op_wait(cnt_, turn_);                                                                  \
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);  /* the turn is ours; qb is complete */         \
    __global float* a_ = ACC + acco + ((ulong)bh * L + (ti0)) * D;  /* the tile's rows, contiguous */    \
    for (int x_ = tid; x_ < min(BKT, L - (ti0)) * D; x_ += NTH) {                                        \
      const int r_ = x_ / D, c_ = x_ - r_ * D;                                                           \
      float v_ = (has) ? qb[r_ * OP_QLD + c_] : 0.0f;                                                    \
      if (turn_) v_ = op_acc_load(a_ + x_) + v_;                                                         \
      if (kb == 0) STORE(DQ, (long)dqo + AT(dqs, bb, h, (ti0) + r_, c_), v_ * scale);                    \
      else op_acc_store(a_ + x_, v_);                                                                    \
    }                                                                                                    \
    barrier(CLK_GLOBAL_MEM_FENCE);  /* every store of the group before the release */                    \
    if (tid == 0 && kb) op_release(cnt_, turn_ + 1);                                                     \
  } while (0)
#endif

// The turns of tiles ip, ip + BKT, ... below end that this work-group skips (zero contributions).
#define ONEPASS_PASS(ip, end) \
  for (; ip < (end); ip += BKT) ONEPASS_ADD(ip, 0);
