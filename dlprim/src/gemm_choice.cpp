// How a GEMM's tile config and engine are chosen: tuned per shape class (candidates timed on a scratch problem
// shaped like the product), the wgmma engine decided first where it clearly wins, tunings deferred while their
// candidates build on a cold cache, the likely backward products' programs built speculatively.
#include <dlprim/autotune.h>
#include <dlprim/env.h>
#include <dlprim/program_cache.h>

#include "gemm_plan.h"
#include "gemm_wgmma.h"
#include "plan_memo.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>

namespace dlprim {
namespace detail {
namespace {

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
    rZ_ = std::max<int64_t>(1, std::min<int64_t>(gemm_zcount(p.g), static_cast<int64_t>(cap / per)));
    reps_ = cpu ? 1 : 3;
  }
  ~TileTuner() {
    for (cl_mem m : {a_, b_, c_, ws_})
      if (m) clReleaseMemObject(m);
    if (q_) clReleaseCommandQueue(q_);
  }

  // The kernel time_us(cfg) runs, built; only reads the plan, so the tuner's build threads call it.
  LockedKernel& kernel(const TileConfig& cfg, const std::string& cfg_str, bool* b_nc_out = nullptr) const {
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
    LockedKernel& slot = kernel(cfg, cfg_str, &b_nc);
    setup();
    Gemm g = scratch_gemm(b_nc);
    SplitPlan split = plan_splits(ctx_, cfg, g.M, g.N, g.K, 1, rZ_, acc);
    workspace(split.workspace_bytes);
    return best_of([&](std::vector<cl_event>* events) {
      run_tiled(ctx_, q_, g, lda(), ldb(b_nc), cfg, split, slot, ws_, 0, events);
    });
  }

  // The wgmma path (its packing included) on the same scratch problem, B in the real problem's layout.
  void prepare_wgmma() const { ::dlprim::detail::prepare_wgmma(ctx_, wgmma_gemm()); }
  double time_wgmma() {
    setup();
    Gemm g = wgmma_gemm();
    workspace(wgmma_workspace_bytes(ctx_, g));
    return best_of([&](std::vector<cl_event>* events) { run_gemm_wgmma(ctx_, q_, g, ws_, 0, events); });
  }

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

const std::string* intern(const std::string& s) {
  static std::mutex m;
  static std::set<std::string> pool;
  std::lock_guard<std::mutex> lock(m);
  return &*pool.insert(s).first;
}

// The shape class a tuning of `p` is keyed by, and its candidates (`fallback` among them).
std::string tile_class(const Plan& p) {
  const Gemm& g = p.g;
  std::ostringstream cls;
  cls << dtype_name(g.dtype) << (p.mma ? "|mma-" + p.mma.str() : std::string()) << "|" << (p.a_kc ? "k" : "m")
      << (p.b_nc ? "n" : "k") << "|M" << class_bucket(g.M) << "|N" << class_bucket(g.N) << "|K"
      << class_bucket(g.K * g.k_outer) << "|Z" << (gemm_zcount(g) > 1 ? 1 : 0);
  return cls.str();
}
TileConfig tile_fallback(const Context& ctx, const Plan& p) {
  return p.mma ? default_mma_config(ctx, p.mma, p.g.M, p.g.N)
               : default_tile_config(ctx, compute_dtype(p.g.dtype), p.g.M, p.g.N);
}
std::vector<std::string> tile_cands(const Context& ctx, const Plan& p, const std::string& fallback) {
  std::vector<std::string> cands;
  for (const auto& c : p.mma ? mma_candidates(ctx, p.mma) : tile_candidates(ctx, compute_dtype(p.g.dtype)))
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
      sp.mma = mma_choice(ctx, s.dtype, s.fp32_math);
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
// cold first step (its products in the timed range but the LM head's backward ones): 21 classes timed when every one
// tuned its tiles first, 13 this way, none of their tile tunings deferred (H200, cold42): the tile tunings left on
// its path were of classes outside the timed range, such as the LM head's backward products over wgmma's workspace
// cap (tiles_deferred_unset defers those now). Random tuning draws the engine after the tile config.
struct EngineFirst {
  bool wgmma = false;                 // taken (stored as the class's engine)
  bool interim = false;               // wgmma meanwhile, nothing decided: the fallback config builds (cold start)
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
  const auto key = std::make_pair(key_of(ctx), cls);
  {
    std::lock_guard<std::mutex> lock(m);
    auto it = timed.find(key);
    if (it != timed.end()) std::tie(r.t_wgmma, r.t_tiled) = it->second;
  }
  if (r.t_wgmma < 0 && r.t_tiled < 0) {
    // Cold start: the fallback config's program (3-4 s on NVIDIA for a matrix-engine one) builds in the background
    // while the class runs on wgmma, the size rule's answer, whose program is one per kind; timed at the first call
    // after that build (PYTORCH_OCL_TUNE_DEFERRED=0: on the spot).
    auto plan = std::make_shared<Plan>(p);
    TileConfig::parse(fallback, &plan->cfg);
    const Context* c_ptr = &ctx;
    if (builds_deferred(ctx, "gemm_engine|" + cls, 1,
                        [c_ptr, plan, fallback](size_t) { TileTuner(*c_ptr, *plan).prepare(fallback); }, true)) {
      r.wgmma = r.interim = true;
      return r;
    }
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
  if (!(r.t_wgmma > 0 && (r.t_tiled < 0 || r.t_wgmma * wgmma_first_margin() < r.t_tiled))) return r;
  r.wgmma = autotune_select(ctx, "gemm_engine", cls, engines, "wgmma",  // stored: wgmma, tiled out by the margin
                            [&](const std::string& e) { return e == "wgmma" ? r.t_wgmma : -1.0; }, nullptr,
                            nullptr) == "wgmma";
  return r;
}

// The most workspace any of `cands` asks of `p`'s caller (split-K partial sums, B repacked): what an interim
// choice reserves, so that the tuned config landing later fits.
uint64_t tiled_reserve(const Context& ctx, const Plan& p, const std::vector<std::string>& cands) {
  uint64_t most = 0;
  for (const auto& s : cands) {
    TileConfig c;
    if (!TileConfig::parse(s, &c)) continue;
    Plan q = p;
    plan_tiles(ctx, &q, c);
    most = std::max(most, q.pack_space() + q.split.workspace_bytes);
  }
  return most;
}

// Tile tunings deferred with PYTORCH_OCL_TUNE_DEFERRED unset: behind a timed engine (wgmma serves meanwhile where it
// is the faster), and large matrix-engine products no engine timing covers, whose candidates are 3-4 s builds each
// on NVIDIA and whose fallback config runs near the tuned one at that size (H200, GPT-2 small's cold first step:
// the LM head's backward products, over wgmma's workspace cap, were the tile tunings left on its path).
bool tiles_deferred_unset(const Plan& p, bool engine_tuned) {
  const Gemm& g = p.g;
  const double work = static_cast<double>(g.M) * g.N * g.K * g.k_outer * gemm_zcount(g);
  return engine_tuned || (p.mma && !p.mma.emulate && work >= 8589934592.0);  // 2^33 multiply-adds
}

} // namespace

// The tiled kernel's config for `p`: forced, tuned once per shape class, or the default; with `engine_tuned`
// (wgmma_use said Tune), then whether the wgmma path beats that config (timed without deferral: two candidates whose
// kernels are built by then or shared by every product of the kind) unless wgmma_decided_first took wgmma already;
// while the class's tile tuning is deferred, the faster of wgmma and the fallback config, undecided.
TileChoice choose_tile(const Context& ctx, const Plan& p, bool engine_tuned) {
  auto fits = [&](const TileConfig& c) {
    return p.mma ? mma_config_fits(ctx, c, p.mma) : tile_config_fits(ctx, c, compute_dtype(p.g.dtype));
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
    if (first.interim) c.reserve_bytes = tiled_reserve(ctx, p, tile_cands(ctx, p, chosen));
    return c;  // nor speculated backward: a product on wgmma has backward ones most likely on it too
  }
  speculate_backward(ctx, p, cls);
  bool tiles_deferred = false;
  std::vector<std::string> cands;
  if (const char* forced = env_value("PYTORCH_OCL_GEMM_CONFIG")) {
    TileConfig c;
    if (TileConfig::parse(forced, &c) && fits(c)) chosen = c.str();
  } else if (autotune_mode() != TuneMode::Off) {
    cands = tile_cands(ctx, p, chosen);
    TileTuner tuner(ctx, p);
    // Deferred tuning (cold start): the background job builds the candidates from its own copy of the plan
    // (a TileTuner makes no buffers until it times); this call runs the fallback meanwhile.
    TuneDeferral defer;
    defer.when_unset = tiles_deferred_unset(p, engine_tuned);
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
  if (tiles_deferred) c.reserve_bytes = tiled_reserve(ctx, p, cands);
  if (engine_tuned) {
    if (autotune_mode() == TuneMode::Off) {
      c.wgmma = true;  // the size rule alone, as before tuning decided
    } else if (tiles_deferred) {
      // The tile configs wait for their builds: the faster of wgmma and the fallback config meanwhile, nothing
      // stored; the engine is timed against the tuned config once the tile decision lands.
      c.wgmma = first.t_wgmma > 0 && (first.t_tiled < 0 || first.t_wgmma < first.t_tiled);
      if (!c.wgmma) c.reserve_bytes = std::max(c.reserve_bytes, wgmma_workspace_bytes(ctx, p.g));
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

} // namespace detail
} // namespace dlprim
