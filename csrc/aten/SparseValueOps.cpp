// Sparse COO and CSR ops that act on the stored values only: zero-preserving unary functions, multiplying
// or dividing by a scalar, and sparse @ vector. ATen's kernels for the unary ops (SparseUnaryOps.cpp and,
// for CSR, SparseCsrTensorMath.cpp: the op on values()), div_out_sparse_zerodim and mv_sparse coalesce
// through our _coalesce and then run the dense op on the values (or go through mm), so they are
// device-generic and registered as they are; multiplying COO by a scalar is ours (ATen's
// mul_out_sparse_zerodim is not in the public headers), CSR mul is in SparseCsr.cpp.
#include "aten/SparseUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/copy_sparse_to_sparse_native.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/abs_native.h>
#include <ATen/ops/asin_native.h>
#include <ATen/ops/asinh_native.h>
#include <ATen/ops/atan_native.h>
#include <ATen/ops/atanh_native.h>
#include <ATen/ops/ceil_native.h>
#include <ATen/ops/deg2rad_native.h>
#include <ATen/ops/div_native.h>
#include <ATen/ops/erf_native.h>
#include <ATen/ops/erfinv_native.h>
#include <ATen/ops/expm1_native.h>
#include <ATen/ops/floor_native.h>
#include <ATen/ops/frac_native.h>
#include <ATen/ops/log1p_native.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/mv_native.h>
#include <ATen/ops/neg_native.h>
#include <ATen/ops/rad2deg_native.h>
#include <ATen/ops/relu_native.h>
#include <ATen/ops/round_native.h>
#include <ATen/ops/sgn_native.h>
#include <ATen/ops/sign_native.h>
#include <ATen/ops/sin_native.h>
#include <ATen/ops/sinh_native.h>
#include <ATen/ops/sqrt_native.h>
#include <ATen/ops/sum_native.h>
#include <ATen/ops/tan_native.h>
#include <ATen/ops/tanh_native.h>
#include <ATen/ops/trunc_native.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// sparse * scalar (a 0-dim dense tensor, or a Python number wrapped as one), either order: the
// values scaled, the indices kept.
at::Tensor& mul_coo_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  bool scalar_first = !self.is_sparse() && self.dim() == 0;
  const at::Tensor& sparse = scalar_first ? other : self;
  const at::Tensor& scalar = scalar_first ? self : other;
  TORCH_CHECK_NOT_IMPLEMENTED(sparse.is_sparse() && !scalar.is_sparse() && scalar.dim() == 0,
                              "mul: on ocl a sparse COO tensor can only be multiplied by a scalar, got ",
                              scalar.layout(), " of ", scalar.dim(), " dims");
  TORCH_CHECK(out.is_sparse(), "mul: expected a sparse COO 'out'");
  at::Tensor values = at::mul(sparse._values(), scalar).to(out.scalar_type());
  at::Tensor product = make_coo(sparse._indices().clone(), values, sparse.sizes(), sparse.is_coalesced());
  if (out.is_same(sparse)) {
    sparse._values().copy_(values);
    return out;
  }
  at::native::resize_as_sparse_(out, product);
  at::native::copy_sparse_(out, product, false);
  return out;
}

using DivOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, at::Tensor&);
using DivModeOut = at::Tensor& (*)(const at::Tensor&, const at::Tensor&, std::optional<c10::string_view>,
                                   at::Tensor&);
using DivFn = at::Tensor (*)(const at::Tensor&, const at::Tensor&);
using DivInplace = at::Tensor& (*)(at::Tensor&, const at::Tensor&);

} // namespace

// name: the op (functional, in-place `name_` and `name.out`), ATen's kernels name_sparse,
// name_sparse_ and name_sparse_out.
#define OCL_SPARSE_UNARY_OPS(X)                                                                                       \
  X(abs) X(asin) X(asinh) X(atan) X(atanh) X(ceil) X(deg2rad) X(erf) X(erfinv) X(expm1) X(floor) X(frac) X(log1p)     \
  X(rad2deg) X(round) X(sgn) X(sign) X(sin) X(sinh) X(sqrt) X(tan) X(tanh) X(trunc)

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
#define OCL_REGISTER_SPARSE_UNARY(name)                                \
  m.impl(#name, TORCH_FN(at::native::name##_sparse));                  \
  m.impl(#name "_", TORCH_FN(at::native::name##_sparse_));             \
  m.impl(#name ".out", TORCH_FN(at::native::name##_sparse_out));
  OCL_SPARSE_UNARY_OPS(OCL_REGISTER_SPARSE_UNARY)
#undef OCL_REGISTER_SPARSE_UNARY
  m.impl("neg", TORCH_FN(at::native::neg_sparse));
  m.impl("neg_", TORCH_FN(at::native::neg_sparse_));
  m.impl("neg.out", TORCH_FN(at::native::neg_out_sparse));
  m.impl("relu", TORCH_FN(at::native::relu_sparse));
  m.impl("relu_", TORCH_FN(at::native::relu_sparse_));
  m.impl("mul.Tensor", TORCH_FN(at::native::mul_sparse));
  m.impl("mul_.Tensor", TORCH_FN(at::native::mul_sparse_));
  m.impl("mul.out", TORCH_FN(mul_coo_out));
  m.impl("div.Tensor", TORCH_FN(static_cast<DivFn>(at::native::div_sparse)));
  m.impl("div_.Tensor", TORCH_FN(static_cast<DivInplace>(at::native::div_sparse_)));
  m.impl("div.out", TORCH_FN(static_cast<DivOut>(at::native::div_out_sparse_zerodim)));
  m.impl("div.out_mode", TORCH_FN(static_cast<DivModeOut>(at::native::div_out_sparse_zerodim)));
  m.impl("mv", TORCH_FN(at::native::mv_sparse));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
#define OCL_REGISTER_SPARSE_CSR_UNARY(name)                            \
  m.impl(#name, TORCH_FN(at::native::name##_sparse_csr));              \
  m.impl(#name "_", TORCH_FN(at::native::name##_sparse_csr_));         \
  m.impl(#name ".out", TORCH_FN(at::native::name##_sparse_csr_out));
  OCL_SPARSE_UNARY_OPS(OCL_REGISTER_SPARSE_CSR_UNARY)
  OCL_REGISTER_SPARSE_CSR_UNARY(neg)
#undef OCL_REGISTER_SPARSE_CSR_UNARY
  m.impl("relu", TORCH_FN(at::native::relu_sparse_csr));
  m.impl("relu_", TORCH_FN(at::native::relu_sparse_csr_));
  // mul.Tensor, mul_.Tensor, mul.out: SparseCsr.cpp (a scalar or a dense operand)
  m.impl("sum", TORCH_FN(at::native::sum_csr));  // the values' sum
}

} // namespace pytorch_ocl
