#include <dlprim/strided.h>

#include <sstream>

namespace dlprim {

bool all_row_major(const RowMajorShape& shape, const StridedOperand* const* operands, int count) {
  for (int k = 0; k < count; ++k) {
    int64_t expected = 1;
    for (int d = shape.rank - 1; d >= 0; --d) {
      if (shape.sizes[d] != 1 && operands[k]->strides[d] != expected) return false;
      expected *= shape.sizes[d];
    }
  }
  return true;
}

std::string strided_offsets_code(const std::string& index_var, const char* const* names, int count) {
  std::ostringstream s;
  for (int k = 0; k < count; ++k) s << "  long off_" << names[k] << " = 0;\n";
  s << "  { ulong rem = " << index_var << ";\n"
    << "    for (int d = rank - 1; d >= 0; --d) {\n"
    << "      ulong sz = (ulong)shape.v[d]; ulong q = rem / sz; long c = (long)(rem - q * sz); rem = q;\n";
  for (int k = 0; k < count; ++k) s << "      off_" << names[k] << " += c * " << names[k] << "_s.v[d];\n";
  s << "    }\n  }\n";
  return s.str();
}

} // namespace dlprim
