// Copies between host and device and on the device, with dtype conversion and any strides.
#include "aten/Launch.h"
#include "core/Device.h"
#include "core/Graph.h"
#include "core/Errors.h"
#include "core/HostAllocator.h"
#include "core/Storage.h"
#include "core/DeferredChecks.h"
#include "core/SyncDebug.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/_local_scalar_dense.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/_neg_view.h>
#include <ATen/ops/conj_physical.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

const dlprim::ElementwiseOp k_copy{"copy", "y0 = x0;", "", 1, 1, 0};

bool is_ocl(const at::Tensor& t) { return t.device().type() == kOcl; }

// Same dtype, same layout, no gaps: the bytes can move in one transfer.
bool same_dense_layout(const at::Tensor& a, const at::Tensor& b) {
  return a.dtype() == b.dtype() && a.is_contiguous() && b.is_contiguous();
}

// The integer type of the same width, so same-dtype copies of types without kernels
// (complex, float8, ...) can still run on the device.
std::optional<c10::ScalarType> same_width_int(c10::ScalarType t) {
  switch (c10::elementSize(t)) {
    case 1: return c10::kByte;
    case 2: return c10::kShort;
    case 4: return c10::kInt;
    case 8: return c10::kLong;
    default: return std::nullopt;
  }
}

void host_to_device_bytes(const at::Tensor& dst, const void* src, size_t nbytes, bool non_blocking) {
  if (nbytes == 0) return;
  BufferRef buf = buffer_of(dst);
  cl_command_queue q = queue_for(dst);
  check_not_capturing(q, "a copy from the host to ocl (torch.tensor(..., device='ocl'), .to('ocl'))");
  bool async = non_blocking && is_pinned(src);
  if (!async) {
    warn_or_error_on_sync("a blocking copy from the host to ocl");
    count_wait(g_host_waits.writes);
  }
  cl_event ev = nullptr;
  OCL_CHECK(clEnqueueWriteBuffer(q, buf.mem, async ? CL_FALSE : CL_TRUE, buf.offset, nbytes, src, 0, nullptr,
                                 async ? &ev : nullptr));
  if (ev) {
    record_host_use(src, ev);
    clReleaseEvent(ev);
    clFlush(q);
  }
}

void device_to_host_bytes(void* dst, const at::Tensor& src, size_t nbytes, bool non_blocking) {
  if (nbytes == 0) return;
  BufferRef buf = buffer_of(src);
  cl_command_queue q = queue_for(src);
  check_not_capturing(q, "a copy from ocl to the host (.item(), .cpu(), .tolist(), printing, a data-dependent "
                         "check such as an index bound or nonzero)");
  bool async = non_blocking && is_pinned(dst);
  if (!async) {
    warn_or_error_on_sync("a blocking copy from ocl to the host");
    count_wait(g_host_waits.reads);
  }
  // Deferred index checks of this queue are read with the data (one wait): a bad index raises
  // here, before its result reaches the host; an asynchronous copy leaves them to the wait.
  const int device = src.device().index();
  enqueue_check(device, q);
  OCL_CHECK(clEnqueueReadBuffer(q, buf.mem, async ? CL_FALSE : CL_TRUE, buf.offset, nbytes, dst, 0, nullptr,
                                nullptr));
  if (async) clFlush(q);
  else collect_checks(device, q);
}

void device_copy(const at::Tensor& dst, const at::Tensor& src);

// Real <-> complex copies on the components: a real source fills the real parts and zeroes the
// imaginary ones; a complex source gives its real part (CPU: the imaginary part is dropped).
void complex_real_copy(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.is_complex()) {
    at::Tensor parts = at::view_as_real(dst);
    device_copy(parts.select(-1, 0), src);
    parts.select(-1, 1).zero_();
  } else {
    device_copy(dst, at::view_as_real(src).select(-1, 0));
  }
}

// `src` with its conjugate and negative bits applied to the data, in a new tensor: such lazy views
// reach _copy_from unresolved (torch's conjugate fallback would clone them through copy_, that is
// through _copy_from again, without end), and only the device kernels can resolve ocl data.
at::Tensor resolve_on_device(const at::Tensor& src) {
  at::Tensor base = src.is_conj() ? src.conj() : src;  // conj() of a conjugate view drops the bit
  if (base.is_neg()) base = at::_neg_view(base);        // so does _neg_view of a negative one
  at::Tensor out = src.is_conj() ? at::conj_physical(base) : at::empty(base.sizes(), base.options());
  if (!src.is_conj()) device_copy(out, base);
  if (src.is_neg()) out.neg_();
  return out;
}

// Device-side copy on one device: a buffer copy when layouts match, else the elementwise kernel.
void device_copy(const at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == 0) return;
  if (same_dense_layout(dst, src) && dst.sizes() == src.sizes()) {
    if (dst.storage().data_ptr().get() == src.storage().data_ptr().get()) {
      // Two tensors over the same bytes (load_state_dict copying a DTensor's shard into itself after
      // an in-place DCP load): nothing to move. Overlapping ranges at different offsets go through a
      // temporary, since clEnqueueCopyBuffer rejects overlapping regions (CL_MEM_COPY_OVERLAP).
      int64_t gap = std::abs(dst.storage_offset() - src.storage_offset());
      if (gap == 0) return;
      if (gap < dst.numel()) return device_copy(dst, src.clone());
    }
    copy_device_bytes(dst.storage().data_ptr(), dst.storage_offset() * dst.itemsize(), src.storage().data_ptr(),
                      src.storage_offset() * src.itemsize(), dst.numel() * dst.itemsize());
    return;
  }
  if (dst.is_complex() != src.is_complex()) return complex_real_copy(dst, src);
  if (dst.is_complex() && dst.scalar_type() != src.scalar_type())  // complex64 <-> complex128: per component
    return device_copy(at::view_as_real(dst), at::view_as_real(src));
  if (dst.scalar_type() == src.scalar_type() && !has_dlprim_type(dst.scalar_type())) {
    if (auto t = same_width_int(dst.scalar_type())) return device_copy(dst.view(*t), src.view(*t));
    TORCH_CHECK(dst.is_complex(), "copy_: dtype ", dst.scalar_type(), " cannot be copied on ocl");
    return device_copy(at::view_as_real(dst), at::view_as_real(src));
  }
  TORCH_CHECK_TYPE(has_dlprim_type(dst.scalar_type()) && has_dlprim_type(src.scalar_type()), "copy_: converting ",
                   src.scalar_type(), " to ", dst.scalar_type(), " on the ocl device is not supported");
  auto iter = at::TensorIteratorConfig()
                  .add_output(dst)
                  .add_const_input(src)
                  .resize_outputs(false)
                  .check_all_same_dtype(false)
                  .check_all_same_device(false)
                  .build();
  launch_elementwise(k_copy, iter, dst.scalar_type());
}

void copy_to_device(const at::Tensor& dst, const at::Tensor& cpu_src, bool non_blocking) {
  at::Tensor src = cpu_src.to(dst.scalar_type()).expand(dst.sizes()).contiguous();
  if (dst.is_contiguous()) return host_to_device_bytes(dst, src.const_data_ptr(), src.nbytes(), non_blocking);
  at::Tensor staging = at::empty(dst.sizes(), dst.options());
  host_to_device_bytes(staging, src.const_data_ptr(), src.nbytes(), false);
  device_copy(dst, staging);
}

void copy_to_host(const at::Tensor& cpu_dst, const at::Tensor& src, bool non_blocking) {
  if (same_dense_layout(cpu_dst, src) && cpu_dst.sizes() == src.sizes())
    return device_to_host_bytes(cpu_dst.data_ptr(), src, src.nbytes(), non_blocking);
  at::Tensor dense = src.is_contiguous() ? src : at::empty(src.sizes(), src.options());
  if (!src.is_contiguous()) device_copy(dense, src);
  at::Tensor host = at::empty(src.sizes(), src.options().device(c10::kCPU));
  device_to_host_bytes(host.data_ptr(), dense, dense.nbytes(), false);
  cpu_dst.copy_(host);
}

at::Tensor copy_from(const at::Tensor& self_in, const at::Tensor& dst, bool non_blocking) {
  if (dst.numel() == 0) return dst;
  at::Tensor self = self_in;
  if (self.is_conj() || self.is_neg()) {
    if (!is_ocl(self)) {
      self = self.resolve_conj().resolve_neg();
    } else {
      c10::DeviceGuard guard(self.device());
      self = resolve_on_device(self);
    }
  }
  OCL_TRACE("copy ", self.device(), " ", self.scalar_type(), self.sizes(), " -> ", dst.device(), " ",
            dst.scalar_type(), dst.sizes(), non_blocking ? " non_blocking" : "");
  if (is_ocl(self) && is_ocl(dst)) {
    if (self.device() == dst.device()) {
      c10::DeviceGuard guard(dst.device());
      device_copy(dst, self.expand(dst.sizes()));
    } else {
      // Different devices have different contexts: stage through host memory.
      at::Tensor host = self.to(c10::kCPU);
      c10::DeviceGuard guard(dst.device());
      copy_to_device(dst, host, false);
    }
  } else if (is_ocl(dst)) {
    TORCH_CHECK(self.device().is_cpu(), "copy_: cannot copy from ", self.device(), " to ", dst.device());
    c10::DeviceGuard guard(dst.device());
    copy_to_device(dst, self, non_blocking);
  } else {
    TORCH_CHECK(dst.device().is_cpu(), "copy_: cannot copy from ", self.device(), " to ", dst.device());
    c10::DeviceGuard guard(self.device());
    copy_to_host(dst, self.expand(dst.sizes()), non_blocking);
  }
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) dst.resize_(self.sizes());
  return copy_from(self, dst, false);
}

c10::Scalar local_scalar_dense(const at::Tensor& self) {
  TORCH_CHECK(self.numel() == 1, "a Tensor with ", self.numel(), " elements cannot be converted to Scalar");
  at::Tensor host = at::empty({}, self.options().device(c10::kCPU));
  c10::DeviceGuard guard(self.device());
  device_to_host_bytes(host.data_ptr(), self, self.itemsize(), false);
  return at::_local_scalar_dense(host);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
}

// copy_from resolves conjugate and negative views itself (see resolve_on_device).
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}
TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

} // namespace pytorch_ocl
