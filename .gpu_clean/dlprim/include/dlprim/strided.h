// A strided view of a buffer over a row-major shape (last dim varying fastest), the operand
// form of the generators whose results depend on an element's logical position (random
// numbers, index-based factories): unlike TensorIterator launches, dims are never reordered.
#pragma once
#include <dlprim/cl.h>
#include <dlprim/dtype.h>
#include <dlprim/elementwise.h>

#include <array>
#include <cstdint>

namespace dlprim {

struct RowMajorShape {
  int rank = 0;
  std::array<int64_t, kMaxDims> sizes{};
  uint64_t numel() const {
    uint64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= static_cast<uint64_t>(sizes[d]);
    return n;
  }
};

struct StridedOperand {
  DType dtype = DType::F32;
  cl_mem mem = nullptr;
  uint64_t offset = 0;                       // in elements
  std::array<int64_t, kMaxDims> strides{};   // in elements, one per dim of the shape; may be negative
};

// True when every operand is dense in row-major order, so element i lives at offset + i.
bool all_row_major(const RowMajorShape& shape, const StridedOperand* const* operands, int count);

// OpenCL C statements computing, from row-major index `index_var`, the element offsets
// `off_<name>` of each named operand (strides in `<name>_s`, shape in `shape`, rank in `rank`).
std::string strided_offsets_code(const std::string& index_var, const char* const* names, int count);

} // namespace dlprim
