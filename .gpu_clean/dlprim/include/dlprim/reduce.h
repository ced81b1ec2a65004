// The reduction code generator. One ReduceOp (a table row: state, init, combine, merge,
// finalize) covers sum/prod/max/argmax/var/norm/logsumexp/...; the kernels (reduce.cl)
// tile outputs x reduced elements in a work-group, read vectorised when the reduced dim
// is contiguous, and split long reductions into chunks merged by a second pass.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/elementwise.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

// The C type of an output variable y0/y1 in `finalize`: the accumulate type T, or long.
enum class ReduceValue { Acc, Index };

// OpenCL C text of an op. `T` is the accumulate type (values are converted to it on load),
// `W` the parameter type (double when T is double, else float), `acc_t` the state struct.
//   state:    field declarations of acc_t, e.g. {"T v", "long i"}; each at most 8 bytes
//   init:     statements initialising `a` (acc_t*)
//   combine:  statements folding `x` (T) at flattened reduced index `j` (ulong) into `a`;
//             may read the parameters w0, w1
//   merge:    statements folding state `b` (const acc_t*) into `a`; must not depend on
//             which of the two holds the lower indices (chunks merge in any order)
//   finalize: statements setting y0 (and y1) from `a`, the reduced count `n` (ulong) and
//             the parameters w0, w1
// An op object must outlive its launches: its address keys the compiled programs.
struct ReduceOp {
  std::string name;
  std::vector<std::string> state;
  std::string init, combine, merge, finalize;
  std::string prelude;  // helper functions the statements call
  int n_outputs = 1;
  ReduceValue y0 = ReduceValue::Acc, y1 = ReduceValue::Acc;
  // The result depends on the order of the reduced elements (arg ops report flattened
  // indices): reduced dims then keep their logical order instead of being sorted by stride.
  bool order_sensitive = false;
};

// One dim of the input as the caller sees it (sizes/strides in elements).
struct ReduceDim {
  int64_t size = 1, in_stride = 0;
  int64_t out_stride[2] = {0, 0};  // strides of the outputs along a kept dim
  bool reduced = false;
};

// Kept dims (one per output element) and reduced dims, normalised: size-1 dims dropped,
// dims merged where all strides continue, innermost last.
struct ReduceShape {
  int kept_rank = 0, reduced_rank = 0;
  std::array<int64_t, kMaxDims> kept_sizes{}, kept_in{}, kept_out0{}, kept_out1{};
  std::array<int64_t, kMaxDims> red_sizes{}, red_in{};
  uint64_t n_out() const;
  uint64_t n_reduced() const;
};

// Builds the normalised shape; false when more than kMaxDims kept or reduced dims remain
// (the caller then copies the input to a simpler layout).
bool describe_reduction(const ReduceOp& op, const std::vector<ReduceDim>& dims, ReduceShape& shape);

struct ReduceTensor {
  DType dtype = DType::F32;
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements
};

// Bytes of scratch memory reduce() needs for these arguments (0 when it runs in one pass).
uint64_t reduce_workspace_bytes(const Context& ctx, const ReduceOp& op, DType acc, const ReduceShape& shape,
                                const ReduceTensor& in);

// Reduces `in` into outs[0..op.n_outputs) computing in `acc`; params are w0, w1.
void reduce(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc, const ReduceShape& shape,
            const ReduceTensor& in, const std::vector<ReduceTensor>& outs, std::array<double, 2> params,
            cl_mem workspace, uint64_t workspace_offset_bytes);

} // namespace dlprim
