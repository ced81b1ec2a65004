#include <dlprim/embedded.h>
#include <dlprim/sort.h>

#include <algorithm>
#include <map>
#include <mutex>

namespace dlprim {

namespace {

struct Kernels {
  std::mutex m;
  cl_kernel step = nullptr, local = nullptr, select = nullptr;
  size_t wg = 0;  // work-group size of the local kernel (a power of two)
};

size_t pow2_floor(size_t v) {
  size_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

} // namespace

uint64_t next_pow2(uint64_t n) {
  uint64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

namespace {

// The sort program's kernels for ctx (built once); launches lock the returned mutex.
Kernels* sort_kernels(const Context& ctx) {
  static std::mutex map_mutex;
  static std::map<cl_context, Kernels> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[ctx.context()];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->step) {
    cl_program prog = ctx.program(kernel_source("sort"));
    k->step = create_kernel(prog, "dl_bitonic_step");
    k->local = create_kernel(prog, "dl_bitonic_local");
    k->select = create_kernel(prog, "dl_quickselect");
    size_t kernel_max = 0;
    DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(k->local, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(kernel_max),
                                             &kernel_max, nullptr));
    // Two pairs of 16 bytes per work-item in local memory; keep half of it free.
    size_t by_local = static_cast<size_t>(ctx.info().local_mem_size / 64);
    k->wg = pow2_floor(std::max<size_t>(1, std::min({size_t(256), kernel_max, by_local})));
  }
  return k;
}

} // namespace

void select_kth(const Context& ctx, cl_command_queue q, cl_mem keys, uint64_t ko, cl_mem vals, uint64_t vo,
                uint64_t n_rows, uint64_t n, uint64_t k) {
  if (n_rows == 0 || n <= 1) return;
  Kernels* ks = sort_kernels(ctx);
  std::lock_guard<std::mutex> lock(ks->m);
  KernelArgs args(ks->select);
  args.add(keys).add<cl_ulong>(ko).add(vals).add<cl_ulong>(vo).add<cl_ulong>(n_rows);
  args.add<cl_long>(static_cast<cl_long>(n)).add<cl_long>(static_cast<cl_long>(k));
  launch_1d(q, ks->select, n_rows, ctx.work_group_size(64));
}

void sort_pairs(const Context& ctx, cl_command_queue q, cl_mem keys, uint64_t ko, cl_mem vals, uint64_t vo,
                uint64_t n_segments, uint64_t seg, bool descending) {
  if (seg & (seg - 1)) throw Error("sort_pairs: segment length must be a power of two");
  if (seg <= 1 || n_segments == 0) return;
  Kernels* k = sort_kernels(ctx);
  std::lock_guard<std::mutex> lock(k->m);
  const cl_int desc = descending ? 1 : 0;
  const uint64_t total = n_segments * seg;
  const uint64_t block = std::min<uint64_t>(2 * k->wg, seg);
  const size_t wg = static_cast<size_t>(block / 2);

  auto run_local = [&](uint64_t k_first, uint64_t k_last, uint64_t j_first) {
    KernelArgs args(k->local);
    args.add(keys).add<cl_ulong>(ko).add(vals).add<cl_ulong>(vo).add<cl_ulong>(seg);
    args.add<cl_ulong>(k_first).add<cl_ulong>(k_last).add<cl_ulong>(j_first).add<cl_int>(desc);
    args.add_local(block * sizeof(cl_ulong)).add_local(block * sizeof(cl_long));
    launch_1d(q, k->local, total / 2, wg);
  };
  auto run_step = [&](uint64_t kk, uint64_t j) {
    KernelArgs args(k->step);
    args.add(keys).add<cl_ulong>(ko).add(vals).add<cl_ulong>(vo).add<cl_ulong>(total / 2);
    args.add<cl_ulong>(seg).add<cl_ulong>(kk).add<cl_ulong>(j).add<cl_int>(desc);
    launch_1d(q, k->step, total / 2, ctx.work_group_size(256));
  };

  run_local(2, block, 1);  // every block sorted (alternating directions, or all up when block == seg)
  for (uint64_t kk = 2 * block; kk <= seg; kk <<= 1) {
    for (uint64_t j = kk / 2; j >= block; j >>= 1) run_step(kk, j);
    run_local(kk, kk, block / 2);
  }
}

} // namespace dlprim
