// The elementwise code generator: one OpenCL program per (op, operand dtypes), with a
// contiguous kernel and two strided kernels (32- and 64-bit index math) inside.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dlprim {

constexpr int kMaxDims = 8;        // dims a kernel handles in one launch
constexpr int kMaxHostDims = 25;   // dims a launch description may have (TensorIterator's limit)

// A shape's sizes or strides as one by-value kernel argument: the kernels take `struct { T v[kMaxDims]; }`
// (one argument instead of eight), the first `rank` entries of `v`, zeros after them.
template <class T = cl_long, size_t N>
void add_dims(KernelArgs& args, const std::array<int64_t, N>& v, int rank = kMaxDims) {
  struct { T v[kMaxDims]; } d{};
  for (int i = 0; i < rank && i < kMaxDims; ++i) d.v[i] = static_cast<T>(v[i]);
  args.add(d);
}

// A value passed by value to the kernel; converted to the op's compute type.
struct Scalar {
  bool is_floating = false;
  double f = 0;
  int64_t i = 0;
  static Scalar floating(double v) { return {true, v, 0}; }
  static Scalar integral(int64_t v) { return {false, 0, v}; }
};

// An operand of a launch: a strided view of a buffer, or (inputs only) a scalar.
struct EwOperand {
  DType dtype = DType::F32;
  cl_mem mem = nullptr;
  uint64_t offset = 0;                  // in elements
  std::array<int64_t, kMaxHostDims> strides{}; // in elements, one per dim of the launch shape
  bool is_scalar = false;
  Scalar value;
  // elementwise_multi only: an input that holds one value for every element (a 0-dim device
  // tensor broadcast, stride 0: a fused optimizer's step count, lr, grad scale), read at `offset`.
  bool is_broadcast = false;
  // elementwise_multi only: an input that is output `alias`'s own elements (same buffer, offset and dtype:
  // an in-place op's self), read through that output's pointer, so it costs no kernel argument.
  int alias = -1;
};

// The definition of an op: OpenCL C statements reading x0.., w0.. and writing y0..
// All of them have the compute type. An op object must outlive every launch of it
// (ops live in static tables): its address identifies its compiled programs.
struct ElementwiseOp {
  std::string name;
  std::string body;
  std::string prelude;  // helper functions the body calls
  int n_outputs = 1;
  int n_inputs = 1;
  int n_params = 0;
};

// Launch shape: dims in iteration order, dim 0 varying fastest (TensorIterator order).
struct EwShape {
  int rank = 0;
  std::array<int64_t, kMaxHostDims> sizes{};
  uint64_t numel() const;
};

void elementwise(const Context& ctx, cl_command_queue q, const ElementwiseOp& op,
                 DType compute, const EwShape& shape, const std::vector<EwOperand>& outputs,
                 const std::vector<EwOperand>& inputs, const std::vector<Scalar>& params);

// Queues a background build (build_in_background) of the program elementwise() runs `op` with for tensor
// operands of these dtypes: a speculative build of a program needed soon (an activation's backward).
void elementwise_prepare(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<DType>& outputs,
                         const std::vector<DType>& inputs);

// One tensor's share of a multi-tensor launch: `n` elements of contiguous operands (strides
// unused; scalar inputs keep their own value per item, broadcast inputs their own buffer).
struct EwMultiItem {
  uint64_t n = 0;
  std::vector<EwOperand> outputs, inputs;
};

// Runs `op` over every item, several items per launch (as many as the minimum kernel-argument
// space of OpenCL devices allows), for the optimizers' _foreach_* ops over hundreds of small
// tensors. Items must share operand dtypes, scalar-ness and broadcast-ness, hold fewer than 2^31 elements each,
// and not write what another item reads or writes (launches may run the items concurrently).
void elementwise_multi(const Context& ctx, cl_command_queue q, const ElementwiseOp& op, DType compute,
                       const std::vector<EwMultiItem>& items, const std::vector<Scalar>& params);

} // namespace dlprim
