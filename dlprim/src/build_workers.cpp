// Helper build processes (see build_workers.h). Each thread of parallel_builds owns at most one
// worker, started on its first build from source (candidates found in the disk cache start none) and
// ended with the scope: workers never outlive a tuning, so no process lingers and no second GPU
// context stays resident. The socket is written with MSG_NOSIGNAL: a dead worker is an error
// return here, never a SIGPIPE in the user's process.
#include "build_workers.h"

#include <dlprim/env.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace dlprim {
namespace detail {

namespace {

std::atomic<uint64_t> g_remote{0};

std::string worker_path() {
  if (const char* v = env_value("PYTORCH_OCL_BUILD_WORKER")) return v;
  Dl_info info;  // next to the library this code is linked into (the installed package's _C)
  if (!dladdr(reinterpret_cast<void*>(&worker_path), &info) || !info.dli_fname) return "";
  std::string lib = info.dli_fname;
  size_t slash = lib.rfind('/');
  return (slash == std::string::npos ? std::string(".") : lib.substr(0, slash)) + "/ocl_build_worker";
}

bool device_indexes(const DeviceInfo& dev, unsigned* pi, unsigned* di) {
  cl_uint np = 0;
  if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS) return false;
  std::vector<cl_platform_id> plats(np);
  clGetPlatformIDs(np, plats.data(), nullptr);
  for (cl_uint p = 0; p < np; ++p) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> devs(nd);
    clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr);
    for (cl_uint d = 0; d < nd; ++d)
      if (devs[d] == dev.id) {
        *pi = p;
        *di = d;
        return true;
      }
  }
  return false;
}

class Worker {
public:
  explicit Worker(const DeviceInfo& dev) : dev_(dev) {}
  ~Worker() {
    if (fd_ >= 0) close(fd_);  // end of input: the worker exits
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }

  bool build(const std::string& source, const std::string& options, std::vector<unsigned char>* out) {
    if (failed_ || (pid_ <= 0 && !start())) return false;
    uint32_t olen = static_cast<uint32_t>(options.size());
    uint64_t slen = source.size(), size = 0;
    uint8_t status = 1;
    bool ok = send_all(&olen, sizeof(olen)) && send_all(options.data(), olen) && send_all(&slen, sizeof(slen)) &&
              send_all(source.data(), slen) && recv_all(&status, 1) && recv_all(&size, sizeof(size)) &&
              size < (1ull << 32);
    if (!ok) {
      failed_ = true;  // dead or confused: this thread builds locally from now on
      return false;
    }
    std::vector<unsigned char> payload(size);
    if (!recv_all(payload.data(), size)) {
      failed_ = true;
      return false;
    }
    if (status != 0) return false;  // the local build reports the error with its log
    *out = std::move(payload);
    return true;
  }

private:
  bool start() {
    failed_ = true;
    unsigned pi = 0, di = 0;
    std::string exe = worker_path();
    if (exe.empty() || access(exe.c_str(), X_OK) != 0 || !device_indexes(dev_, &pi, &di)) return false;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return false;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, sv[1], 0);  // dup2 clears close-on-exec on 0 and 1
    posix_spawn_file_actions_adddup2(&fa, sv[1], 1);
    std::string a1 = std::to_string(pi), a2 = std::to_string(di);
    char* argv[] = {const_cast<char*>(exe.c_str()), const_cast<char*>(a1.c_str()), const_cast<char*>(a2.c_str()),
                    const_cast<char*>(dev_.name.c_str()), nullptr};
    pid_t pid = 0;
    int rc = 0;
    with_env_lock([&] { rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, environ); });
    posix_spawn_file_actions_destroy(&fa);
    close(sv[1]);
    if (rc != 0) {
      close(sv[0]);
      return false;
    }
    pid_ = pid;
    fd_ = sv[0];
    failed_ = false;
    return true;
  }
  bool send_all(const void* p, size_t n) {
    auto* c = static_cast<const char*>(p);
    while (n) {
      ssize_t r = send(fd_, c, n, MSG_NOSIGNAL);
      if (r <= 0) return false;
      c += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  bool recv_all(void* p, size_t n) {
    auto* c = static_cast<char*>(p);
    while (n) {
      ssize_t r = recv(fd_, c, n, 0);
      if (r <= 0) return false;
      c += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  const DeviceInfo dev_;  // a copy: a background job's scope outlives the job that made it (and its DeviceInfo)
  pid_t pid_ = -1;
  int fd_ = -1;
  bool failed_ = false;
};

thread_local Worker* t_worker = nullptr;

} // namespace

bool worker_available() {
  static const std::string exe = worker_path();
  static const bool present = !exe.empty() && access(exe.c_str(), X_OK) == 0;
  return present;
}

int build_processes(const DeviceInfo& dev) {
  if (!worker_available()) return 0;
  if (const char* v = env_value("PYTORCH_OCL_BUILD_PROCESSES")) return std::max(0, std::min(std::atoi(v), 64));
  // Eight, not one per core: each worker holds a context on the device (on NVIDIA a CUDA context, a few
  // hundred MiB of device memory) while a tuning builds.
  return dev.is_nvidia() ? 8 : 0;
}

WorkerScope::WorkerScope(const DeviceInfo& dev) : prev_(t_worker) { t_worker = new Worker(dev); }

WorkerScope::~WorkerScope() {
  delete t_worker;
  t_worker = static_cast<Worker*>(prev_);
}

bool remote_build(const std::string& source, const std::string& options, std::vector<unsigned char>* binary) {
  if (!t_worker || !t_worker->build(source, options, binary)) return false;
  ++g_remote;
  return true;
}

uint64_t remote_builds() { return g_remote.load(); }
bool has_worker() { return t_worker != nullptr; }

} // namespace detail
} // namespace dlprim
