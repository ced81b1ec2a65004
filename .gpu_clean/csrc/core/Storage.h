// Resizing device storage (tensor.resize_, UntypedStorage.resize_).
#pragma once
#include <c10/core/StorageImpl.h>

namespace pytorch_ocl {

// Reallocates `storage` to `nbytes`, keeping the common prefix of its bytes.
void resize_storage_bytes(c10::StorageImpl* storage, size_t nbytes);

// Copies `nbytes` between device buffers on the current stream of the destination device.
void copy_device_bytes(const c10::DataPtr& dst, size_t dst_offset, const c10::DataPtr& src,
                       size_t src_offset, size_t nbytes);

} // namespace pytorch_ocl
