#include <dlprim/embedded.h>
#include <dlprim/thread_memo.h>
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
};

} // namespace

TypedKernel typed_kernel(const Context& ctx, const char* file, DType t, const char* name, const char* prefix) {
  // Per-op hot path: a per-thread memo skips the global lock and the string-keyed map.
  using Key = std::tuple<cl_context, DType, MemoName<>, MemoName<>, MemoName<>>;
  thread_local ThreadMemo<Key, Entry, 16> memo;
  const Key key(ctx.context(), t, MemoName<>(file), MemoName<>(name), prefix ? MemoName<>(prefix) : MemoName<>());
  Entry* e = &memo.get(key, [&] {
    static std::mutex map_mutex;
    static std::map<std::tuple<cl_context, std::string, int, std::string, std::string>, std::unique_ptr<Entry>> cache;
    // The map lock only finds the entry (never freed): a build (perhaps a background one) holds up no other kernel.
    std::lock_guard<std::mutex> lock(map_mutex);
    auto& slot = cache[std::make_tuple(ctx.context(), std::string(file), int(t), std::string(name),
                                       std::string(prefix ? prefix : ""))];
    if (!slot) slot = std::make_unique<Entry>();
    return slot.get();
  });
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
    if (prefix) src += kernel_source(prefix);
    src += kernel_source(file);
    e->kernel = create_kernel(ctx.program(src), name);
  }
  return {e->kernel, &e->mutex};
}

} // namespace dlprim
