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
                            const std::function<void(const std::string&)>& prepare = {});

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
};
AutotuneStats autotune_stats();
// Forgets the in-memory decisions (the stored ones stay); for tests.
void autotune_reset_memory();

// Changes whenever a launch plan chosen earlier may no longer be the one chosen now: the
// in-memory decisions were reset, or one of the variables that force or disable choices
// (PYTORCH_OCL_AUTOTUNE, _GEMM_CONFIG, _CONV_IMPLICIT, _CONV_WINOGRAD) has another value.
uint64_t plan_stamp();

} // namespace dlprim
