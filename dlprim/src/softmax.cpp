#include <dlprim/embedded.h>
#include <dlprim/softmax.h>

#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

std::string program_text(SoftmaxKind kind, DType compute, DType in0, DType in1, DType out) {
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
  s << kernel_source("softmax");
  return s.str();
}

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr;
};

template <class T>
void add_dims(KernelArgs& a, const std::array<int64_t, kMaxDims>& v) {
  struct {
    T v[kMaxDims];
  } d{};
  for (int i = 0; i < kMaxDims; ++i) d.v[i] = static_cast<T>(v[i]);
  a.add(d);
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

  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int, int, int, int, int>, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), int(kind), int(compute), int(x0.dtype), int(x1.dtype), int(y.dtype))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k) k->k = create_kernel(ctx.program(program_text(kind, compute, x0.dtype, x1.dtype, y.dtype)), "softmax_rows");

  size_t elem = dtype_size(compute);
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
