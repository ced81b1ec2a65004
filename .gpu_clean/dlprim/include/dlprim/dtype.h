// Storage types understood by the kernel generators, independent of torch.
#pragma once
#include <cstddef>
#include <string>

namespace dlprim {

enum class DType { Bool, U8, I8, I16, I32, I64, U16, U32, U64, F16, BF16, F32, F64 };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
bool is_floating(DType t);
bool is_signed_int(DType t);

// The OpenCL C type that holds a value of `t` in registers. Half and bfloat16 are
// stored as 16 bits and computed in float (NVIDIA's OpenCL has no cl_khr_fp16).
const char* compute_cl_type(DType t);
// The OpenCL C type of a buffer element of `t`.
const char* storage_cl_type(DType t);

// The type arithmetic on `t` is carried out in (float for 16-bit floats).
DType compute_dtype(DType t);
// The accumulator type of sums over `t` (float for 16-bit floats, long for integers).
DType accumulate_dtype(DType t);

// OpenCL C text converting expression `expr` of compute type `from` to compute type `to`,
// with ATen's semantics (bool is `!= 0`, float->uint8 goes through int64).
std::string convert_expr(DType from, DType to, const std::string& expr);
// OpenCL C text loading element `index` of buffer `ptr` (of storage type `t`) as compute_dtype(t).
std::string load_expr(DType t, const std::string& ptr, const std::string& index);
// OpenCL C statement storing compute value `value` (of compute_dtype(t)) at `ptr[index]`.
std::string store_stmt(DType t, const std::string& ptr, const std::string& index,
                       const std::string& value);

} // namespace dlprim
