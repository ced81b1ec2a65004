// torch.cat in one launch: each output element is copied from the input whose span along the
// cat dim holds it. Elements move as raw bits (1, 2, 4 or 8 bytes), so every dtype of that size
// shares one program per input count.
#pragma once
#include <dlprim/context.h>
#include <dlprim/strided.h>

namespace dlprim {

constexpr int kCatMaxInputs = 4;

struct CatInput {
  cl_mem mem = nullptr;
  uint64_t offset = 0;                      // in elements
  std::array<int64_t, kMaxDims> strides{};  // in elements, over the output's dims
  int64_t start = 0;                        // first position along the cat dim; increasing, each input non-empty
};

// out (of `shape`, strides in elements) = cat(in[0..count), dim); 1 <= count <= kCatMaxInputs.
void cat(const Context& ctx, cl_command_queue q, int elem_bytes, const RowMajorShape& shape, int dim,
         const StridedOperand& out, const CatInput* in, int count);

} // namespace dlprim
