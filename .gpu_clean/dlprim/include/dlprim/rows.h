// Layout of "rows along one dim" shared by scans and softmax: every index of the other
// dims is a row; up to three tensors (inputs and outputs) with their own strides.
#pragma once
#include <dlprim/elementwise.h>

#include <array>
#include <cstdint>
#include <vector>

namespace dlprim {

constexpr int kRowTensors = 3;

// A buffer with an element type and an offset in elements.
struct RowsTensor {
  DType dtype = DType::F32;
  cl_mem mem = nullptr;
  uint64_t offset = 0;
};

struct RowsShape {
  int rank = 0;                                               // dims of the row index
  std::array<int64_t, kMaxDims> sizes{};                      // innermost last
  std::array<std::array<int64_t, kMaxDims>, kRowTensors> strides{};
  int64_t length = 0;                                         // elements per row
  std::array<int64_t, kRowTensors> step{};                    // stride along the row
  uint64_t n_rows() const;
};

// sizes and per-tensor strides of every dim (strides[t][d]); `dim` is the row dim. Size-1
// dims are dropped and dims merged where all strides continue; false when more than
// kMaxDims row dims remain.
bool describe_rows(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides, int dim,
                   RowsShape& shape);

// How a work-group covers rows: TO rows x TR threads per row; column order puts adjacent
// threads on adjacent rows (when the row dim is not the contiguous one).
struct RowsTiling {
  uint32_t TO = 1, TR = 1;
  bool col_order = false;
};
// Whether kernels should map work as for a CPU device (work-items run one after another:
// each reads a contiguous span). False on GPUs, and on every device when the environment
// variable PYTORCH_OCL_GPU_MAPPING=1 is set (testing the GPU mappings on a CPU device).
bool cpu_mapping(const Context& ctx);

// A tiling for `shape` whose tensor 0 is read: on CPU devices one work-item per row.
RowsTiling rows_tiling(const Context& ctx, const RowsShape& shape, uint32_t max_group);

} // namespace dlprim
