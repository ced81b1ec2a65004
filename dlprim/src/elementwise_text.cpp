// Elementwise kernels' OpenCL C (elementwise_text.h).
#include "elementwise_text.h"

#include <dlprim/embedded.h>
#include <dlprim/env.h>

#include <cstdlib>
#include <sstream>

namespace dlprim {
namespace ew_detail {

bool needs_fp64(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  if (compute == DType::F64) return true;
  for (auto& o : outs)
    if (o.dtype == DType::F64) return true;
  for (auto& i : ins)
    if (i.dtype == DType::F64) return true;
  return false;
}

// The register vector type a vectorized load of `t` produces (16-bit floats load as float).
static std::string vec_type(DType t) {
  return std::string(t == DType::F16 ? "float" : storage_cl_type(t)) + std::to_string(kVecWidth);
}

// One lane of a loaded vector, as compute_dtype(t).
static std::string lane_value(DType t, const std::string& lane) {
  if (t == DType::BF16) return "dl_bf16_to_float(" + lane + ")";
  if (t == DType::Bool) return "((uchar)(" + lane + " != 0))";
  return lane;
}

// A compute value converted to the lane type of an output vector of `t`.
static std::string lane_store(DType compute, DType t, const std::string& value) {
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
static std::string vector_store(DType t, const std::string& v, const std::string& vi, const std::string& base) {
  if (t == DType::F16) return "  vstore_half" + std::to_string(kVecWidth) + "_rte(" + v + ", " + vi + ", " + base + ");\n";
  return "  ((__global " + vec_type(t) + "*)(" + base + "))[" + vi + "] = " + v + ";\n";
}

// Vector load of vector index `vi` of pointer `base`.
static std::string vector_load(DType t, const std::string& vi, const std::string& base) {
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

size_t multi_meta_bytes(int slots, int arrays) {
  const size_t b = 8 * static_cast<size_t>(slots) * std::max(arrays, 1) + 4 * static_cast<size_t>(slots);
  return (b + 7) / 8 * 8;  // the struct's size: a multiple of its 8-byte alignment
}

// Bytes of kernel arguments per item of ew_multi: its end index, then per array operand a
// buffer and an offset, per scalar input its value.
static size_t multi_item_bytes(DType compute, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  size_t b = 4 + 16 * outs.size();
  for (auto& i : ins) b += i.is_scalar ? 8 : i.alias >= 0 ? 0 : 16;  // scalars padded to 8-byte alignment
  return b;
}

// Items per ew_multi launch, as many as the device's kernel-argument space holds (OpenCL guarantees 1024
// bytes: PoCL and embedded GPUs give no more; NVIDIA 4352), the rest of the arguments in the 128 kept aside,
// at most 32 (a work-item finds its item by a chain of comparisons). Fewer launches per foreach op: an
// AdamW step's op over GPT-2's 148 tensors took 11 launches at 14 items each.
int multi_slots(size_t param_bytes, DType compute, const std::vector<EwOperand>& outs,
                const std::vector<EwOperand>& ins) {
  const size_t fit = (std::max<size_t>(1024, param_bytes) - 128) / multi_item_bytes(compute, outs, ins);
  // PYTORCH_OCL_MULTI_SLOTS: a lower cap, for measuring launches of fewer items.
  const size_t cap = static_cast<size_t>(env_int("PYTORCH_OCL_MULTI_SLOTS", 1, 32, 32));
  return static_cast<int>(std::max<size_t>(1, std::min(cap, fit)));
}

int multi_arrays(const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  int a = static_cast<int>(outs.size());
  for (auto& i : ins) a += i.is_scalar || i.alias >= 0 ? 0 : 1;
  return a;
}

// ew_multi: `slots` items, item j covering work-items [e<j-1>, e<j>) of its own operands
// (contiguous, one element per work-item; broadcast inputs: one element for all); unused
// trailing slots end at n. ew_multi_vec4 (`vec`): kVecWidth elements per work-item, e<j> and n
// counting vectors, every array operand (not broadcast) starting at a multiple of kVecWidth.
// The ends and the array operands' offsets come in one by-value struct `m` (multi_meta_bytes), the
// buffers and scalars one argument each: a launch's host cost grows with its argument count.
std::string multi_kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                              const std::vector<EwOperand>& ins, int slots, bool vec) {
  const char* ct = compute_cl_type(compute);
  const int arrays = multi_arrays(outs, ins);
  std::ostringstream s, params, decl, loads, stores;
  params << ", dl_multi_meta m";
  for (int j = 0; j < slots; ++j) {
    for (size_t k = 0; k < outs.size(); ++k)
      params << ", __global " << storage_cl_type(outs[k].dtype) << "* y" << k << "_p" << j;
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].is_scalar)
        params << ", " << ct << " x" << k << "_s" << j;
      else if (ins[k].alias < 0)
        params << ", __global const " << storage_cl_type(ins[k].dtype) << "* x" << k << "_p" << j;
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
    pick << (j == 0 ? "  if (g < m.e[0]) {" : j + 1 < slots ? " else if (g < m.e[" + std::to_string(j) + "]) {" : " else {");
    pick << " base = " << (j == 0 ? std::string("0") : "m.e[" + std::to_string(j - 1) + "]") << ";";
    int a = j * arrays;  // this slot's first offset in m.o
    for (size_t k = 0; k < outs.size(); ++k)
      pick << " y" << k << "_p = y" << k << "_p" << j << "; y" << k << "_o = m.o[" << a++ << "];";
    for (size_t k = 0; k < ins.size(); ++k) {
      if (ins[k].is_scalar)
        pick << " x" << k << "_s = x" << k << "_s" << j << ";";
      else if (ins[k].alias >= 0)  // the output's pointer and offset (assigned just before)
        pick << " x" << k << "_p = y" << ins[k].alias << "_p; x" << k << "_o = y" << ins[k].alias << "_o;";
      else
        pick << " x" << k << "_p = x" << k << "_p" << j << "; x" << k << "_o = m.o[" << a++ << "];";
    }
    pick << " }";
  }
  // Vector lanes read broadcast inputs as scalars (x<k>_s, loaded once per work-item).
  std::vector<EwOperand> lane_ins = ins;
  for (size_t k = 0; k < ins.size(); ++k) {
    std::string x = "x" + std::to_string(k);
    std::string idx = ins[k].is_broadcast ? x + "_o" : x + "_o + i";
    if (vec) {
      if (ins[k].is_broadcast) {
        loads << "  " << ct << " " << x << "_s = "
              << convert_expr(ins[k].dtype, compute, load_expr(ins[k].dtype, x + "_p", idx)) << ";\n";
        lane_ins[k].is_scalar = true;
      } else if (!ins[k].is_scalar) {
        loads << "  " << vec_type(ins[k].dtype) << " " << x << "_v = "
              << vector_load(ins[k].dtype, "i", x + "_p + " + x + "_o") << ";\n";
      }
      continue;
    }
    if (ins[k].is_scalar)
      loads << "  " << ct << " " << x << " = " << x << "_s;\n";
    else
      loads << "  " << ct << " " << x << " = " << convert_expr(ins[k].dtype, compute, load_expr(ins[k].dtype, x + "_p", idx)) << ";\n";
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    std::string y = "y" + std::to_string(k);
    stores << "  " << store_stmt(outs[k].dtype, y + "_p", y + "_o + i", convert_expr(compute, outs[k].dtype, y)) << "\n";
  }
  s << "typedef struct { ulong o[" << slots * std::max(arrays, 1) << "]; uint e[" << slots << "]; } dl_multi_meta;\n";
  s << "__kernel void " << (vec ? "ew_multi_vec4" : "ew_multi") << "(uint n" << params.str()
    << ") {\n  uint g = get_global_id(0);\n  if (g >= n) return;\n" << decl.str() << pick.str()
    << "\n  ulong i = g - base;\n" << loads.str();
  if (vec) {
    s << vector_lanes(op, compute, outs, lane_ins);
    for (size_t k = 0; k < outs.size(); ++k) {
      std::string y = "y" + std::to_string(k);
      s << vector_store(outs[k].dtype, y + "_v", "i", y + "_p + " + y + "_o");
    }
    return s.str() + "}\n";
  }
  for (size_t k = 0; k < outs.size(); ++k) s << "  " << ct << " y" << k << ";\n";
  s << "  {\n" << op.body << "\n  }\n" << stores.str() << "}\n";
  return s.str();
}

// Text of one kernel of the given mode.
static std::string kernel_text(const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
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
static std::string type_macros(DType compute, const std::vector<EwOperand>& outs) {
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

} // namespace ew_detail
} // namespace dlprim
