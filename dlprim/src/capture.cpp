#include <dlprim/capture.h>
#include <dlprim/context.h>
#include <dlprim/profiler.h>

#include <cstring>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace dlprim {

namespace capture {

std::atomic<int> g_active{0};

namespace {

std::mutex g_mutex;
std::unordered_map<cl_command_queue, std::shared_ptr<CapturedWork>> g_lists;

struct Arg {
  bool set = false;
  std::vector<unsigned char> value;  // empty with bytes > 0: a __local size
  size_t bytes = 0;
};
// Per thread: KernelArgs and the launch that follows run on one thread.
thread_local std::unordered_map<cl_kernel, std::vector<Arg>> t_args;
struct Philox {
  cl_command_queue q;
  uint64_t seed, offset;
  PhiloxRedraw redraw;
};
thread_local std::vector<Philox> t_philox;  // drawn, not yet matched to a launch

std::shared_ptr<CapturedWork> list_of(cl_command_queue q) {
  if (!any_active()) return nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_lists.find(q);
  return it == g_lists.end() ? nullptr : it->second;
}

std::string kernel_name(cl_kernel k) {
  size_t n = 0;
  clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n);
  std::string name(n, '\0');
  if (n) clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, n, &name[0], nullptr);
  while (!name.empty() && name.back() == '\0') name.pop_back();
  return name;
}

} // namespace

void begin(cl_command_queue q) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_lists.count(q)) throw Error("graph capture: this stream is already capturing");
  g_lists[q] = std::make_shared<CapturedWork>();
  t_args.clear();  // arguments set before the capture are not known to be current
  t_philox.clear();
  ++g_active;
}

std::shared_ptr<CapturedWork> end(cl_command_queue q) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_lists.find(q);
  if (it == g_lists.end()) throw Error("graph capture: the stream is not capturing");
  auto list = it->second;
  g_lists.erase(it);
  --g_active;
  for (const Philox& p : t_philox)
    if (p.q == q)
      throw Error("graph capture: a random op's Philox seed and offset were not found among its kernel's "
                  "arguments, so replays could not draw new random numbers");
  return list;
}

void abort(cl_command_queue q) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_lists.erase(q)) --g_active;
}

bool capturing(cl_command_queue q) { return list_of(q) != nullptr; }

void forbid(cl_command_queue q, const char* what) {
  if (capturing(q))
    throw Error(std::string(what) +
                " is not permitted while the stream is capturing a graph (operation not permitted when stream "
                "is capturing): a graph records device work only; move it out of the captured region");
}

void note_arg(cl_kernel k, cl_uint index, size_t bytes, const void* value) {
  auto& v = t_args[k];
  if (index == 0) v.clear();  // KernelArgs always starts at 0: a new launch
  if (v.size() <= index) v.resize(index + 1);
  Arg& a = v[index];
  a.set = true;
  a.bytes = bytes;
  if (value)
    a.value.assign(static_cast<const unsigned char*>(value), static_cast<const unsigned char*>(value) + bytes);
  else
    a.value.clear();
}

bool record_kernel(cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global,
                   const size_t* local, const char* label) {
  auto list = list_of(q);
  if (!list) return false;
  const std::string name = kernel_name(k);
  cl_uint n_args = 0;
  DLPRIM_CL_CHECK(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(n_args), &n_args, nullptr));
  auto it = t_args.find(k);
  bool complete = it != t_args.end() && it->second.size() == n_args;
  if (complete)
    for (const Arg& a : it->second) complete = complete && a.set;
  if (!complete)
    throw Error("graph capture: kernel " + name +
                " was launched with arguments not set through dlprim::KernelArgs during the capture; it cannot "
                "be recorded");
  cl_program program = nullptr;
  DLPRIM_CL_CHECK(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof(program), &program, nullptr));
  CapturedWork::Item item;
  item.kind = CapturedWork::Item::Kernel;
  item.kernel = create_kernel(program, name.c_str());
  for (cl_uint i = 0; i < n_args; ++i) {
    const Arg& a = it->second[i];
    cl_int err = clSetKernelArg(item.kernel, i, a.bytes, a.value.empty() ? nullptr : a.value.data());
    if (err != CL_SUCCESS) {
      clReleaseKernel(item.kernel);
      throw Error("graph capture: clSetKernelArg on the copy of " + name + " failed: " + cl_error_name(err));
    }
  }
  item.dims = dims;
  for (cl_uint d = 0; d < dims; ++d) {
    item.global[d] = global[d];
    if (offset) item.offset[d] = offset[d];
    if (local) item.local[d] = local[d];
  }
  item.has_offset = offset != nullptr;
  item.has_local = local != nullptr;
  item.label = label ? label : name;
  for (size_t p = 0; p < t_philox.size() && item.seed_arg < 0; ++p) {
    if (t_philox[p].q != q) continue;
    const uint64_t want[2] = {t_philox[p].seed, t_philox[p].offset};
    for (cl_uint i = 0; i + 1 < n_args; ++i) {
      const Arg& a = it->second[i];
      const Arg& b = it->second[i + 1];
      if (a.value.size() == 8 && b.value.size() == 8 && std::memcmp(a.value.data(), &want[0], 8) == 0 &&
          std::memcmp(b.value.data(), &want[1], 8) == 0) {
        item.seed_arg = static_cast<int>(i);
        item.redraw = std::move(t_philox[p].redraw);
        t_philox.erase(t_philox.begin() + p);
        break;
      }
    }
  }
  list->items_.push_back(std::move(item));
  return true;
}

void note_philox(cl_command_queue q, uint64_t seed, uint64_t offset, PhiloxRedraw redraw) {
  t_philox.push_back({q, seed, offset, std::move(redraw)});
}

bool record_copy(cl_command_queue q, cl_mem src, cl_mem dst, uint64_t src_off, uint64_t dst_off, uint64_t bytes) {
  auto list = list_of(q);
  if (!list) return false;
  CapturedWork::Item item;
  item.kind = CapturedWork::Item::Copy;
  item.src = src;
  item.dst = dst;
  item.src_off = src_off;
  item.dst_off = dst_off;
  item.bytes = bytes;
  item.label = "copy";
  list->items_.push_back(std::move(item));
  return true;
}

bool record_fill(cl_command_queue q, cl_mem buf, const void* pattern, size_t pattern_size, uint64_t off,
                 uint64_t bytes) {
  auto list = list_of(q);
  if (!list) return false;
  CapturedWork::Item item;
  item.kind = CapturedWork::Item::Fill;
  item.dst = buf;
  item.dst_off = off;
  item.bytes = bytes;
  item.pattern.assign(static_cast<const unsigned char*>(pattern),
                      static_cast<const unsigned char*>(pattern) + pattern_size);
  item.label = "fill";
  list->items_.push_back(std::move(item));
  return true;
}

} // namespace capture

void enqueue_copy_buffer(cl_command_queue q, cl_mem src, cl_mem dst, uint64_t src_off, uint64_t dst_off,
                         uint64_t bytes) {
  if (capture::any_active() && capture::record_copy(q, src, dst, src_off, dst_off, bytes)) return;
  profiler::g_launches.fetch_add(1, std::memory_order_relaxed);
  DLPRIM_CL_CHECK(clEnqueueCopyBuffer(q, src, dst, src_off, dst_off, bytes, 0, nullptr, nullptr));
}

void enqueue_fill_buffer(cl_command_queue q, cl_mem buf, const void* pattern, size_t pattern_size, uint64_t off,
                         uint64_t bytes) {
  if (capture::any_active() && capture::record_fill(q, buf, pattern, pattern_size, off, bytes)) return;
  profiler::g_launches.fetch_add(1, std::memory_order_relaxed);
  DLPRIM_CL_CHECK(clEnqueueFillBuffer(q, buf, pattern, pattern_size, off, bytes, 0, nullptr, nullptr));
}

CapturedWork::~CapturedWork() {
  for (Item& it : items_)
    if (it.kernel) clReleaseKernel(it.kernel);
}

void CapturedWork::replay(cl_command_queue q) {
  if (capture::capturing(q))
    throw Error("graph replay: replaying a graph into a stream that is capturing is not supported");
  const bool rec = profiler::recording();
  for (Item& it : items_) {
    if (it.redraw) {
      const std::pair<uint64_t, uint64_t> so = it.redraw();
      const cl_ulong s = so.first, o = so.second;
      DLPRIM_CL_CHECK(clSetKernelArg(it.kernel, it.seed_arg, sizeof(s), &s));
      DLPRIM_CL_CHECK(clSetKernelArg(it.kernel, it.seed_arg + 1, sizeof(o), &o));
    }
    cl_event ev = nullptr;
    cl_event* evp = rec ? &ev : nullptr;
    switch (it.kind) {
      case Item::Kernel:
        DLPRIM_CL_CHECK(clEnqueueNDRangeKernel(q, it.kernel, it.dims, it.has_offset ? it.offset : nullptr, it.global,
                                               it.has_local ? it.local : nullptr, 0, nullptr, evp));
        break;
      case Item::Copy:
        DLPRIM_CL_CHECK(clEnqueueCopyBuffer(q, it.src, it.dst, it.src_off, it.dst_off, it.bytes, 0, nullptr, evp));
        break;
      case Item::Fill:
        DLPRIM_CL_CHECK(clEnqueueFillBuffer(q, it.dst, it.pattern.data(), it.pattern.size(), it.dst_off, it.bytes,
                                            0, nullptr, evp));
        break;
    }
    if (ev) profiler::record(it.label, ev);
  }
  clFlush(q);
}

std::string CapturedWork::describe() const {
  std::ostringstream out;
  for (const Item& it : items_) {
    if (it.kind == Item::Kernel) {
      out << "kernel " << it.label << " global=";
      for (cl_uint d = 0; d < it.dims; ++d) out << (d ? "x" : "") << it.global[d];
      if (it.has_local) {
        out << " local=";
        for (cl_uint d = 0; d < it.dims; ++d) out << (d ? "x" : "") << it.local[d];
      }
    } else {
      out << it.label << " " << it.bytes << " bytes";
    }
    out << "\n";
  }
  return out.str();
}

} // namespace dlprim
