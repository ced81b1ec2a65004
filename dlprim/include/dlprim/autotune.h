// One-time autotuning of kernel parameters per (device + driver, kernel family, shape class).
// A decision is made on first use of a shape class by timing a small candidate set with
// OpenCL profiling events, kept in memory and in the SQLite cache next to the program binaries.
#pragma once
#include <dlprim/context.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dlprim {

enum class TuneMode { Off, On, Force, Random };
// PYTORCH_OCL_AUTOTUNE: "0" off (defaults only), unset/"1" on, "force" re-times every shape
// class once per process, ignoring stored results (and stores the new ones).
// PYTORCH_OCL_TUNE=random:SEED (a test mode, wins over PYTORCH_OCL_AUTOTUNE): every tunable
// choice takes a random eligible candidate, the same one for the same seed and shape class, and
// every heuristic that asks tune_variant() a random variant; nothing is stored. Whole-network
// tests run under several seeds so that every path a tuner or heuristic can pick is trained with.
TuneMode autotune_mode();
// The seed of PYTORCH_OCL_TUNE=random:SEED (TuneMode::Random), else 0.
uint64_t autotune_random_seed();
// For heuristics with several correct variants: in random mode a variant in [0, n) drawn from
// the seed and `label` (same label, same draw), else -1 (use the heuristic's own choice).
int tune_variant(const std::string& label, int n);

// Deferred tuning (cold start): with tune_deferred(dev), a shape class with no decision (in memory or on disk)
// is not tuned on the call that meets it. autotune_select answers `fallback` (sets `deferred`), and a background
// job (build_in_background) builds the class's candidates through `prepare`; the first call of the class after
// that job finished times them on the calling thread as an ordinary tuning would (milliseconds) and the decision
// lands in memory and on disk. A class is queued once; tune_stamp() changes when its builds finish and when
// its decision lands, so plans memoised on the fallback are made again.
struct TuneDeferral {
  // Builds what timing candidate `c` needs, as autotune_select's `prepare` does, but owning copies of all it
  // reads: it runs in a background job after the call returned.
  std::function<void(const std::string&)> prepare;
  // in: defer even where PYTORCH_OCL_TUNE_DEFERRED is unset (not where it is "0"): the caller has an answer
  // nearly as good as a tuned one meanwhile, or the candidates are long builds (gemm_choice.cpp).
  bool when_unset = false;
  bool deferred = false;  // out: the answer is `fallback` because the class's tuning waits for its builds
};
// Deferred builds (cold start): true while `label`'s programs build in the background and the caller runs an
// interim choice. The first call queues prepare(0 .. n-1) as a background job where tune_deferred(dev, when_unset)
// allows (else, and once the job finished, false: the caller builds or times on the spot). tune_stamp() changes
// when the job finishes. Counted as a deferred class, and as tuned later at the first call that finds it built.
// `prepare` runs after the call returned: it must own copies of what it reads.
bool builds_deferred(const Context& ctx, const std::string& label, size_t n, std::function<void(size_t)> prepare,
                     bool when_unset);
// PYTORCH_OCL_TUNE_DEFERRED: "1" every class, "0" none, unset the classes whose caller asks (`when_unset`; every
// class measured no faster on NVIDIA: autotune.cpp). Never while background jobs are off (build_threads() 1), nor
// in PYTORCH_OCL_TUNE=random, PYTORCH_OCL_AUTOTUNE=force or =0 modes, nor on a background job's thread.
bool tune_deferred(const DeviceInfo& dev, bool when_unset = false);
// Waits until `ctx`'s device has run the work queued so far (the torch layer sets it: every queue of the
// device). A deferred tuning times right at a call, while the ops queued before it may still run; it calls
// this first (not while a graph is being captured) so that its timings do not share the device with them.
void set_tune_idle_hook(void (*hook)(const Context& ctx));

// Picks one of `candidates` (config strings) for `shape_class` of `family` on this device:
// the in-memory decision, else the stored one (when it is still a candidate), else the
// fastest by `time_us` (device microseconds; a negative value rules a candidate out).
// With tuning off, or when no candidate runs, returns `fallback`.
// `prepare` (optional) builds what timing a candidate needs (its programs and kernels) without
// running anything: before timing, every candidate is prepared at once on the build threads
// (parallel_builds), then timed one after another as before. A prepare that throws is ignored
// (time_us meets the error again and rules the candidate out).
std::string autotune_select(const Context& ctx, const std::string& family, const std::string& shape_class,
                            const std::vector<std::string>& candidates, const std::string& fallback,
                            const std::function<double(const std::string&)>& time_us,
                            const std::function<void(const std::string&)>& prepare = {},
                            TuneDeferral* defer = nullptr);

// Whether autotune_select would answer `shape_class` of `family` without timing (a decision made in this
// process or stored on disk), and with what. For speculative builds: they build only the known choice.
bool autotune_known(const Context& ctx, const std::string& family, const std::string& shape_class, std::string* chosen);

// Device time of the kernels behind `events` in microseconds (waits for them, releases them).
double events_elapsed_us(std::vector<cl_event>& events);

// Decisions made or loaded in this process: ("family|class", config), for reports and tests.
std::vector<std::pair<std::string, std::string>> autotune_decisions();
struct AutotuneStats {
  uint64_t timed = 0;   // shape classes tuned by timing in this process
  uint64_t loaded = 0;  // decisions read back from the disk cache
  uint64_t deferred = 0;        // shape classes that ran on the fallback while their candidates built (TuneDeferral)
  uint64_t deferred_tuned = 0;  // of those, tuned (timed) later in this process
};
AutotuneStats autotune_stats();
// Forgets the in-memory decisions (the stored ones stay); for tests.
void autotune_reset_memory();

// Changes whenever a launch plan chosen earlier may no longer be the one chosen now: the
// in-memory decisions were reset, or one of the variables that force or disable choices
// (PYTORCH_OCL_AUTOTUNE, _GEMM_CONFIG, _CONV_IMPLICIT, _CONV_WINOGRAD) has another value.
uint64_t plan_stamp();
// Changes when a deferred tuning's builds finished or its decision landed: a plan made on its fallback
// may be made better now (plan_memo.h: only where the workspace the caller sized still fits).
uint64_t tune_stamp();

} // namespace dlprim
