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
  cl_kernel contig = nullptr, vec4 = nullptr, strided32 = nullptr, strided64 = nullptr;
};

bool needs_fp64(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  if (compute == DType::F64) return true;
  for (auto& o : outs)
    if (o.dtype == DType::F64) return true;
  for (auto& i : ins)
    if (i.dtype == DType::F64) return true;
  return false;
}

constexpr int kVecWidth = 4;  // elements per work-item of the vectorized contiguous kernel

// Kernel modes: contiguous (one element per work-item), contiguous vectorized (kVecWidth
// elements per work-item through one aligned vector load/store per operand), strided with
// 32- or 64-bit index math.
enum Mode { kContig = 0, kVec = 4, kStrided32 = 32, kStrided64 = 64 };

// The register vector type a vectorized load of `t` produces (16-bit floats load as float).
std::string vec_type(DType t) {
  return std::string(t == DType::F16 ? "float" : storage_cl_type(t)) + std::to_string(kVecWidth);
}

// One lane of a loaded vector, as compute_dtype(t).
std::string lane_value(DType t, const std::string& lane) {
  if (t == DType::BF16) return "dl_bf16_to_float(" + lane + ")";
  if (t == DType::Bool) return "((uchar)(" + lane + " != 0))";
  return lane;
}

// A compute value converted to the lane type of an output vector of `t`.
std::string lane_store(DType compute, DType t, const std::string& value) {
  if (t == DType::F16) return "(float)(" + convert_expr(compute, DType::F32, value) + ")";
  if (t == DType::BF16) return "dl_float_to_bf16((float)(" + convert_expr(compute, DType::F32, value) + "))";
  if (t == DType::Bool) return "(uchar)((" + value + ") != 0)";
  return convert_expr(compute, t, value);
}

// Text of one kernel of the given mode.
std::string kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                        const std::vector<EwOperand>& ins, Mode mode) {
  const char* ct = compute_cl_type(compute);
  const bool strided = mode == kStrided32 || mode == kStrided64;
  const char* it = mode == kStrided32 ? "uint" : "ulong";
  const char* dims = mode == kStrided32 ? "dl_dims32" : "dl_dims64";
  const char* off = mode == kStrided32 ? "int" : "long";
  std::ostringstream s, params, loads, stores, index;
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    params << ", __global " << storage_cl_type(outs[k].dtype) << "* " << y << "_p, ulong " << y << "_o";
    if (strided) params << ", " << dims << " " << y << "_s";
    std::string idx = strided ? "(long)" + y + "_o + o_" + y : y + "_o + i";
    stores << "  " << store_stmt(outs[k].dtype, y + "_p", idx, convert_expr(compute, outs[k].dtype, y)) << "\n";
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    if (ins[k].is_scalar) {
      params << ", " << ct << " " << x << "_s";
      loads << "  " << ct << " " << x << " = " << x << "_s;\n";
      continue;
    }
    params << ", __global const " << storage_cl_type(ins[k].dtype) << "* " << x << "_p, ulong " << x << "_o";
    if (strided) params << ", " << dims << " " << x << "_s";
    std::string idx = strided ? "(long)" + x + "_o + o_" + x : x + "_o + i";
    loads << "  " << ct << " " << x << " = "
          << convert_expr(ins[k].dtype, compute, load_expr(ins[k].dtype, x + "_p", idx)) << ";\n";
  }
  for (int k = 0; k < op.n_params; ++k) params << ", " << ct << " w" << k;

  if (strided) {
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

  const char* name = mode == kContig ? "ew_contig" : mode == kVec ? "ew_vec4" : mode == kStrided32 ? "ew_strided32" : "ew_strided64";
  s << "__kernel void " << name << "(" << it << " n";
  if (strided) s << ", int rank, " << dims << " shape";
  s << params.str() << ") {\n  " << it << " i = get_global_id(0);\n  if (i >= n) return;\n";
  if (mode != kVec) {
    s << index.str() << loads.str();
    for (size_t k = 0; k < outs.size(); ++k) s << "  " << ct << " y" << k << ";\n";
    s << "  {\n" << op.body << "\n  }\n" << stores.str() << "}\n";
    return s.str();
  }
  // Vectorized: n counts vectors; every array operand starts at a multiple of kVecWidth
  // elements, so (base + offset) is aligned for the vector type.
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].is_scalar) continue;
    std::string x = "x" + std::to_string(k);
    DType t = ins[k].dtype;
    s << "  " << vec_type(t) << " " << x << "_v = ";
    if (t == DType::F16)
      s << "vload_half" << kVecWidth << "(i, " << x << "_p + " << x << "_o);\n";
    else
      s << "((__global const " << vec_type(t) << "*)(" << x << "_p + " << x << "_o))[i];\n";
  }
  for (size_t k = 0; k < outs.size(); ++k) s << "  " << vec_type(outs[k].dtype) << " y" << k << "_v;\n";
  for (int lane = 0; lane < kVecWidth; ++lane) {
    std::string sl = ".s" + std::to_string(lane);
    s << "  {\n";
    for (size_t k = 0; k < ins.size(); ++k) {
      std::string x = "x" + std::to_string(k);
      if (ins[k].is_scalar) {
        s << "  " << ct << " " << x << " = " << x << "_s;\n";
        continue;
      }
      s << "  " << ct << " " << x << " = "
        << convert_expr(ins[k].dtype, compute, lane_value(ins[k].dtype, x + "_v" + sl)) << ";\n";
    }
    for (size_t k = 0; k < outs.size(); ++k) s << "  " << ct << " y" << k << ";\n";
    s << "  {\n" << op.body << "\n  }\n";
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string y = "y" + std::to_string(k);
      s << "  " << y << "_v" << sl << " = " << lane_store(compute, outs[k].dtype, y) << ";\n";
    }
    s << "  }\n";
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    DType t = outs[k].dtype;
    if (t == DType::F16)
      s << "  vstore_half" << kVecWidth << "_rte(" << y << "_v, i, " << y << "_p + " << y << "_o);\n";
    else
      s << "  ((__global " << vec_type(t) << "*)(" << y << "_p + " << y << "_o))[i] = " << y << "_v;\n";
  }
  s << "}\n";
  return s.str();
}

// Facts about the compute type (and output 0's storage) the op bodies and preludes may test
// with #if, so one body serves every dtype: integer vs float semantics, 16-bit precision.
std::string type_macros(DType compute, const std::vector<EwOperand>& outs) {
  std::ostringstream s;
  DType y0 = outs.empty() ? compute : outs[0].dtype;
  s << "typedef " << compute_cl_type(compute) << " dl_t;\n"
    << "#define DL_IS_FLOAT " << (is_floating(compute) ? 1 : 0) << "\n"
    << "#define DL_IS_DOUBLE " << (compute == DType::F64 ? 1 : 0) << "\n"
    << "#define DL_IS_BOOL " << (compute == DType::Bool ? 1 : 0) << "\n"
    << "#define DL_IS_SIGNED " << (is_floating(compute) || is_signed_int(compute) ? 1 : 0) << "\n"
    << "#define DL_BITS " << 8 * dtype_size(compute) << "\n"
    << "#define DL_Y0_F16 " << (y0 == DType::F16 ? 1 : 0) << "\n"
    << "#define DL_Y0_BF16 " << (y0 == DType::BF16 ? 1 : 0) << "\n";
  return s.str();
}

std::string program_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins) {
  std::string src;
  if (needs_fp64(compute, outs, ins)) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  src += kernel_source("common");
  src += type_macros(compute, outs);
  src += op.prelude + "\n";
  for (Mode mode : {kContig, kVec, kStrided32, kStrided64}) src += kernel_text(op, compute, outs, ins, mode);
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

bool vector_aligned(const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  for (auto* list : {&outs, &ins})
    for (auto& o : *list)
      if (!o.is_scalar && o.offset % kVecWidth != 0) return false;
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
    k->vec4 = create_kernel(prog, "ew_vec4");
    k->strided32 = create_kernel(prog, "ew_strided32");
    k->strided64 = create_kernel(prog, "ew_strided64");
  }

  bool contig = all_contiguous(shape, outs, ins);
  bool narrow = !contig && fits_32bit(shape, outs, ins);
  // Contiguous operands that all start on a vector boundary take the vectorized kernel for
  // the whole vectors; the rest (and unaligned views) the one-element-per-item kernel.
  uint64_t n_vec = contig && vector_aligned(outs, ins) ? n / kVecWidth : 0;
  auto launch = [&](cl_kernel kernel, uint64_t items, uint64_t first) {
    KernelArgs args(kernel);
    if (narrow)
      args.add<cl_uint>(static_cast<cl_uint>(items));
    else
      args.add<cl_ulong>(items);
    if (!contig) {
      args.add<cl_int>(shape.rank);
      narrow ? add_dims<cl_int>(args, shape.sizes, shape.rank) : add_dims<cl_long>(args, shape.sizes, shape.rank);
    }
    auto add_operand = [&](const EwOperand& o) {
      if (o.is_scalar) {
        add_scalar(args, compute, o.value);
        return;
      }
      args.add(o.mem).add<cl_ulong>(o.offset + first);
      if (!contig)
        narrow ? add_dims<cl_int>(args, o.strides, shape.rank) : add_dims<cl_long>(args, o.strides, shape.rank);
    };
    for (auto& o : outs) add_operand(o);
    for (auto& i : ins) add_operand(i);
    for (auto& p : params) add_scalar(args, compute, p);
    launch_1d(q, kernel, items, ctx.work_group_size(256), op.name.c_str());
  };
  if (!contig) {
    launch(narrow ? k->strided32 : k->strided64, n, 0);
    return;
  }
  if (n_vec) launch(k->vec4, n_vec, 0);
  uint64_t done = n_vec * kVecWidth;
  if (done < n) launch(k->contig, n - done, done);
}

} // namespace dlprim
