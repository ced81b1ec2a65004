#include <dlprim/elementwise.h>
#include <dlprim/embedded.h>

#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace dlprim {

uint64_t EwShape::numel() const {
  uint64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= static_cast<uint64_t>(sizes[d]);
  return n;
}

namespace {

struct ProgramKey {
  cl_context ctx;
  const ElementwiseOp* op;
  uint64_t operands;  // 5 bits per operand: dtype + scalar flag
  uint32_t compute;
  bool operator==(const ProgramKey& o) const {
    return ctx == o.ctx && op == o.op && operands == o.operands && compute == o.compute;
  }
};

struct ProgramKeyHash {
  size_t operator()(const ProgramKey& k) const {
    size_t h = std::hash<const void*>()(k.ctx);
    h = h * 31 + std::hash<const void*>()(k.op);
    h = h * 31 + std::hash<uint64_t>()(k.operands);
    return h * 31 + k.compute;
  }
};

struct Kernels {
  std::mutex m;  // clSetKernelArg + enqueue on one cl_kernel must not interleave
  cl_kernel contig = nullptr, strided32 = nullptr, strided64 = nullptr;
};

bool needs_fp64(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  if (compute == DType::F64) return true;
  for (auto& o : outs)
    if (o.dtype == DType::F64) return true;
  for (auto& i : ins)
    if (i.dtype == DType::F64) return true;
  return false;
}

// Text of one kernel; `mode` is 0 (contiguous), 32 or 64 (strided with that index width).
std::string kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                        const std::vector<EwOperand>& ins, int mode) {
  const char* ct = compute_cl_type(compute);
  const char* it = mode == 32 ? "uint" : "ulong";
  const char* dims = mode == 32 ? "dl_dims32" : "dl_dims64";
  const char* off = mode == 32 ? "int" : "long";
  std::ostringstream s, params, loads, stores, index;
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    params << ", __global " << storage_cl_type(outs[k].dtype) << "* " << y << "_p, ulong " << y << "_o";
    if (mode) params << ", " << dims << " " << y << "_s";
    std::string idx = mode ? "(long)" + y + "_o + o_" + y : y + "_o + i";
    stores << "  " << store_stmt(outs[k].dtype, y + "_p", idx,
                                 convert_expr(compute, outs[k].dtype, y)) << "\n";
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    if (ins[k].is_scalar) {
      params << ", " << ct << " " << x << "_s";
      loads << "  " << ct << " " << x << " = " << x << "_s;\n";
      continue;
    }
    params << ", __global const " << storage_cl_type(ins[k].dtype) << "* " << x << "_p, ulong " << x << "_o";
    if (mode) params << ", " << dims << " " << x << "_s";
    std::string idx = mode ? "(long)" + x + "_o + o_" + x : x + "_o + i";
    loads << "  " << ct << " " << x << " = "
          << convert_expr(ins[k].dtype, compute, load_expr(ins[k].dtype, x + "_p", idx)) << ";\n";
  }
  for (int k = 0; k < op.n_params; ++k) params << ", " << ct << " w" << k;

  if (mode) {
    index << "  " << it << " r = i;\n";
    std::ostringstream decl, acc;
    for (size_t k = 0; k < outs.size(); ++k) {
      decl << "  " << off << " o_y" << k << " = 0;\n";
      acc << " o_y" << k << " += (" << off << ")c * y" << k << "_s.v[d];";
    }
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].is_scalar) continue;
      decl << "  " << off << " o_x" << k << " = 0;\n";
      acc << " o_x" << k << " += (" << off << ")c * x" << k << "_s.v[d];";
    }
    index << decl.str() << "  for (int d = 0; d < rank; ++d) {\n    " << it
          << " sz = (" << it << ")shape.v[d]; " << it << " q = r / sz; " << it
          << " c = r - q * sz; r = q;" << acc.str() << "\n  }\n";
  }

  std::string name = mode == 0 ? "ew_contig" : (mode == 32 ? "ew_strided32" : "ew_strided64");
  s << "__kernel void " << name << "(" << it << " n";
  if (mode) s << ", int rank, " << dims << " shape";
  s << params.str() << ") {\n  " << it << " i = get_global_id(0);\n  if (i >= n) return;\n"
    << index.str() << loads.str();
  for (size_t k = 0; k < outs.size(); ++k) s << "  " << ct << " y" << k << ";\n";
  s << "  {\n" << op.body << "\n  }\n" << stores.str() << "}\n";
  return s.str();
}

std::string program_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins) {
  std::string src;
  if (needs_fp64(compute, outs, ins)) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  src += kernel_source("common");
  src += op.prelude + "\n";
  for (int mode : {0, 32, 64}) src += kernel_text(op, compute, outs, ins, mode);
  return src;
}

void add_scalar(KernelArgs& args, DType t, const Scalar& v) {
  double f = v.is_floating ? v.f : static_cast<double>(v.i);
  int64_t i = v.is_floating ? static_cast<int64_t>(v.f) : v.i;
  switch (compute_dtype(t)) {
    case DType::Bool: args.add<cl_uchar>(v.is_floating ? (v.f != 0) : (v.i != 0)); break;
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
    default: throw Error("elementwise: no scalar argument of this type");
  }
}

template <class T>
void add_dims(KernelArgs& args, const std::array<int64_t, kMaxHostDims>& v, int rank) {
  struct { T v[kMaxDims]; } d{};
  for (int i = 0; i < rank; ++i) d.v[i] = static_cast<T>(v[i]);
  args.add(d);
}

bool fits_32bit(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  const int64_t lim = std::numeric_limits<int32_t>::max();
  if (shape.numel() > static_cast<uint64_t>(lim)) return false;
  auto span_ok = [&](const EwOperand& o) {
    if (o.is_scalar) return true;
    int64_t span = 0;
    for (int d = 0; d < shape.rank; ++d) span += (shape.sizes[d] - 1) * std::abs(o.strides[d]);
    return span <= lim;
  };
  for (auto& o : outs)
    if (!span_ok(o)) return false;
  for (auto& i : ins)
    if (!span_ok(i)) return false;
  return true;
}

bool all_contiguous(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  // TensorIterator coalesces contiguous operands into a single dim of stride 1.
  if (shape.rank > 1) return false;
  for (auto& o : outs)
    if (shape.rank == 1 && o.strides[0] != 1) return false;
  for (auto& i : ins)
    if (!i.is_scalar && shape.rank == 1 && i.strides[0] != 1) return false;
  return true;
}

} // namespace

void elementwise(const Context& ctx, cl_command_queue q, const ElementwiseOp& op, DType compute,
                 const EwShape& shape, const std::vector<EwOperand>& outs,
                 const std::vector<EwOperand>& ins, const std::vector<Scalar>& params) {
  if (static_cast<int>(outs.size()) != op.n_outputs || static_cast<int>(ins.size()) != op.n_inputs ||
      static_cast<int>(params.size()) != op.n_params)
    throw Error("elementwise op '" + op.name + "': wrong number of operands");
  uint64_t n = shape.numel();
  if (n == 0) return;
  if (shape.rank > kMaxDims) {
    // Rare (more than 8 dims that cannot be merged): one launch per index of the outermost dim.
    EwShape inner = shape;
    int last = --inner.rank;
    for (int64_t j = 0; j < shape.sizes[last]; ++j) {
      auto shifted = [&](std::vector<EwOperand> ops) {
        for (auto& o : ops)
          if (!o.is_scalar) o.offset += static_cast<uint64_t>(j * o.strides[last]);
        return ops;
      };
      elementwise(ctx, q, op, compute, inner, shifted(outs), shifted(ins), params);
    }
    return;
  }
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64)
    throw Error("elementwise op '" + op.name + "': device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");

  ProgramKey key{ctx.context(), &op, 0, static_cast<uint32_t>(compute)};
  int bit = 0;
  for (auto* list : {&outs, &ins})
    for (auto& o : *list) {
      key.operands |= (static_cast<uint64_t>(o.dtype) | (o.is_scalar ? 16u : 0u)) << bit;
      bit += 5;
    }
  if (bit > 64) throw Error("elementwise op '" + op.name + "': too many operands");

  static std::mutex map_mutex;
  static std::unordered_map<ProgramKey, Kernels, ProgramKeyHash> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[key];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->contig) {
    cl_program prog = ctx.program(program_text(op, compute, outs, ins));
    k->contig = create_kernel(prog, "ew_contig");
    k->strided32 = create_kernel(prog, "ew_strided32");
    k->strided64 = create_kernel(prog, "ew_strided64");
  }

  bool contig = all_contiguous(shape, outs, ins);
  bool narrow = !contig && fits_32bit(shape, outs, ins);
  cl_kernel kernel = contig ? k->contig : (narrow ? k->strided32 : k->strided64);
  KernelArgs args(kernel);
  if (narrow)
    args.add<cl_uint>(static_cast<cl_uint>(n));
  else
    args.add<cl_ulong>(n);
  if (!contig) {
    args.add<cl_int>(shape.rank);
    narrow ? add_dims<cl_int>(args, shape.sizes, shape.rank) : add_dims<cl_long>(args, shape.sizes, shape.rank);
  }
  auto add_operand = [&](const EwOperand& o) {
    if (o.is_scalar) {
      add_scalar(args, compute, o.value);
      return;
    }
    args.add(o.mem).add<cl_ulong>(o.offset);
    if (!contig)
      narrow ? add_dims<cl_int>(args, o.strides, shape.rank) : add_dims<cl_long>(args, o.strides, shape.rank);
  };
  for (auto& o : outs) add_operand(o);
  for (auto& i : ins) add_operand(i);
  for (auto& p : params) add_scalar(args, compute, p);
  launch_1d(q, kernel, n, ctx.work_group_size(256), op.name.c_str());
}

} // namespace dlprim
