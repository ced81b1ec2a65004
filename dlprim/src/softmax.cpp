#include <dlprim/embedded.h>
#include <dlprim/program_cache.h>
#include <dlprim/softmax.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

// gpu: add the register kernels (softmax_reg1, and softmax_reg4 when every type is float).
std::string program_text(SoftmaxKind kind, DType compute, DType in0, DType in1, DType out, bool gpu) {
  std::ostringstream s;
  if (compute == DType::F64 || in0 == DType::F64 || in1 == DType::F64 || out == DType::F64)
    s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common");
  s << "#define T " << compute_cl_type(compute) << "\n#define MODE " << static_cast<int>(kind) << "\n"
    << "#define IN0_T " << storage_cl_type(in0) << "\n#define IN1_T " << storage_cl_type(in1) << "\n"
    << "#define OUT_T " << storage_cl_type(out) << "\n"
    << "#define LOAD0(p) (" << convert_expr(in0, compute, load_expr(in0, "(p)", "0")) << ")\n"
    << "#define LOAD1(p) (" << convert_expr(in1, compute, load_expr(in1, "(p)", "0")) << ")\n"
    << "#define STORE(p, v) do { " << store_stmt(out, "(p)", "0", convert_expr(compute, out, "(v)"))
    << " } while (0)\n";
  if (gpu) {
    bool f32 = compute == DType::F32 && in0 == DType::F32 && in1 == DType::F32 && out == DType::F32;
    s << "#define DL_GPU_KERNELS 1\n#define SM_VEC4 " << (f32 ? 1 : 0) << "\n";
  }
  s << kernel_source("softmax");
  return s.str();
}

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr, reg1 = nullptr, reg4 = nullptr;
  uint64_t reg_max = 0;  // largest power-of-two group the register kernels can run (registers)
};

uint64_t kernel_group_limit(const Context& ctx, cl_kernel k) {
  size_t wg = 0;
  DLPRIM_CL_CHECK(clGetKernelWorkGroupInfo(k, ctx.device(), CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr));
  return wg;
}

constexpr uint64_t kHold = 16;  // SM_HOLD in softmax.cl: elements a thread holds per tensor

uint64_t pow2_ceil(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The register kernel's layout for this launch: vector width (0: not applicable) and TR.
struct RegPlan {
  int vw = 0;
  uint32_t TO = 1, TR = 1;
};

RegPlan reg_plan(uint64_t lmax, bool backward, DType compute, const RowsShape& shape, const RowsTensor& x0,
                 const RowsTensor& x1, const RowsTensor& y) {
  RegPlan r;
  if (lmax == 0) return r;
  if (shape.step[0] != 1 || shape.step[2] != 1 || (backward && shape.step[1] != 1)) return r;
  uint64_t D = static_cast<uint64_t>(shape.length);
  bool f32 = compute == DType::F32 && x0.dtype == DType::F32 && x1.dtype == DType::F32 && y.dtype == DType::F32;
  bool aligned = f32 && D % 4 == 0 && x0.offset % 4 == 0 && y.offset % 4 == 0 && (!backward || x1.offset % 4 == 0);
  for (int d = 0; d < shape.rank; ++d)
    for (int t = 0; t < kRowTensors; ++t)
      if (t != 1 || backward) aligned = aligned && shape.strides[t][d] % 4 == 0;
  int vw = aligned ? 4 : 1;
  uint64_t nv = D / vw;
  uint64_t tr = pow2_ceil((nv + kHold / vw - 1) / (kHold / vw));
  if (tr > lmax) return r;
  r.vw = vw;
  r.TR = static_cast<uint32_t>(tr);
  r.TO = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(1, std::min<uint64_t>(256, lmax) / tr),
                                                  pow2_ceil(shape.n_rows())));
  return r;
}

// The kernels of one (kind, dtypes), built on first use; `fresh` (optional) tells the call that built them.
Kernel& kernels(const Context& ctx, SoftmaxKind kind, DType compute, DType d0, DType d1, DType dy, bool* fresh) {
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int, int, int, int, int>, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), int(kind), int(compute), int(d0), int(d1), int(dy))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k) {
    bool gpu = !cpu_mapping(ctx);
    cl_program prog = ctx.program(program_text(kind, compute, d0, d1, dy, gpu));
    k->k = create_kernel(prog, "softmax_rows");
    if (gpu) {
      k->reg1 = create_kernel(prog, "softmax_reg1");
      if (compute == DType::F32 && d0 == DType::F32 && d1 == DType::F32 && dy == DType::F32)
        k->reg4 = create_kernel(prog, "softmax_reg4");
      uint64_t lim = std::min<uint64_t>(ctx.work_group_size(1024), kernel_group_limit(ctx, k->reg1));
      if (k->reg4) lim = std::min(lim, kernel_group_limit(ctx, k->reg4));
      k->reg_max = 1;
      while (k->reg_max * 2 <= lim) k->reg_max *= 2;
    }
    if (fresh) *fresh = true;
  }
  return *k;
}

} // namespace

void softmax(const Context& ctx, cl_command_queue q, SoftmaxKind kind, DType compute, const RowsShape& shape,
             const RowsTensor& x0, const RowsTensor& x1_in, const RowsTensor& y) {
  uint64_t rows = shape.n_rows();
  if (rows == 0 || shape.length == 0) return;
  bool backward = kind == SoftmaxKind::SoftmaxBackward || kind == SoftmaxKind::LogSoftmaxBackward;
  const RowsTensor& x1 = backward ? x1_in : x0;
  bool fp64 = compute == DType::F64 || x0.dtype == DType::F64 || x1.dtype == DType::F64 || y.dtype == DType::F64;
  if (fp64 && !ctx.info().fp64)
    throw Error("softmax: device '" + ctx.info().name + "' does not support float64");

  bool fresh = false;
  Kernel* k = &kernels(ctx, kind, compute, x0.dtype, x1.dtype, y.dtype, &fresh);
  // Speculative build (cold start): a forward met for the first time is followed by its backward within the
  // step (grad_output and output of y's dtype, grad_input of x0's); its program builds in the background.
  if (fresh && !backward && speculative_builds(ctx.info())) {
    SoftmaxKind bw = kind == SoftmaxKind::Softmax ? SoftmaxKind::SoftmaxBackward : SoftmaxKind::LogSoftmaxBackward;
    DType dy = y.dtype, dx = x0.dtype;
    build_in_background(ctx.info(), [&ctx, bw, compute, dy, dx] { kernels(ctx, bw, compute, dy, dy, dx, nullptr); });
  }
  std::lock_guard<std::mutex> lock(k->m);

  size_t elem = dtype_size(compute);
  RegPlan r = reg_plan(k->reg_max, backward, compute, shape, x0, x1, y);
  if (r.vw) {
    KernelArgs a(r.vw == 4 ? k->reg4 : k->reg1);
    a.add<cl_ulong>(rows).add<cl_ulong>(static_cast<uint64_t>(shape.length));
    a.add<cl_uint>(r.TO).add<cl_uint>(r.TR);
    a.add<cl_int>(shape.rank);
    add_dims<cl_long>(a, shape.sizes);
    for (int i = 0; i < kRowTensors; ++i) add_dims<cl_long>(a, shape.strides[i]);
    a.add(x0.mem).add<cl_ulong>(x0.offset).add(x1.mem).add<cl_ulong>(x1.offset).add(y.mem).add<cl_ulong>(y.offset);
    size_t L = static_cast<size_t>(r.TO) * r.TR;
    a.add_local(2 * L * elem);
    launch_1d(q, r.vw == 4 ? k->reg4 : k->reg1, (rows + r.TO - 1) / r.TO * L, L);
    return;
  }

  uint64_t local_cap = ctx.info().local_mem_size ? ctx.info().local_mem_size / (4 * elem) : 256;
  RowsTiling t = rows_tiling(ctx, shape, static_cast<uint32_t>(std::min<uint64_t>(256, local_cap)));
  KernelArgs a(k->k);
  a.add<cl_ulong>(rows).add<cl_ulong>(static_cast<uint64_t>(shape.length));
  a.add<cl_uint>(t.TO).add<cl_uint>(t.TR).add<cl_int>(t.col_order ? 1 : 0);
  a.add<cl_int>(shape.rank);
  add_dims<cl_long>(a, shape.sizes);
  for (int i = 0; i < kRowTensors; ++i) add_dims<cl_long>(a, shape.strides[i]);
  for (int i = 0; i < kRowTensors; ++i) a.add<cl_long>(shape.step[i]);
  a.add(x0.mem).add<cl_ulong>(x0.offset).add(x1.mem).add<cl_ulong>(x1.offset).add(y.mem).add<cl_ulong>(y.offset);
  size_t L = static_cast<size_t>(t.TO) * t.TR;
  a.add_local(2 * L * elem);
  uint64_t groups = (rows + t.TO - 1) / t.TO;
  launch_1d(q, k->k, groups * L, L);
}

} // namespace dlprim
