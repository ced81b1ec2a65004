#include "core/TensorUtils.h"

#include <c10/util/Exception.h>

namespace pytorch_ocl {

bool has_dlprim_type(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: case c10::kByte: case c10::kChar: case c10::kShort: case c10::kInt:
    case c10::kLong: case c10::kUInt16: case c10::kUInt32: case c10::kUInt64: case c10::kHalf:
    case c10::kBFloat16: case c10::kFloat: case c10::kDouble:
      return true;
    default:
      return false;
  }
}

dlprim::DType to_dlprim(c10::ScalarType t, const char* op) {
  using dlprim::DType;
  switch (t) {
    case c10::kBool: return DType::Bool;
    case c10::kByte: return DType::U8;
    case c10::kChar: return DType::I8;
    case c10::kShort: return DType::I16;
    case c10::kInt: return DType::I32;
    case c10::kLong: return DType::I64;
    case c10::kUInt16: return DType::U16;
    case c10::kUInt32: return DType::U32;
    case c10::kUInt64: return DType::U64;
    case c10::kHalf: return DType::F16;
    case c10::kBFloat16: return DType::BF16;
    case c10::kFloat: return DType::F32;
    case c10::kDouble: return DType::F64;
    default:
      TORCH_CHECK_TYPE(false, op, ": dtype ", t, " is not supported on the ocl device");
  }
}

BufferRef buffer_of(const at::TensorBase& t) {
  const c10::Storage& storage = t.storage();
  const c10::DataPtr& dp = storage.data_ptr();
  const char* addr = static_cast<const char*>(dp.get()) + t.storage_offset() * t.itemsize();
  if (!dp.get()) return {};
  return buffer_from_ptr(addr, &dp);
}

void check_ocl(const at::TensorBase& t, const char* op, const char* arg) {
  TORCH_CHECK(t.device().type() == kOcl, op, ": expected '", arg, "' on an ocl device, but it is on ",
              t.device());
}

} // namespace pytorch_ocl
