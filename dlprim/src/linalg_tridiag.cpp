// Host side of kernels/linalg_tridiag.cl: the large-n symmetric eigenproblem's tridiagonal reduction,
// implicit QL and bisection (the blocked driver is csrc/aten/LinalgEighTridiag.cpp).
#include <dlprim/autotune.h>
#include <dlprim/linalg.h>

#include "linalg_internal.h"

#include <algorithm>
#include <cstdlib>

namespace dlprim {

using namespace linalg_detail;

// The large-n eigh path (kernels/linalg_tridiag.cl): real types only.
void tridiag_column(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
                    int64_t j, const MatrixRef& a, const MatrixRef& vw, const MatrixRef& d, const MatrixRef& e,
                    const MatrixRef& tau) {
  if (batch == 0) return;
  Kernel k = kernel(ctx, t, "linalg_tridiag", "linalg_tridiag_column");
  size_t g = k.group_for(n - i);
  KernelArgs args(k.k);
  add_matrix(args, a, false);
  add_matrix(args, vw, false);
  add_matrix(args, d, false);
  add_matrix(args, e, false);
  add_matrix(args, tau, false);
  args.add<cl_long>(n).add<cl_long>(nb).add<cl_long>(i).add<cl_long>(j).add_local(g * dtype_size(t));
  launch_1d(q, k.k, batch * g, g);
}

void tridiag_rowdot(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
                    int64_t j, const MatrixRef& a, const MatrixRef& vw, const MatrixRef& p) {
  if (batch == 0) return;
  // A row per group of up to 64 items on GPUs (the rows, not their length, give the parallelism;
  // a tree sum per row), a row per work-item on CPU devices (a serial dot product, no barriers,
  // few groups); a seeded pick under PYTORCH_OCL_TUNE=random:SEED.
  const int pick = tune_variant("tridiag_rowdot_lanes", 2);
  const bool wide = pick >= 0 ? pick == 1 : !ctx.info().is_cpu;
  Kernel k = kernel(ctx, t, "linalg_tridiag", wide ? "linalg_tridiag_rowdot" : "linalg_tridiag_rowdot1");
  const size_t rows = static_cast<size_t>(n - i - 1 + 2 * nb);
  size_t g = wide ? std::min<size_t>(64, k.group_for(n - i - 1)) : std::min<size_t>(64, k.max_wg);
  KernelArgs args(k.k);
  add_matrix(args, a, false);
  add_matrix(args, vw, false);
  add_matrix(args, p, false);
  args.add<cl_long>(n).add<cl_long>(nb).add<cl_long>(i).add<cl_long>(j);
  if (wide) args.add_local(g * dtype_size(t));
  const size_t global[2] = {wide ? rows * g : (rows + g - 1) / g * g, static_cast<size_t>(batch)};
  const size_t local[2] = {g, 1};
  launch_nd(q, k.k, 2, global, local);
}

void tridiag_w(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
               int64_t j, const MatrixRef& vw, const MatrixRef& p, const MatrixRef& tau) {
  if (batch == 0) return;
  Kernel k = kernel(ctx, t, "linalg_tridiag", "linalg_tridiag_w");
  size_t g = k.group_for(n - i - 1);
  KernelArgs args(k.k);
  add_matrix(args, vw, false);
  add_matrix(args, p, false);
  add_matrix(args, tau, false);
  args.add<cl_long>(n).add<cl_long>(nb).add<cl_long>(i).add<cl_long>(j).add_local(g * dtype_size(t));
  launch_1d(q, k.k, batch * g, g);
}

size_t tridiag_ql_groups(const Context& ctx, DType t, int64_t rows, size_t* group) {
  Kernel k = kernel(ctx, t, "linalg_tridiag", "linalg_tridiag_ql");
  // Rows per group: PYTORCH_OCL_EIGH_QL_ROWS (a power of two; tests use it to reach several groups
  // with small matrices), else a seeded 4 or the default under PYTORCH_OCL_TUNE=random:SEED, else
  // the default: the largest group on GPUs, and on CPU devices one group for all rows (every group
  // repeats the serial sweeps; two groups on PoCL's two cores took longer than one: 61 against 39 ms
  // at n = 256).
  const char* v = std::getenv("PYTORCH_OCL_EIGH_QL_ROWS");
  int64_t forced = v && *v ? std::atoll(v) : 0;
  if (forced <= 0 && tune_variant("tridiag_ql_rows", 2) == 1) forced = 4;
  *group = k.group_for(std::max<int64_t>(forced > 0 ? std::min(forced, rows) : rows, 1));
  if (rows == 0 || (forced <= 0 && ctx.info().is_cpu)) return 1;
  return static_cast<size_t>((rows + *group - 1) / *group);
}

void tridiag_ql(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& d,
                const MatrixRef& e, cl_mem scratch, uint64_t scratch_offset, cl_mem iscratch, uint64_t iscratch_offset,
                const MatrixRef& w, const MatrixRef* z, const MatrixRef* vectors, cl_mem info, uint64_t info_offset,
                int64_t max_sweeps) {
  if (batch == 0 || n == 0) return;
  const int64_t rows = vectors ? n : 0;
  size_t g = 1;
  const size_t groups = tridiag_ql_groups(ctx, t, rows, &g);
  Kernel k = kernel(ctx, t, "linalg_tridiag", "linalg_tridiag_ql");
  KernelArgs args(k.k);
  add_matrix(args, d, false);
  add_matrix(args, e, false);
  args.add(scratch).add<cl_ulong>(scratch_offset).add(iscratch).add<cl_ulong>(iscratch_offset);
  add_matrix(args, w, false);
  add_matrix(args, z ? *z : w);
  add_matrix(args, vectors ? *vectors : w);
  args.add<cl_long>(n).add<cl_long>(rows);
  args.add(info).add<cl_ulong>(info_offset).add<cl_long>(max_sweeps);
  const size_t global[2] = {groups * g, static_cast<size_t>(batch)};
  const size_t local[2] = {g, 1};
  launch_nd(q, k.k, 2, global, local);
}

} // namespace dlprim

namespace dlprim {

void tridiag_bisect(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& d,
                    const MatrixRef& e, const MatrixRef& w) {
  if (batch == 0 || n == 0) return;
  Kernel k = kernel(ctx, t, "linalg_tridiag", "linalg_tridiag_bisect");
  KernelArgs args(k.k);
  add_matrix(args, d, false);
  add_matrix(args, e, false);
  add_matrix(args, w, false);
  args.add<cl_long>(n);
  const size_t g = std::min<size_t>(k.max_wg, 64);
  const size_t global[2] = {(static_cast<size_t>(n) + g - 1) / g * g, static_cast<size_t>(batch)};
  const size_t local[2] = {g, 1};
  launch_nd(q, k.k, 2, global, local);
}

} // namespace dlprim
