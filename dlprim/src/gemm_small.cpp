// GEMM's small paths and helper kernels (gemm_small.cl): the direct kernel for small products, the dot
// kernels for long K, B's repacking for the CPU vector kernels, the split-K reduction and the fused GELU
// epilogue. gemm.cpp plans a product and calls these; the tiled kernels live in gemm_tiles.cpp / gemm_mma.cpp.
#include <dlprim/embedded.h>
#include <dlprim/gemm.h>
#include <dlprim/int_math.h>
#include <dlprim/program_cache.h>
#include <dlprim/thread_memo.h>

#include "gemm_internal.h"

#include <algorithm>
#include <mutex>

namespace dlprim {
namespace detail {

LockedKernel& gemm_small_kernel(const Context& ctx, DType dtype, DType c_dtype, const char* name) {
  // Every small product (a decode step's linear layers) comes here: a per-thread memo skips building the
  // string key and the locked map lookup.
  using Key = std::tuple<cl_context, DType, DType, MemoName<>>;
  thread_local ThreadMemo<Key, LockedKernel, 8> memo;
  LockedKernel& slot = memo.get(Key(ctx.context(), dtype, c_dtype, MemoName<>(name)), [&] {
    return &kernel_slot(ctx, std::string("gemm_small|") + dtype_name(dtype) + ">" + dtype_name(c_dtype) + "|" + name);
  });
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) {
    std::string text = gemm_program_head(dtype, c_dtype) + kernel_source("gemm_small");
    slot.k = create_kernel(ctx.program(text), name);
  }
  return slot;
}

namespace {

void add_small_operands(KernelArgs& a, const Gemm& g) {
  a.add(g.a.mem).add<cl_ulong>(g.a.offset).add<cl_long>(g.a.row_stride).add<cl_long>(g.a.col_stride);
  a.add<cl_long>(g.a.batch_stride).add<cl_long>(g.a.group_stride).add<cl_long>(g.a.outer_stride);
  a.add(g.b.mem).add<cl_ulong>(g.b.offset).add<cl_long>(g.b.row_stride).add<cl_long>(g.b.col_stride);
  a.add<cl_long>(g.b.batch_stride).add<cl_long>(g.b.group_stride).add<cl_long>(g.b.outer_stride);
}


void run_dot_vec(const Context& ctx, cl_command_queue q, const Gemm& g) {
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_dot_vec");
  std::lock_guard<std::mutex> lock(slot.m);
  uint64_t outputs = static_cast<uint64_t>(g.M) * g.N * gemm_zcount(g);
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.K));
  a.add<cl_int>(static_cast<int>(g.k_outer)).add<cl_int>(static_cast<int>(g.groups)).add<cl_ulong>(outputs);
  add_small_operands(a, g);
  add_out_args(a, g);
  launch_1d(q, slot.k, outputs, std::min<size_t>(16, ctx.work_group_size(16)));
}

} // namespace

void run_gemm_small(const Context& ctx, cl_command_queue q, const Gemm& g, bool nfast) {
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_small");
  std::lock_guard<std::mutex> lock(slot.m);
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.K));
  a.add<cl_int>(static_cast<int>(g.k_outer)).add<cl_int>(static_cast<int>(g.groups)).add<cl_int>(nfast ? 1 : 0);
  add_small_operands(a, g);
  add_out_args(a, g);
  uint64_t fast = nfast ? g.N : g.M, slow = nfast ? g.M : g.N;
  size_t l0 = std::min<size_t>(ctx.work_group_size(64), 64);
  while (l0 > 1 && l0 / 2 >= fast) l0 /= 2;
  uint64_t z = gemm_zcount(g);
  for (uint64_t z0 = 0; z0 < z; z0 += 65535) {
    size_t offset[3] = {0, 0, static_cast<size_t>(z0)};
    size_t global[3] = {static_cast<size_t>(ceil_div(fast, l0) * l0), static_cast<size_t>(slow),
                        static_cast<size_t>(std::min<uint64_t>(65535, z - z0))};
    size_t local[3] = {l0, 1, 1};
    launch_nd_events(q, slot.k, 3, offset, global, local, nullptr);
  }
}


// Rewrites g.b to point at a dense n-contiguous copy of B in `ws` (gemm.cpp's wants_packed_b decides).
void pack_gemm_b(const Context& ctx, cl_command_queue q, Gemm& g, cl_mem ws, uint64_t ws_off_bytes) {
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_pack_b");
  std::lock_guard<std::mutex> lock(slot.m);
  uint64_t total = static_cast<uint64_t>(g.K) * g.N * g.k_outer * gemm_zcount(g);
  uint64_t p_off = ws_off_bytes / dtype_size(g.dtype);
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.K)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.groups));
  a.add<cl_int>(static_cast<int>(g.k_outer)).add<cl_ulong>(total);
  a.add(g.b.mem).add<cl_ulong>(g.b.offset).add<cl_long>(g.b.row_stride).add<cl_long>(g.b.col_stride);
  a.add<cl_long>(g.b.batch_stride).add<cl_long>(g.b.group_stride).add<cl_long>(g.b.outer_stride);
  a.add(ws).add<cl_ulong>(p_off);
  launch_1d(q, slot.k, total, ctx.work_group_size(256));
  int64_t kn = g.K * g.N;
  g.b = {ws, p_off, g.N, 1, g.groups * g.k_outer * kn, g.k_outer * kn, kn};
}

void run_gemm_dot(const Context& ctx, cl_command_queue q, const Gemm& g, size_t dot_local) {
  if (dot_local == 0) return run_dot_vec(ctx, q, g);
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_dot");
  std::lock_guard<std::mutex> lock(slot.m);
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.K));
  a.add<cl_int>(static_cast<int>(g.k_outer)).add<cl_int>(static_cast<int>(g.groups));
  add_small_operands(a, g);
  add_out_args(a, g);
  a.add_local(dot_local * dtype_size(compute_dtype(g.dtype)));
  uint64_t outputs = static_cast<uint64_t>(g.M) * g.N * gemm_zcount(g);
  launch_1d(q, slot.k, outputs * dot_local, dot_local);
}

void launch_split_reduce(const Context& ctx, cl_command_queue q, const Gemm& g, int splits, int64_t zc, cl_mem ws,
                         uint64_t ws_off, std::vector<cl_event>* events) {
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_split_reduce");
  std::lock_guard<std::mutex> lock(slot.m);
  uint64_t total = static_cast<uint64_t>(g.M) * g.N * zc;
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(splits);
  a.add<cl_int>(static_cast<int>(g.groups)).add<cl_ulong>(total).add(ws).add<cl_ulong>(ws_off);
  add_out_args(a, g);
  size_t L = ctx.work_group_size(256);
  size_t global = static_cast<size_t>(ceil_div(total, L) * L);
  launch_nd_events(q, slot.k, 1, nullptr, &global, &L, events);
}

void launch_activation(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t zc) {
  if (g.act != Activation::Gelu && g.act != Activation::GeluTanh) return;
  LockedKernel& slot = gemm_small_kernel(ctx, g.dtype, gemm_out_dtype(g), "gemm_activation");
  std::lock_guard<std::mutex> lock(slot.m);
  uint64_t total = static_cast<uint64_t>(g.M) * g.N * zc;
  KernelArgs a(slot.k);
  a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.groups));
  a.add<cl_ulong>(total).add<cl_int>(static_cast<int>(g.act));
  a.add(g.c.mem).add<cl_ulong>(g.c.offset).add<cl_long>(g.c.row_stride).add<cl_long>(g.c.col_stride);
  a.add<cl_long>(g.c.batch_stride).add<cl_long>(g.c.group_stride);
  launch_1d(q, slot.k, total, ctx.work_group_size(256));
}

} // namespace detail
} // namespace dlprim
