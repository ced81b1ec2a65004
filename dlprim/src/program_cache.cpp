// The program cache: one slot per (context, source, options). The map lock is held only to find
// or add a slot; the build runs under the slot's own lock, so distinct programs build at the same
// time on several threads (the tuner builds all its candidates at once, parallel_builds) while a
// second request for the same program waits for the first build instead of repeating it.
#include <dlprim/env.h>
#include <dlprim/program_cache.h>

#include "build_workers.h"
#include "disk_cache.h"
#include "ptx_sm90a.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace dlprim {

namespace {

struct Slot {
  std::mutex m;
  std::atomic<cl_program> prog{nullptr};
  std::string error;  // a failed build's message: builds are deterministic, so it is not retried
  std::atomic<bool> background{false};  // built (or loaded) by a background job
};

std::mutex g_mutex;
std::map<std::tuple<cl_context, std::string, std::string>, std::unique_ptr<Slot>> g_programs;
std::atomic<uint64_t> g_builds{0}, g_disk_hits{0};
std::atomic<uint64_t> g_build_ns{0}, g_load_ns{0}, g_binary_ns{0};
// Builds on the threads of an op that waits for them (the critical path) vs in background jobs
// (build_in_background), background programs an op then used, and ops that waited for a background build.
std::atomic<uint64_t> g_critical{0}, g_background{0}, g_bg_used{0}, g_bg_waits{0};

// Set on the background builder's thread and on the parallel_builds threads it starts.
thread_local bool t_background = false;
// What the op's own thread waited for (the cold step's critical path): single programs (built, loaded, or built by
// another thread meanwhile) and parallel_builds calls (a tuning's candidates). t_helper marks the threads a
// parallel_builds call starts, t_parallel the calling thread inside one: neither counts a single program apart.
std::atomic<uint64_t> g_wait_program_ns{0}, g_wait_parallel_ns{0};
std::atomic<uint64_t> g_worker_binaries{0};  // binaries for the disk cache made by a build worker (binary_from_worker)
thread_local bool t_helper = false;
thread_local int t_parallel = 0;
bool on_op_thread() { return !t_background && !t_helper && t_parallel == 0; }

void count_build() {
  ++g_builds;
  ++(t_background ? g_background : g_critical);
}
const char* where() { return t_background ? "; in the background" : ""; }

// PYTORCH_OCL_TRACE_BUILDS=<directory>: each traced source is also written there (build-time experiments
// with scripts/cl_binary.cpp), the options on its first line as a comment.
void dump_source(const std::string& source, const std::string& options) {
  const char* dir = env_value("PYTORCH_OCL_TRACE_BUILDS");
  if (!dir || std::string(dir).find('/') == std::string::npos) return;
  static std::atomic<int> n{0};
  std::string path = std::string(dir) + "/" + std::to_string(n++) + ".cl";
  if (FILE* f = fopen(path.c_str(), "w")) {
    fprintf(f, "// options: %s\n", options.c_str());
    fwrite(source.data(), 1, source.size(), f);
    fclose(f);
  }
}

// A program's name in traces: its last kernel and how many others it holds ("gemm_tiled +1"). The last,
// since shared kernels come first (every tiled GEMM program opens with gemm_common.cl's gemm_split_reduce, which
// named them all before).
std::string program_label(const std::string& source) {
  std::string last;
  int count = 0;
  for (size_t p = source.find("__kernel"); p != std::string::npos; p = source.find("__kernel", p + 8)) {
    size_t v = source.find("void", p);  // past any __attribute__((...)) between __kernel and the return type
    if (v == std::string::npos) break;
    size_t begin = source.find_first_not_of(" \n\t", v + 4), end = begin;
    while (end < source.size() && (isalnum(static_cast<unsigned char>(source[end])) || source[end] == '_')) ++end;
    if (begin == std::string::npos || end == begin) continue;
    last = source.substr(begin, end - begin);
    size_t def = source.find("#define " + last + " ");  // a name given by a macro (the tiled GEMM's KERNEL_NAME)
    if (def != std::string::npos) {
      size_t vb = source.find_first_not_of(' ', def + 9 + last.size()), ve = source.find_first_of(" \n", vb);
      if (vb != std::string::npos) last = source.substr(vb, ve == std::string::npos ? std::string::npos : ve - vb);
    }
    ++count;
  }
  if (count == 0) return "?";
  return count > 1 ? last + " +" + std::to_string(count - 1) : last;
}

uint64_t ns_since(std::chrono::steady_clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}


std::vector<unsigned char> program_binary(cl_program prog) {
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS ||
      size == 0)
    return {};
  std::vector<unsigned char> bin(size);
  unsigned char* ptr = bin.data();
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) return {};
  return bin;
}

cl_program from_binary(cl_context ctx, const DeviceInfo& dev, const std::vector<unsigned char>& bin,
                       const std::string& options) {
  const unsigned char* ptr = bin.data();
  size_t size = bin.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(ctx, 1, &dev.id, &size, &ptr, &status, &err);
  if (err != CL_SUCCESS || status != CL_SUCCESS) {
    if (prog) clReleaseProgram(prog);
    return nullptr;
  }
  if (clBuildProgram(prog, 1, &dev.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return nullptr;
  }
  return prog;
}

// Built by the calling thread's helper process (inside parallel_builds on NVIDIA), or nullptr.
cl_program from_worker(cl_context ctx, const DeviceInfo& dev, const std::string& source, const std::string& options) {
  if (detail::wants_sm90a(source)) return nullptr;  // edited after the build (ptx_sm90a.h): built here
  std::vector<unsigned char> bin;
  auto t0 = std::chrono::steady_clock::now();
  if (!detail::remote_build(source, options, &bin)) return nullptr;
  cl_program prog = from_binary(ctx, dev, bin, options);
  if (!prog) return nullptr;
  uint64_t ns = ns_since(t0);
  g_build_ns += ns;
  count_build();
  if (trace_builds()) {
    fprintf(stderr, "[pytorch_ocl build] %.3f s %s (%zu bytes; %s; in a build process%s)\n", ns * 1e-9,
            program_label(source).c_str(), source.size(), options.c_str(), where());
    dump_source(source, options);
  }
  return prog;
}

void store_binary(cl_program prog, const std::string& key, const std::string& identity) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<unsigned char> bin = program_binary(prog);
  g_binary_ns += ns_since(t0);
  DiskCache::instance().store(key, bin, identity);
}

cl_program from_source(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& options) {
  const char* src = source.c_str();
  size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
  DLPRIM_CL_CHECK(err);
  auto t0 = std::chrono::steady_clock::now();
  err = clBuildProgram(prog, 1, &dev.id, options.c_str(), nullptr, nullptr);
  uint64_t ns = ns_since(t0);
  g_build_ns += ns;
  count_build();
  if (trace_builds()) {
    fprintf(stderr, "[pytorch_ocl build] %.3f s %s (%zu bytes; %s%s)\n", ns * 1e-9, program_label(source).c_str(),
            source.size(), options.c_str(), where());
    dump_source(source, options);
    if (err == CL_SUCCESS) {  // e.g. ptxas's registers and spills with -cl-nv-verbose (PYTORCH_OCL_EXTRA_BUILD_OPTIONS)
      const std::string log = detail::program_build_log(prog, dev.id);
      if (log.find_first_not_of(" \n\t") != std::string::npos) fprintf(stderr, "%s\n", log.c_str());
    }
  }
  if (err != CL_SUCCESS) {
    std::string log = detail::program_build_log(prog, dev.id);
    clReleaseProgram(prog);
    std::string head = source.substr(0, 2000);
    throw Error("OpenCL program build failed on '" + dev.name + "' (" + cl_error_name(err) +
                ", options '" + options + "'). Build log:\n" + log + "\nSource (start):\n" + head);
  }
  if (detail::wants_sm90a(source)) return detail::retarget_sm90a(ctx, dev.id, prog, options);
  return prog;
}

// One background thread running jobs in order; flush() waits until it has run them all. Two of
// them: the binary writer and the builder of programs needed soon (build_in_background).
class TaskQueue {
public:
  void push(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(m_);
    if (!started_ || owner_ != getpid()) {  // first use, or a forked child without the thread
      jobs_.clear();
      busy_ = false;
      owner_ = getpid();
      started_ = true;
      std::thread([this] { loop(); }).detach();  // never joined: flush() waits for an empty queue
    }
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }
  bool idle_after_this() {  // called by a job: nothing queued behind it
    std::lock_guard<std::mutex> lock(m_);
    return jobs_.empty();
  }
  void flush() {
    // A forked child has no worker thread (and its copy of m_ may have been locked at the fork):
    // it returns before touching the lock.
    if (owner_.load() != getpid()) return;
    std::unique_lock<std::mutex> lock(m_);
    if (!started_) return;
    idle_.wait(lock, [this] { return jobs_.empty() && !busy_; });
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      cv_.wait(lock, [this] { return !jobs_.empty(); });
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      try {
        job();
      } catch (...) {
        // a background build that fails is met again, with its message, by the request that needs it
      }
      lock.lock();
      busy_ = false;
      if (jobs_.empty()) idle_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> jobs_;
  bool busy_ = false, started_ = false;
  std::atomic<pid_t> owner_{0};
};

// Stores built programs' binaries: fetching a binary is where PoCL compiles the program's kernels
// (2-3x the clBuildProgram time), and each SQLite write syncs the file; neither needs to delay the
// op that asked for the program. Never destroyed: its thread may outlive static destructors.
TaskQueue& binary_writer() {
  static TaskQueue* q = new TaskQueue();
  return *q;
}
TaskQueue& background_builder() {
  static TaskQueue* q = new TaskQueue();
  return *q;
}

// A background job, with a build worker process of the job thread's own where `remote` (kept while more jobs are
// queued: they come in runs, one process start rather than one per job).
void push_background(const DeviceInfo& dev, bool remote, std::function<void()> job) {
  background_builder().push([remote, dev, job = std::move(job)] {
    static thread_local std::unique_ptr<detail::WorkerScope> scope;
    t_background = true;
    if (remote && !scope) scope.reset(new detail::WorkerScope(dev));
    try {
      job();
    } catch (...) {
    }
    if (scope && background_builder().idle_after_this()) scope.reset();
  });
}

// PYTORCH_OCL_BINARY_WORKER (CPU devices; default on where a build worker and background jobs are): the program's
// binary for the disk cache made by a build worker in the background. Unstored if the worker fails (the next
// process builds the program again; later programs store theirs as before); the queue is flushed at exit.
bool binary_from_worker(const DeviceInfo& dev, const std::string& source, const std::string& options,
                        const std::string& disk_key, const std::string& identity) {
  static const int env = env_switch("PYTORCH_OCL_BINARY_WORKER");
  static std::atomic<bool> failed{false};  // a worker that would not build: binaries fetched here from then on
  if (!dev.is_cpu || env == 0 || failed.load() || t_background || build_threads() <= 1 ||
      !detail::worker_available() || detail::wants_sm90a(source))
    return false;
  push_background(dev, true, [source, options, disk_key, identity] {
    std::vector<unsigned char> bin;
    auto t0 = std::chrono::steady_clock::now();
    if (!detail::remote_build(source, options, &bin) || bin.empty()) {
      failed.store(true);
      return;
    }
    g_binary_ns += ns_since(t0);
    DiskCache::instance().store(disk_key, bin, identity);
    ++g_worker_binaries;
  });
  return true;
}

} // namespace

cl_program get_program(cl_context ctx, const DeviceInfo& dev, const std::string& source,
                       const std::string& given_options) {
  // Float division and sqrt correctly rounded wherever the device offers it: OpenCL otherwise allows
  // 2.5 / 3 ulp, and NVIDIA's driver then gave results that differed from the CPU's, and between two
  // processes running the same AdamW step (DDP ranks drifted apart by an ulp).
  static const std::string kExact = "-cl-fp32-correctly-rounded-divide-sqrt";
  const std::string options =
      dev.correct_div_sqrt && given_options.find(kExact) == std::string::npos
          ? (given_options.empty() ? kExact : kExact + " " + given_options)
          : given_options;
  Slot* slot = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto& p = g_programs[std::make_tuple(ctx, source, options)];
    if (!p) p.reset(new Slot());
    slot = p.get();
  }
  if (cl_program ready = slot->prog.load(std::memory_order_acquire)) return ready;
  struct Waited {  // the op's thread: from here to the return (the program built, loaded or waited for)
    bool on = on_op_thread();
    std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    ~Waited() {
      if (on) g_wait_program_ns += ns_since(t0);
    }
  } waited;
  std::unique_lock<std::mutex> lock(slot->m, std::try_to_lock);  // one build per program; others go on meanwhile
  if (!lock.owns_lock()) {
    lock.lock();  // being built by another thread (a background job, a tuning's build thread): waits for it
    if (!t_background && slot->prog.load(std::memory_order_acquire) && slot->background.load()) ++g_bg_waits;
  }
  if (cl_program ready = slot->prog.load(std::memory_order_acquire)) return ready;
  if (!slot->error.empty()) throw Error(slot->error);
  DiskCache& disk = DiskCache::instance();
  std::string identity = dev.cache_identity();
  std::string disk_key = disk.key(identity, source, options);
  cl_program prog = nullptr;
  std::vector<unsigned char> bin;
  if (disk.load(disk_key, &bin) && !bin.empty()) {
    auto t0 = std::chrono::steady_clock::now();
    prog = from_binary(ctx, dev, bin, options);
    if (prog) {
      g_load_ns += ns_since(t0);
      ++g_disk_hits;
    }
  }
  if (!prog) {
    prog = from_worker(ctx, dev, source, options);
    try {
      if (!prog) prog = from_source(ctx, dev, source, options);
    } catch (const Error& e) {
      slot->error = e.what();
      throw;
    }
    // The binary is fetched in the background on GPUs. PoCL (the CPU devices) compiles every kernel of the
    // program while handing out its binary, and doing so while the program's kernels are launched on another
    // thread trips PoCL's dlhandle-cache assertion (ref_count > 0 in pocl_release_dlhandle_cache): there a
    // build worker process builds the program again and hands out the binary (binary_from_worker), else the
    // op's thread fetches it (a tiny GPT-2's cold first step on PoCL waited 25.8 s of 31.6 for that).
    if (disk.usable() && build_threads() > 1 && !dev.is_cpu) {
      clRetainProgram(prog);
      binary_writer().push([prog, disk_key, identity] {
        store_binary(prog, disk_key, identity);
        clReleaseProgram(prog);
      });
    } else if (disk.usable() && !binary_from_worker(dev, source, options, disk_key, identity)) {
      store_binary(prog, disk_key, identity);
    }
  }
  slot->background.store(t_background, std::memory_order_relaxed);
  slot->prog.store(prog, std::memory_order_release);
  return prog;
}

int build_threads() {
  if (const char* v = env_value("PYTORCH_OCL_BUILD_THREADS")) {
    int n = std::atoi(v);
    if (n >= 1) return std::min(n, 64);
  }
  unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::max(1u, std::min(hw, 16u)));
}

int build_threads(const DeviceInfo& dev) {
  if (!env_value("PYTORCH_OCL_BUILD_THREADS") && dev.is_nvidia()) return 1;
  return build_threads();
}

void parallel_builds(const DeviceInfo& dev, size_t n, const std::function<void(size_t)>& fn) {
  // Where one process's builds serialize, each thread hands its builds to a helper process of its own.
  int procs = n > 1 ? detail::build_processes(dev) : 0;
  size_t threads = std::min<size_t>(n, static_cast<size_t>(procs > 0 ? procs : build_threads(dev)));
  // A background job's builds stay counted as background builds, on half the threads (or build processes:
  // each holds a device context) so that the builds an op waits for keep the rest.
  const bool background = t_background;
  if (background) threads = std::max<size_t>(1, threads / 2);
  std::atomic<size_t> next{0};
  const bool op_thread = on_op_thread();
  const auto t0 = std::chrono::steady_clock::now();
  struct Depth {
    Depth() { ++t_parallel; }
    ~Depth() { --t_parallel; }
  } depth;
  auto work = [&] {
    t_background = background;
    std::unique_ptr<detail::WorkerScope> scope;  // the background thread's own worker serves it here too
    if (procs > 0 && !detail::has_worker()) scope.reset(new detail::WorkerScope(dev));
    for (size_t i; (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        // reported again by the caller's own request for the program
      }
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back([&] {
        t_helper = true;
        work();
      });
    } catch (const std::system_error&) {
      break;  // no more threads: the ones running (and this one) take the rest
    }
  }
  work();
  for (auto& t : pool) t.join();
  if (op_thread) g_wait_parallel_ns += ns_since(t0);
}

void build_in_background(const DeviceInfo& dev, std::function<void()> job) {
  if (build_threads() <= 1) return;
  // Where one process's builds serialize (NVIDIA), an in-process background build would hold up the
  // builds the caller needs now: it goes to a helper process for the job's duration instead.
  // The worker outlives the job while more jobs are queued (speculative builds come in runs: one
  // process start, not one per job), and ends when the queue empties.
  push_background(dev, detail::build_processes(dev) > 0, std::move(job));
}

bool in_background_build() { return t_background; }

bool speculative_builds(const DeviceInfo& dev) {
  static const int env = env_switch("PYTORCH_OCL_SPECULATIVE_BUILDS");
  return (env < 0 ? !dev.is_cpu : env == 1) && !t_background && build_threads() > 1;
}

namespace detail {

std::string program_build_log(cl_program prog, cl_device_id dev) {
  size_t n = 0;
  clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
  std::string log(n, '\0');
  if (n) clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, n, &log[0], nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Kernels created in background jobs and not launched yet. Launches look here only while the set is non-empty,
// and only for the first kLaunchesWatched launches after a background kernel appeared: a speculation never used
// (dropped) then stops costing the launches anything.
std::atomic<uint32_t> g_background_kernels{0};
namespace {
std::mutex g_bg_kernels_mutex;
std::set<cl_kernel> g_bg_kernels;
uint64_t g_launches_watched = 0;
constexpr uint64_t kLaunchesWatched = 200000;
} // namespace

void note_background_kernel(cl_kernel k) {
  if (!t_background) return;
  std::lock_guard<std::mutex> lock(g_bg_kernels_mutex);
  g_launches_watched = 0;
  if (g_bg_kernels.insert(k).second) g_background_kernels.store(static_cast<uint32_t>(g_bg_kernels.size()));
}

void claim_background_kernel(cl_kernel k) {
  std::lock_guard<std::mutex> lock(g_bg_kernels_mutex);
  if (g_bg_kernels.erase(k)) ++g_bg_used;
  if (++g_launches_watched > kLaunchesWatched) g_bg_kernels.clear();
  g_background_kernels.store(static_cast<uint32_t>(g_bg_kernels.size()));
}

} // namespace detail

// PYTORCH_OCL_TRACE_BUILDS=1: one stderr line per program built from source (seconds, first kernel,
// options) and its build log where the compiler wrote one, so a cold start can be taken apart by program.
bool trace_builds() {
  static const bool on = [] {
    const char* v = env_value("PYTORCH_OCL_TRACE_BUILDS");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}

void flush_program_cache() {
  background_builder().flush();  // first: its builds queue binaries
  binary_writer().flush();
}

CacheStats cache_stats() {
  CacheStats s;
  s.builds = g_builds.load();
  s.disk_hits = g_disk_hits.load();
  s.build_seconds = g_build_ns.load() * 1e-9;
  s.worker_builds = detail::remote_builds();
  s.critical_builds = g_critical.load();
  s.background_builds = g_background.load();
  s.background_used = g_bg_used.load();
  s.background_waits = g_bg_waits.load();
  s.load_seconds = g_load_ns.load() * 1e-9;
  s.binary_seconds = g_binary_ns.load() * 1e-9;
  s.wait_program_seconds = g_wait_program_ns.load() * 1e-9;
  s.wait_parallel_seconds = g_wait_parallel_ns.load() * 1e-9;
  s.worker_binaries = g_worker_binaries.load();
  return s;
}
std::string disk_cache_path() { return DiskCache::instance().path(); }
bool disk_cache_compiled() { return DiskCache::compiled(); }
bool disk_cache_usable() { return DiskCache::instance().usable(); }
std::string disk_cache_warning() { return DiskCache::instance().warning(); }

} // namespace dlprim
