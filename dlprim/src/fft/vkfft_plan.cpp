// The VkFFT plan cache: VkFFT (https://github.com/DTolm/VkFFT, Debian's libvkfft-dev, OpenCL
// backend) generates and compiles the FFT kernels; this file only describes the dense batched
// layout to it, keeps the plans, and binds our buffers, offsets and queue at each launch.
//
// VkFFT facts this relies on (vkFFT.h 1.2.x):
//  - kernel arguments are set at every launch from *pointers* to cl_mem that the plan stores, so a
//    plan keeps its own cl_mem slots and we write the current buffers into them before VkFFTAppend;
//  - with specifyOffsetsAtLaunch the byte offsets are launch parameters (our allocator hands out
//    sub-buffers of large segments);
//  - initialization uses the context and device only (Bluestein chirps are uploaded through a
//    queue VkFFT creates and finishes itself), launches use launchParams.commandQueue;
//  - kernels are built from source per plan (clBuildProgram); saveApplicationToString /
//    loadApplicationFromString round-trip the binaries, which we keep in the on-disk cache.
#define VKFFT_BACKEND 3
#include <vkFFT.h>

#include <dlprim/capture.h>
#include <dlprim/fft.h>

#include "../disk_cache.h"

#include <clocale>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

// Bumped when the way plans are configured changes (keys of the stored binaries).
constexpr const char* kPlanVersion = "vkfft1";

const char* vkfft_error(VkFFTResult r) {
  switch (r) {
    case VKFFT_ERROR_UNSUPPORTED_RADIX: return "unsupported radix";
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH: return "unsupported FFT length";
    case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C: return "unsupported length for a real-to-complex transform";
    case VKFFT_ERROR_FAILED_TO_ALLOCATE: return "failed to allocate device memory";
    case VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM: return "failed to compile a generated kernel";
    case VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM: return "failed to create a program";
    case VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL: return "failed to launch a kernel";
    case VKFFT_ERROR_MALLOC_FAILED: return "host allocation failed";
    case VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER: return "generated code too long";
    default: return "VkFFT error";
  }
}

// VkFFT switches the process locale to "C" while it prints kernel code and "restores" it from a
// pointer that setlocale has since overwritten, which leaves the whole process in the C locale
// (Python's open() then defaults to ASCII). Keep a copy and put it back.
class LocaleGuard {
public:
  LocaleGuard() {
    const char* l = setlocale(LC_ALL, nullptr);
    if (l) saved_ = l;
  }
  ~LocaleGuard() {
    if (!saved_.empty()) setlocale(LC_ALL, saved_.c_str());
  }

private:
  std::string saved_;
};

using Key = std::tuple<cl_context, cl_command_queue, int, bool, bool, int, uint64_t, uint64_t, uint64_t, uint64_t>;

Key key_of(const Context& ctx, cl_command_queue q, const FftDesc& d) {
  return Key(ctx.context(), q, static_cast<int>(d.kind), d.double_precision, d.inverse, d.rank, d.n[0], d.n[1],
             d.n[2], d.batch);
}

std::string describe(const FftDesc& d) {
  std::ostringstream s;
  s << (d.kind == FftKind::C2C ? "c2c" : d.kind == FftKind::R2C ? "r2c" : "c2r") << (d.inverse ? " inverse" : " forward")
    << (d.double_precision ? " float64" : " float32") << " n=[";
  for (int i = 0; i < d.rank; ++i) s << (i ? "," : "") << d.n[i];
  s << "] batch=" << d.batch;
  return s.str();
}

class Plan {
public:
  Plan(const Context& ctx, const FftDesc& d) : desc_(d) {
    cl_device_id dev = ctx.device();
    cl_context cctx = ctx.context();
    device_ = dev;
    context_ = cctx;
    VkFFTConfiguration c = {};
    c.FFTdim = d.rank;
    // VkFFT's axis 0 is the contiguous one: torch's last signal dim.
    for (int i = 0; i < d.rank; ++i) c.size[i] = d.n[d.rank - 1 - i];
    c.numberBatches = d.batch;
    c.device = &device_;
    c.context = &context_;
    c.doublePrecision = d.double_precision ? 1 : 0;
    c.specifyOffsetsAtLaunch = 1;
    if (d.inverse)
      c.makeInversePlanOnly = 1;
    else
      c.makeForwardPlanOnly = 1;
    uint64_t real_elems = 1, cplx_elems = 1;  // per signal
    for (int i = 0; i < d.rank; ++i) {
      real_elems *= d.n[i];
      cplx_elems *= (d.kind != FftKind::C2C && i == d.rank - 1) ? d.n[i] / 2 + 1 : d.n[i];
    }
    uint64_t scalar = d.double_precision ? 8 : 4;
    buffer_size_ = cplx_elems * d.batch * 2 * scalar;
    c.buffer = &buffer_;
    c.bufferSize = &buffer_size_;
    if (d.kind == FftKind::C2C) {
      set_strides(c.bufferStride, d, false);  // in place on `out`
    } else {
      // Out of place: the real side is VkFFT's "input" buffer (forward reads it; inverse writes
      // it back through inverseReturnToInputBuffer), the complex side is its main buffer.
      c.performR2C = 1;
      c.isInputFormatted = 1;
      c.inverseReturnToInputBuffer = 1;
      input_size_ = real_elems * d.batch * scalar;
      c.inputBuffer = &input_;
      c.inputBufferSize = &input_size_;
      set_strides(c.inputBufferStride, d, false);
      set_strides(c.bufferStride, d, true);
    }
    // The plan must bind some buffer at creation (VkFFT enqueues nothing on it then); the real
    // ones are written into the slots at every launch.
    cl_int err = 0;
    placeholder_ = clCreateBuffer(cctx, CL_MEM_READ_WRITE, 256, nullptr, &err);
    if (err != CL_SUCCESS) throw Error("fft: clCreateBuffer of the plan's placeholder failed (" + describe(d) + ")");
    buffer_ = placeholder_;
    input_ = placeholder_;

    LocaleGuard locale;
    DiskCache& disk = DiskCache::instance();
    std::string dkey = disk.key(ctx.info().cache_identity(), std::string(kPlanVersion) + " " + describe(d), "");
    std::vector<unsigned char> bin;
    VkFFTResult r = VKFFT_ERROR_EMPTY_applicationString;
    if (disk.load(dkey, &bin) && !bin.empty()) {
      VkFFTConfiguration lc = c;
      lc.loadApplicationFromString = 1;
      lc.loadApplicationString = bin.data();
      app_ = {};
      r = initializeVkFFT(&app_, lc);
      if (r != VKFFT_SUCCESS) deleteVkFFT(&app_);
    }
    if (r != VKFFT_SUCCESS) {
      c.saveApplicationToString = 1;
      app_ = {};
      r = initializeVkFFT(&app_, c);
      if (r != VKFFT_SUCCESS) {
        clReleaseMemObject(placeholder_);
        throw Error("VkFFT cannot plan the " + describe(d) + ": " + vkfft_error(r) + " (VkFFT error " +
                    std::to_string(static_cast<int>(r)) + ")");
      }
      if (app_.saveApplicationString && app_.applicationStringSize) {
        auto* p = static_cast<unsigned char*>(app_.saveApplicationString);
        disk.store(dkey, std::vector<unsigned char>(p, p + app_.applicationStringSize), ctx.info().cache_identity());
      }
    }
  }
  ~Plan() {
    deleteVkFFT(&app_);  // OpenCL defers freeing objects that queued commands still use
    if (placeholder_) clReleaseMemObject(placeholder_);
  }
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;

  void run(cl_command_queue q, cl_mem in, uint64_t in_off, cl_mem out, uint64_t out_off) {
    std::lock_guard<std::mutex> lock(mu_);  // kernel arguments live in the shared cl_kernels
    VkFFTLaunchParams p = {};
    p.commandQueue = &q;
    // Slots keep their address, so VkFFT sees "no new buffer" and reads the slots at dispatch.
    p.buffer = &buffer_;
    if (desc_.kind != FftKind::C2C) p.inputBuffer = &input_;
    if (desc_.kind == FftKind::C2R) {  // complex side `in` is VkFFT's buffer, real `out` its input
      buffer_ = in;
      p.bufferOffset = in_off;
      input_ = out;
      p.inputBufferOffset = out_off;
    } else {
      input_ = in;
      p.inputBufferOffset = desc_.kind == FftKind::C2C ? 0 : in_off;
      buffer_ = out;
      p.bufferOffset = out_off;
    }
    VkFFTResult r = VkFFTAppend(&app_, desc_.inverse ? 1 : -1, &p);
    if (r != VKFFT_SUCCESS)
      throw Error("VkFFT failed to run the " + describe(desc_) + ": " + vkfft_error(r) + " (VkFFT error " +
                  std::to_string(static_cast<int>(r)) + ")");
  }

private:
  // Strides (in elements of the buffer's type) of VkFFT's y, z and batch-of-one axes.
  static void set_strides(uint64_t* stride, const FftDesc& d, bool complex_side_of_real) {
    uint64_t acc = 1;
    for (int i = 0; i < 3; ++i) {
      uint64_t size = i < d.rank ? d.n[d.rank - 1 - i] : 1;
      if (i == 0 && complex_side_of_real) size = size / 2 + 1;
      acc *= size;
      stride[i] = acc;
    }
  }

  FftDesc desc_;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_mem buffer_ = nullptr, input_ = nullptr, placeholder_ = nullptr;
  uint64_t buffer_size_ = 0, input_size_ = 0;
  VkFFTApplication app_ = {};
  std::mutex mu_;
};

// LRU cache of plans; a plan in use by a caller stays alive through its shared_ptr.
struct Cache {
  std::mutex mu;
  size_t max = 256;
  std::list<Key> order;  // most recent first
  std::map<Key, std::pair<std::shared_ptr<Plan>, std::list<Key>::iterator>> plans;

  void trim() {
    while (plans.size() > max) {
      plans.erase(order.back());
      order.pop_back();
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: plans may outlive static destruction order
  return *c;
}

std::shared_ptr<Plan> get_plan(const Context& ctx, cl_command_queue q, const FftDesc& d) {
  Cache& c = cache();
  Key k = key_of(ctx, q, d);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.plans.find(k);
    if (it != c.plans.end()) {
      c.order.splice(c.order.begin(), c.order, it->second.second);
      return it->second.first;
    }
  }
  auto plan = std::make_shared<Plan>(ctx, d);  // compiles: not under the lock
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.plans.find(k);
  if (it != c.plans.end()) return it->second.first;  // another thread made it meanwhile
  c.order.push_front(k);
  c.plans.emplace(k, std::make_pair(plan, c.order.begin()));
  c.trim();
  return plan;
}

} // namespace

void fft(const Context& ctx, cl_command_queue q, const FftDesc& d, cl_mem in, uint64_t in_offset, cl_mem out,
         uint64_t out_offset) {
  // VkFFT enqueues its kernels itself, past the capture hooks of launch_nd: refuse rather than run them eagerly.
  if (capture::any_active()) capture::forbid(q, "fft (VkFFT enqueues its own kernels, which a graph cannot record)");
  if (d.rank < 1 || d.rank > 3) throw Error("fft: VkFFT plans have 1 to 3 dims, got " + std::to_string(d.rank));
  if (d.kind == FftKind::R2C && d.inverse) throw Error("fft: a real-to-complex transform is forward only");
  if (d.kind == FftKind::C2R && !d.inverse) throw Error("fft: a complex-to-real transform is inverse only");
  if (d.kind == FftKind::C2C && (in != out || in_offset != out_offset))
    throw Error("fft: complex-to-complex transforms run in place");
  get_plan(ctx, q, d)->run(q, in, in_offset, out, out_offset);
}

size_t fft_plan_cache_size() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().plans.size();
}

void fft_plan_cache_clear() {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().plans.clear();
  cache().order.clear();
}

void fft_plan_cache_set_max(size_t n) {
  std::lock_guard<std::mutex> lock(cache().mu);
  cache().max = n;
  cache().trim();
}

size_t fft_plan_cache_max() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().max;
}

} // namespace dlprim
