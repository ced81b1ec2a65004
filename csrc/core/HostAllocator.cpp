#include "core/HostAllocator.h"

#include "core/Device.h"
#include "core/Stream.h"

#include <c10/util/Exception.h>

#include <map>
#include <mutex>
#include <vector>

namespace pytorch_ocl {

namespace {

struct HostBlock {
  cl_mem mem;
  void* host;
  size_t size;
  bool in_use = false;
  std::vector<cl_event> uses;
};

std::mutex g_mutex;
std::map<uintptr_t, HostBlock*> g_blocks;            // by host address
std::multimap<size_t, HostBlock*> g_free;            // by size

bool uses_done(HostBlock* b) {
  for (cl_event e : b->uses) {
    cl_int st = CL_QUEUED;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, nullptr);
    if (st != CL_COMPLETE && st >= 0) return false;
  }
  for (cl_event e : b->uses) clReleaseEvent(e);
  b->uses.clear();
  return true;
}

void free_host(void* ctx) {
  auto* b = static_cast<HostBlock*>(ctx);
  std::lock_guard<std::mutex> lock(g_mutex);
  b->in_use = false;
  g_free.emplace(b->size, b);
}

size_t size_class(size_t n) {
  size_t s = 4096;
  while (s < n) s *= 2;
  return s;
}

class PinnedAllocator final : public c10::Allocator {
public:
  c10::DataPtr allocate(size_t n) override {
    if (n == 0) return c10::DataPtr(nullptr, c10::Device(c10::kCPU));
    size_t size = size_class(n);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      for (auto it = g_free.lower_bound(size); it != g_free.end() && it->first == size; ++it) {
        if (!uses_done(it->second)) continue;
        HostBlock* b = it->second;
        g_free.erase(it);
        b->in_use = true;
        return c10::DataPtr(b->host, b, &free_host, c10::Device(c10::kCPU));
      }
    }
    TORCH_CHECK(device_count() > 0, "ocl: pinned memory needs an OpenCL device: ", enumeration_error());
    int device = current_device();
    dlprim::Context& ctx = context(device);
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(ctx.context(), CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, nullptr, &err);
    TORCH_CHECK_WITH(OutOfMemoryError, err == CL_SUCCESS, "ocl: cannot allocate ", size,
                     " bytes of pinned host memory: ", dlprim::cl_error_name(err));
    void* host = clEnqueueMapBuffer(default_queue(device), mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                    size, 0, nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      clReleaseMemObject(mem);
      TORCH_CHECK(false, "ocl: cannot map pinned host memory: ", dlprim::cl_error_name(err));
    }
    auto* b = new HostBlock{mem, host, size, true, {}};
    std::lock_guard<std::mutex> lock(g_mutex);
    g_blocks[reinterpret_cast<uintptr_t>(host)] = b;
    return c10::DataPtr(host, b, &free_host, c10::Device(c10::kCPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

private:
  static cl_command_queue default_queue(int device) { return queue_of(default_stream(device)); }
};

PinnedAllocator g_pinned;

HostBlock* find_block(const void* ptr) {
  auto addr = reinterpret_cast<uintptr_t>(ptr);
  auto it = g_blocks.upper_bound(addr);
  if (it == g_blocks.begin()) return nullptr;
  HostBlock* b = std::prev(it)->second;
  return addr < reinterpret_cast<uintptr_t>(b->host) + b->size ? b : nullptr;
}

} // namespace

c10::Allocator* host_allocator() { return &g_pinned; }

bool is_pinned(const void* ptr) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return find_block(ptr) != nullptr;
}

void record_host_use(const void* ptr, cl_event event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  HostBlock* b = find_block(ptr);
  if (!b) return;
  clRetainEvent(event);
  b->uses.push_back(event);
}

} // namespace pytorch_ocl
