// The reduction code generator: reduces a strided view over a set of dims, one
// work-group per output (split in chunks with a second pass when outputs are few),
// or one work-item per output when the reduced extent is short.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/elementwise.h>

#include <cstdint>
#include <string>

namespace dlprim {

// acc has the accumulate type; x the value loaded (converted to that type);
// `finalize` may use w0 (a float scale, e.g. 1/N for mean) and the count `n`.
struct ReduceOp {
  std::string name;
  std::string init;      // expression: the identity, e.g. "0"
  std::string combine;   // statement folding x into acc, e.g. "acc = acc + x;"
  std::string merge;     // statement folding b into a, e.g. "a = a + b;"
  std::string finalize;  // expression of acc producing the output, e.g. "acc"
};

struct StridedView {
  DType dtype = DType::F32;
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements
};

struct ReduceShape {
  // Kept dims (one per output element) and reduced dims, each with input strides;
  // kept dims also carry output strides. Innermost dims last.
  int kept_rank = 0, reduced_rank = 0;
  std::array<int64_t, kMaxDims> kept_sizes{}, kept_in_strides{}, kept_out_strides{};
  std::array<int64_t, kMaxDims> red_sizes{}, red_in_strides{};
};

// Bytes of scratch memory the launch needs (0 when it runs in one pass).
uint64_t reduce_workspace_bytes(const Context& ctx, const ReduceShape& shape, DType acc);

void reduce(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc,
            const ReduceShape& shape, const StridedView& in, const StridedView& out,
            double scale, cl_mem workspace, uint64_t workspace_offset_bytes);

} // namespace dlprim
