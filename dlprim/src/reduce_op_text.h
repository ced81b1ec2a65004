// OpenCL C text of a ReduceOp, shared by the reduction (reduce.cl) and scan (scan.cl) kernels.
#pragma once
#include <dlprim/context.h>
#include <dlprim/reduce.h>

#include <array>
#include <cstdint>
#include <string>

namespace dlprim {

// Lanes of a 16-byte vector load of `in` (at most 8).
int reduce_vector_width(DType in);

// common.cl + the defines and functions the kernels expect: T, W, IN_T, OUT0_T, OUT1_T,
// IS_NAN, T_HIGHEST/T_LOWEST, LOAD_P, VEC/IN_VEC_T/COMBINE_VEC, acc_t, op_init, op_combine,
// op_merge and store_out.
std::string reduce_op_text(const ReduceOp& op, DType in, DType acc, DType out0, DType out1);

// A real parameter in the accumulation type (dims go through add_dims, elementwise.h).
inline void add_param(KernelArgs& a, DType acc, double v) {
  if (acc == DType::F64)
    a.add<cl_double>(v);
  else
    a.add<cl_float>(static_cast<float>(v));
}

} // namespace dlprim
