// Pointwise-table rows whose operands are slices of one dim: linalg_cross (the three components
// of each vector as strided views, so broadcasting and any layout come from TensorIterator) and
// renorm (per-slice norms by the vector-norm reduction, then the renorm_factor row and a mul),
// both following the CPU's structured kernels step by step so that results and errors match.
// Complex: cross runs the complex row once per output component; renorm's norm and factor are real.
#include "aten/ComplexOps.h"
#include "aten/PointwiseTable.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/OpMathType.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/mul.h>

#include <numeric>

namespace pytorch_ocl {

namespace {

at::Tensor& linalg_cross_out(const at::Tensor& input, const at::Tensor& other, int64_t dim, at::Tensor& out) {
  // linalg_cross's meta(): same rank, length 3 along dim (negative dims wrap in size()).
  TORCH_CHECK(input.dim() == other.dim(), "linalg.cross: inputs must have the same number of dimensions.");
  TORCH_CHECK(input.size(dim) == 3 && other.size(dim) == 3, "linalg.cross: inputs dimension ", dim,
              " must have length 3. Got ", input.size(dim), " and ", other.size(dim));
  TORCH_CHECK(input.scalar_type() == other.scalar_type(), "expected scalar type ", input.scalar_type(),
              " but found ", other.scalar_type());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), "Expected out tensor to have dtype ",
              input.scalar_type(), ", but got ", out.scalar_type(), " instead");
  if (!input.is_complex()) pw_check_dtype(PW_linalg_cross, input.scalar_type());
  auto out_size = at::infer_size(input.sizes(), other.sizes());
  at::native::resize_output(out, out_size);
  if (out.numel() == 0) return out;
  dim = c10::maybe_wrap_dim(dim, input.dim());
  at::Tensor a = input.expand(out_size), b = other.expand(out_size);
  if (input.is_complex()) {  // out[k] = a[k+1] b[k+2] - a[k+2] b[k+1], into a copy where out aliases an input
    bool alias = at::get_overlap_status(out, input) != at::MemOverlapStatus::No ||
                 at::get_overlap_status(out, other) != at::MemOverlapStatus::No;
    at::Tensor dst = alias ? at::empty(out_size, out.options()) : out;
    for (int64_t k = 0; k < 3; ++k)
      pw_complex_launch(PW_linalg_cross, dst.select(dim, k),
                        {a.select(dim, (k + 1) % 3), a.select(dim, (k + 2) % 3), b.select(dim, (k + 1) % 3),
                         b.select(dim, (k + 2) % 3)},
                        input.scalar_type());
    if (alias) out.copy_(dst);
    return out;
  }
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(true);
  for (int64_t k = 0; k < 3; ++k) config.add_owned_output(out.select(dim, k));
  for (const at::Tensor* t : {&a, &b})
    for (int64_t k = 0; k < 3; ++k) config.add_owned_const_input(t->select(dim, k));
  auto iter = config.build();
  pw_launch(PW_linalg_cross, iter, input.scalar_type(), {});
  return out;
}

at::Tensor& renorm_out(const at::Tensor& self, const c10::Scalar& p, int64_t dim, const c10::Scalar& maxnorm,
                       at::Tensor& out) {
  // renorm's meta().
  TORCH_CHECK(!p.isComplex(), "renorm: p must be real-valued");
  TORCH_CHECK(p.toDouble() > 0.0, "renorm: non-positive-norm not supported");
  TORCH_CHECK(!maxnorm.isComplex(), "renorm: maxnorm must be real-valued");
  TORCH_CHECK(maxnorm.toDouble() >= 0.0, "renorm: expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  TORCH_CHECK(self.dim() > 1, "renorm: input needs at least 2 dimensions, got ", self.dim(), " dimensions");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  std::vector<int64_t> reduce_dims(self.dim());
  std::iota(reduce_dims.begin(), reduce_dims.end(), 0);
  reduce_dims.erase(reduce_dims.begin() + dim);
  // 16-bit floats: the norm in float32, the factor rounded to self's dtype (as the CPU's renorm).
  auto dtype = self.scalar_type();
  auto acc = at::toOpMathType(dtype);
  at::Tensor norm = acc != dtype ? at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true, acc)
                                 : at::linalg_vector_norm(self, p.toDouble(), reduce_dims, true);
  pw_check_dtype(PW_renorm_factor, norm.scalar_type());  // complex self: a real norm and factor
  at::Tensor factor = acc == dtype || self.is_complex() ? norm : at::empty(norm.sizes(), self.options());
  auto iter = at::TensorIteratorConfig()
                  .add_output(factor)
                  .add_const_input(norm)
                  .check_all_same_dtype(false)
                  .set_check_mem_overlap(false)
                  .build();
  pw_launch(PW_renorm_factor, iter, norm.scalar_type(), {pw_scalar(maxnorm.toDouble())});
  at::native::resize_output(out, self.sizes());
  return at::mul_outf(self, factor, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  pw_impl(m, PW_linalg_cross, "linalg_cross.out", TORCH_FN(linalg_cross_out));
  pw_impl(m, PW_renorm_factor, "renorm.out", TORCH_FN(renorm_out));
}

} // namespace pytorch_ocl
