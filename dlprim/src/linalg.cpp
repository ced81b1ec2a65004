// Host side of kernels/linalg.cl: one program per (context, dtype), one work-group per matrix.
// The group size follows the work of one step (a power of two up to 256 and the device's limit),
// so batches of tiny matrices do not idle 256-wide groups.
#include <dlprim/embedded.h>
#include <dlprim/linalg.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace dlprim {

namespace {

struct Kernels {
  std::mutex m;
  cl_kernel cholesky = nullptr, lu = nullptr, trsm = nullptr, laswp = nullptr, perm = nullptr;
  size_t max_wg = 1;  // the largest power-of-two group every kernel of the program accepts
};

size_t kernel_limit(const Context& ctx, cl_kernel k) {
  size_t wg = 0;
  DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(k, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr));
  return wg;
}

Kernels* kernels(const Context& ctx, DType t) {
  if (t != DType::F32 && t != DType::F64) throw Error(std::string("linalg: unsupported dtype ") + dtype_name(t));
  if (t == DType::F64 && !ctx.info().fp64)
    throw Error("linalg: device '" + ctx.info().name + "' does not support float64");
  static std::mutex map_mutex;
  static std::map<std::pair<cl_context, int>, Kernels> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[{ctx.context(), static_cast<int>(t)}];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->cholesky) {
    std::string src = t == DType::F64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define T double\n"
                                      : "#define T float\n";
    cl_program prog = ctx.program(src + kernel_source("linalg"));
    k->lu = create_kernel(prog, "linalg_lu");
    k->trsm = create_kernel(prog, "linalg_trsm");
    k->laswp = create_kernel(prog, "linalg_laswp");
    k->perm = create_kernel(prog, "linalg_permutation");
    size_t lim = std::min<size_t>(256, ctx.work_group_size(256));
    lim = std::min({lim, kernel_limit(ctx, k->lu), kernel_limit(ctx, k->trsm), kernel_limit(ctx, k->laswp)});
    cl_kernel chol = create_kernel(prog, "linalg_cholesky");
    lim = std::min(lim, kernel_limit(ctx, chol));
    size_t p = 1;
    while (p * 2 <= lim) p *= 2;
    k->max_wg = p;
    k->cholesky = chol;  // last: marks the entry complete
  }
  return k;
}

// A power-of-two group for `work` items of parallel work per step.
size_t group_for(const Kernels* k, int64_t work) {
  size_t g = 1;
  while (g < k->max_wg && static_cast<int64_t>(g) < work) g *= 2;
  return g;
}

void add_matrix(KernelArgs& a, const MatrixRef& m, bool with_strides = true) {
  a.add(m.mem).add<cl_ulong>(m.offset).add<cl_long>(m.batch_stride);
  if (with_strides) a.add<cl_long>(m.row_stride).add<cl_long>(m.col_stride);
}

void add_ints(KernelArgs& a, const IntVecRef& v, bool with_stride) {
  a.add(v.mem).add<cl_ulong>(v.offset);
  if (with_stride) a.add<cl_long>(v.batch_stride);
}

} // namespace

void cholesky(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& a,
              const IntVecRef& info) {
  if (batch == 0) return;
  Kernels* k = kernels(ctx, t);
  std::lock_guard<std::mutex> lock(k->m);
  KernelArgs args(k->cholesky);
  add_matrix(args, a);
  args.add<cl_long>(n);
  add_ints(args, info, false);
  size_t g = group_for(k, n * n / 2);
  launch_1d(q, k->cholesky, batch * g, g);
}

void lu_factor(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t m, int64_t n,
               const MatrixRef& a, const IntVecRef& pivots, const IntVecRef& info) {
  if (batch == 0) return;
  Kernels* k = kernels(ctx, t);
  std::lock_guard<std::mutex> lock(k->m);
  size_t g = group_for(k, std::max<int64_t>(m, m * n / 2));
  KernelArgs args(k->lu);
  add_matrix(args, a);
  args.add<cl_long>(m).add<cl_long>(n);
  add_ints(args, pivots, true);
  add_ints(args, info, false);
  args.add_local(g * dtype_size(t)).add_local(g * sizeof(cl_long));
  launch_1d(q, k->lu, batch * g, g);
}

void triangular_solve(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nrhs,
                      const MatrixRef& a, const MatrixRef& x, bool lower, bool unit) {
  if (batch == 0 || n == 0 || nrhs == 0) return;
  Kernels* k = kernels(ctx, t);
  std::lock_guard<std::mutex> lock(k->m);
  KernelArgs args(k->trsm);
  add_matrix(args, a);
  add_matrix(args, x);
  args.add<cl_long>(n).add<cl_long>(nrhs).add<cl_int>(lower ? 1 : 0).add<cl_int>(unit ? 1 : 0);
  size_t g = group_for(k, n * nrhs / 2);
  launch_1d(q, k->trsm, batch * g, g);
}

void apply_pivots(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nrhs,
                  const MatrixRef& x, const IntVecRef& pivots, int64_t kk, bool reverse) {
  if (batch == 0 || n == 0 || nrhs == 0 || kk == 0) return;
  Kernels* k = kernels(ctx, t);
  std::lock_guard<std::mutex> lock(k->m);
  KernelArgs args(k->laswp);
  add_matrix(args, x);
  args.add<cl_long>(n).add<cl_long>(nrhs);
  add_ints(args, pivots, true);
  args.add<cl_long>(kk).add<cl_int>(reverse ? 1 : 0);
  size_t g = group_for(k, nrhs);
  launch_1d(q, k->laswp, batch * g, g);
}

void pivots_to_permutation(const Context& ctx, cl_command_queue q, uint64_t batch, int64_t m, int64_t kk,
                           const IntVecRef& pivots, cl_mem perm_mem, uint64_t perm_offset) {
  if (batch == 0 || m == 0) return;
  Kernels* k = kernels(ctx, DType::F32);  // the kernel has no floating-point data
  std::lock_guard<std::mutex> lock(k->m);
  KernelArgs args(k->perm);
  add_ints(args, pivots, true);
  args.add<cl_long>(kk).add(perm_mem).add<cl_ulong>(perm_offset).add<cl_long>(m).add<cl_ulong>(batch);
  launch_1d(q, k->perm, batch, ctx.work_group_size(64));
}

} // namespace dlprim
