#include <dlprim/embedded.h>
#include <dlprim/positional.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

std::string program_text(const PositionalOp& op, DType compute, DType out, DType in) {
  const char* ct = compute_cl_type(compute);
  bool fp64 = compute == DType::F64 || out == DType::F64 || (op.has_input && in == DType::F64);
  std::ostringstream s;
  if (fp64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common");
  s << "typedef " << ct << " dl_ct;\n";
  if (out == DType::F16)
    s << "inline float dl_round_f16(float x) { ushort u; vstore_half_rte(x, 0, (__private half*)&u); "
         "return vload_half(0, (__private const half*)&u); }\n#define DL_ROUND(v) dl_round_f16(v)\n";
  else if (out == DType::BF16)
    s << "#define DL_ROUND(v) dl_bf16_to_float(dl_float_to_bf16(v))\n";
  else
    s << "#define DL_ROUND(v) (v)\n";
  s << "__kernel void dl_positional(ulong n, int rank, dl_dims64 shape, __global " << storage_cl_type(out)
    << "* y0_p, ulong y0_o, dl_dims64 y0_s";
  if (op.has_input) s << ", __global const " << storage_cl_type(in) << "* x0_p, ulong x0_o, dl_dims64 x0_s";
  // Work-items run through the elements in the output's memory order (dims by decreasing output stride,
  // `order`), so that neighbouring items store to neighbouring addresses also for transposed outputs (a
  // column-major matrix's tril_ after a factorization); c[d] are the coordinates of the row-major shape. 32-bit
  // division where the count allows (64-bit division is a long instruction sequence on GPUs).
  s << ", dl_dims64 order, long k0, long k1, long k2, long k3, " << ct << " f0, " << ct << " f1, " << ct << " f2, "
    << ct << " f3) {\n"
    << "  const ulong item = get_global_id(0);\n  if (item >= n) return;\n"
    << "  long c[8];\n"
    << "  if (n <= 0xffffffffUL) {\n    uint rem = (uint)item;\n    for (int t = rank - 1; t >= 0; --t) {\n"
    << "      const int d = (int)order.v[t]; const uint sz = (uint)shape.v[d], q = rem / sz;\n"
    << "      c[d] = (long)(rem - q * sz); rem = q;\n    }\n"
    << "  } else {\n    ulong rem = item;\n    for (int t = rank - 1; t >= 0; --t) {\n"
    << "      const int d = (int)order.v[t]; const ulong sz = (ulong)shape.v[d], q = rem / sz;\n"
    << "      c[d] = (long)(rem - q * sz); rem = q;\n    }\n  }\n";
  if (op.body.find("idx") != std::string::npos)
    s << "  ulong idx = 0;\n  for (int d = 0; d < rank; ++d) idx = idx * (ulong)shape.v[d] + (ulong)c[d];\n";
  s << "  long off_y0 = 0;\n";
  if (op.has_input) s << "  long off_x0 = 0;\n";
  s << "  for (int d = 0; d < rank; ++d) {\n    off_y0 += c[d] * y0_s.v[d];\n";
  if (op.has_input) s << "    off_x0 += c[d] * x0_s.v[d];\n";
  s << "  }\n";
  if (op.has_input)
    s << "  " << ct << " x0 = " << convert_expr(in, compute, load_expr(in, "x0_p", "(long)x0_o + off_x0")) << ";\n";
  s << "  " << ct << " y0;\n  {\n" << op.body << "\n  }\n  "
    << store_stmt(out, "y0_p", "(long)y0_o + off_y0", convert_expr(compute, out, "y0")) << "\n}\n";
  return s.str();
}

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr;
};

void add_param(KernelArgs& args, DType t, const Scalar& s) {
  int64_t i = s.is_floating ? static_cast<int64_t>(s.f) : s.i;
  double f = s.is_floating ? s.f : static_cast<double>(s.i);
  switch (compute_dtype(t)) {
    case DType::Bool: args.add<cl_uchar>(s.is_floating ? s.f != 0 : s.i != 0); break;
    case DType::U8: args.add<cl_uchar>(static_cast<cl_uchar>(i)); break;
    case DType::I8: args.add<cl_char>(static_cast<cl_char>(i)); break;
    case DType::I16: args.add<cl_short>(static_cast<cl_short>(i)); break;
    case DType::U16: args.add<cl_ushort>(static_cast<cl_ushort>(i)); break;
    case DType::I32: args.add<cl_int>(static_cast<cl_int>(i)); break;
    case DType::U32: args.add<cl_uint>(static_cast<cl_uint>(i)); break;
    case DType::I64: args.add<cl_long>(i); break;
    case DType::U64: args.add<cl_ulong>(static_cast<cl_ulong>(i)); break;
    case DType::F32: args.add<cl_float>(static_cast<float>(f)); break;
    case DType::F64: args.add<cl_double>(f); break;
    default: throw Error("positional: no parameter of this type");
  }
}

} // namespace

void positional(const Context& ctx, cl_command_queue q, const PositionalOp& op, DType compute,
                const RowMajorShape& shape, const StridedOperand& out, const StridedOperand* in,
                const PositionalParams& p) {
  if ((in != nullptr) != op.has_input) throw Error("positional op '" + op.name + "': wrong number of inputs");
  if (shape.rank > kMaxDims) throw Error("positional op '" + op.name + "': more than 8 dims");
  uint64_t n = shape.numel();
  if (n == 0) return;
  DType in_t = in ? in->dtype : DType::F32;
  bool fp64 = compute == DType::F64 || out.dtype == DType::F64 || in_t == DType::F64;
  if (fp64 && !ctx.info().fp64)
    throw Error("positional op '" + op.name + "': device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");
  using Key = std::tuple<cl_context, const PositionalOp*, int, int, int>;
  static std::mutex map_mutex;
  static std::map<Key, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[Key(ctx.context(), &op, int(compute), int(out.dtype), int(in_t))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k) k->k = create_kernel(ctx.program(program_text(op, compute, out.dtype, in_t)), "dl_positional");
  KernelArgs args(k->k);
  args.add<cl_ulong>(n).add<cl_int>(shape.rank);
  add_dims(args, shape.sizes, shape.rank);
  args.add(out.mem).add<cl_ulong>(out.offset);
  add_dims(args, out.strides, shape.rank);
  if (in) {
    args.add(in->mem).add<cl_ulong>(in->offset);
    add_dims(args, in->strides, shape.rank);
  }
  // Dims by decreasing output stride (a stable sort: row-major where strides tie).
  std::array<int64_t, kMaxDims> order{};
  for (int d = 0; d < shape.rank; ++d) order[d] = d;
  std::stable_sort(order.begin(), order.begin() + shape.rank, [&](int64_t a, int64_t b) {
    return std::abs(out.strides[a]) > std::abs(out.strides[b]);
  });
  add_dims(args, order, shape.rank);
  for (int64_t v : p.k) args.add<cl_long>(v);
  for (const Scalar& v : p.f) add_param(args, compute, v);
  launch_1d(q, k->k, n, ctx.work_group_size(256));
}

} // namespace dlprim
