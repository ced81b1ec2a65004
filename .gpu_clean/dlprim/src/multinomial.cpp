#include <dlprim/embedded.h>
#include <dlprim/multinomial.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <tuple>

namespace dlprim {

namespace {

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr;
  size_t wg = 0;
};

DType math_type(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

std::string program_text(DType t) {
  DType mt = math_type(t);
  std::string src;
  if (mt == DType::F64) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  src += kernel_source("common");
  src += kernel_source("philox");
  src += std::string("#define DL_T ") + storage_cl_type(t) + "\n";
  src += std::string("#define DL_MT ") + compute_cl_type(mt) + "\n";
  src += "#define DL_LOAD(p, i) ((DL_MT)(" + load_expr(t, "p", "i") + "))\n";
  if (mt == DType::F64) {
    src += "#define DL_UNIFORM(s, i, o) ((double)dl_philox_word(s, i, o) * 2.3283064365386963e-10)\n"
           "#define DL_UNIFORM_OPEN(s, i, o) (((double)dl_philox_word(s, i, o) + 0.5) * 2.3283064365386963e-10)\n";
  } else {
    src += "#define DL_UNIFORM(s, i, o) dl_uniform_f(dl_philox_word(s, i, o))\n"
           "#define DL_UNIFORM_OPEN(s, i, o) dl_uniform_open_f(dl_philox_word(s, i, o))\n";
  }
  src += kernel_source("multinomial");
  return src;
}

} // namespace

uint64_t multinomial_workspace_bytes(DType dtype, int64_t n_rows, int64_t n_categories) {
  return static_cast<uint64_t>(n_rows) * static_cast<uint64_t>(n_categories) * dtype_size(math_type(dtype));
}

void multinomial(const Context& ctx, cl_command_queue q, const MultinomialArgs& a) {
  if (!is_floating(a.dtype)) throw Error("multinomial: probabilities must have a floating dtype");
  if (a.n_rows == 0 || a.n_sample == 0) return;
  if (a.dtype == DType::F64 && !ctx.info().fp64)
    throw Error("multinomial: device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int>, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), static_cast<int>(a.dtype))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k) {
    k->k = create_kernel(ctx.program(program_text(a.dtype)), "dl_multinomial");
    size_t kernel_max = 0;
    DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(k->k, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(kernel_max),
                                             &kernel_max, nullptr));
    size_t wg = 1;  // a power of two (the argmax tree needs it)
    while (wg * 2 <= std::min<size_t>(256, kernel_max)) wg *= 2;
    k->wg = wg;
  }
  size_t mt_size = dtype_size(math_type(a.dtype));
  KernelArgs args(k->k);
  args.add(a.probs).add<cl_ulong>(a.probs_offset).add<cl_long>(a.row_stride).add<cl_long>(a.col_stride);
  args.add<cl_long>(a.n_categories);
  args.add(a.out).add<cl_ulong>(a.out_offset).add<cl_long>(a.out_row_stride).add<cl_long>(a.out_col_stride);
  args.add<cl_long>(a.n_sample).add<cl_int>(a.replacement ? 1 : 0);
  args.add<cl_ulong>(a.seed).add<cl_ulong>(a.philox_offset);
  args.add(a.workspace).add<cl_ulong>(a.workspace_offset / mt_size).add(a.flags).add<cl_ulong>(a.flags_offset);
  args.add_local(k->wg * mt_size).add_local(k->wg * sizeof(cl_long));
  launch_1d(q, k->k, static_cast<uint64_t>(a.n_rows) * k->wg, k->wg);
}

} // namespace dlprim
