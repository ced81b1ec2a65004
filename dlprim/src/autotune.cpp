#include <dlprim/env.h>
#include <dlprim/autotune.h>

#include <dlprim/capture.h>
#include <dlprim/program_cache.h>

#include "build_workers.h"
#include "disk_cache.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace dlprim {

namespace {

std::mutex g_mutex;
std::map<std::string, std::string> g_decisions;  // full key -> config
std::map<std::string, std::string> g_labels;     // full key -> "family|class"
AutotuneStats g_stats;
std::atomic<uint64_t> g_generation{0};
std::atomic<uint64_t> g_tune_generation{0};  // tune_stamp(): deferred tunings' builds done, decisions landed
// Deferred tunings (TuneDeferral) by full key: false while the class's candidates build in the background,
// true once built (the next call times them); erased when the decision lands.
std::map<std::string, bool> g_pending;
// builds_deferred by label: 0 building, 1 built, 2 built and seen by a call.
std::map<std::string, int> g_deferred_builds;
// Timings under way on this thread: a tuning nested in another's timing (the GEMM of a convolution's im2col
// candidate) tunes on the spot, so that the outer choice compares tuned paths, never a fallback.
thread_local int t_timing = 0;
std::atomic<void (*)(const Context&)> g_idle_hook{nullptr};

// Bumped whenever kernels change enough that stored decisions should be re-timed.
constexpr const char* kTuneVersion = "t1";

// The background job of a deferral (a tuning's candidates, or the programs a timing needs): builds prepare(0 ..
// n-1), marks them built (`mark`, under g_mutex), then changes tune_stamp() so that plans memoised on the interim
// choice are made again.
void build_deferred(const DeviceInfo& dev, const std::string& label, size_t n, std::function<void(size_t)> prepare,
                    std::function<void()> mark) {
  build_in_background(dev, [dev, label, n, prepare, mark] {
    auto t0 = std::chrono::steady_clock::now();
    parallel_builds(dev, n, prepare);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      mark();
    }
    ++g_tune_generation;
    if (trace_builds())
      fprintf(stderr, "[pytorch_ocl tune] %.3f s deferred builds, %zu programs' worth; in the background: %s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), n, label.c_str());
  });
}

} // namespace

namespace {

// PYTORCH_OCL_TUNE=random:SEED -> SEED (any text after "random:"; hashed), else nullopt-like false.
bool random_seed_of_env(uint64_t* seed) {
  const char* v = env_value("PYTORCH_OCL_TUNE");
  if (!v || std::strncmp(v, "random", 6) != 0) return false;
  const char* s = v + 6;
  if (*s == ':') ++s;
  uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  *seed = h | 1;  // never 0: 0 means "not random" to callers
  return true;
}

uint64_t mix64(uint64_t h, const std::string& text) {
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

} // namespace

uint64_t autotune_random_seed() {
  uint64_t seed = 0;
  return random_seed_of_env(&seed) ? seed : 0;
}

int tune_variant(const std::string& label, int n) {
  uint64_t seed = autotune_random_seed();
  if (!seed || n <= 0) return -1;
  return static_cast<int>(mix64(seed, label) % static_cast<uint64_t>(n));
}

TuneMode autotune_mode() {
  if (autotune_random_seed()) return TuneMode::Random;
  const char* v = env_value("PYTORCH_OCL_AUTOTUNE");
  if (!v || !*v) return TuneMode::On;
  if (std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0) return TuneMode::Off;
  if (std::strcmp(v, "force") == 0) return TuneMode::Force;
  return TuneMode::On;
}

double events_elapsed_us(std::vector<cl_event>& events) {
  double total = 0;
  bool ok = true;
  if (!events.empty() && clWaitForEvents(static_cast<cl_uint>(events.size()), events.data()) != CL_SUCCESS) ok = false;
  for (cl_event e : events) {
    cl_ulong t0 = 0, t1 = 0;
    if (ok && clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, nullptr) == CL_SUCCESS &&
        clGetEventProfilingInfo(e, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, nullptr) == CL_SUCCESS)
      total += static_cast<double>(t1 - t0) * 1e-3;
    else
      ok = false;
    clReleaseEvent(e);
  }
  events.clear();
  return ok ? total : -1.0;
}

std::string autotune_select(const Context& ctx, const std::string& family, const std::string& shape_class,
                            const std::vector<std::string>& candidates, const std::string& fallback,
                            const std::function<double(const std::string&)>& time_us,
                            const std::function<void(const std::string&)>& prepare, TuneDeferral* defer) {
  TuneMode mode = autotune_mode();
  // Random tuning records even a lone candidate, so tests see which kind a drawn problem took.
  if (mode == TuneMode::Off || (candidates.size() < 2 && mode != TuneMode::Random))
    return candidates.size() == 1 ? candidates[0] : fallback;
  std::string label = family + "|" + shape_class;
  std::string key = std::string(kTuneVersion) + "|" + ctx.info().cache_identity() + "|" + label;
  if (mode == TuneMode::Random) key += "|random:" + std::to_string(autotune_random_seed());
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_decisions.find(key);
    if (it != g_decisions.end()) return it->second;
  }
  auto is_candidate = [&](const std::string& c) {
    for (const auto& x : candidates)
      if (x == c) return true;
    return false;
  };
  std::string chosen;
  if (mode == TuneMode::Random) {
    // A seeded shuffle of the candidates; the first that builds and runs on the scratch problem
    // is taken (so only eligible ones), never stored on disk.
    std::vector<std::pair<uint64_t, std::string>> order;
    uint64_t seed = autotune_random_seed();
    for (const auto& c : candidates) order.emplace_back(mix64(seed, label + "|" + c), c);
    std::sort(order.begin(), order.end());
    for (const auto& oc : order) {
      if (order.size() == 1) {  // nothing to draw: taken as tuning would, without a trial run
        chosen = oc.second;
        break;
      }
      double t = -1;
      try {
        t = time_us(oc.second);
      } catch (const Error&) {
        t = -1;
      }
      if (t >= 0) {
        chosen = oc.second;
        break;
      }
    }
    if (chosen.empty()) chosen = fallback;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_decisions[key] = chosen;
    g_labels[key] = label + "|random";
    return chosen;
  }
  // Deferral: only tuning proper (mode On: not forced, not random), and only where a prepare can run later.
  const bool may_defer = defer && defer->prepare && mode == TuneMode::On && tune_deferred(ctx.info(), defer->when_unset);
  bool was_deferred = false;  // a deferred class: its decision lands now (a tuning that may not defer -- nested
  {                           // in another's timing -- tunes it on the spot, waiting for builds under way)
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_pending.find(key);
    if (may_defer && it != g_pending.end() && !it->second) {  // still building: the fallback again, not queued again
      defer->deferred = true;
      return fallback;
    }
    was_deferred = it != g_pending.end();
  }
  DiskCache& disk = DiskCache::instance();
  if (mode != TuneMode::Force && disk.load_value(key, &chosen) && is_candidate(chosen)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    ++g_stats.loaded;
  } else if (may_defer && !was_deferred) {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      if (!g_pending.emplace(key, false).second) {  // another thread queued it meanwhile
        defer->deferred = true;
        return fallback;
      }
      ++g_stats.deferred;
    }
    if (trace_builds())
      fprintf(stderr, "[pytorch_ocl tune] 0.000 s deferred, %zu candidates built in the background: %s -> %s for now\n",
              candidates.size(), label.c_str(), fallback.c_str());
    build_deferred(ctx.info(), label, candidates.size(),
                   [candidates, prepare = defer->prepare](size_t i) { prepare(candidates[i]); }, [key] {
                     auto it = g_pending.find(key);  // the next call of the class tunes
                     if (it != g_pending.end()) it->second = true;
                   });
    defer->deferred = true;
    return fallback;
  } else {
    chosen.clear();
    // Builds are most of a cold tuning's time and independent: all at once, then the timings
    // one after another (concurrent kernels would spoil them).
    auto t0 = std::chrono::steady_clock::now();
    if (prepare) parallel_builds(ctx.info(), candidates.size(), [&](size_t i) { prepare(candidates[i]); });
    auto t1 = std::chrono::steady_clock::now();
    if (auto idle = g_idle_hook.load(); idle && was_deferred && !capture::any_active()) idle(ctx);
    double best = 0;
    struct Timing {
      Timing() { ++t_timing; }
      ~Timing() { --t_timing; }
    } timing;
    for (const auto& c : candidates) {
      double t = -1;
      try {
        t = time_us(c);
      } catch (const Error&) {
        t = -1;  // a candidate that fails to build or launch is skipped, never fatal
      }
      if (t >= 0 && (chosen.empty() || t < best)) {
        best = t;
        chosen = c;
      }
    }
    if (trace_builds()) {
      auto t2 = std::chrono::steady_clock::now();
      fprintf(stderr, "[pytorch_ocl tune] %.3f s builds + %.3f s timing, %zu candidates: %s -> %s\n",
              std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
              candidates.size(), label.c_str(), chosen.c_str());
    }
    if (chosen.empty()) {
      chosen = fallback;
    } else {
      disk.store_value(key, chosen);
      std::lock_guard<std::mutex> lock(g_mutex);
      ++g_stats.timed;
      if (was_deferred) ++g_stats.deferred_tuned;
    }
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  g_decisions[key] = chosen;
  g_labels[key] = label;
  if (was_deferred && g_pending.erase(key)) {
    ++g_tune_generation;  // other problems of the class memoised the fallback: they take the decision now
  }
  return chosen;
}

bool builds_deferred(const Context& ctx, const std::string& label, size_t n, std::function<void(size_t)> prepare,
                     bool when_unset) {
  const std::string key = ctx.info().cache_identity() + "|" + label;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_deferred_builds.find(key);
    if (it != g_deferred_builds.end()) {
      if (it->second == 0) return true;
      if (it->second == 1) {
        it->second = 2;
        ++g_stats.deferred_tuned;
      }
      return false;
    }
  }
  if (autotune_mode() != TuneMode::On || !tune_deferred(ctx.info(), when_unset)) return false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_deferred_builds.emplace(key, 0).second) return true;  // another thread queued it meanwhile
    ++g_stats.deferred;
  }
  if (trace_builds()) fprintf(stderr, "[pytorch_ocl tune] 0.000 s deferred builds (%zu): %s\n", n, label.c_str());
  build_deferred(ctx.info(), label, n, std::move(prepare), [key] { g_deferred_builds[key] = 1; });
  return true;
}

void set_tune_idle_hook(void (*hook)(const Context& ctx)) { g_idle_hook.store(hook); }

bool tune_deferred(const DeviceInfo& dev, bool when_unset) {
  // build_threads() 1: build_in_background would drop the job
  if (in_background_build() || t_timing > 0 || build_threads() <= 1) return false;
  // Every class only when asked for: on the H100, GPT-2 small's cold first step took 26.8 s with it and 25.4 s
  // without (the ~44 programs still built one at a time in the process bound it, not the tunings' candidates).
  // Unset, the classes whose caller has a near-tuned answer meanwhile (`when_unset`): on the H200 the three
  // tile tunings left in GPT-2 small's cold step (wgmma within the margin) took ~4 s each on its path.
  (void)dev;
  const int s = env_switch("PYTORCH_OCL_TUNE_DEFERRED");
  return s < 0 ? when_unset : s == 1;
}

bool autotune_known(const Context& ctx, const std::string& family, const std::string& shape_class, std::string* chosen) {
  TuneMode mode = autotune_mode();
  if (mode == TuneMode::Off || mode == TuneMode::Random) return false;
  std::string key = std::string(kTuneVersion) + "|" + ctx.info().cache_identity() + "|" + family + "|" + shape_class;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_decisions.find(key);
    if (it != g_decisions.end()) {
      *chosen = it->second;
      return true;
    }
  }
  return mode != TuneMode::Force && DiskCache::instance().load_value(key, chosen);
}

std::vector<std::pair<std::string, std::string>> autotune_decisions() {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& kv : g_decisions) out.emplace_back(g_labels[kv.first], kv.second);
  return out;
}

AutotuneStats autotune_stats() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_stats;
}

void autotune_reset_memory() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_decisions.clear();
  g_labels.clear();
  g_pending.clear();  // a job still running marks nothing: its class starts over (its builds are kept)
  g_deferred_builds.clear();
  ++g_generation;
}

uint64_t plan_stamp() {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values, each ended by a separator
  auto mix = [&h](unsigned char c) {
    h ^= c;
    h *= 1099511628211ull;
  };
  for (const char* name : {"PYTORCH_OCL_AUTOTUNE", "PYTORCH_OCL_GEMM_CONFIG", "PYTORCH_OCL_CONV_IMPLICIT",
                           "PYTORCH_OCL_CONV_IMPLICIT_MMA", "PYTORCH_OCL_CONV_WINOGRAD", "PYTORCH_OCL_TUNE"}) {
    if (const char* v = env_value(name))
      for (; *v; ++v) mix(static_cast<unsigned char>(*v));
    else
      mix(1);
    mix(0);
  }
  return h ^ (g_generation.load() * 0x9E3779B97F4A7C15ull);
}

uint64_t tune_stamp() { return g_tune_generation.load(); }

} // namespace dlprim
