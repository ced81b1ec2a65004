// The GEMM's launch plan (path, normalised operands, tile config, split-K, workspace), shared by gemm.cpp (planning
// and launching) and gemm_choice.cpp (the tile config and engine a product runs: tuned per shape class).
#pragma once
#include <dlprim/gemm.h>

#include "gemm_internal.h"
#include "gemm_tiled_kernel.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {
namespace detail {

enum class Path { Empty, Small, Dot, Tiled, Wgmma };

struct Plan {
  Path path = Path::Empty;
  Gemm g;                      // normalised: C has a unit stride along n where possible
  bool a_kc = true, b_nc = true;  // A unit-stride along k / B along n
  int64_t lda = 0, ldb = 0;
  bool idx64 = false;
  MmaChoice mma;      // the matrix engine the tiled path runs on (cfg.mma set), if any
  TileConfig cfg;
  const std::string* cfg_text = nullptr;  // cfg.str(), interned (names the kernel)
  SplitPlan split;
  bool small_nfast = true;
  size_t dot_local = 1;     // 0: the CPU dot kernel (one work-item per output)
  uint64_t pack_bytes = 0;  // B repacked n-contiguous for the CPU vector kernels (0: not packed)
  uint64_t pack_space() const { return (pack_bytes + 255) / 256 * 256; }
  uint64_t wgmma_bytes = 0;  // Path::Wgmma: the packed operands
  uint64_t reserve_bytes = 0;  // asked of callers beyond what the path uses (TileChoice::reserve_bytes)
  uint64_t workspace_bytes() const {
    return std::max(reserve_bytes,
                    path == Path::Tiled ? pack_space() + split.workspace_bytes : path == Path::Wgmma ? wgmma_bytes : 0);
  }
};

// Normalises the operands and picks the path; a Tiled plan gets its config from make_plan (gemm.cpp).
Plan base_plan(const Context& ctx, const Gemm& in);

// CPU vector kernels read B along n; a B contiguous along k is first repacked (O(K*N) next to
// the O(M*N*K) product) unless M is too small for that to pay.
inline bool wants_packed_b(const TileConfig& cfg, bool b_nc, int64_t M) { return !cfg.local && cfg.vn > 1 && !b_nc && M >= 16; }

// `q` (a Tiled plan) with `cfg`: its split-K and B repacking.
void plan_tiles(const Context& ctx, Plan* q, const TileConfig& cfg);

// Enqueues the tiled kernel (built for g's layouts) and, for split-K, the reduction.
void run_tiled(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t lda, int64_t ldb, const TileConfig& cfg,
               const SplitPlan& split, LockedKernel& slot, cl_mem ws, uint64_t ws_off, std::vector<cl_event>* events);

struct TileChoice {
  TileConfig cfg;
  const std::string* text = nullptr;
  bool wgmma = false;  // the engine tuning (family "gemm_engine") took the wgmma path over cfg
  // A choice made while the class's tunings wait for their builds: the most workspace the decision may land on
  // (wgmma's packed operands, a tuned config's split-K), asked of the caller already, so that the landed plan
  // fits the workspace it sized (plan_memo.h keeps a plan that does not, for the process).
  uint64_t reserve_bytes = 0;
};

// The tiled kernel's config for `p` (forced, tuned once per shape class, or the default) and, with `engine_tuned`,
// whether the wgmma path runs it instead (gemm_choice.cpp).
TileChoice choose_tile(const Context& ctx, const Plan& p, bool engine_tuned);

} // namespace detail
} // namespace dlprim
