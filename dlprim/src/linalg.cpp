// Host side of kernels/linalg*.cl: one program per (context, dtype, file), one work-group per matrix.
// The group size follows the work of one step (a power of two up to 256 and the device's limit),
// so batches of tiny matrices do not idle 256-wide groups.
#include <dlprim/autotune.h>
#include <dlprim/embedded.h>
#include <dlprim/linalg.h>

#include "linalg_internal.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

namespace dlprim {

namespace linalg_detail {

// One program per (context, dtype, .cl file); kernels created on first use with their group limit.
struct Program {
  std::mutex m;
  cl_program prog = nullptr;
  std::map<std::string, std::pair<cl_kernel, size_t>> kernels;  // name -> (kernel, power-of-two group limit)
};

std::string prelude(LinalgType lt) {
  const bool d = lt.real == DType::F64;
  std::string r = d ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#define R double\n#define EPS DBL_EPSILON\n#define SAFMIN DBL_MIN\n"
                    : "#define R float\n#define EPS FLT_EPSILON\n#define SAFMIN FLT_MIN\n";
  if (!lt.complex)
    return r + "#define T R\n#define MUL(a, b) ((a) * (b))\n#define DIV(a, b) ((a) / (b))\n#define CONJ(a) (a)\n"
               "#define ABS1(a) fabs(a)\n#define IS_ZERO(a) ((a) == 0)\n#define RE(a) (a)\n#define IM(a) ((R)0)\n"
               "#define TO_T(r) ((T)(r))\n#define ABS(a) fabs(a)\n#define ABS2(a) ((a) * (a))\n";
  r += d ? "#define T double2\n" : "#define T float2\n";
  // Smith's division as complex.cl's (scales by the larger part of b: no overflow near the range).
  return r + "#define MUL(a, b) cmul_(a, b)\n#define DIV(a, b) cdiv_(a, b)\n#define CONJ(a) ((T)((a).x, -(a).y))\n"
             "#define ABS1(a) (fabs((a).x) + fabs((a).y))\n#define IS_ZERO(a) ((a).x == 0 && (a).y == 0)\n"
             "#define RE(a) ((a).x)\n#define IM(a) ((a).y)\n#define TO_T(r) ((T)((R)(r), (R)0))\n"
             "#define ABS(a) hypot((a).x, (a).y)\n#define ABS2(a) ((a).x * (a).x + (a).y * (a).y)\n"
             "inline T cmul_(T a, T b) { return (T)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }\n"
             "inline T cdiv_(T a, T b) {\n"
             "  if (fabs(b.x) >= fabs(b.y)) {\n"
             "    if (b.x == 0) return (T)(a.x / (R)0, a.y / (R)0);\n"
             "    R q = b.y / b.x, s = 1 / (b.x + b.y * q);\n"
             "    return (T)((a.x + a.y * q) * s, (a.y - a.x * q) * s);\n"
             "  }\n"
             "  R q = b.x / b.y, s = 1 / (b.y + b.x * q);\n"
             "  return (T)((a.x * q + a.y) * s, (a.y * q - a.x) * s);\n"
             "}\n";
}

Kernel kernel(const Context& ctx, LinalgType lt, const char* file, const char* name, size_t preferred,
              const std::string& defines, const char* include) {
  const DType t = lt.real;
  if (t != DType::F32 && t != DType::F64) throw Error(std::string("linalg: unsupported dtype ") + dtype_name(t));
  if (t == DType::F64 && !ctx.info().fp64)
    throw Error("linalg: device '" + ctx.info().name + "' does not support float64");
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int, std::string>, Program> cache;
  Program* p;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    p = &cache[std::make_tuple(ctx.context(), static_cast<int>(t) * 2 + (lt.complex ? 1 : 0), file + defines)];
  }
  Kernel k;
  k.lock = std::unique_lock<std::mutex>(p->m);
  if (!p->prog)
    p->prog = ctx.program(prelude(lt) + kernel_source("linalg_group") + defines +
                          (include ? kernel_source(include) : std::string()) + kernel_source(file));
  auto it = p->kernels.find(name);
  if (it == p->kernels.end()) {
    cl_kernel kk = create_kernel(p->prog, name);
    size_t lim = 0;
    DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(kk, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(lim), &lim, nullptr));
    lim = std::min(lim, ctx.work_group_size(preferred));
    size_t g = 1;
    while (g * 2 <= lim) g *= 2;
    it = p->kernels.emplace(name, std::make_pair(kk, g)).first;
  }
  k.k = it->second.first;
  k.max_wg = it->second.second;
  return k;
}

void add_matrix(KernelArgs& a, const MatrixRef& m, bool with_strides) {
  a.add(m.mem).add<cl_ulong>(m.offset).add<cl_long>(m.batch_stride);
  if (with_strides) a.add<cl_long>(m.row_stride).add<cl_long>(m.col_stride);
}

void add_ints(KernelArgs& a, const IntVecRef& v, bool with_stride) {
  a.add(v.mem).add<cl_ulong>(v.offset);
  if (with_stride) a.add<cl_long>(v.batch_stride);
}

} // namespace linalg_detail

using namespace linalg_detail;

void cholesky(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
              const IntVecRef& info) {
  if (batch == 0) return;
  Kernel k = kernel(ctx, t, "linalg", "linalg_cholesky");
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_long>(n);
  add_ints(args, info, false);
  size_t g = k.group_for(n * n / 2);
  launch_1d(q, k.k, batch * g, g);
}

// Local bytes of linalg_cholesky_block and linalg_wy_factor for an n x n block: the block (leading
// dimension n + 1) and two vectors.
static uint64_t square_block_bytes(LinalgType t, int64_t n) {
  return static_cast<uint64_t>(n * (n + 1) + 2 * n) * dtype_size(t.real) * (t.complex ? 2 : 1);
}

bool wy_factor_fits(const Context& ctx, LinalgType t, int64_t n) {
  return n > 0 && square_block_bytes(t, n) + 1024 <= ctx.info().local_mem_size;
}

// linalg_cholesky_block's group: P x P items, P = ceil(n / CHOL_TILE) (linalg_block.cl), each keeping a
// CHOL_TILE x CHOL_TILE tile of the block in registers (256 items for 64 x 64).
static constexpr int64_t kCholTile = 4;
static int64_t cholesky_block_items(int64_t n) {
  const int64_t p = (n + kCholTile - 1) / kCholTile;
  return p * p;
}

// Up to 1024 items on GPUs (n <= 128), 256 on CPU devices (n <= 64; items are loop iterations there).
// pair false: the one-column-a-barrier variant (CHOL_PAIR 0, a program of its own).
static Kernel cholesky_block_program(const Context& ctx, LinalgType t, bool pair = true) {
  return kernel(ctx, t, "linalg_block", "linalg_cholesky_block", ctx.info().is_cpu ? 256 : 1024,
                pair ? std::string() : std::string("#define CHOL_PAIR 0\n"));
}

bool cholesky_block_fits(const Context& ctx, LinalgType t, int64_t n) {
  if (!wy_factor_fits(ctx, t, n) || (t.real == DType::F64 && !ctx.info().fp64)) return false;
  return cholesky_block_items(n) <= static_cast<int64_t>(cholesky_block_program(ctx, t).max_wg);
}

void cholesky_block(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n,
                    const MatrixRef& a, const MatrixRef* inv, const IntVecRef& info, int64_t base, bool pair) {
  if (batch == 0 || n == 0) return;
  if (!cholesky_block_fits(ctx, t, n)) throw Error("linalg: a Cholesky block does not fit in one work-group");
  Kernel k = cholesky_block_program(ctx, t, pair);
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_int>(static_cast<cl_int>(n));
  add_matrix(args, inv ? *inv : a);
  args.add<cl_int>(inv ? 1 : 0);
  add_ints(args, info, false);
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  args.add<cl_int>(static_cast<cl_int>(base)).add_local(n * (n + 1) * elem).add_local(2 * n * elem);
  const size_t g = static_cast<size_t>(cholesky_block_items(n));  // exactly the tiles' owners
  launch_1d(q, k.k, batch * g, g);
}

// linalg_lu_leaf.cl: the program for w columns, W = 4, 8 or 16, and its rows per work-item: 64 elements
// an item each (ptxas for sm_90 on clang's PTX, float32: 121 registers for 8 x 8, 108 for 4 x 16). On the
// H100 NVIDIA's compiler gives both 256-item groups (leaves of 1024 x 16 and 2048 x 8 rows), so the
// 4-column program with 16 rows an item takes the tall panels of n = 4096 (4096 x 4) that would otherwise
// run the global-memory kernel at ~30 us a column.
static int64_t leaf_cols(int64_t w) { return w <= 4 ? 4 : w <= 8 ? 8 : 16; }
static int64_t leaf_rows_per_item(int64_t w) { return 64 / leaf_cols(w); }

// The register leaves' program (LU or QR): W, LEAF_RPI and linalg_leaf_common.cl before the file.
static Kernel leaf_kernel(const Context& ctx, LinalgType t, int64_t w, const char* file, const char* name) {
  const std::string defs = "#define W " + std::to_string(leaf_cols(w)) + "\n#define LEAF_RPI " +
                           std::to_string(leaf_rows_per_item(w)) + "\n";
  return kernel(ctx, t, file, name, 1024, defs, "linalg_leaf_common");
}

static Kernel lu_leaf_kernel(const Context& ctx, LinalgType t, int64_t w) {
  return leaf_kernel(ctx, t, w, "linalg_lu_leaf", "linalg_lu_leaf");
}

int64_t lu_leaf_max_rows(const Context& ctx, LinalgType t, int64_t w) {
  if (w < 1 || w > 16) return 0;
  // The group limit is the kernel's (on GPUs it reflects the registers the leaf takes).
  return leaf_rows_per_item(w) * static_cast<int64_t>(lu_leaf_kernel(ctx, t, w).max_wg);
}

// The LU kernels' place arguments (linalg.h's LuLeafPlace), as the kernel's integer type I.
template <typename I>
static void add_place(KernelArgs& args, const LuLeafPlace& place) {
  args.template add<I>(static_cast<I>(place.piv_base));
  args.template add<I>(static_cast<I>(place.swap_left));
  args.template add<I>(static_cast<I>(place.swap_right));
  args.template add<cl_int>(place.merge_info ? 1 : 0);
  args.template add<cl_int>(static_cast<cl_int>(place.solve_rows));
  args.template add<cl_int>(static_cast<cl_int>(place.solve_cols));
}

// The leaves' U12 solve in local memory: a third of it at most (the leaf's own scratch beside it).
bool lu_leaf_solve_fits(const Context& ctx, LinalgType t, int64_t rows, int64_t cols) {
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  const uint64_t lim = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
  return rows > 0 && cols > 0 && static_cast<uint64_t>(rows * cols) * elem <= lim / 3;
}

// The local scratch of a leaf's U12 solve (one element where there is none).
static uint64_t solve_bytes(const Context& ctx, LinalgType t, const LuLeafPlace& place) {
  if (place.solve_rows <= 0) return dtype_size(t.real) * (t.complex ? 2 : 1);
  if (!lu_leaf_solve_fits(ctx, t, place.solve_rows, place.solve_cols))
    throw Error("linalg: an LU leaf's triangular solve does not fit in local memory");
  return static_cast<uint64_t>(place.solve_rows * place.solve_cols) * dtype_size(t.real) * (t.complex ? 2 : 1);
}

void lu_leaf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t w,
             const MatrixRef& a, const IntVecRef& pivots, const IntVecRef& info, const LuLeafPlace& place) {
  if (batch == 0 || m == 0 || w == 0) return;
  Kernel k = lu_leaf_kernel(ctx, t, w);
  const int64_t rpi = leaf_rows_per_item(w);
  if (w > 16 || m > rpi * static_cast<int64_t>(k.max_wg))
    throw Error("linalg: an LU leaf does not fit in the registers of one work-group");
  size_t g = k.group_for((m + rpi - 1) / rpi);
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_int>(static_cast<cl_int>(m)).add<cl_int>(static_cast<cl_int>(w));
  add_ints(args, pivots, true);
  add_ints(args, info, false);
  add_place<cl_int>(args, place);
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  args.add_local(g * dtype_size(t.real)).add_local(g * sizeof(cl_int)).add_local(16 * elem).add_local(16 * elem);
  args.add_local(solve_bytes(ctx, t, place));
  launch_1d(q, k.k, batch * g, g);
}

void wy_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& s,
               const MatrixRef& tau, const MatrixRef& out, const MatrixRef* y, int64_t ncols, bool adjoint) {
  if (batch == 0 || n == 0 || (y && ncols == 0)) return;
  if (!wy_factor_fits(ctx, t, n)) throw Error("linalg: a WY factor does not fit in local memory");
  Kernel k = kernel(ctx, t, "linalg_block", "linalg_wy_factor", ctx.info().is_cpu ? 256 : 1024);
  KernelArgs args(k.k);
  add_matrix(args, s);
  add_matrix(args, tau, false);
  add_matrix(args, out);
  args.add<cl_int>(static_cast<cl_int>(n));
  // With y: a group per 64 columns of it (each rebuilding T: n^2 / 2 steps on chip, about the product's work).
  const int64_t groups = y ? (ncols + 63) / 64 : 1;
  add_matrix(args, y ? *y : out);
  args.add<cl_long>(y ? ncols : 0).add<cl_int>(y ? (adjoint ? 2 : 1) : 0).add<cl_long>(groups);
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  args.add_local(n * (n + 1) * elem).add_local(2 * n * elem);  // square_block_bytes
  size_t g = k.group_for(n * n / 2);
  launch_1d(q, k.k, batch * groups * g, g);
}

void lu_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
               const MatrixRef& a, const IntVecRef& pivots, const IntVecRef& info, const LuLeafPlace& place) {
  if (batch == 0) return;
  Kernel k = kernel(ctx, t, "linalg", "linalg_lu");
  size_t g = k.group_for(std::max<int64_t>(m, m * n / 2));
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_long>(m).add<cl_long>(n);
  add_ints(args, pivots, true);
  add_ints(args, info, false);
  add_place<cl_long>(args, place);
  args.add_local(g * dtype_size(t.real)).add_local(g * sizeof(cl_long));  // |pivot| candidates: real
  args.add_local(solve_bytes(ctx, t, place));
  launch_1d(q, k.k, batch * g, g);
}

void lu_swap_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
                   const MatrixRef& a, const IntVecRef& pivots, int64_t k0, int64_t k1) {
  const int64_t kb = k1 - k0;
  if (batch == 0 || kb <= 0 || (k0 == 0 && k1 == n)) return;
  Kernel k = kernel(ctx, t, "linalg_block", "linalg_lu_swap_solve", 64);
  // A column an item, up to 64 items, halved until their solves' kb elements each fit in local memory.
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  const uint64_t lim = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
  size_t g = k.max_wg;
  while (g > 1 && g * kb * elem + 1024 > lim) g /= 2;
  if (g * kb * elem + 1024 > lim)
    throw Error("linalg: an LU block of " + std::to_string(kb) + " columns does not fit in local memory");
  const int64_t left = (k0 + g - 1) / g, groups = left + (n - k1 + g - 1) / g;
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_long>(m).add<cl_long>(n);
  add_ints(args, pivots, true);
  args.add<cl_long>(k0).add<cl_long>(k1).add<cl_long>(left).add<cl_long>(groups).add_local(g * kb * elem);
  launch_1d(q, k.k, batch * groups * g, g);
}

void triangular_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
                      const MatrixRef& a, const MatrixRef& x, bool lower, bool unit, bool conj) {
  if (batch == 0 || n == 0 || nrhs == 0) return;
  Kernel k = kernel(ctx, t, "linalg", "linalg_trsm");
  KernelArgs args(k.k);
  add_matrix(args, a);
  add_matrix(args, x);
  args.add<cl_long>(n).add<cl_long>(nrhs).add<cl_int>(lower ? 1 : 0).add<cl_int>(unit ? 1 : 0).add<cl_int>(conj ? 1 : 0);
  size_t g = k.group_for(n * nrhs / 2);
  launch_1d(q, k.k, batch * g, g);
}

// Local bytes of linalg_trsm_local: A with leading dimension n + 1, X with nrhs + 1.
static uint64_t trsm_local_bytes(LinalgType t, int64_t n, int64_t nrhs) {
  return static_cast<uint64_t>(n * (n + 1) + n * (nrhs + 1)) * dtype_size(t.real) * (t.complex ? 2 : 1);
}

bool triangular_solve_local_fits(const Context& ctx, LinalgType t, int64_t n, int64_t nrhs) {
  return n > 0 && nrhs > 0 && n <= 64 && nrhs <= 64 &&
         trsm_local_bytes(t, n, nrhs) + 1024 <= ctx.info().local_mem_size;
}

void triangular_solve_local(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n,
                            int64_t nrhs, const MatrixRef& a, const MatrixRef& x, bool lower, bool unit, bool conj) {
  if (batch == 0 || n == 0 || nrhs == 0) return;
  if (!triangular_solve_local_fits(ctx, t, n, nrhs)) throw Error("linalg: a triangular solve does not fit in local memory");
  Kernel k = kernel(ctx, t, "linalg_block", "linalg_trsm_local", ctx.info().is_cpu ? 256 : 1024);
  KernelArgs args(k.k);
  add_matrix(args, a);
  add_matrix(args, x);
  args.add<cl_int>(static_cast<cl_int>(n)).add<cl_int>(static_cast<cl_int>(nrhs)).add<cl_int>(lower ? 1 : 0);
  args.add<cl_int>(unit ? 1 : 0).add<cl_int>(conj ? 1 : 0);
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  args.add_local(n * (n + 1) * elem).add_local(n * (nrhs + 1) * elem);
  size_t g = k.group_for(n * nrhs / 2);
  launch_1d(q, k.k, batch * g, g);
}

void apply_pivots(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
                  const MatrixRef& x, const IntVecRef& pivots, int64_t kk, bool reverse) {
  if (batch == 0 || n == 0 || nrhs == 0 || kk == 0) return;
  Kernel k = kernel(ctx, t, "linalg", "linalg_laswp");
  KernelArgs args(k.k);
  add_matrix(args, x);
  args.add<cl_long>(n).add<cl_long>(nrhs);
  add_ints(args, pivots, true);
  args.add<cl_long>(kk).add<cl_int>(reverse ? 1 : 0);
  size_t g = k.group_for(nrhs);
  launch_1d(q, k.k, batch * g, g);
}

void pivots_to_permutation(const Context& ctx, cl_command_queue q, uint64_t batch, int64_t m, int64_t kk,
                           const IntVecRef& pivots, cl_mem perm_mem, uint64_t perm_offset) {
  if (batch == 0 || m == 0) return;
  Kernel k = kernel(ctx, DType::F32, "linalg", "linalg_permutation");  // no floating-point data
  KernelArgs args(k.k);
  add_ints(args, pivots, true);
  args.add<cl_long>(kk).add(perm_mem).add<cl_ulong>(perm_offset).add<cl_long>(m).add<cl_ulong>(batch);
  launch_1d(q, k.k, batch, std::min<size_t>(k.max_wg, 64));
}

} // namespace dlprim

namespace dlprim {

// Work-items per column in linalg_geqrf's reflector update (a power of two): PYTORCH_OCL_GEQRF_LANES,
// else a seeded pick under PYTORCH_OCL_TUNE=random:SEED, else 32 on GPUs (coalesced rows) and 1 on
// CPU devices (one work-item walks a column: no barriers).
static int geqrf_lanes(const Context& ctx) {
  const char* v = std::getenv("PYTORCH_OCL_GEQRF_LANES");
  int lanes = v && *v ? std::atoi(v) : 0;
  if (lanes <= 0) {
    int pick = tune_variant("geqrf_lanes", 2);
    lanes = pick >= 0 ? (pick ? 32 : 1) : (ctx.info().is_cpu ? 1 : 32);
  }
  int p = 1;
  while (p * 2 <= lanes) p *= 2;
  return p;
}

void geqrf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n, const MatrixRef& a,
           const MatrixRef& tau, const MatrixRef* v, int64_t v_top) {
  if (batch == 0 || m == 0 || n == 0) return;
  Kernel k = kernel(ctx, t, "linalg_qr", "linalg_geqrf");
  size_t g = k.group_for(std::max(m, n));
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_long>(m).add<cl_long>(n);
  add_matrix(args, tau, false);
  args.add_local(g * dtype_size(t.real));  // |x|^2 partial sums: real
  args.add_local(g * dtype_size(t.real) * (t.complex ? 2 : 1));  // v^H a_j partial sums: T
  args.add<cl_int>(static_cast<cl_int>(std::min<size_t>(g, geqrf_lanes(ctx))));
  add_matrix(args, v ? *v : a);
  args.add<cl_int>(v ? 1 : 0).add<cl_long>(v ? v_top : 0);
  launch_1d(q, k.k, batch * g, g);
}

// linalg_qr_leaf.cl: W = 4, 8 or 16 and the rows per work-item as the LU leaf's (64 elements an item).
// Its group is also bounded by local memory: (W + 1) partial sums an item, plus C W + 3 W (C ~ sqrt L)
// elements and L ints (float64 / complex: 256 items at most on 48 KiB).
static Kernel qr_leaf_kernel(const Context& ctx, LinalgType t, int64_t w) {
  return leaf_kernel(ctx, t, w, "linalg_qr_leaf", "linalg_geqrf_leaf");
}

// The reduction's chunks (as the kernel: the least power of two C with C^2 >= g).
static uint64_t qr_leaf_chunks(uint64_t g) {
  uint64_t c = 1;
  while (c * c < g) c *= 2;
  return c;
}

static uint64_t qr_leaf_local_bytes(LinalgType t, int64_t W, uint64_t g) {
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  return (g * (W + 1) + qr_leaf_chunks(g) * W + 3 * W) * elem + g * sizeof(cl_int);
}

// The leaf kernel's largest group: its register limit, halved until the local memory fits.
static size_t qr_leaf_group_limit(const Context& ctx, LinalgType t, int64_t w, const Kernel& k) {
  const int64_t W = leaf_cols(w);
  const uint64_t lim = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
  size_t g = k.max_wg;
  while (g > 1 && qr_leaf_local_bytes(t, W, g) > lim) g /= 2;
  return g;
}

int64_t geqrf_leaf_max_rows(const Context& ctx, LinalgType t, int64_t w) {
  if (w < 1 || w > 16) return 0;
  Kernel k = qr_leaf_kernel(ctx, t, w);
  return leaf_rows_per_item(w) * static_cast<int64_t>(qr_leaf_group_limit(ctx, t, w, k));
}

void geqrf_leaf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t w,
                const MatrixRef& a, const MatrixRef& tau, const MatrixRef* v, int64_t v_top) {
  if (batch == 0 || m == 0 || w == 0) return;
  Kernel k = qr_leaf_kernel(ctx, t, w);
  const int64_t rpi = leaf_rows_per_item(w), W = leaf_cols(w);
  const size_t lim = qr_leaf_group_limit(ctx, t, w, k);
  if (w > 16 || m > rpi * static_cast<int64_t>(lim))
    throw Error("linalg: a QR leaf does not fit in the registers of one work-group");
  size_t g = 1;
  while (g < lim && static_cast<int64_t>(g) * rpi < m) g *= 2;
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_int>(static_cast<cl_int>(m)).add<cl_int>(static_cast<cl_int>(w));
  add_matrix(args, tau, false);
  add_matrix(args, v ? *v : a);
  args.add<cl_int>(v ? 1 : 0).add<cl_int>(static_cast<cl_int>(v ? v_top : 0));
  const uint64_t elem = dtype_size(t.real) * (t.complex ? 2 : 1);
  args.add_local(g * (W + 1) * elem).add_local(qr_leaf_chunks(g) * W * elem).add_local(W * elem);
  args.add_local(2 * W * elem).add_local(g * sizeof(cl_int));
  launch_1d(q, k.k, batch * g, g);
}

void householder_product(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t qc,
                         int64_t k_refl, const MatrixRef& v, const MatrixRef& tau, const MatrixRef& out) {
  if (batch == 0 || m == 0 || qc == 0) return;
  Kernel k = kernel(ctx, t, "linalg_qr", "linalg_orgqr");
  size_t g = k.group_for(std::max(qc, m * qc / 8));
  KernelArgs args(k.k);
  add_matrix(args, v);
  add_matrix(args, tau, false);
  add_matrix(args, out);
  args.add<cl_long>(m).add<cl_long>(qc).add<cl_long>(k_refl);
  launch_1d(q, k.k, batch * g, g);
}

void unit_lower(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t k,
                const MatrixRef& a, const MatrixRef& v) {
  const uint64_t total = batch * static_cast<uint64_t>(m) * static_cast<uint64_t>(k);
  if (total == 0) return;
  Kernel kk = kernel(ctx, t, "linalg_qr", "linalg_unit_lower");
  KernelArgs args(kk.k);
  add_matrix(args, a);
  add_matrix(args, v);
  args.add<cl_long>(m).add<cl_long>(k).add<cl_ulong>(total);
  const size_t g = std::min<size_t>(kk.max_wg, 256);
  launch_1d(q, kk.k, (total + g - 1) / g * g, g);
}

} // namespace dlprim

namespace dlprim {

void eigh_jacobi(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
                 const MatrixRef& v, const MatrixRef& rot, const MatrixRef& w, const MatrixRef* vectors) {
  if (batch == 0 || n == 0) return;
  Kernel k = kernel(ctx, t, "linalg_jacobi", "linalg_eigh_jacobi");
  size_t g = k.group_for(std::max<int64_t>(n, n * n / 4));
  KernelArgs args(k.k);
  add_matrix(args, a);
  add_matrix(args, v, false);
  add_matrix(args, rot, false);
  add_matrix(args, w, false);
  add_matrix(args, vectors ? *vectors : w);
  args.add<cl_long>(n).add<cl_int>(vectors ? 1 : 0).add_local(g * dtype_size(t.real));
  launch_1d(q, k.k, batch * g, g);
}

void svd_jacobi(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
                const MatrixRef& a, const MatrixRef& v, const MatrixRef& rot, const MatrixRef& s, const MatrixRef& u,
                const MatrixRef& vectors) {
  if (batch == 0 || n == 0 || m == 0) return;
  Kernel k = kernel(ctx, t, "linalg_jacobi", "linalg_svd_jacobi");
  size_t g = k.group_for(std::max<int64_t>(n, (m + n) * n / 4));
  KernelArgs args(k.k);
  add_matrix(args, a);
  add_matrix(args, v, false);
  add_matrix(args, rot, false);
  add_matrix(args, s, false);
  add_matrix(args, u);
  add_matrix(args, vectors);
  args.add<cl_long>(m).add<cl_long>(n).add_local(g * dtype_size(t.real));
  launch_1d(q, k.k, batch * g, g);
}

} // namespace dlprim

namespace dlprim {

void eig(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& a,
         const MatrixRef& w, const MatrixRef& z, const MatrixRef& x, const MatrixRef* vectors, const IntVecRef& info) {
  if (batch == 0 || n == 0) return;
  Kernel k = kernel(ctx, LinalgType(t, true), "linalg_eig", "linalg_eig");
  // At least 8 work-items: PoCL's work-group compiler asserts on this kernel with groups of 1 or 2.
  size_t g = k.group_for(std::max<int64_t>(n, 8));
  KernelArgs args(k.k);
  add_matrix(args, a);
  add_matrix(args, w, false);
  add_matrix(args, z, false);
  add_matrix(args, x, false);
  add_matrix(args, vectors ? *vectors : a);
  add_ints(args, info, false);
  args.add<cl_long>(n).add<cl_int>(vectors ? 1 : 0);
  launch_1d(q, k.k, batch * g, g);
}

} // namespace dlprim

namespace dlprim {

void ldl_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
                bool herm, const IntVecRef& pivots, const IntVecRef& info) {
  if (batch == 0 || n == 0) return;
  Kernel k = kernel(ctx, t, "linalg_ldl", "linalg_ldl_factor");
  size_t g = k.group_for(n * n / 2);
  KernelArgs args(k.k);
  add_matrix(args, a);
  args.add<cl_long>(n).add<cl_int>(herm && t.complex ? 1 : 0);
  add_ints(args, pivots, true);
  add_ints(args, info, false);
  args.add_local(2 * sizeof(cl_int));  // the pivot decision, shared by the group
  launch_1d(q, k.k, batch * g, g);
}

void ldl_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
               const MatrixRef& ld, const IntVecRef& pivots, const MatrixRef& x, bool herm) {
  if (batch == 0 || n == 0 || nrhs == 0) return;
  Kernel k = kernel(ctx, t, "linalg_ldl", "linalg_ldl_solve");
  KernelArgs args(k.k);
  add_matrix(args, ld);
  add_ints(args, pivots, true);
  add_matrix(args, x);
  args.add<cl_long>(n).add<cl_long>(nrhs).add<cl_int>(herm && t.complex ? 1 : 0).add<cl_ulong>(batch);
  const uint64_t items = batch * static_cast<uint64_t>(nrhs);  // one per right-hand side
  const size_t g = std::min<size_t>(k.max_wg, 64);
  launch_1d(q, k.k, (items + g - 1) / g * g, g);
}

} // namespace dlprim
