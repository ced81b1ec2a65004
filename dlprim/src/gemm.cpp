// GEMM host side: normalises the operands, picks a path (tiled / small / dot / wgmma), plans split-K and the
// workspace, and launches; the tiled kernel's config and the engine come from gemm_choice.cpp.
#include <dlprim/env.h>
#include <dlprim/autotune.h>
#include <dlprim/int_math.h>
#include <dlprim/embedded.h>
#include <dlprim/gemm.h>
#include <dlprim/program_cache.h>

#include "gemm_plan.h"
#include "gemm_wgmma.h"
#include "plan_memo.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>

namespace dlprim {

using detail::TileConfig;
using detail::Vec4;
using detail::tiled_kernel;
using detail::vec4_operands;
using detail::whole_tiles;
using detail::check_supported;
using detail::class_bucket;
using detail::matrix_layout;
using detail::transposed;

using detail::Path;
using detail::Plan;
using detail::base_plan;
using detail::TileChoice;
using detail::wants_packed_b;

namespace detail {

Plan base_plan(const Context& ctx, const Gemm& in) {
  check_supported(ctx, in);
  Plan p;
  p.g = in;
  Gemm& g = p.g;
  if (g.M == 0 || g.N == 0 || detail::gemm_zcount(g) == 0) return p;
  if (g.alpha == 0 && g.alpha_zero_skips) g.k_outer = 0;  // BLAS semantics: the product is not evaluated
  // Write C along its unit stride: C^T = B^T A^T when C is column-major.
  if (g.c.col_stride != 1 && g.c.row_stride == 1 && g.N > 1) {
    std::swap(g.M, g.N);
    GemmMatrix a = g.a;
    g.a = transposed(g.b);
    g.b = transposed(a);
    g.c = transposed(g.c);
    g.d = transposed(g.d);
  }
  bool a_row = true, b_row = true;
  if (!matrix_layout(g.M, g.K, g.a.row_stride, g.a.col_stride, &a_row, &p.lda) ||
      !matrix_layout(g.K, g.N, g.b.row_stride, g.b.col_stride, &b_row, &p.ldb))
    throw Error("gemm: an operand has no unit stride (make it contiguous first)");
  p.a_kc = a_row;
  p.b_nc = b_row;
  int64_t ld_max = std::max(std::abs(p.lda), std::abs(p.ldb));
  p.idx64 = ld_max > (int64_t(1) << 22);  // 256 * ld + 256 must fit in int for any candidate tile
  int64_t Ktot = g.K * g.k_outer;
  uint64_t work = static_cast<uint64_t>(g.M) * g.N * std::max<int64_t>(Ktot, 1) * detail::gemm_zcount(g);
  if (Ktot == 0 || !is_floating(g.dtype)) {
    p.path = Path::Small;  // integers: exact products, wrapping as the CPU's, no tuned tiles
  } else if (std::min(g.M, g.N) <= 4) {
    if (Ktot >= 64 && ((g.N <= 4 && p.a_kc) || (g.M <= 4 && !p.b_nc)))
      p.path = Path::Dot;
    else
      p.path = Path::Small;
  } else if (work <= 32 * 32 * 32) {
    p.path = Path::Small;
  } else {
    p.path = Path::Tiled;
  }
  if (p.path == Path::Small) {
    // Adjacent work-items along the dim whose operand is then read (or written) contiguously.
    if (p.b_nc != !p.a_kc) p.small_nfast = p.b_nc;
    else p.small_nfast = g.N >= g.M;
    if ((p.small_nfast ? g.M : g.N) > 65535) p.small_nfast = !p.small_nfast;
  } else if (p.path == Path::Dot && ctx.info().is_cpu) {
    p.dot_local = 0;
  } else if (p.path == Path::Dot) {
    size_t L = 1, cap = std::min<size_t>(256, ctx.work_group_size(256));
    while (L * 2 <= cap && static_cast<int64_t>(L * 2) <= Ktot) L *= 2;
    p.dot_local = L;
  }
  return p;
}

void run_tiled(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t lda, int64_t ldb, const TileConfig& cfg,
               const SplitPlan& split, LockedKernel& slot, cl_mem ws, uint64_t ws_off, std::vector<cl_event>* events) {
  int64_t z = detail::gemm_zcount(g);
  bool partial = split.splits > 1;
  {
    std::lock_guard<std::mutex> lock(slot.m);
    KernelArgs a(slot.k);
    a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.K));
    a.add<cl_int>(split.ksteps).add<cl_int>(split.total_steps).add<cl_int>(split.steps_per_split);
    a.add<cl_int>(split.splits).add<cl_int>(static_cast<int>(g.groups));
    a.add(g.a.mem).add<cl_ulong>(g.a.offset).add<cl_long>(lda).add<cl_long>(g.a.batch_stride);
    a.add<cl_long>(g.a.group_stride).add<cl_long>(g.a.outer_stride);
    a.add(g.b.mem).add<cl_ulong>(g.b.offset).add<cl_long>(ldb).add<cl_long>(g.b.batch_stride);
    a.add<cl_long>(g.b.group_stride).add<cl_long>(g.b.outer_stride);
    detail::add_out_args(a, g);
    size_t acc_size = dtype_size(compute_dtype(g.dtype));
    a.add(partial ? ws : g.c.mem).add<cl_ulong>(partial ? ws_off / acc_size : 0).add<cl_int>(partial ? 1 : 0);
    detail::launch_tiled(q, slot.k, cfg, g.M, g.N, z * split.splits, events);
  }
  if (partial) detail::launch_split_reduce(ctx, q, g, split.splits, z, ws, ws_off / dtype_size(compute_dtype(g.dtype)), events);
}

void plan_tiles(const Context& ctx, Plan* q, const TileConfig& cfg) {
  const Gemm& g = q->g;
  q->cfg = cfg;
  q->split = plan_splits(ctx, cfg, g.M, g.N, g.K, g.k_outer, gemm_zcount(g), compute_dtype(g.dtype));
  q->pack_bytes = 0;
  if (wants_packed_b(cfg, q->b_nc, g.M)) {
    uint64_t bytes = static_cast<uint64_t>(g.K) * g.N * g.k_outer * gemm_zcount(g) * dtype_size(g.dtype);
    if (bytes <= (256ull << 20)) q->pack_bytes = bytes;
  }
}

} // namespace detail

namespace {

Plan make_plan(const Context& ctx, const Gemm& in) {
  Plan p = base_plan(ctx, in);
  if (p.path != Path::Tiled) return p;
  const Gemm& g = p.g;
  const detail::WgmmaUse wg = detail::wgmma_use(ctx, g);
  if (wg == detail::WgmmaUse::Yes) {
    p.path = Path::Wgmma;
    p.wgmma_bytes = detail::wgmma_workspace_bytes(ctx, g);
    return p;
  }
  p.mma = detail::mma_choice(ctx, g.dtype, g.fp32_math);
  static detail::PlanMemo<11, TileChoice> memo;
  int64_t mma_key = static_cast<int64_t>(p.mma.kind) * 2 + (p.mma.emulate ? 1 : 0);
  auto with = [&](const TileChoice& t) {
    Plan q = p;
    q.reserve_bytes = t.reserve_bytes;
    if (t.wgmma) {
      q.path = Path::Wgmma;
      q.wgmma_bytes = detail::wgmma_workspace_bytes(ctx, g);
      return q;
    }
    detail::plan_tiles(ctx, &q, t.cfg);
    q.cfg_text = t.text;
    return q;
  };
  // A deferred tuning's decision replaces a remembered fallback only where the caller's workspace, sized
  // for the fallback's plan, still holds the new one (plan_memo.h).
  const bool engine_tuned = wg == detail::WgmmaUse::Tune;
  TileChoice t = memo.get({detail::key_of(ctx), static_cast<int64_t>(g.dtype), p.a_kc, p.b_nc, g.M, g.N, g.K,
                           g.k_outer, detail::gemm_zcount(g), mma_key, engine_tuned},
                          [&] { return choose_tile(ctx, p, engine_tuned); },
                          [&](const TileChoice& old, const TileChoice& now) {
                            return (old.text == now.text && old.wgmma == now.wgmma) ||
                                   with(now).workspace_bytes() <= with(old).workspace_bytes();
                          });
  return with(t);
}

} // namespace
uint64_t gemm_workspace_bytes(const Context& ctx, const Gemm& g) { return make_plan(ctx, g).workspace_bytes(); }

void gemm(const Context& ctx, cl_command_queue q, const Gemm& in, cl_mem workspace, uint64_t workspace_offset) {
  Plan p = make_plan(ctx, in);
  switch (p.path) {
    case Path::Empty:
      return;
    case Path::Small:
      detail::run_gemm_small(ctx, q, p.g, p.small_nfast);
      break;
    case Path::Dot:
      detail::run_gemm_dot(ctx, q, p.g, p.dot_local);
      break;
    case Path::Wgmma:
      if (!workspace) throw Error("gemm: missing workspace");
      detail::run_gemm_wgmma(ctx, q, p.g, workspace, workspace_offset);
      break;
    case Path::Tiled: {
      if (p.workspace_bytes() && !workspace) throw Error("gemm: missing workspace");
      bool b_nc = p.b_nc;
      int64_t ldb = p.ldb;
      if (p.pack_bytes) {
        detail::pack_gemm_b(ctx, q, p.g, workspace, workspace_offset);
        b_nc = true;
        ldb = p.g.N;
      }
      bool idx64 = p.idx64 || ldb > (int64_t(1) << 22);
      Vec4 vec = vec4_operands(p.cfg, p.g, p.a_kc, p.lda, b_nc, ldb);
      detail::LockedKernel& slot =
          tiled_kernel(ctx, p.g.dtype, detail::gemm_out_dtype(p.g), p.cfg, *p.cfg_text, p.mma, p.a_kc, b_nc, idx64, vec);
      detail::run_tiled(ctx, q, p.g, p.lda, ldb, p.cfg, p.split, slot, workspace, workspace_offset + p.pack_space(),
                           nullptr);
      break;
    }
  }
  detail::launch_activation(ctx, q, p.g, detail::gemm_zcount(p.g));
}

std::string gemm_plan_description(const Context& ctx, const Gemm& g) {
  Plan p = make_plan(ctx, g);
  // an interim choice's workspace asked beyond its own (TileChoice::reserve_bytes)
  const std::string reserve = p.reserve_bytes ? " reserve=" + std::to_string(p.reserve_bytes) : std::string();
  switch (p.path) {
    case Path::Empty: return "empty";
    case Path::Small: return std::string("small ") + (p.small_nfast ? "n-fast" : "m-fast");
    case Path::Dot: return p.dot_local ? "dot local=" + std::to_string(p.dot_local) : std::string("dot per-item");
    case Path::Wgmma: return detail::wgmma_description(ctx, p.g) + reserve;
    case Path::Tiled: {
      Vec4 v = vec4_operands(p.cfg, p.g, p.a_kc, p.lda, p.b_nc, p.ldb);
      return "tiled " + p.cfg.str() + (p.cfg.mma ? " " + p.mma.str() : std::string()) + " splits=" + std::to_string(p.split.splits) + (p.idx64 ? " idx64" : "") +
             (p.pack_bytes ? " packed-B" : "") + (v.a || v.b ? std::string(" vec4=") + (v.a ? "A" : "") + (v.b ? "B" : "") : "") +
             (v.full ? " whole-tiles" : "") + reserve;
    }
  }
  return "";
}

} // namespace dlprim
