#include <dlprim/cl.h>
#include <dlprim/dtype.h>

namespace dlprim {

namespace {
struct DTypeTraits {
  const char* name;
  size_t size;
  const char* storage;  // buffer element type
  const char* compute;  // register type
};

const DTypeTraits& traits(DType t) {
  static const DTypeTraits table[] = {
      {"bool", 1, "uchar", "uchar"},     {"uint8", 1, "uchar", "uchar"},
      {"int8", 1, "char", "char"},       {"int16", 2, "short", "short"},
      {"int32", 4, "int", "int"},        {"int64", 8, "long", "long"},
      {"uint16", 2, "ushort", "ushort"}, {"uint32", 4, "uint", "uint"},
      {"uint64", 8, "ulong", "ulong"},   {"float16", 2, "half", "float"},
      {"bfloat16", 2, "ushort", "float"}, {"float32", 4, "float", "float"},
      {"float64", 8, "double", "double"},
  };
  return table[static_cast<int>(t)];
}
} // namespace

size_t dtype_size(DType t) { return traits(t).size; }
const char* dtype_name(DType t) { return traits(t).name; }
const char* storage_cl_type(DType t) { return traits(t).storage; }
const char* compute_cl_type(DType t) { return traits(t).compute; }

bool is_floating(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64;
}
bool is_signed_int(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}

DType compute_dtype(DType t) { return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t; }

DType accumulate_dtype(DType t) {
  if (is_floating(t)) return compute_dtype(t);
  if (t == DType::U64) return DType::U64;
  return DType::I64;
}

std::string convert_expr(DType from, DType to, const std::string& expr) {
  from = compute_dtype(from);
  to = compute_dtype(to);
  if (from == to) return expr;
  if (to == DType::Bool) return "((uchar)((" + expr + ") != 0))";
  // Float to uint8 goes through int64 as in c10::convert, so negative values wrap
  // instead of being undefined.
  if (is_floating(from) && to == DType::U8) return "((uchar)(long)(" + expr + "))";
  return "((" + std::string(compute_cl_type(to)) + ")(" + expr + "))";
}

std::string load_expr(DType t, const std::string& ptr, const std::string& index) {
  switch (t) {
    case DType::F16:
      return "vload_half(0, " + ptr + " + (" + index + "))";
    case DType::BF16:
      return "dl_bf16_to_float(" + ptr + "[" + index + "])";
    case DType::Bool:
      return "((uchar)(" + ptr + "[" + index + "] != 0))";
    default:
      return ptr + "[" + index + "]";
  }
}

std::string store_stmt(DType t, const std::string& ptr, const std::string& index,
                       const std::string& value) {
  switch (t) {
    case DType::F16:
      return "vstore_half_rte((float)(" + value + "), 0, " + ptr + " + (" + index + "));";
    case DType::BF16:
      return ptr + "[" + index + "] = dl_float_to_bf16((float)(" + value + "));";
    case DType::Bool:
      return ptr + "[" + index + "] = (uchar)((" + value + ") != 0);";
    default:
      return ptr + "[" + index + "] = " + value + ";";
  }
}

} // namespace dlprim
