#include "aten/Launch.h"

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

void launch_elementwise(const dlprim::ElementwiseOp& op, at::TensorIteratorBase& iter, c10::ScalarType compute,
                        const std::vector<dlprim::Scalar>& params) {
  if (iter.numel() == 0) return;
  const char* name = op.name.c_str();
  int rank = iter.ndim();
  TORCH_CHECK(rank <= dlprim::kMaxHostDims, name, ": more than ", dlprim::kMaxHostDims, " dims");
  dlprim::EwShape shape;
  shape.rank = rank;
  for (int d = 0; d < rank; ++d) shape.sizes[d] = iter.shape()[d];

  std::vector<dlprim::EwOperand> outs, ins;
  int device = iter.device(0).index();
  for (int k = 0; k < iter.ntensors(); ++k) {
    dlprim::EwOperand o;
    c10::ScalarType st = iter.dtype(k);
    o.dtype = to_dlprim(st, name);
    if (k >= iter.noutputs() && iter.is_cpu_scalar(k)) {
      o.is_scalar = true;
      o.value = c10::isFloatingType(st) ? dlprim::Scalar::floating(iter.scalar_value<double>(k))
                                        : dlprim::Scalar::integral(iter.scalar_value<int64_t>(k));
      ins.push_back(o);
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
    (k < iter.noutputs() ? outs : ins).push_back(o);
  }
  OCL_TRACE(name, " numel=", iter.numel(), " dims=", rank, " compute=", compute, " out=", iter.dtype(0),
            " device=", device);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::elementwise(context(device), q, op, to_dlprim(compute, name), shape, outs, ins, params));
  note_enqueued(q);
}

} // namespace pytorch_ocl
