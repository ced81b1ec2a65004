#include "aten/Launch.h"

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

namespace pytorch_ocl {

dlprim::Scalar to_dlprim_scalar(const c10::Scalar& s) {
  if (s.isFloatingPoint()) return dlprim::Scalar::floating(s.toDouble());
  if (s.isBoolean()) return dlprim::Scalar::integral(s.toBool() ? 1 : 0);
  TORCH_CHECK(!s.isComplex(), "ocl: complex scalars are not supported");
  if (s.isUnsigned()) return dlprim::Scalar::integral(static_cast<int64_t>(s.toUInt64()));
  return dlprim::Scalar::integral(s.toLong());
}

namespace {

// The operands of `iter` for dlprim (CPU scalars by value); returns the device index.
int describe(const char* name, at::TensorIteratorBase& iter, dlprim::EwShape* shape,
             std::vector<dlprim::EwOperand>* outs, std::vector<dlprim::EwOperand>* ins) {
  int rank = iter.ndim();
  TORCH_CHECK(rank <= dlprim::kMaxHostDims, name, ": more than ", dlprim::kMaxHostDims, " dims");
  shape->rank = rank;
  for (int d = 0; d < rank; ++d) shape->sizes[d] = iter.shape()[d];
  outs->reserve(iter.noutputs());
  ins->reserve(iter.ninputs());
  for (int k = 0; k < iter.ntensors(); ++k) {
    dlprim::EwOperand& o = (k < iter.noutputs() ? outs : ins)->emplace_back();  // filled in place (no copy)
    c10::ScalarType st = iter.dtype(k);
    o.dtype = to_dlprim(st, name);
    if (k >= iter.noutputs() && iter.is_cpu_scalar(k)) {
      o.is_scalar = true;
      o.value = c10::isFloatingType(st) ? dlprim::Scalar::floating(iter.scalar_value<double>(k))
                                        : dlprim::Scalar::integral(iter.scalar_value<int64_t>(k));
      continue;
    }
    const at::TensorBase& t = iter.tensor_base(k);
    TORCH_CHECK(t.device().type() == kOcl, name, ": operand ", k, " is on ", t.device(),
                "; expected ocl tensors (or CPU scalars)");
    BufferRef buf = buffer_from_ptr(iter.data_ptr(k), &t.storage().data_ptr());
    int64_t item = static_cast<int64_t>(iter.element_size(k));
    o.mem = buf.mem;
    o.offset = buf.offset / item;
    auto strides = iter.strides(k);
    for (int d = 0; d < rank; ++d) o.strides[d] = strides[d] / item;
  }
  return iter.device(0).index();
}

bool same_scalar(const dlprim::Scalar& a, const dlprim::Scalar& b) {
  return a.is_floating == b.is_floating && (a.is_floating ? a.f == b.f : a.i == b.i);
}

bool same_kind(const std::vector<dlprim::EwOperand>& a, const std::vector<dlprim::EwOperand>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k)
    if (a[k].dtype != b[k].dtype || a[k].is_scalar != b[k].is_scalar || a[k].is_broadcast != b[k].is_broadcast ||
        a[k].alias != b[k].alias)
      return false;
  return true;
}

} // namespace

void launch_elementwise(const dlprim::ElementwiseOp& op, at::TensorIteratorBase& iter, c10::ScalarType compute,
                        const std::vector<dlprim::Scalar>& params) {
  if (iter.numel() == 0) return;
  const char* name = op.name.c_str();
  dlprim::EwShape shape;
  // Per-thread operand lists, reused: no allocation per launch (nothing below calls back in here).
  thread_local std::vector<dlprim::EwOperand> outs, ins;
  outs.clear();
  ins.clear();
  int device = describe(name, iter, &shape, &outs, &ins);
  OCL_TRACE(name, " numel=", iter.numel(), " dims=", shape.rank, " compute=", compute, " out=", iter.dtype(0),
            " device=", device);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::elementwise(context(device), q, op, to_dlprim(compute, name), shape, outs, ins, params));
  note_enqueued(q);
}

ElementwiseBatch::~ElementwiseBatch() {
  try {
    flush();
  } catch (...) {  // only reached while another exception unwinds, or a launch failed again
  }
}

ElementwiseBatch::Range ElementwiseBatch::range_of(const dlprim::EwOperand& o, uint64_t n) {
  uint64_t item = dlprim::dtype_size(o.dtype);
  return {o.mem, o.offset * item, (o.offset + n) * item};
}

bool ElementwiseBatch::conflicts(const dlprim::EwMultiItem& item) const {
  auto hits = [](const std::vector<Range>& list, const Range& x) {
    for (const Range& r : list)
      if (r.mem == x.mem && x.begin < r.end && r.begin < x.end) return true;
    return false;
  };
  for (auto& o : item.outputs)
    if (hits(written_, range_of(o, item.n)) || hits(read_, range_of(o, item.n))) return true;
  for (auto& i : item.inputs)
    if (!i.is_scalar && hits(written_, range_of(i, i.is_broadcast ? 1 : item.n))) return true;
  return false;
}

void ElementwiseBatch::add(at::TensorIteratorBase& iter, c10::ScalarType compute,
                           const std::vector<dlprim::Scalar>& params) {
  if (iter.numel() == 0) return;
  const char* name = op_.name.c_str();
  dlprim::EwShape shape;
  dlprim::EwMultiItem item;
  int device = describe(name, iter, &shape, &item.outputs, &item.inputs);
  // Rank 0 (0-dim operands, e.g. the optimizers' step counts): one element at each operand's offset.
  bool contiguous = shape.rank <= 1 && iter.numel() < (int64_t{1} << 31);
  if (shape.rank == 1) {
    for (auto& o : item.outputs)
      if (o.strides[0] != 1) contiguous = false;
    // An input of stride 0 (a 0-dim device tensor such as an optimizer's step count) is one value
    // the multi-tensor kernel reads for every element.
    for (auto& i : item.inputs)
      if (!i.is_scalar && i.strides[0] != 1) {
        if (i.strides[0] == 0) i.is_broadcast = true;
        else contiguous = false;
      }
  }
  if (!contiguous) {
    flush();
    launch_elementwise(op_, iter, compute, params);
    return;
  }
  item.n = static_cast<uint64_t>(iter.numel());
  add_item(std::move(item), device, to_dlprim(compute, name), params);
}

bool ElementwiseBatch::dense_route(const at::Tensor& like, c10::ArrayRef<const at::Tensor*> outs,
                                   c10::ArrayRef<DenseInput> ins) {
  if (like.device().type() != kOcl || like.numel() >= (int64_t{1} << 31)) return false;
  auto fits = [&](const at::Tensor& t, bool may_broadcast) {
    return t.device() == like.device() && t.is_contiguous() &&
           (t.sizes().equals(like.sizes()) || (may_broadcast && t.dim() == 0));
  };
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!fits(*outs[k], false)) return false;
    for (size_t j = 0; j < k; ++j)
      if (outs[j]->storage().is_alias_of(outs[k]->storage())) return false;
  }
  for (const DenseInput& in : ins) {
    const at::Tensor* t = in.tensor;
    if (!t) continue;
    if (!fits(*t, true)) return false;
    // Reading a written tensor itself is fine; any other sharing of its storage takes the TensorIterator
    // route, which checks partial overlap (and raises as the CPU does).
    for (const at::Tensor* o : outs)
      if (t->storage().is_alias_of(o->storage()) && (t->data_ptr() != o->data_ptr() || !t->sizes().equals(o->sizes())))
        return false;
  }
  return true;
}

namespace {
dlprim::EwOperand dense_operand(const at::Tensor& t, const char* name) {
  dlprim::EwOperand o;
  o.dtype = to_dlprim(t.scalar_type(), name);
  BufferRef buf = buffer_from_ptr(t.data_ptr(), &t.storage().data_ptr());
  o.mem = buf.mem;
  o.offset = buf.offset / t.element_size();
  o.strides[0] = 1;
  return o;
}
} // namespace

void ElementwiseBatch::add_dense(c10::ArrayRef<const at::Tensor*> outs, c10::ArrayRef<DenseInput> ins,
                                 c10::ScalarType compute, const std::vector<dlprim::Scalar>& params) {
  const at::Tensor& like = *outs[0];
  if (like.numel() == 0) return;
  const char* name = op_.name.c_str();
  dlprim::DType ct = to_dlprim(compute, name);
  dlprim::EwMultiItem item;
  item.n = static_cast<uint64_t>(like.numel());
  item.outputs.reserve(outs.size());
  for (const at::Tensor* o : outs) item.outputs.push_back(dense_operand(*o, name));
  item.inputs.reserve(ins.size());
  for (const DenseInput& in : ins) {
    if (!in.tensor) {
      dlprim::EwOperand& o = item.inputs.emplace_back();
      o.dtype = ct;
      o.is_scalar = true;
      o.value = dlprim::Scalar::floating(in.number);
      continue;
    }
    item.inputs.push_back(dense_operand(*in.tensor, name));
    item.inputs.back().is_broadcast = !in.tensor->sizes().equals(like.sizes());
  }
  add_item(std::move(item), like.device().index(), ct, params);
}

void ElementwiseBatch::add_item(dlprim::EwMultiItem&& item, int device, dlprim::DType ct,
                                const std::vector<dlprim::Scalar>& params) {
  // An input that is an output's own elements (an in-place op's self) reads through that output's pointer.
  for (size_t k = 0; k < item.inputs.size() && k < 16; ++k) {
    dlprim::EwOperand& in = item.inputs[k];
    if (in.is_scalar || in.is_broadcast) continue;
    for (size_t j = 0; j < item.outputs.size() && j < 15; ++j) {
      const dlprim::EwOperand& o = item.outputs[j];
      if (o.mem == in.mem && o.offset == in.offset && o.dtype == in.dtype) {
        in.alias = static_cast<int>(j);
        break;
      }
    }
  }
  // Pending items are bounded so that the overlap checks stay linear in the list length.
  bool joins = !items_.empty() && items_.size() < kMaxPending && device == device_ && ct == compute_ && params.size() == params_.size() &&
               same_kind(item.outputs, items_[0].outputs) && same_kind(item.inputs, items_[0].inputs) &&
               !conflicts(item);
  for (size_t k = 0; joins && k < params.size(); ++k) joins = same_scalar(params[k], params_[k]);
  if (!joins) {
    flush();
    device_ = device;
    compute_ = ct;
    params_ = params;
  }
  for (auto& o : item.outputs) written_.push_back(range_of(o, item.n));
  for (auto& i : item.inputs)
    if (!i.is_scalar) read_.push_back(range_of(i, i.is_broadcast ? 1 : item.n));
  items_.push_back(std::move(item));
}

void ElementwiseBatch::flush() {
  if (items_.empty()) return;
  std::vector<dlprim::EwMultiItem> items;
  items.swap(items_);
  written_.clear();
  read_.clear();
  const char* name = op_.name.c_str();
  OCL_TRACE(name, " multi-tensor items=", items.size(), " device=", device_);
  cl_command_queue q = current_queue(device_);
  OCL_DLPRIM_CALL(name, dlprim::elementwise_multi(context(device_), q, op_, compute_, items, params_));
  note_enqueued(q);
}

} // namespace pytorch_ocl
