// GEMM host side: normalises the operands, picks a path (tiled / small / dot), tunes the tiled
// kernel's parameters per shape class, and launches.
#include <dlprim/env.h>
#include <dlprim/autotune.h>
#include <dlprim/int_math.h>
#include <dlprim/embedded.h>
#include <dlprim/gemm.h>
#include <dlprim/program_cache.h>

#include "gemm_internal.h"
#include "gemm_tiled_kernel.h"
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

namespace {

enum class Path { Empty, Small, Dot, Tiled, Wgmma };

struct Plan {
  Path path = Path::Empty;
  Gemm g;                      // normalised: C has a unit stride along n where possible
  bool a_kc = true, b_nc = true;  // A unit-stride along k / B along n
  int64_t lda = 0, ldb = 0;
  bool idx64 = false;
  detail::MmaChoice mma;      // the matrix engine the tiled path runs on (cfg.mma set), if any
  TileConfig cfg;
  const std::string* cfg_text = nullptr;  // cfg.str(), interned (names the kernel)
  detail::SplitPlan split;
  bool small_nfast = true;
  size_t dot_local = 1;     // 0: the CPU dot kernel (one work-item per output)
  uint64_t pack_bytes = 0;  // B repacked n-contiguous for the CPU vector kernels (0: not packed)
  uint64_t pack_space() const { return (pack_bytes + 255) / 256 * 256; }
  uint64_t wgmma_bytes = 0;  // Path::Wgmma: the packed operands
  uint64_t reserve_bytes = 0;  // asked of callers beyond what the path uses (TileChoice::reserve_wgmma)
  uint64_t workspace_bytes() const {
    return std::max(reserve_bytes,
                    path == Path::Tiled ? pack_space() + split.workspace_bytes : path == Path::Wgmma ? wgmma_bytes : 0);
  }
};

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

// CPU vector kernels read B along n; a B contiguous along k is first repacked (O(K*N) next to
// the O(M*N*K) product) unless M is too small for that to pay.
bool wants_packed_b(const TileConfig& cfg, bool b_nc, int64_t M) { return !cfg.local && cfg.vn > 1 && !b_nc && M >= 16; }

// Times `cfg` on a scratch problem shaped like `p` (same layouts, sizes capped).
class TileTuner {
public:
  TileTuner(const Context& ctx, const Plan& p) : ctx_(ctx), p_(p) {
    bool cpu = ctx.info().is_cpu;
    uint64_t cap = cpu ? (1ull << 26) : (1ull << 34);  // multiply-adds per timing run
    rM_ = std::min<int64_t>(p.g.M, 4096);
    rN_ = std::min<int64_t>(p.g.N, 4096);
    rK_ = std::min<int64_t>(p.g.K * p.g.k_outer, 8192);
    // GPUs: shorten K first, since the grid -- how many waves of work-groups fill the device,
    // which decides between tile sizes -- depends on M and N only (4096^3 timed as 2048^3
    // picked 128x64 tiles, 0.73 of cuBLAS, over 128x128 ones).
    while (static_cast<uint64_t>(rM_) * rN_ * rK_ > cap) {
      if (!cpu && rK_ > 512) rK_ = (rK_ + 1) / 2;
      else if (rK_ >= rM_ && rK_ >= rN_) rK_ = (rK_ + 1) / 2;
      else if (rM_ >= rN_) rM_ = (rM_ + 1) / 2;
      else rN_ = (rN_ + 1) / 2;
    }
    uint64_t per = static_cast<uint64_t>(rM_) * rN_ * rK_;
    rZ_ = std::max<int64_t>(1, std::min<int64_t>(detail::gemm_zcount(p.g), static_cast<int64_t>(cap / per)));
    reps_ = cpu ? 1 : 3;
  }
  ~TileTuner() {
    for (cl_mem m : {a_, b_, c_, ws_})
      if (m) clReleaseMemObject(m);
    if (q_) clReleaseCommandQueue(q_);
  }

  // The kernel time_us(cfg) runs, built; only reads the plan, so the tuner's build threads call it.
  detail::LockedKernel& kernel(const TileConfig& cfg, const std::string& cfg_str, bool* b_nc_out = nullptr) const {
    // A config that would run on repacked B is timed on an n-contiguous B.
    bool b_nc = p_.b_nc || wants_packed_b(cfg, p_.b_nc, rM_);
    if (b_nc_out) *b_nc_out = b_nc;
    // The real problem's 4-wide staging choice (the scratch leading dims are multiples of 4).
    Vec4 vec = vec4_operands(cfg, p_.g, p_.a_kc, p_.lda, p_.b_nc, p_.ldb);
    vec.full = vec.a && vec.b && whole_tiles(cfg, rM_, rN_, rK_);  // of the scratch problem timed
    return tiled_kernel(ctx_, p_.g.dtype, p_.g.dtype, cfg, cfg_str, p_.mma, p_.a_kc, b_nc, false, vec);
  }
  void prepare(const std::string& cfg_str) const { TileConfig c; if (TileConfig::parse(cfg_str, &c)) kernel(c, cfg_str); }

  double time_us(const std::string& cfg_str) {
    TileConfig cfg;
    if (!TileConfig::parse(cfg_str, &cfg)) return -1;
    DType acc = compute_dtype(p_.g.dtype);
    bool b_nc = false;
    detail::LockedKernel& slot = kernel(cfg, cfg_str, &b_nc);
    setup();
    Gemm g = scratch_gemm(b_nc);
    detail::SplitPlan split = detail::plan_splits(ctx_, cfg, g.M, g.N, g.K, 1, rZ_, acc);
    workspace(split.workspace_bytes);
    return best_of([&](std::vector<cl_event>* events) {
      run_tiled(ctx_, q_, g, lda(), ldb(b_nc), cfg, split, slot, ws_, 0, events);
    });
  }

  // The wgmma path (its packing included) on the same scratch problem, B in the real problem's layout.
  void prepare_wgmma() const { detail::prepare_wgmma(ctx_, wgmma_gemm()); }
  double time_wgmma() {
    setup();
    Gemm g = wgmma_gemm();
    workspace(detail::wgmma_workspace_bytes(ctx_, g));
    return best_of([&](std::vector<cl_event>* events) { detail::run_gemm_wgmma(ctx_, q_, g, ws_, 0, events); });
  }

  // Enqueues the tiled kernel (built for g's layouts) and, for split-K, the reduction.
  static void run_tiled(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t lda, int64_t ldb,
                        const TileConfig& cfg, const detail::SplitPlan& split, detail::LockedKernel& slot, cl_mem ws,
                        uint64_t ws_off, std::vector<cl_event>* events);

private:
  // The fastest of a warm-up and reps_ runs of `enqueue` (which appends its launches' events), microseconds.
  template <class Enqueue>
  double best_of(Enqueue&& enqueue) {
    auto run_once = [&]() {
      std::vector<cl_event> events;
      enqueue(&events);
      return events_elapsed_us(events);
    };
    double warm = run_once();
    if (warm < 0) return -1;
    if (best_ > 0 && warm > 4 * best_) return warm;  // clearly slower: no need for more runs
    double best = warm;
    for (int r = 0; r < reps_; ++r) {
      double t = run_once();
      if (t < 0) return -1;
      best = std::min(best, t);
    }
    if (best_ < 0 || best < best_) best_ = best;
    return best;
  }
  void workspace(uint64_t bytes) {
    if (bytes <= ws_bytes_) return;
    if (ws_) clReleaseMemObject(ws_);
    ws_ = alloc(bytes);
    ws_bytes_ = bytes;
  }
  Gemm wgmma_gemm() const {
    Gemm g = scratch_gemm(p_.b_nc);
    g.fp32_math = p_.g.fp32_math;
    return g;
  }
  cl_mem alloc(uint64_t bytes) {
    cl_int err = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx_.context(), CL_MEM_READ_WRITE, std::max<uint64_t>(bytes, 16), nullptr, &err);
    DLPRIM_CL_CHECK(err);
    float zero = 0;  // zeros: uninitialised memory may hold denormals that slow CPUs down
    DLPRIM_CL_CHECK(clEnqueueFillBuffer(q_, m, &zero, sizeof(zero), 0, std::max<uint64_t>(bytes, 16) / 4 * 4, 0,
                                        nullptr, nullptr));
    return m;
  }
  void setup() {
    if (q_) return;
    q_ = ctx_.create_queue();
    size_t es = dtype_size(p_.g.dtype);
    a_ = alloc(static_cast<uint64_t>(a_size()) * rZ_ * es);
    b_ = alloc(static_cast<uint64_t>(std::max(b_size(true), b_size(false))) * rZ_ * es);
    c_ = alloc(static_cast<uint64_t>(rM_) * rN_ * rZ_ * es);
  }
  Gemm scratch_gemm(bool b_nc) const {
    Gemm g;
    g.dtype = p_.g.dtype;
    g.M = rM_;
    g.N = rN_;
    g.K = rK_;
    g.batch = rZ_;
    g.a = {a_, 0, p_.a_kc ? lda() : 1, p_.a_kc ? 1 : lda(), a_size(), 0, 0};
    g.b = {b_, 0, b_nc ? ldb(b_nc) : 1, b_nc ? 1 : ldb(b_nc), b_size(b_nc), 0, 0};
    g.c = {c_, 0, rN_, 1, rM_ * rN_, 0, 0};
    return g;
  }

  // Leading dims rounded up to multiples of 4, so that configs with 4-wide staging loads can
  // run on the scratch problem whenever they can on the real one.
  static int64_t round4(int64_t v) { return (v + 3) / 4 * 4; }
  int64_t lda() const { return round4(p_.a_kc ? rK_ : rM_); }
  int64_t ldb(bool b_nc) const { return round4(b_nc ? rN_ : rK_); }
  int64_t a_size() const { return lda() * (p_.a_kc ? rM_ : rK_); }
  int64_t b_size(bool b_nc) const { return ldb(b_nc) * (b_nc ? rK_ : rN_); }

  const Context& ctx_;
  const Plan& p_;
  int64_t rM_, rN_, rK_, rZ_;
  int reps_;
  double best_ = -1;
  cl_command_queue q_ = nullptr;
  cl_mem a_ = nullptr, b_ = nullptr, c_ = nullptr, ws_ = nullptr;
  uint64_t ws_bytes_ = 0;
};

void TileTuner::run_tiled(const Context& ctx, cl_command_queue q, const Gemm& g, int64_t lda, int64_t ldb,
                          const TileConfig& cfg, const detail::SplitPlan& split, detail::LockedKernel& slot, cl_mem ws,
                          uint64_t ws_off, std::vector<cl_event>* events) {
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

const std::string* intern(const std::string& s) {
  static std::mutex m;
  static std::set<std::string> pool;
  std::lock_guard<std::mutex> lock(m);
  return &*pool.insert(s).first;
}

struct TileChoice {
  TileConfig cfg;
  const std::string* text = nullptr;
  bool wgmma = false;  // the engine tuning (family "gemm_engine") took the wgmma path over cfg
  // A tiled choice made while the class's tunings wait for their builds, which may land on wgmma: the caller's
  // workspace is sized for wgmma already, so that the landed plan fits it (plan_memo.h keeps a plan that does not).
  bool reserve_wgmma = false;
};

// The shape class a tuning of `p` is keyed by, and its candidates (`fallback` among them).
std::string tile_class(const Plan& p) {
  const Gemm& g = p.g;
  std::ostringstream cls;
  cls << dtype_name(g.dtype) << (p.mma ? "|mma-" + p.mma.str() : std::string()) << "|" << (p.a_kc ? "k" : "m")
      << (p.b_nc ? "n" : "k") << "|M" << class_bucket(g.M) << "|N" << class_bucket(g.N) << "|K"
      << class_bucket(g.K * g.k_outer) << "|Z" << (detail::gemm_zcount(g) > 1 ? 1 : 0);
  return cls.str();
}
TileConfig tile_fallback(const Context& ctx, const Plan& p) {
  return p.mma ? detail::default_mma_config(ctx, p.mma, p.g.M, p.g.N)
               : detail::default_tile_config(ctx, compute_dtype(p.g.dtype), p.g.M, p.g.N);
}
std::vector<std::string> tile_cands(const Context& ctx, const Plan& p, const std::string& fallback) {
  std::vector<std::string> cands;
  for (const auto& c : p.mma ? detail::mma_candidates(ctx, p.mma) : detail::tile_candidates(ctx, compute_dtype(p.g.dtype)))
    cands.push_back(c.str());
  if (std::find(cands.begin(), cands.end(), fallback) == cands.end()) cands.push_back(fallback);
  return cands;
}

// Speculative builds (cold start): a product tuned on the critical path is most often a forward one whose
// backward follows within the step: dA = dC B^T (A's layout, B's flipped) and dB = A^T dC (A's flipped, C's).
// Their candidates (or their known choice) are built in the background now, so that their tunings only time.
// Classes so predicted do not predict further (no chains of guesses); a wrong guess costs background builds only.
void speculate_backward(const Context& ctx, const Plan& p, const std::string& cls) {
  static std::mutex m;
  static std::set<std::string> predicted;
  const Gemm& g = p.g;
  if (!speculative_builds(ctx.info()) || g.k_outer != 1 || g.groups != 1 || autotune_mode() == TuneMode::Random) return;
  std::vector<Plan> plans;
  {
    std::lock_guard<std::mutex> lock(m);
    if (predicted.count(cls)) return;
    for (int dB = 0; dB < 2; ++dB) {
      Gemm s;
      s.dtype = g.dtype;
      s.fp32_math = g.fp32_math;
      s.batch = g.batch;
      const bool a_kc = dB ? !p.a_kc : true, b_nc = dB ? true : !p.b_nc;
      s.M = dB ? g.K : g.M;
      s.N = dB ? g.N : g.K;
      s.K = dB ? g.M : g.N;
      s.a = {nullptr, 0, a_kc ? s.K : 1, a_kc ? 1 : s.M, s.M * s.K, 0, 0};
      s.b = {nullptr, 0, b_nc ? s.N : 1, b_nc ? 1 : s.K, s.K * s.N, 0, 0};
      s.c = {nullptr, 0, s.N, 1, s.M * s.N, 0, 0};
      Plan sp = base_plan(ctx, s);
      if (sp.path != Path::Tiled) continue;
      sp.mma = detail::mma_choice(ctx, s.dtype, s.fp32_math);
      if (predicted.insert(tile_class(sp)).second) plans.push_back(sp);
    }
  }
  if (plans.empty()) return;
  build_in_background(ctx.info(), [&ctx, plans] {
    for (const Plan& sp : plans) {
      std::string fallback = tile_fallback(ctx, sp).str(), known;
      const char* forced = env_value("PYTORCH_OCL_GEMM_CONFIG");
      std::vector<std::string> cands;
      if (forced || autotune_mode() == TuneMode::Off) cands = {forced ? std::string(forced) : fallback};
      else if (autotune_known(ctx, "gemm", tile_class(sp), &known)) cands = {known};
      else cands = tile_cands(ctx, sp, fallback);
      TileTuner tuner(ctx, sp);  // builds only: its scratch buffers are made by time_us
      parallel_builds(ctx.info(), cands.size(), [&](size_t i) { tuner.prepare(cands[i]); });
    }
  });
}

// The wgmma engine decided before the tile configs are tuned (cold start): a class stored as wgmma, or where wgmma
// beats the fallback tile config by more than tuning tiles has been seen to gain, takes wgmma untuned. GPT-2 small's
// cold first step (all its products in the timed range): 21 classes timed when every one tuned its tiles first, 13
// this way; its remaining cost over the untimed rule (H200: 29.5-30.1 s against 26.8) was the LM head's tile
// tunings, which now build in the background (choose_tile). Random tuning draws the engine after the tile config.
struct EngineFirst {
  bool wgmma = false;                 // taken (stored as the class's engine)
  double t_wgmma = -1, t_tiled = -1;  // what it compared, microseconds (-1: not timed)
};
EngineFirst wgmma_decided_first(const Context& ctx, const Plan& p, const std::string& cls, const std::string& fallback) {
  EngineFirst r;
  const TuneMode mode = autotune_mode();
  if (mode == TuneMode::Off || mode == TuneMode::Random) return r;
  const std::vector<std::string> engines = {"wgmma", "tiled"};
  std::string known;
  if (autotune_known(ctx, "gemm_engine", cls, &known)) {
    if (known != "wgmma") return r;
    // taken as stored (counted as loaded), no timing
    r.wgmma = autotune_select(ctx, "gemm_engine", cls, engines, "wgmma", [](const std::string&) { return -1.0; },
                              nullptr, nullptr) == "wgmma";
    return r;
  }
  // A class whose tile tuning is deferred comes back here each time a deferred tuning lands anywhere (plan memos
  // made again): its first timings are kept rather than repeated.
  static std::mutex m;
  static std::map<std::pair<int64_t, std::string>, std::pair<double, double>> timed;
  const auto key = std::make_pair(detail::key_of(ctx), cls);
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = timed.find(key);
    if (it != timed.end()) std::tie(r.t_wgmma, r.t_tiled) = it->second;
  }
  if (r.t_wgmma < 0 && r.t_tiled < 0) {
    Plan tp = p;
    TileConfig::parse(fallback, &tp.cfg);
    TileTuner tuner(ctx, tp);
    parallel_builds(ctx.info(), 2, [&](size_t i) { i ? tuner.prepare(fallback) : tuner.prepare_wgmma(); });
    try {
      r.t_wgmma = tuner.time_wgmma();
      r.t_tiled = tuner.time_us(fallback);
    } catch (const Error&) {
      return EngineFirst{};  // the full tuning below skips what fails
    }
    std::lock_guard<std::mutex> lock(m);
    timed[key] = {r.t_wgmma, r.t_tiled};
  }
  if (!(r.t_wgmma > 0 && (r.t_tiled < 0 || r.t_wgmma * detail::wgmma_first_margin() < r.t_tiled))) return r;
  r.wgmma = autotune_select(ctx, "gemm_engine", cls, engines, "wgmma",  // stored: wgmma, tiled out by the margin
                            [&](const std::string& e) { return e == "wgmma" ? r.t_wgmma : -1.0; }, nullptr,
                            nullptr) == "wgmma";
  return r;
}

// The tiled kernel's config for `p`: forced, tuned once per shape class, or the default; with `engine_tuned`
// (wgmma_use said Tune), then whether the wgmma path beats that config (timed without deferral: two candidates whose
// kernels are built by then or shared by every product of the kind) unless wgmma_decided_first took wgmma already;
// while the class's tile tuning is deferred, the faster of wgmma and the fallback config, undecided.
TileChoice choose_tile(const Context& ctx, const Plan& p, bool engine_tuned) {
  auto fits = [&](const TileConfig& c) {
    return p.mma ? detail::mma_config_fits(ctx, c, p.mma) : detail::tile_config_fits(ctx, c, compute_dtype(p.g.dtype));
  };
  std::string chosen = tile_fallback(ctx, p).str();
  // PYTORCH_OCL_GEMM_CONFIG forces a config of the kind the product runs as (an FMA one, or one starting
  // "mma" for the matrix engine); one of the other kind is ignored.
  const std::string cls = tile_class(p);
  EngineFirst first;
  if (engine_tuned && !env_value("PYTORCH_OCL_GEMM_CONFIG")) first = wgmma_decided_first(ctx, p, cls, chosen);
  if (first.wgmma) {
    TileChoice c;
    TileConfig::parse(chosen, &c.cfg);
    c.text = intern(c.cfg.str());
    c.wgmma = true;
    return c;  // nor speculated backward: a product on wgmma has backward ones most likely on it too
  }
  speculate_backward(ctx, p, cls);
  bool tiles_deferred = false;
  if (const char* forced = env_value("PYTORCH_OCL_GEMM_CONFIG")) {
    TileConfig c;
    if (TileConfig::parse(forced, &c) && fits(c)) chosen = c.str();
  } else if (autotune_mode() != TuneMode::Off) {
    std::vector<std::string> cands = tile_cands(ctx, p, chosen);
    TileTuner tuner(ctx, p);
    // Deferred tuning (cold start): the background job builds the candidates from its own copy of the plan
    // (a TileTuner makes no buffers until it times); this call runs the fallback meanwhile.
    TuneDeferral defer;
    defer.when_unset = engine_tuned;  // wgmma, timed above, serves meanwhile where it is the faster
    auto plan = std::make_shared<const Plan>(p);
    const Context* c_ptr = &ctx;
    defer.prepare = [c_ptr, plan](const std::string& c) { TileTuner(*c_ptr, *plan).prepare(c); };
    chosen = autotune_select(ctx, "gemm", cls, cands, chosen, [&](const std::string& c) { return tuner.time_us(c); },
                             [&](const std::string& c) { tuner.prepare(c); }, &defer);
    tiles_deferred = defer.deferred;
  }
  TileChoice c;
  TileConfig::parse(chosen, &c.cfg);
  c.text = intern(c.cfg.str());
  if (engine_tuned) {
    if (autotune_mode() == TuneMode::Off) {
      c.wgmma = true;  // the size rule alone, as before tuning decided
    } else if (tiles_deferred) {
      // The tile configs wait for their builds: the faster of wgmma and the fallback config meanwhile, nothing
      // stored; the engine is timed against the tuned config once the tile decision lands.
      c.wgmma = first.t_wgmma > 0 && (first.t_tiled < 0 || first.t_wgmma < first.t_tiled);
      c.reserve_wgmma = !c.wgmma;
    } else {
      Plan tp = p;
      tp.cfg = c.cfg;
      TileTuner tuner(ctx, tp);
      const std::string engine = autotune_select(
          ctx, "gemm_engine", cls, {"wgmma", "tiled"}, "wgmma",
          [&](const std::string& e) { return e == "wgmma" ? tuner.time_wgmma() : tuner.time_us(chosen); },
          [&](const std::string& e) { e == "wgmma" ? tuner.prepare_wgmma() : tuner.prepare(chosen); }, nullptr);
      c.wgmma = engine == "wgmma";
    }
  }
  return c;
}

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
  DType acc = compute_dtype(g.dtype);
  p.mma = detail::mma_choice(ctx, g.dtype, g.fp32_math);
  static detail::PlanMemo<11, TileChoice> memo;
  int64_t mma_key = static_cast<int64_t>(p.mma.kind) * 2 + (p.mma.emulate ? 1 : 0);
  auto with = [&](const TileChoice& t) {
    Plan q = p;
    if (t.wgmma) {
      q.path = Path::Wgmma;
      q.wgmma_bytes = detail::wgmma_workspace_bytes(ctx, g);
      return q;
    }
    q.cfg = t.cfg;
    q.cfg_text = t.text;
    if (t.reserve_wgmma) q.reserve_bytes = detail::wgmma_workspace_bytes(ctx, g);
    q.split = detail::plan_splits(ctx, q.cfg, g.M, g.N, g.K, g.k_outer, detail::gemm_zcount(g), acc);
    if (wants_packed_b(q.cfg, q.b_nc, g.M)) {
      uint64_t bytes = static_cast<uint64_t>(g.K) * g.N * g.k_outer * detail::gemm_zcount(g) * dtype_size(g.dtype);
      if (bytes <= (256ull << 20)) q.pack_bytes = bytes;
    }
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
      TileTuner::run_tiled(ctx, q, p.g, p.lda, ldb, p.cfg, p.split, slot, workspace, workspace_offset + p.pack_space(),
                           nullptr);
      break;
    }
  }
  detail::launch_activation(ctx, q, p.g, detail::gemm_zcount(p.g));
}

std::string gemm_plan_description(const Context& ctx, const Gemm& g) {
  Plan p = make_plan(ctx, g);
  switch (p.path) {
    case Path::Empty: return "empty";
    case Path::Small: return std::string("small ") + (p.small_nfast ? "n-fast" : "m-fast");
    case Path::Dot: return p.dot_local ? "dot local=" + std::to_string(p.dot_local) : std::string("dot per-item");
    case Path::Wgmma: return detail::wgmma_description(ctx, p.g);
    case Path::Tiled: {
      Vec4 v = vec4_operands(p.cfg, p.g, p.a_kc, p.lda, p.b_nc, p.ldb);
      return "tiled " + p.cfg.str() + (p.cfg.mma ? " " + p.mma.str() : std::string()) + " splits=" + std::to_string(p.split.splits) + (p.idx64 ? " idx64" : "") +
             (p.pack_bytes ? " packed-B" : "") + (v.a || v.b ? std::string(" vec4=") + (v.a ? "A" : "") + (v.b ? "B" : "") : "") +
             (v.full ? " whole-tiles" : "");
    }
  }
  return "";
}

} // namespace dlprim
