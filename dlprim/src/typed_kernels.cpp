#include <dlprim/embedded.h>
#include <dlprim/typed_kernels.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

namespace dlprim {

namespace {

struct Entry {
  cl_kernel kernel = nullptr;
  std::mutex mutex;
  cl_context ctx = nullptr;
  int type = 0;
  std::string file, name;  // the entry's own key, to check a per-thread memo hit against
};

// The entry of (ctx, file, t, name), created on first use; entries are never freed.
Entry* find_entry(cl_context ctx, const char* file, DType t, const char* name) {
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, std::string, int, std::string>, std::unique_ptr<Entry>> cache;
  // The map lock only finds the entry: a build (perhaps a background one) holds up no other kernel.
  std::lock_guard<std::mutex> lock(map_mutex);
  auto& slot = cache[std::make_tuple(ctx, std::string(file), int(t), std::string(name))];
  if (!slot) {
    slot = std::make_unique<Entry>();
    slot->ctx = ctx;
    slot->type = int(t);
    slot->file = file;
    slot->name = name;
  }
  return slot.get();
}

} // namespace

TypedKernel typed_kernel(const Context& ctx, const char* file, DType t, const char* name) {
  // Per-op hot path: a small per-thread memo keyed by the argument pointers (the callers pass string literals)
  // skips the global lock and the string-keyed map; a hit is checked against the entry's own key, so a
  // pointer reused for other text only misses.
  struct Memo {
    cl_context ctx;
    const char* file;
    const char* name;
    int type;
    Entry* e;
  };
  constexpr size_t kMemo = 16;
  thread_local Memo memo[kMemo] = {};
  const cl_context c = ctx.context();
  Memo& m = memo[(reinterpret_cast<uintptr_t>(name) / 8 + static_cast<size_t>(t)) % kMemo];
  Entry* e = m.e;
  if (!(e && m.ctx == c && m.file == file && m.name == name && m.type == int(t) && e->file == file &&
        e->name == name)) {
    e = find_entry(c, file, t, name);
    m = {c, file, name, int(t), e};
  }
  std::lock_guard<std::mutex> lock(e->mutex);
  if (!e->kernel) {
    if (t == DType::F64 && !ctx.info().fp64)
      throw Error(std::string(file) + ": device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
    std::string src = t == DType::F64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
    src += kernel_source("common");
    src += std::string("#define DL_T ") + storage_cl_type(t) + "\n#define DL_ACC " + compute_cl_type(compute_dtype(t)) + "\n";
    src += std::string("#define DL_ACC_IS_DOUBLE ") + (compute_dtype(t) == DType::F64 ? "1" : "0") + "\n";
    src += std::string("#define DL_ACC_IS_FLOAT ") + (is_floating(t) ? "1" : "0") + "\n";
    src += "#define DL_LOAD(p, i) " + load_expr(t, "p", "i") + "\n";
    src += "#define DL_STORE(p, i, v) " + store_stmt(t, "p", "i", "v") + "\n";
    src += kernel_source(file);
    e->kernel = create_kernel(ctx.program(src), name);
  }
  return {e->kernel, &e->mutex};
}

} // namespace dlprim
