// Implicit-GEMM convolution forward: the tiled GEMM skeleton with a patch-gathering B operand
// (kernels/conv_implicit.cl), and the autotuning that picks its tile config or the im2col path.
#include <dlprim/env.h>
#include <dlprim/autotune.h>
#include <dlprim/embedded.h>

#include "conv_internal.h"
#include "plan_memo.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace dlprim {
namespace detail {

namespace {

const char* kIm2col = "im2col";
const char* kWinograd = "winograd";

// Patch offsets per k = (ci, kh, kw), one table per geometry and input strides, kept for the
// context's lifetime (a few KB each).
cl_mem patch_table(const Context& ctx, const ConvShape& s, const ConvTensor& x) {
  static std::mutex mutex;
  static std::map<std::array<int64_t, 9>, cl_mem> tables;
  std::array<int64_t, 9> key{key_of(ctx), s.C / s.groups, s.KH, s.KW, s.dh, s.dw, x.sc, x.sh, x.sw};
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tables.find(key);
  if (it != tables.end()) return it->second;
  int64_t kg = s.C / s.groups * s.KH * s.KW;
  std::vector<cl_int4> tab(static_cast<size_t>(std::max<int64_t>(kg, 1)));
  for (int64_t k = 0; k < kg; ++k) {
    int64_t ci = k / (s.KH * s.KW), r = k % (s.KH * s.KW), kh = r / s.KW, kw = r % s.KW;
    int64_t off = ci * x.sc + kh * s.dh * x.sh + kw * s.dw * x.sw;
    if (off > 0x7fffffff || off < -0x7fffffff) throw Error("conv2d: input strides too large for the patch table");
    tab[k].s[0] = static_cast<cl_int>(off);
    tab[k].s[1] = static_cast<cl_int>(kh * s.dh);
    tab[k].s[2] = static_cast<cl_int>(kw * s.dw);
    tab[k].s[3] = 0;
  }
  cl_int err = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, tab.size() * sizeof(cl_int4),
                            tab.data(), &err);
  DLPRIM_CL_CHECK(err);
  tables[key] = m;
  return m;
}

// The matrix-engine variant (gemm_mma.cl with conv_implicit.cl's hooks) joins the tuning wherever the layer's math
// has a matrix engine (on the H200 the tuner takes it for resnet50's 7x7 stem and a 3x3 stride-2 layer, 20-30%
// faster than the FMA implicit kernel there); PYTORCH_OCL_CONV_IMPLICIT_MMA=0 leaves it out.
bool implicit_mma_enabled() {
  const char* e = env_value("PYTORCH_OCL_CONV_IMPLICIT_MMA");
  return !(e && std::string(e) == "0");
}

LockedKernel& implicit_kernel(const Context& ctx, DType dtype, const TileConfig& cfg, Fp32Math math) {
  const MmaChoice m = cfg.mma ? mma_choice(ctx, dtype, math) : MmaChoice();
  if (cfg.mma && !m) throw Error("conv2d: tile config " + cfg.str() + " needs a matrix engine this device lacks");
  LockedKernel& slot =
      kernel_slot(ctx, std::string("conv_implicit|") + dtype_name(dtype) + "|" + cfg.str() + "|" + m.str());
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) {
    std::string text = cfg.mma ? gemm_program_head(dtype) + mma_defines(cfg, m, "conv_implicit_fwd") +
                                     kernel_source("conv_implicit") + kernel_source("mma_common") +
                                     kernel_source("gemm_mma")
                               : gemm_program_head(dtype) + tile_defines(cfg, dtype, true, true, "conv_implicit_fwd") +
                                     kernel_source("conv_implicit") + kernel_source("gemm_tiled");
    cl_kernel k = create_kernel(ctx.program(text), "conv_implicit_fwd");
    if (kernel_max_work_group(ctx, k) < static_cast<size_t>(cfg.threads())) {
      clReleaseKernel(k);
      throw Error("conv2d: tile config " + cfg.str() + " needs more resources than the device has");
    }
    slot.k = k;
  }
  return slot;
}

// Tiled configs: local memory, whole rows of work-items per tile column (one pixel per work-item).
// Matrix-engine configs (only with `mma`, the engine the layer may use: none unless enabled):
// registers staging (no cp.async: the patches are gathered element by element), and a work-group size
// that is a multiple of BN / unit, so each work-item stages fixed columns.
bool implicit_fits(const Context& ctx, const TileConfig& c, DType acc, MmaChoice mma) {
  if (!c.mma) return c.local && c.threads() % c.bn == 0 && tile_config_fits(ctx, c, acc);
  return mma && !c.async && c.threads() % (c.bn / mma_unit_elements(mma)) == 0 && mma_config_fits(ctx, c, mma);
}

SplitPlan split_of(const Context& ctx, const ConvShape& s, DType dtype, const TileConfig& cfg) {
  return plan_splits(ctx, cfg, s.K / s.groups, s.OH * s.OW, s.C / s.groups * s.KH * s.KW, 1, s.N * s.groups,
                     compute_dtype(dtype));
}

// The GEMM view of the output (C) and bias (D) for the epilogue.
Gemm output_gemm(const ConvShape& s, DType dtype, const ConvBuffer& bias, const ConvTensor& y) {
  int64_t Mg = s.K / s.groups;
  Gemm g;
  g.dtype = dtype;
  g.M = Mg;
  g.N = s.OH * s.OW;
  g.K = s.C / s.groups * s.KH * s.KW;
  g.batch = s.N;
  g.groups = s.groups;
  g.c = {y.mem, y.offset, y.sc, y.sw, y.sn, Mg * y.sc, 0};
  if (bias.mem) {
    g.has_d = true;
    g.beta = 1;
    g.d = {bias.mem, bias.offset, 1, 0, 0, Mg, 0};
  }
  return g;
}

void run_implicit(const Context& ctx, cl_command_queue q, const TileConfig& cfg, const SplitPlan& split,
                  const ConvShape& s, DType dtype, const ConvTensor& x, const ConvBuffer& w, const ConvBuffer& bias,
                  const ConvTensor& y, cl_mem ws, uint64_t ws_offset, std::vector<cl_event>* events) {
  LockedKernel& slot = implicit_kernel(ctx, dtype, cfg, s.fp32_math);
  cl_mem tab = patch_table(ctx, s, x);
  Gemm g = output_gemm(s, dtype, bias, y);
  int64_t Mg = g.M, Kg = g.K, Cg = s.C / s.groups, z = s.N * s.groups;
  bool partial = split.splits > 1;
  size_t acc_size = dtype_size(compute_dtype(dtype));
  {
    std::lock_guard<std::mutex> lock(slot.m);
    KernelArgs a(slot.k);
    a.add<cl_int>(static_cast<int>(g.M)).add<cl_int>(static_cast<int>(g.N)).add<cl_int>(static_cast<int>(g.K));
    a.add<cl_int>(split.ksteps).add<cl_int>(split.total_steps).add<cl_int>(split.steps_per_split);
    a.add<cl_int>(split.splits).add<cl_int>(static_cast<int>(s.groups));
    a.add(w.mem).add<cl_ulong>(w.offset).add<cl_long>(Kg).add<cl_long>(Mg * Kg);
    a.add(x.mem).add<cl_ulong>(x.offset).add<cl_long>(x.sn).add<cl_long>(Cg * x.sc).add<cl_long>(x.sh).add<cl_long>(x.sw);
    a.add(tab).add<cl_int>(static_cast<int>(s.H)).add<cl_int>(static_cast<int>(s.W)).add<cl_int>(static_cast<int>(s.OW));
    a.add<cl_int>(static_cast<int>(s.sh)).add<cl_int>(static_cast<int>(s.sw));
    a.add<cl_int>(static_cast<int>(s.ph)).add<cl_int>(static_cast<int>(s.pw));
    add_out_args(a, g);
    a.add(partial ? ws : y.mem).add<cl_ulong>(partial ? ws_offset / acc_size : 0).add<cl_int>(partial ? 1 : 0);
    launch_tiled(q, slot.k, cfg, g.M, g.N, z * split.splits, events);
  }
  if (partial) launch_split_reduce(ctx, q, g, split.splits, z, ws, ws_offset / acc_size, events);
}

// Times a forward candidate (an implicit tile config, "im2col" or "winograd") on scratch tensors
// of the layer's shape, by wall clock around a finished queue: some paths are several launches.
double time_forward(const Context& ctx, ConvScratch& scratch, DType dtype, const std::string& cand) {
  const ConvShape& s = scratch.shape();
  ConvTensor x = scratch.x(), y = scratch.y();
  ConvBuffer w = scratch.w(), none;
  if (cand == kWinograd) {
    WinoConv c = winograd_forward_conv(s);
    return scratch.time_us(winograd_workspace(ctx, c, dtype), [&](cl_command_queue q, cl_mem ws) {
      winograd_run(ctx, q, c, dtype, x, w, none, y, ws, 0);
    });
  }
  if (cand == kIm2col)
    return scratch.time_us(im2col_forward_workspace(ctx, s, dtype, x, y), [&](cl_command_queue q, cl_mem ws) {
      im2col_forward(ctx, q, s, dtype, x, w, none, y, ws, 0);
    });
  TileConfig cfg;
  if (!TileConfig::parse(cand, &cfg)) return -1;
  SplitPlan split = split_of(ctx, s, dtype, cfg);
  return scratch.time_us(split.workspace_bytes, [&](cl_command_queue q, cl_mem ws) {
    run_implicit(ctx, q, cfg, split, s, dtype, x, w, none, y, ws, 0, nullptr);
  });
}

} // namespace

// The forward path of a convolution: forced, tuned once per shape class, or im2col.
static ImplicitPlan choose_implicit_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x) {
  ImplicitPlan p;
  bool wino = winograd_eligible(s) && winograd_env() != 0;
  if (wino && winograd_env() == 1) {
    p.winograd = true;
    return p;
  }
  std::vector<std::string> cands;
  std::string chosen = kIm2col;
  // CPU devices: im2col feeds the SIMD GEMM kernels, which beat per-element gathers there (random
  // tuning still draws implicit configs on CPUs: the paths GPU users get are tested in CI).
  const char* env = env_value("PYTORCH_OCL_CONV_IMPLICIT");
  bool cpu_default = ctx.info().is_cpu && autotune_mode() != TuneMode::Random;
  bool implicit = !(cpu_default && !(env && std::string(env) == "1")) && !(env && std::string(env) == "0") &&
                  (s.H == 1 || x.sh == s.W * x.sw);  // odd views: im2col gathers any strides
  DType acc = compute_dtype(dtype);
  int64_t Mg = s.K / s.groups, npix = s.OH * s.OW, Kg = s.C / s.groups * s.KH * s.KW;
  TileConfig forced;
  const char* forced_env = env_value("PYTORCH_OCL_GEMM_CONFIG");
  const MmaChoice mma = implicit && implicit_mma_enabled() ? mma_choice(ctx, dtype, s.fp32_math) : MmaChoice();
  if (implicit) {
    TileConfig fallback = default_tile_config(ctx, acc, Mg, npix);
    if (!implicit_fits(ctx, fallback, acc, mma)) fallback = {32, 32, 16, 8, 8, 4, 4, 1};
    if (tile_config_fits(ctx, fallback, acc)) chosen = fallback.str();
    if (forced_env && TileConfig::parse(forced_env, &forced) && implicit_fits(ctx, forced, acc, mma)) {
      chosen = forced.str();
      wino = false;
    } else {
      for (const auto& c : tile_candidates(ctx, acc))
        if (implicit_fits(ctx, c, acc, mma)) cands.push_back(c.str());
      if (mma)
        for (const auto& c : mma_candidates(ctx, mma))
          if (implicit_fits(ctx, c, acc, mma)) cands.push_back(c.str());
    }
  }
  if (!cands.empty() || wino) {
    // Random tuning (tests): the kind is drawn first (im2col, implicit, Winograd equally likely: among
    // ~25 candidates Winograd would hardly ever be drawn), then the shuffled tuner takes the first
    // implicit config that builds and runs (on a GPU many float64 configs exceed the registers, so a
    // single config drawn blind would leave the implicit path untested there).
    std::string problem = std::to_string(s.N) + "x" + std::to_string(s.C) + "x" + std::to_string(s.H) + "x" +
                          std::to_string(s.W) + "x" + std::to_string(s.K) + "x" + std::to_string(s.KH);
    const bool has_implicit = !cands.empty();
    int kind = tune_variant("conv_fwd_kind|" + problem, 1 + (has_implicit ? 1 : 0) + (wino ? 1 : 0));
    if (kind < 0) {  // tuning proper: every kind competes
      cands.push_back(kIm2col);
      if (wino) cands.push_back(kWinograd);
    } else if (kind == 0) {
      cands = {kIm2col};
    } else if (kind == 1 && has_implicit) {
      chosen = kIm2col;  // taken if no implicit config runs here
    } else {
      cands = {kWinograd};
    }
    if (autotune_mode() != TuneMode::Off) {
      std::ostringstream cls;
      cls << conv_arith_name(s, dtype) << "|M" << shape_bucket(Mg) << "|N" << shape_bucket(npix) << "|K" << shape_bucket(Kg)
          << "|k" << s.KH << "x" << s.KW << "|s" << (s.sh > 1 || s.sw > 1 ? 2 : 1) << "|Z"
          << batch_bucket(s.N * s.groups) << (wino ? "|w" : "") << (implicit ? "" : "|noimp") << (mma ? "|mma" : "");
      ConvScratch scratch(ctx, s, dtype);
      // Prepared in parallel: the implicit configs' kernels, im2col's and Winograd's programs (the GEMM of
      // im2col is tuned on its own when im2col is timed).
      const Context* c_ptr = &ctx;
      const Fp32Math math = s.fp32_math;
      auto prepare = [c_ptr, dtype, math](const std::string& c) {
        TileConfig cfg;
        if (c == kIm2col) im2col_prepare(*c_ptr, dtype);
        else if (c == kWinograd) winograd_prepare(*c_ptr, dtype);
        else if (TileConfig::parse(c, &cfg)) implicit_kernel(*c_ptr, dtype, cfg, math);
      };
      // Deferred tuning (cold start): the default runs while the candidates build in the background.
      TuneDeferral defer;
      if (kind < 0) defer.prepare = prepare;
      chosen = autotune_select(ctx, "conv_fwd", cls.str(), cands, chosen,
                               [&](const std::string& c) { return time_forward(ctx, scratch, dtype, c); }, prepare,
                               &defer);
    }
  }
  if (chosen == kWinograd) {
    p.winograd = true;
    return p;
  }
  if (chosen == kIm2col || !TileConfig::parse(chosen, &p.cfg)) return p;
  p.use = true;
  p.split = split_of(ctx, s, dtype, p.cfg);
  return p;
}

ImplicitPlan implicit_forward_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                   const ConvTensor& y) {
  static PlanMemo<20, ImplicitPlan> memo;
  // The forward pass's workspace under plan `p` (conv2d_workspace_bytes sizes it so): a deferred tuning's
  // decision replaces a remembered fallback only where it fits (plan_memo.h).
  auto workspace = [&](const ImplicitPlan& p) {
    if (p.winograd) return winograd_workspace(ctx, winograd_forward_conv(s), dtype);
    return p.use ? p.split.workspace_bytes : im2col_forward_workspace(ctx, s, dtype, x, y);
  };
  return memo.get({key_of(ctx), conv_arith_key(s, dtype), s.N, s.C, s.H, s.W, s.K, s.KH, s.KW, s.OH, s.OW, s.sh,
                   s.sw, s.ph, s.pw, s.dh, s.dw, s.groups, x.sh, x.sw},
                  [&] { return choose_implicit_plan(ctx, s, dtype, x); },
                  [&](const ImplicitPlan& old, const ImplicitPlan& now) { return workspace(now) <= workspace(old); });
}

void implicit_forward(const Context& ctx, cl_command_queue q, const ImplicitPlan& plan, const ConvShape& s,
                      DType dtype, const ConvTensor& x, const ConvBuffer& w, const ConvBuffer& bias,
                      const ConvTensor& y, cl_mem ws, uint64_t ws_offset) {
  run_implicit(ctx, q, plan.cfg, plan.split, s, dtype, x, w, bias, y, ws, ws_offset, nullptr);
}

} // namespace detail
} // namespace dlprim
