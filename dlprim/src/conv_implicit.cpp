// Implicit-GEMM convolution forward: the tiled GEMM skeleton with a patch-gathering B operand
// (kernels/conv_implicit.cl), and the autotuning that picks its tile config or the im2col path.
#include <dlprim/autotune.h>
#include <dlprim/embedded.h>

#include "conv_internal.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

namespace dlprim {
namespace detail {

namespace {

const char* kIm2col = "im2col";

std::string bucket(int64_t v) {
  int b = 0;
  for (int64_t lim = 16; v > lim && b < 6; lim *= 4) ++b;
  return std::to_string(b);
}

// Patch offsets per k = (ci, kh, kw), one table per geometry and input strides, kept for the
// context's lifetime (a few KB each).
cl_mem patch_table(const Context& ctx, const ConvShape& s, const ConvTensor& x) {
  static std::mutex mutex;
  static std::map<std::string, cl_mem> tables;
  std::ostringstream key;
  key << ctx.context() << "|" << s.C / s.groups << "," << s.KH << "," << s.KW << "," << s.dh << "," << s.dw << "|"
      << x.sc << "," << x.sh << "," << x.sw;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = tables.find(key.str());
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
  tables[key.str()] = m;
  return m;
}

LockedKernel& implicit_kernel(const Context& ctx, DType dtype, const TileConfig& cfg) {
  LockedKernel& slot = kernel_slot(ctx, std::string("conv_implicit|") + dtype_name(dtype) + "|" + cfg.str());
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k) {
    std::string text = gemm_program_head(dtype) + tile_defines(cfg, dtype, true, true, "conv_implicit_fwd") +
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

bool implicit_fits(const TileConfig& c) { return c.local && c.threads() % c.bn == 0; }

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
  LockedKernel& slot = implicit_kernel(ctx, dtype, cfg);
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

// Times the candidates (implicit tile configs, im2col) on scratch tensors of the layer's shape
// (batch capped), by wall clock around a finished queue: the im2col path is several launches.
class ConvTuner {
public:
  ConvTuner(const Context& ctx, const ConvShape& s, DType dtype) : ctx_(ctx), s_(s), dtype_(dtype) {
    s_.N = std::min<int64_t>(s.N, 8);
  }
  ~ConvTuner() {
    for (cl_mem m : {x_, w_, y_, ws_})
      if (m) clReleaseMemObject(m);
    if (q_) clReleaseCommandQueue(q_);
  }
  double time_us(const std::string& cand) {
    setup();
    ConvTensor x{x_, 0, s_.C * s_.H * s_.W, s_.H * s_.W, s_.W, 1};
    ConvTensor y{y_, 0, s_.K * s_.OH * s_.OW, s_.OH * s_.OW, s_.OW, 1};
    ConvBuffer w{w_, 0}, none;
    TileConfig cfg;
    SplitPlan split;
    uint64_t need = 0;
    bool implicit = cand != kIm2col;
    if (implicit) {
      if (!TileConfig::parse(cand, &cfg)) return -1;
      split = split_of(ctx_, s_, dtype_, cfg);
      need = split.workspace_bytes;
    } else {
      need = im2col_forward_workspace(ctx_, s_, dtype_, x, y);
    }
    if (need > ws_bytes_) {
      if (ws_) clReleaseMemObject(ws_);
      ws_ = alloc(need);
      ws_bytes_ = need;
    }
    auto run = [&]() {
      if (implicit)
        run_implicit(ctx_, q_, cfg, split, s_, dtype_, x, w, none, y, ws_, 0, nullptr);
      else
        im2col_forward(ctx_, q_, s_, dtype_, x, w, none, y, ws_, 0);
    };
    run();  // warm-up (builds programs)
    DLPRIM_CL_CHECK(clFinish(q_));
    double best = -1;
    for (int r = 0; r < 3; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      run();
      DLPRIM_CL_CHECK(clFinish(q_));
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      best = best < 0 ? us : std::min(best, us);
    }
    return best;
  }

private:
  cl_mem alloc(uint64_t bytes) {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx_.context(), CL_MEM_READ_WRITE, std::max<uint64_t>(bytes, 16), nullptr, &err);
    DLPRIM_CL_CHECK(err);
    float zero = 0;
    DLPRIM_CL_CHECK(clEnqueueFillBuffer(q_, m, &zero, sizeof(zero), 0, std::max<uint64_t>(bytes, 16) / 4 * 4, 0,
                                        nullptr, nullptr));
    return m;
  }
  void setup() {
    if (q_) return;
    q_ = ctx_.create_queue();
    size_t es = dtype_size(dtype_);
    x_ = alloc(static_cast<uint64_t>(s_.N) * s_.C * s_.H * s_.W * es);
    w_ = alloc(static_cast<uint64_t>(s_.K) * (s_.C / s_.groups) * s_.KH * s_.KW * es);
    y_ = alloc(static_cast<uint64_t>(s_.N) * s_.K * s_.OH * s_.OW * es);
  }

  const Context& ctx_;
  ConvShape s_;
  DType dtype_;
  cl_command_queue q_ = nullptr;
  cl_mem x_ = nullptr, w_ = nullptr, y_ = nullptr, ws_ = nullptr;
  uint64_t ws_bytes_ = 0;
};

} // namespace

ImplicitPlan implicit_forward_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& x,
                                   const ConvTensor& y) {
  ImplicitPlan p;
  // CPU devices: im2col feeds the SIMD GEMM kernels, which beat per-element gathers there.
  const char* env = std::getenv("PYTORCH_OCL_CONV_IMPLICIT");
  if (ctx.info().is_cpu && !(env && std::string(env) == "1")) return p;
  if (env && std::string(env) == "0") return p;
  if (s.H != 1 && x.sh != s.W * x.sw) return p;  // odd views: im2col gathers any strides
  (void)y;
  DType acc = compute_dtype(dtype);
  int64_t Mg = s.K / s.groups, npix = s.OH * s.OW, Kg = s.C / s.groups * s.KH * s.KW;
  TileConfig fallback = default_tile_config(ctx, acc, Mg, npix);
  if (!implicit_fits(fallback)) fallback = {32, 32, 16, 8, 8, 4, 4, 1};
  std::string chosen = tile_config_fits(ctx, fallback, acc) ? fallback.str() : kIm2col;
  TileConfig forced;
  const char* forced_env = std::getenv("PYTORCH_OCL_GEMM_CONFIG");
  if (forced_env && TileConfig::parse(forced_env, &forced) && implicit_fits(forced) && tile_config_fits(ctx, forced, acc)) {
    chosen = forced.str();
  } else if (autotune_mode() != TuneMode::Off) {
    std::vector<std::string> cands;
    for (const auto& c : tile_candidates(ctx, acc))
      if (implicit_fits(c)) cands.push_back(c.str());
    if (cands.empty()) return p;
    cands.push_back(kIm2col);
    std::ostringstream cls;
    cls << dtype_name(dtype) << "|M" << bucket(Mg) << "|N" << bucket(npix) << "|K" << bucket(Kg) << "|k" << s.KH << "x"
        << s.KW << "|s" << (s.sh > 1 || s.sw > 1 ? 2 : 1) << "|Z" << (s.N * s.groups > 1 ? 1 : 0);
    ConvTuner tuner(ctx, s, dtype);
    chosen = autotune_select(ctx, "conv_fwd", cls.str(), cands, chosen,
                             [&](const std::string& c) { return tuner.time_us(c); });
  }
  if (chosen == kIm2col || !TileConfig::parse(chosen, &p.cfg)) return p;
  p.use = true;
  p.split = split_of(ctx, s, dtype, p.cfg);
  return p;
}

void implicit_forward(const Context& ctx, cl_command_queue q, const ImplicitPlan& plan, const ConvShape& s,
                      DType dtype, const ConvTensor& x, const ConvBuffer& w, const ConvBuffer& bias,
                      const ConvTensor& y, cl_mem ws, uint64_t ws_offset) {
  run_implicit(ctx, q, plan.cfg, plan.split, s, dtype, x, w, bias, y, ws, ws_offset, nullptr);
}

} // namespace detail
} // namespace dlprim
