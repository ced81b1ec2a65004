// Pieces of the tiled GEMM machinery shared by gemm.cpp and the implicit-GEMM convolutions:
// tile configurations, program text, kernel caching, split-K planning and launches.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/gemm.h>

#include <mutex>
#include <string>
#include <vector>

namespace dlprim {
namespace detail {

// Parameters of the tiled skeleton (gemm_tiled.cl).
struct TileConfig {
  int bm = 64, bn = 64, bk = 16;  // tile of C per work-group, K step
  int tm = 16, tn = 16;           // work-group shape (rows x columns of work-items)
  int vm = 1, vn = 1;             // vector width of the register mapping / local reads
  int local = 1;                  // stage tiles in local memory: 0 no, 1 one buffer, 2 two (alternating)
  // 1: a matrix-engine config (gemm_mma.cl): tm x tn is then the grid of warps, vm = vn = 1.
  int mma = 0;
  // mma only: 1 stages tiles with cp.async (global straight to local, no staging registers) through
  // `local` buffers (2..4), 16-bit fragments read with ldmatrix.
  int async = 0;
  int threads() const { return mma ? 32 * tm * tn : tm * tn; }
  int local_buffers() const { return async ? local : local == 2 ? 2 : 1; }
  // "128x128x16 t16x16 v4x4 local" ("local2": two buffers, "global": none); "mma 128x128x32 w2x4 local2",
  // "mma 128x128x32 w2x2 async3" (cp.async, three buffers)
  std::string str() const;
  static bool parse(const std::string& s, TileConfig* out);
  bool operator==(const TileConfig& o) const { return str() == o.str(); }
};

// Whether `c` is well formed and within the device limits for accumulation type `acc`.
bool tile_config_fits(const Context& ctx, const TileConfig& c, DType acc);
// The candidates worth timing on this device (all fitting), best guesses first.
std::vector<TileConfig> tile_candidates(const Context& ctx, DType acc);
// The config used without tuning.
TileConfig default_tile_config(const Context& ctx, DType acc, int64_t M, int64_t N);

// Matrix-engine GEMM (gemm_mma.cl, gemm_mma.cpp): which instruction a product runs on, if any.
enum class MmaKind { None = 0, Tf32 = 1, Tf32x3 = 2, Bf16 = 3, Fp16 = 4 };
struct MmaChoice {
  MmaKind kind = MmaKind::None;
  bool emulate = false;  // the local-memory emulation (PYTORCH_OCL_MMA=emulate: tests on any device)
  explicit operator bool() const { return kind != MmaKind::None; }
  std::string str() const;  // "" for None, else e.g. "bf16" or "tf32-emulated"
};
// The engine a product of `dtype` runs on: 16-bit always where the device has the shape, float32 as
// `math` asks; PYTORCH_OCL_MMA=0 turns the engine off, =emulate forces the emulation on any device.
MmaChoice mma_choice(const Context& ctx, DType dtype, Fp32Math math);
bool mma_config_fits(const Context& ctx, const TileConfig& c, MmaChoice m);
// Elements per 16-byte staging unit of gemm_mma.cl (4 for the tf32 kinds, 8 for 16-bit).
int mma_unit_elements(MmaChoice m);
std::vector<TileConfig> mma_candidates(const Context& ctx, MmaChoice m);
TileConfig default_mma_config(const Context& ctx, MmaChoice m, int64_t M, int64_t N);
// Defines of gemm_mma.cl (tile, kind, staged type MT) for a config.
std::string mma_defines(const TileConfig& c, MmaChoice m, const std::string& kernel_name);

// Type macros (T, ACC, LOAD_T, STORE_T; TC, LOAD_C, STORE_C for C and D) + common.cl + gemm_common.cl.
std::string gemm_program_head(DType dtype, DType c_dtype);
inline std::string gemm_program_head(DType dtype) { return gemm_program_head(dtype, dtype); }
// Tile macros of the skeleton for a variant whose loads are k-fast (A) / n-fast (B).
std::string tile_defines(const TileConfig& c, DType dtype, bool a_kfast, bool b_nfast, const std::string& kernel_name);

// A kernel object with the lock that serialises setting its arguments and enqueueing it.
struct LockedKernel {
  std::mutex m;
  cl_kernel k = nullptr;
};
// The slot for `key` in `ctx` (stable address; the kernel is created by the caller on first use).
LockedKernel& kernel_slot(const Context& ctx, const std::string& key);
// Split-K: how the k_outer * ceil(K / bk) steps are cut so that enough work-groups run.
struct SplitPlan {
  int ksteps = 0, total_steps = 0, steps_per_split = 1, splits = 1;
  uint64_t workspace_bytes = 0;
};
SplitPlan plan_splits(const Context& ctx, const TileConfig& c, int64_t M, int64_t N, int64_t K, int64_t k_outer,
                      int64_t zcount, DType acc, bool allow_split = true);

// Appends the GEMM_OUT_ARGS of gemm_common.cl for the C/D/epilogue of `g`.
void add_out_args(KernelArgs& a, const Gemm& g);
// Enqueues the tiled kernel over ceil(N/bn) x ceil(M/bm) x zcount groups (zcount includes the
// splits), cutting the launch where a grid dimension would exceed 65535 groups.
void launch_tiled(cl_command_queue q, cl_kernel k, const TileConfig& c, int64_t M, int64_t N, int64_t zcount,
                  std::vector<cl_event>* events);
// Sums the split partial results in `ws` (elements of the accumulation type from ws_off)
// into the output of `g` with its epilogue.
void launch_split_reduce(const Context& ctx, cl_command_queue q, const Gemm& g, int splits, int64_t zcount,
                         cl_mem ws, uint64_t ws_off, std::vector<cl_event>* events);

// Applies a GELU of `g.act` to its output in place (no-op for the fused activations).
void launch_activation(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t zcount);

// Products per launch (batch x groups) and the dtype C is written in.
inline int64_t gemm_zcount(const Gemm& g) { return g.batch * g.groups; }
inline DType gemm_out_dtype(const Gemm& g) { return g.c_dtype_set ? g.c_dtype : g.dtype; }
// gemm_small.cl's kernel `name` for these dtypes (built on first use).
LockedKernel& gemm_small_kernel(const Context& ctx, DType dtype, DType c_dtype, const char* name);
// The direct kernel for small products: a work-item per output, along n (`nfast`) or m.
void run_gemm_small(const Context& ctx, cl_command_queue q, const Gemm& g, bool nfast);
// The dot kernels for long K: `dot_local` work-items per output reduce in local memory (0: one work-item per
// output with vector loads, for CPU devices).
void run_gemm_dot(const Context& ctx, cl_command_queue q, const Gemm& g, size_t dot_local);
// Copies B n-contiguous into `ws` and points g.b at it (the CPU vector kernels' packed operand).
void pack_gemm_b(const Context& ctx, cl_command_queue q, Gemm& g, cl_mem ws, uint64_t ws_off_bytes);

// gemm_operands.cpp. Layout of a rows x cols operand: `inner_is_col` when the column index has unit stride
// (row-major, ld = row stride), else the row index (column-major, ld = column stride); false: neither.
bool matrix_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs, bool* inner_is_col, int64_t* ld);
GemmMatrix transposed(const GemmMatrix& m);
// A size's tuning bucket (log4: 1-16, 17-64, 65-256, 257-1024, 1025-4096, 4097+) as text.
std::string class_bucket(int64_t v);
// Errors for products no kernel takes (dtypes, negative or over-int sizes, float64 without cl_khr_fp64).
void check_supported(const Context& ctx, const Gemm& g);

// Work-group size limit of a built kernel (may be below the device's for register-heavy kernels).
size_t kernel_max_work_group(const Context& ctx, cl_kernel k);

} // namespace detail
} // namespace dlprim
