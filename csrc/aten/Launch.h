// Runs dlprim generators on operands described by ATen's TensorIterator.
#pragma once
#include <ATen/TensorIterator.h>
#include <dlprim/elementwise.h>

#include <vector>

namespace pytorch_ocl {

// Launches `op` over `iter` (outputs then inputs, CPU scalars passed by value) computing
// in `compute`, on the current stream of the iterator's device.
void launch_elementwise(const dlprim::ElementwiseOp& op, at::TensorIteratorBase& iter, c10::ScalarType compute,
                        const std::vector<dlprim::Scalar>& params = {});

dlprim::Scalar to_dlprim_scalar(const c10::Scalar& s);

// Collects launches of one op over contiguous operands (the _foreach_* ops: one per tensor of a
// list) and runs them as multi-tensor launches (dlprim::elementwise_multi) at flush(); other
// launches run at once. An item that reads what a pending item writes, or writes what one
// touches, flushes the pending ones first, so results equal one launch per tensor in order.
class ElementwiseBatch {
public:
  // One operand of add_dense: a tensor, or a number (read in the compute dtype).
  struct DenseInput {
    const at::Tensor* tensor = nullptr;
    double number = 0;
  };

  explicit ElementwiseBatch(const dlprim::ElementwiseOp& op) : op_(op) {}
  ~ElementwiseBatch();  // flushes (an exception part-way through an op: what was added still runs)
  ElementwiseBatch(const ElementwiseBatch&) = delete;
  ElementwiseBatch& operator=(const ElementwiseBatch&) = delete;
  void add(at::TensorIteratorBase& iter, c10::ScalarType compute, const std::vector<dlprim::Scalar>& params = {});
  // The fast route (CUDA's foreach kernels take one too): where `dense_route` holds, an item built from
  // the tensors' buffers directly, without a TensorIterator, whose construction was most of a foreach
  // op's host time (an AdamW step: 148 tensors x 9 ops). Each operand keeps its own dtype (the callers
  // decide type promotion); numbers are read in `compute`.
  // dense_route: every tensor on `like`'s ocl device, contiguous, of `like`'s sizes (inputs may also be
  // 0-dim: one value for every element), under 2^31 elements; outputs in distinct storages; an input that
  // shares an output's storage is that output itself. `outs` may be empty (outputs to be allocated).
  static bool dense_route(const at::Tensor& like, c10::ArrayRef<const at::Tensor*> outs, c10::ArrayRef<DenseInput> ins);
  void add_dense(c10::ArrayRef<const at::Tensor*> outs, c10::ArrayRef<DenseInput> ins, c10::ScalarType compute,
                 const std::vector<dlprim::Scalar>& params);
  void flush();

private:
  void add_item(dlprim::EwMultiItem&& item, int device, dlprim::DType compute, const std::vector<dlprim::Scalar>& params);
  struct Range {
    cl_mem mem;
    uint64_t begin, end;  // bytes
  };
  static constexpr size_t kMaxPending = 64;  // a few launches' worth of items
  static Range range_of(const dlprim::EwOperand& o, uint64_t n);
  bool conflicts(const dlprim::EwMultiItem& item) const;
  const dlprim::ElementwiseOp& op_;
  std::vector<dlprim::EwMultiItem> items_;
  std::vector<Range> written_, read_;
  std::vector<dlprim::Scalar> params_;
  dlprim::DType compute_ = dlprim::DType::F32;
  int device_ = -1;
};

} // namespace pytorch_ocl
