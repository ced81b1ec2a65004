#include "core/Storage.h"

#include "core/Allocator.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/Stream.h"

#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>
#include <dlprim/copy.h>

#include <algorithm>

namespace pytorch_ocl {

void copy_device_bytes(const c10::DataPtr& dst, size_t dst_offset, const c10::DataPtr& src,
                       size_t src_offset, size_t nbytes) {
  if (nbytes == 0) return;
  BufferRef d = buffer_from_ptr(static_cast<const char*>(dst.get()) + dst_offset, &dst);
  BufferRef s = buffer_from_ptr(static_cast<const char*>(src.get()) + src_offset, &src);
  TORCH_CHECK(d.device == s.device, "ocl: byte copy between devices ", s.device, " and ", d.device,
              " must go through tensor.copy_()");
  cl_command_queue q = current_queue(d.device);
  OCL_DLPRIM_CALL("copy_", dlprim::copy_bytes(context(d.device), q, {d.mem, d.offset}, {s.mem, s.offset}, nbytes));
  note_enqueued(q);
}

void resize_storage_bytes(c10::StorageImpl* storage, size_t nbytes) {
  TORCH_CHECK(storage->resizable(), "Trying to resize storage that is not resizable");
  c10::DeviceGuard guard(storage->device());
  size_t old = storage->nbytes();
  c10::DataPtr fresh = storage->allocator()->allocate(nbytes);
  if (storage->data_ptr().get())
    copy_device_bytes(fresh, 0, storage->data_ptr(), 0, std::min(old, nbytes));
  storage->set_data_ptr_noswap(std::move(fresh));
  storage->set_nbytes(nbytes);
}

} // namespace pytorch_ocl
