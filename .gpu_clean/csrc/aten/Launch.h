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
  explicit ElementwiseBatch(const dlprim::ElementwiseOp& op) : op_(op) {}
  ~ElementwiseBatch();  // flushes (an exception part-way through an op: what was added still runs)
  ElementwiseBatch(const ElementwiseBatch&) = delete;
  ElementwiseBatch& operator=(const ElementwiseBatch&) = delete;
  void add(at::TensorIteratorBase& iter, c10::ScalarType compute, const std::vector<dlprim::Scalar>& params = {});
  void flush();

private:
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
