// OpenCL C text of a ReduceOp (types, state struct, op functions, finalize + store), shared
// by the reduction and scan kernels.
#include "reduce_op_text.h"

#include <dlprim/embedded.h>

#include <algorithm>
#include <sstream>

namespace dlprim {

namespace {

// Half-precision bits to float without cl_khr_fp16 (used by vector loads of float16).
const char* k_half_bits = R"CL(
inline float dl_half_bits_to_float(ushort h) {
  uint s = ((uint)h & 0x8000u) << 16, e = ((uint)h >> 10) & 0x1fu, m = (uint)h & 0x3ffu;
  if (e == 0) { float f = (float)m * 5.9604644775390625e-8f; return s ? -f : f; }
  if (e == 31) return as_float(s | 0x7f800000u | (m << 13));
  return as_float(s | ((e + 112u) << 23) | (m << 13));
}
)CL";


// Storage type of a vector load of `in` (16-bit floats are loaded as raw bits).
std::string vector_type(DType in, int vec) {
  std::string base = (in == DType::F16 || in == DType::BF16) ? "ushort" : storage_cl_type(in);
  return vec == 1 ? base : base + std::to_string(vec);
}

std::string lane_value(DType in, DType acc, const std::string& lane) {
  std::string v;
  switch (in) {
    case DType::F16: v = "dl_half_bits_to_float(" + lane + ")"; break;
    case DType::BF16: v = "dl_bf16_to_float(" + lane + ")"; break;
    case DType::Bool: v = "((uchar)(" + lane + " != 0))"; break;
    default: v = lane;
  }
  return convert_expr(in, acc, v);
}

const char* limits_of(DType acc, bool highest) {
  switch (acc) {
    case DType::F32: return highest ? "INFINITY" : "(-INFINITY)";
    case DType::F64: return highest ? "((double)INFINITY)" : "((double)-INFINITY)";
    case DType::U64: return highest ? "ULONG_MAX" : "0ul";
    default: return highest ? "LONG_MAX" : "LONG_MIN";
  }
}

DType value_dtype(ReduceValue v, DType acc) { return v == ReduceValue::Acc ? acc : DType::I64; }

} // namespace

int reduce_vector_width(DType in) {
  // 16-byte loads; 8 lanes at most (state registers per lane).
  return static_cast<int>(std::min<size_t>(8, 16 / dtype_size(in)));
}

std::string reduce_op_text(const ReduceOp& op, DType in, DType acc, DType out0, DType out1) {
  bool fp64 = in == DType::F64 || acc == DType::F64 || out0 == DType::F64 || out1 == DType::F64;
  const char* T = compute_cl_type(acc);
  std::ostringstream s;
  if (fp64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common") << k_half_bits;
  s << "#define T " << T << "\n#define W " << (acc == DType::F64 ? "double" : "float") << "\n"
    << "#define IN_T " << storage_cl_type(in) << "\n#define OUT0_T " << storage_cl_type(out0) << "\n"
    << "#define OUT1_T " << storage_cl_type(out1) << "\n"
    << "#define IS_NAN(x) " << (is_floating(acc) ? "isnan(x)" : "0") << "\n"
    << "#define T_HIGHEST " << limits_of(acc, true) << "\n#define T_LOWEST " << limits_of(acc, false) << "\n"
    << "#define LOAD_P(p) (" << convert_expr(in, acc, load_expr(in, "(p)", "0")) << ")\n";
  int vec = reduce_vector_width(in);
  s << "#define VEC " << vec << "\n#define IN_VEC_T " << vector_type(in, vec) << "\n"
    << "#define COMBINE_VEC(lanes, q, j0) do {";
  for (int k = 0; k < vec; ++k) {
    std::string lane = vec == 1 ? "(q)" : "(q).s" + std::string(1, "0123456789abcdef"[k]);
    s << " op_combine(&(lanes)[" << k << "], " << lane_value(in, acc, lane) << ", (j0) + " << k << ", w0, w1);";
  }
  s << " } while (0)\n";
  // Lanes of a vector are adjacent outputs at the same reduced index (column reductions).
  s << "#define COMBINE_COLS(lanes, q, j) do {";
  for (int k = 0; k < vec; ++k) {
    std::string lane = vec == 1 ? "(q)" : "(q).s" + std::string(1, "0123456789abcdef"[k]);
    s << " op_combine(&(lanes)[" << k << "], " << lane_value(in, acc, lane) << ", (j), w0, w1);";
  }
  s << " } while (0)\n";
  s << "typedef struct {";
  for (const std::string& f : op.state) s << " " << f << ";";
  s << " } acc_t;\n" << op.prelude << "\n";
  s << "inline void op_init(acc_t* a) {\n" << op.init << "\n}\n"
    << "inline void op_combine(acc_t* a, T x, ulong j, W w0, W w1) {\n" << op.combine << "\n}\n"
    << "inline void op_merge(acc_t* a, const acc_t* b) {\n" << op.merge << "\n}\n";
  DType y0 = value_dtype(op.y0, acc), y1 = value_dtype(op.y1, acc);
  s << "inline void store_out(const acc_t* a, ulong n, W w0, W w1, __global OUT0_T* out0, long i0, "
       "__global OUT1_T* out1, long i1) {\n  "
    << compute_cl_type(y0) << " y0; " << compute_cl_type(y1) << " y1;\n"
    << op.finalize << "\n  " << store_stmt(out0, "out0", "i0", convert_expr(y0, out0, "y0")) << "\n";
  if (op.n_outputs > 1) s << "  " << store_stmt(out1, "out1", "i1", convert_expr(y1, out1, "y1")) << "\n";
  s << "}\n";
  return s.str();
}


} // namespace dlprim
