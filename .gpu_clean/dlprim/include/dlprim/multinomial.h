// Multinomial sampling from rows of (unnormalised) probabilities, with or without replacement.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <cstdint>

namespace dlprim {

struct MultinomialArgs {
  DType dtype = DType::F32;  // of the probabilities (a floating type)
  cl_mem probs = nullptr;
  uint64_t probs_offset = 0;  // elements
  int64_t row_stride = 0, col_stride = 1;
  int64_t n_rows = 1, n_categories = 0;
  cl_mem out = nullptr;  // int64 samples [n_rows, n_sample]
  uint64_t out_offset = 0;
  int64_t out_row_stride = 0, out_col_stride = 1;
  int64_t n_sample = 1;
  bool replacement = false;
  uint64_t seed = 0, philox_offset = 0;
  cl_mem workspace = nullptr;  // multinomial_workspace_bytes() bytes
  uint64_t workspace_offset = 0;  // bytes, a multiple of 8
  cl_mem flags = nullptr;      // one int per row: see multinomial.cl
  uint64_t flags_offset = 0;   // elements
};

uint64_t multinomial_workspace_bytes(DType dtype, int64_t n_rows, int64_t n_categories);

void multinomial(const Context& ctx, cl_command_queue q, const MultinomialArgs& a);

} // namespace dlprim
