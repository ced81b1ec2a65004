#include <dlprim/elementwise.h>
#include <dlprim/embedded.h>
#include <dlprim/program_cache.h>
#include <dlprim/rows.h>

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
  uint64_t operands[2];  // 5 bits per operand: dtype + scalar flag, 12 operands a word
  uint32_t compute;
  bool operator==(const ProgramKey& o) const {
    return ctx == o.ctx && op == o.op && operands[0] == o.operands[0] && operands[1] == o.operands[1] &&
           compute == o.compute;
  }
};

struct ProgramKeyHash {
  size_t operator()(const ProgramKey& k) const {
    size_t h = std::hash<const void*>()(k.ctx);
    h = h * 31 + std::hash<const void*>()(k.op);
    h = (h * 31 + std::hash<uint64_t>()(k.operands[0])) * 31 + std::hash<uint64_t>()(k.operands[1]);
    return h * 31 + k.compute;
  }
};

struct Kernels {
  std::mutex m;  // clSetKernelArg + enqueue on one cl_kernel must not interleave
  cl_kernel contig = nullptr, vec4 = nullptr, strided32 = nullptr, strided64 = nullptr;
  cl_kernel rows = nullptr;  // built on first use (GPU mappings only)
  cl_kernel multi = nullptr;  // elementwise_multi's, in its own program
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
// 32- or 64-bit index math, and rows: 2-D, vectorized along contiguous rows, each input
// either a full row (unit stride) or one value broadcast along the row (stride 0).
enum Mode { kContig = 0, kRows = 2, kVec = 4, kStrided32 = 32, kStrided64 = 64 };

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

// The per-lane body of a vectorized kernel: x<k>_v vectors (or x<k>_s scalars) in,
// y<k>_v vectors out.
std::string vector_lanes(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins) {
  const char* ct = compute_cl_type(compute);
  std::ostringstream s;
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
  return s.str();
}

// Vector store of y<k>_v at vector index `vi` of pointer `base`.
std::string vector_store(DType t, const std::string& v, const std::string& vi, const std::string& base) {
  if (t == DType::F16) return "  vstore_half" + std::to_string(kVecWidth) + "_rte(" + v + ", " + vi + ", " + base + ");\n";
  return "  ((__global " + vec_type(t) + "*)(" + base + "))[" + vi + "] = " + v + ";\n";
}

// Vector load of vector index `vi` of pointer `base`.
std::string vector_load(DType t, const std::string& vi, const std::string& base) {
  if (t == DType::F16) return "vload_half" + std::to_string(kVecWidth) + "(" + vi + ", " + base + ")";
  return "((__global const " + vec_type(t) + "*)(" + base + "))[" + vi + "]";
}

// ew_rows: n vectors of kVecWidth elements over rows of mv vectors. Work-item i is row
// i / mv, vector i % mv of it (one 32-bit division per kVecWidth elements). Every array
// operand has a row stride (elements; a multiple of kVecWidth where rows are read as
// vectors); an input with flag bc holds one value per row (stride 0 along it), read once and
// broadcast to the lanes. Row starts of vector operands are aligned.
std::string rows_kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                             const std::vector<EwOperand>& ins) {
  const char* ct = compute_cl_type(compute);
  std::ostringstream s, params, loads;
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    params << ", __global " << storage_cl_type(outs[k].dtype) << "* " << y << "_p, ulong " << y << "_o, long "
           << y << "_r";
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    if (ins[k].is_scalar) {
      params << ", " << ct << " " << x << "_s";
      continue;
    }
    DType t = ins[k].dtype;
    params << ", __global const " << storage_cl_type(t) << "* " << x << "_p, ulong " << x << "_o, long " << x
           << "_r, int " << x << "_bc";
    std::string base = x + "_p + " + x + "_o + (long)row * " + x + "_r";
    std::string one = t == DType::F16 ? "vload_half(0, " + base + ")" : "(" + base + ")[0]";
    loads << "  " << vec_type(t) << " " << x << "_v = " << x << "_bc ? (" << vec_type(t) << ")(" << one
          << ") : " << vector_load(t, "cv", base) << ";\n";
  }
  for (int k = 0; k < op.n_params; ++k) params << ", " << ct << " w" << k;
  s << "__kernel void ew_rows(uint n, uint mv" << params.str() << ") {\n"
    << "  uint i = get_global_id(0);\n  if (i >= n) return;\n"
    << "  uint row = i / mv, cv = i - row * mv;\n"
    << loads.str() << vector_lanes(op, compute, outs, ins);
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    s << vector_store(outs[k].dtype, y + "_v", "cv", y + "_p + " + y + "_o + (long)row * " + y + "_r");
  }
  s << "}\n";
  return s.str();
}

// Bytes of kernel arguments per item of ew_multi: its end index, then per array operand a
// buffer and an offset, per scalar input its value.
size_t multi_item_bytes(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  size_t b = 4 + 16 * outs.size();
  for (auto& i : ins) b += i.is_scalar ? 8 : 16;  // scalars padded to 8-byte alignment
  return b;
}

// Items per ew_multi launch: OpenCL guarantees 1024 bytes of kernel arguments (PoCL and
// embedded GPUs give no more); the rest of the arguments fit in the 128 kept aside.
int multi_slots(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  return static_cast<int>(std::max<size_t>(1, std::min<size_t>(16, (1024 - 128) / multi_item_bytes(compute, outs, ins))));
}

// ew_multi: `slots` items, item j covering work-items [e<j-1>, e<j>) of its own operands
// (contiguous, one element per work-item); unused trailing slots end at n.
std::string multi_kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                              const std::vector<EwOperand>& ins, int slots) {
  const char* ct = compute_cl_type(compute);
  std::ostringstream s, params, decl, loads, stores;
  for (int j = 0; j < slots; ++j) params << ", uint e" << j;
  for (int j = 0; j < slots; ++j) {
    for (size_t k = 0; k < outs.size(); ++k)
      params << ", __global " << storage_cl_type(outs[k].dtype) << "* y" << k << "_p" << j << ", ulong y" << k << "_o" << j;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].is_scalar)
        params << ", " << ct << " x" << k << "_s" << j;
      else
        params << ", __global const " << storage_cl_type(ins[k].dtype) << "* x" << k << "_p" << j << ", ulong x" << k
               << "_o" << j;
    }
  }
  for (int k = 0; k < op.n_params; ++k) params << ", " << ct << " w" << k;
  decl << "  uint base;\n";
  for (size_t k = 0; k < outs.size(); ++k)
    decl << "  __global " << storage_cl_type(outs[k].dtype) << "* y" << k << "_p; ulong y" << k << "_o;\n";
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k].is_scalar)
      decl << "  " << ct << " x" << k << "_s;\n";
    else
      decl << "  __global const " << storage_cl_type(ins[k].dtype) << "* x" << k << "_p; ulong x" << k << "_o;\n";
  }
  std::ostringstream pick;
  for (int j = 0; j < slots; ++j) {
    pick << (j == 0 ? "  if (g < e0) {" : j + 1 < slots ? " else if (g < e" + std::to_string(j) + ") {" : " else {");
    pick << " base = " << (j == 0 ? std::string("0") : "e" + std::to_string(j - 1)) << ";";
    for (size_t k = 0; k < outs.size(); ++k) pick << " y" << k << "_p = y" << k << "_p" << j << "; y" << k << "_o = y" << k << "_o" << j << ";";
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].is_scalar)
        pick << " x" << k << "_s = x" << k << "_s" << j << ";";
      else
        pick << " x" << k << "_p = x" << k << "_p" << j << "; x" << k << "_o = x" << k << "_o" << j << ";";
    }
    pick << " }";
  }
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    if (ins[k].is_scalar)
      loads << "  " << ct << " " << x << " = " << x << "_s;\n";
    else
      loads << "  " << ct << " " << x << " = " << convert_expr(ins[k].dtype, compute, load_expr(ins[k].dtype, x + "_p", x + "_o + i")) << ";\n";
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    stores << "  " << store_stmt(outs[k].dtype, y + "_p", y + "_o + i", convert_expr(compute, outs[k].dtype, y)) << "\n";
  }
  s << "__kernel void ew_multi(uint n" << params.str() << ") {\n  uint g = get_global_id(0);\n  if (g >= n) return;\n"
    << decl.str() << pick.str() << "\n  ulong i = g - base;\n" << loads.str();
  for (size_t k = 0; k < outs.size(); ++k) s << "  " << ct << " y" << k << ";\n";
  s << "  {\n" << op.body << "\n  }\n" << stores.str() << "}\n";
  return s.str();
}

// Text of one kernel of the given mode.
std::string kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                        const std::vector<EwOperand>& ins, Mode mode) {
  const char* ct = compute_cl_type(compute);
  const bool strided = mode == kStrided32 || mode == kStrided64;
  if (mode == kRows) return rows_kernel_text(op, compute, outs, ins);
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
    s << "  " << vec_type(t) << " " << x << "_v = " << vector_load(t, "i", x + "_p + " + x + "_o") << ";\n";
  }
  s << vector_lanes(op, compute, outs, ins);
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    s << vector_store(outs[k].dtype, y + "_v", "i", y + "_p + " + y + "_o");
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

std::string program_head(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins);

std::string program_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins, std::initializer_list<Mode> modes) {
  std::string src = program_head(op, compute, outs, ins);
  for (Mode mode : modes) src += kernel_text(op, compute, outs, ins, mode);
  return src;
}

std::string program_head(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                         const std::vector<EwOperand>& ins) {
  std::string src;
  if (needs_fp64(compute, outs, ins)) src += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  src += kernel_source("common");
  src += type_macros(compute, outs);
  return src + op.prelude + "\n";
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

// Whether ew_rows covers this launch: at most 2 dims (inner size a multiple of kVecWidth),
// outputs unit-stride along the inner dim, inputs unit-stride or broadcast (stride 0) along
// it, vector operands aligned at every row start.
bool rows_layout(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  if (shape.rank < 1 || shape.rank > 2 || shape.sizes[0] % kVecWidth != 0) return false;
  if (shape.numel() / kVecWidth > std::numeric_limits<uint32_t>::max()) return false;
  auto ok = [&](const EwOperand& o, bool output) {
    if (o.is_scalar) return true;
    int64_t r = shape.rank == 2 ? o.strides[1] : 0;
    if (o.strides[0] == 0 && !output) return true;
    return o.strides[0] == 1 && o.offset % kVecWidth == 0 && r % kVecWidth == 0;
  };
  for (auto& o : outs)
    if (!ok(o, true)) return false;
  for (auto& i : ins)
    if (!ok(i, false)) return false;
  return true;
}

// The kernel slots of (op, operand dtypes, compute type) in this context.
Kernels& kernels_for(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                     const std::vector<EwOperand>& ins) {
  ProgramKey key{ctx.context(), &op, {0, 0}, static_cast<uint32_t>(compute)};
  int n = 0;  // 12 operands per word (60 of its bits)
  for (auto* list : {&outs, &ins})
    for (auto& o : *list) {
      if (n >= 24) throw Error("elementwise op '" + op.name + "': too many operands");
      key.operands[n / 12] |= (static_cast<uint64_t>(o.dtype) | (o.is_scalar ? 16u : 0u)) << (5 * (n % 12));
      ++n;
    }

  static std::mutex map_mutex;
  static std::unordered_map<ProgramKey, Kernels, ProgramKeyHash> cache;
  std::lock_guard<std::mutex> lock(map_mutex);
  return cache[key];
}

// The contiguous / vector / strided kernels (one program), under k.m.
void build_main(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                const std::vector<EwOperand>& ins, Kernels& k) {
  if (k.contig) return;
  cl_program prog = ctx.program(program_text(op, compute, outs, ins, {kContig, kVec, kStrided32, kStrided64}));
  k.contig = create_kernel(prog, "ew_contig");
  k.vec4 = create_kernel(prog, "ew_vec4");
  k.strided32 = create_kernel(prog, "ew_strided32");
  k.strided64 = create_kernel(prog, "ew_strided64");
}

} // namespace

void elementwise_prepare(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<DType>& outputs,
                         const std::vector<DType>& inputs) {
  if (!speculative_builds(ctx.info())) return;
  auto operands = [](const std::vector<DType>& dtypes) {
    std::vector<EwOperand> v(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) v[i].dtype = dtypes[i];
    return v;
  };
  if (static_cast<int>(outputs.size()) != op.n_outputs || static_cast<int>(inputs.size()) != op.n_inputs) return;
  std::vector<EwOperand> outs = operands(outputs), ins = operands(inputs);
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64) return;
  build_in_background(ctx.info(), [&ctx, &op, compute, outs, ins] {
    Kernels& k = kernels_for(ctx, op, compute, outs, ins);
    std::lock_guard<std::mutex> lock(k.m);
    build_main(ctx, op, compute, outs, ins, k);
  });
}

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

  Kernels* k = &kernels_for(ctx, op, compute, outs, ins);
  std::lock_guard<std::mutex> lock(k->m);
  build_main(ctx, op, compute, outs, ins, *k);

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
  if (!contig && !cpu_mapping(ctx) && rows_layout(shape, outs, ins)) {
    // GPUs: the strided kernel's per-element index math (a division per dim) and scalar
    // accesses cost more than the memory traffic of, e.g., [N, M] + [M].
    if (!k->rows) k->rows = create_kernel(ctx.program(program_text(op, compute, outs, ins, {kRows})), "ew_rows");
    uint64_t mv = static_cast<uint64_t>(shape.sizes[0]) / kVecWidth;
    KernelArgs args(k->rows);
    args.add<cl_uint>(static_cast<cl_uint>(n / kVecWidth)).add<cl_uint>(static_cast<cl_uint>(mv));
    auto row_stride = [&](const EwOperand& o) { return shape.rank == 2 ? o.strides[1] : int64_t(0); };
    for (auto& o : outs) args.add(o.mem).add<cl_ulong>(o.offset).add<cl_long>(row_stride(o));
    for (auto& i : ins) {
      if (i.is_scalar) {
        add_scalar(args, compute, i.value);
        continue;
      }
      args.add(i.mem).add<cl_ulong>(i.offset).add<cl_long>(row_stride(i)).add<cl_int>(i.strides[0] == 0 ? 1 : 0);
    }
    for (auto& p : params) add_scalar(args, compute, p);
    launch_1d(q, k->rows, n / kVecWidth, ctx.work_group_size(256), op.name.c_str());
    return;
  }
  if (!contig) {
    launch(narrow ? k->strided32 : k->strided64, n, 0);
    return;
  }
  if (n_vec) launch(k->vec4, n_vec, 0);
  uint64_t done = n_vec * kVecWidth;
  if (done < n) launch(k->contig, n - done, done);
}

void elementwise_multi(const Context& ctx, cl_command_queue q, const ElementwiseOp& op, DType compute,
                       const std::vector<EwMultiItem>& items, const std::vector<Scalar>& params) {
  if (items.empty()) return;
  const std::vector<EwOperand>& outs = items[0].outputs;
  const std::vector<EwOperand>& ins = items[0].inputs;
  if (static_cast<int>(outs.size()) != op.n_outputs || static_cast<int>(ins.size()) != op.n_inputs ||
      static_cast<int>(params.size()) != op.n_params)
    throw Error("elementwise op '" + op.name + "': wrong number of operands");
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64)
    throw Error("elementwise op '" + op.name + "': device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");
  const int slots = multi_slots(compute, outs, ins);
  Kernels& k = kernels_for(ctx, op, compute, outs, ins);
  std::lock_guard<std::mutex> lock(k.m);
  if (!k.multi)
    k.multi = create_kernel(ctx.program(program_head(op, compute, outs, ins) + multi_kernel_text(op, compute, outs, ins, slots)),
                            "ew_multi");
  const uint64_t kMaxItems = std::numeric_limits<int32_t>::max();
  size_t first = 0;
  while (first < items.size()) {
    // The next launch: up to `slots` non-empty items, under 2^31 work-items in all.
    std::vector<const EwMultiItem*> chunk;
    uint64_t total = 0;
    size_t next = first;
    for (; next < items.size() && static_cast<int>(chunk.size()) < slots; ++next) {
      if (items[next].n == 0) continue;
      if (items[next].n > kMaxItems) throw Error("elementwise op '" + op.name + "': tensor too large for one item");
      if (total + items[next].n > kMaxItems) break;
      chunk.push_back(&items[next]);
      total += items[next].n;
    }
    first = next;
    if (chunk.empty()) continue;
    KernelArgs args(k.multi);
    args.add<cl_uint>(static_cast<cl_uint>(total));
    uint64_t end = 0;
    for (int j = 0; j < slots; ++j) {
      if (j < static_cast<int>(chunk.size())) end += chunk[j]->n;
      args.add<cl_uint>(static_cast<cl_uint>(end));
    }
    for (int j = 0; j < slots; ++j) {
      const EwMultiItem& it = *chunk[j < static_cast<int>(chunk.size()) ? j : 0];  // unused slots repeat item 0
      for (auto& o : it.outputs) args.add(o.mem).add<cl_ulong>(o.offset);
      for (auto& i : it.inputs) {
        if (i.is_scalar)
          add_scalar(args, compute, i.value);
        else
          args.add(i.mem).add<cl_ulong>(i.offset);
      }
    }
    for (auto& p : params) add_scalar(args, compute, p);
    launch_1d(q, k.multi, total, ctx.work_group_size(256), op.name.c_str());
  }
}

} // namespace dlprim
