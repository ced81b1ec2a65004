// Sparse CSR tensors on ocl (the SparseCsrPrivateUse1 key), 2-D with scalar values. The tensor
// object is ATen's device-generic SparseCsrTensorImpl (accessors, clone, copy, empty_like registered
// as the at::native functions SparseCsrCPU/CUDA use); what computes is built from dense device ops:
//   COO rows <-> crow     searchsorted (the _convert_indices_* ops, on the dense key)
//   dense -> CSR          dense -> COO (row-major, so sorted by row) -> crow
//   CSR -> dense, addmm   the row of every value (from crow), then the COO formulas (CSC too: csr.t())
//   sparse_sampled_addmm  one dot product per stored value: rows of mat1 x columns of mat2
//   csr * dense           the values times the dense elements gathered at their coordinates
//   _sparse_mm_reduce_impl (+ backward): products gathered per value, index_add_/index_reduce_ by
//                         row (sum, mean, amax, amin); arg_out is the first value reaching the extreme
#include "aten/SparseUtils.h"
#include "core/TensorUtils.h"

#include <ATen/ExpandUtils.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_convert_indices_from_coo_to_csr.h>
#include <ATen/ops/_convert_indices_from_csr_to_coo.h>
#include <ATen/ops/_nnz_native.h>
#include <ATen/ops/_sparse_compressed_tensor_unsafe.h>
#include <ATen/ops/_to_sparse_csr_native.h>
#include <ATen/ops/_to_sparse_native.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clone_native.h>
#include <ATen/ops/ccol_indices_native.h>
#include <ATen/ops/col_indices_native.h>
#include <ATen/ops/copy_native.h>
#include <ATen/ops/crow_indices_native.h>
#include <ATen/ops/dense_dim_native.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like_native.h>
#include <ATen/ops/empty_native.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/fill_native.h>
#include <ATen/ops/full.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/mul_native.h>
#include <ATen/ops/normal_native.h>
#include <ATen/ops/resize_as_sparse_native.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/row_indices_native.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/sparse_dim_native.h>
#include <ATen/ops/values_native.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zero_native.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

void check_csr_matrix(const at::Tensor& t, const char* op, const char* arg = "self") {
  check_ocl(t, op, arg);
  TORCH_CHECK(t.layout() == c10::kSparseCsr, op, ": expected '", arg, "' to be a sparse CSR tensor, got ", t.layout());
  TORCH_CHECK_NOT_IMPLEMENTED(t.dim() == 2 && t.dense_dim() == 0, op,
                              ": on ocl only 2-D CSR tensors with scalar values are supported, got ", t.dim(),
                              "-D with ", t.dense_dim(), " dense dims");
}

// (nnz,) int64: the row of every stored value.
at::Tensor csr_rows(const at::Tensor& csr) {
  return at::_convert_indices_from_csr_to_coo(csr.crow_indices(), csr.col_indices(), false, false).select(0, 0);
}

bool is_compressed(const at::Tensor& t) {
  return t.layout() == c10::kSparseCsr || t.layout() == c10::kSparseCsc;
}

// CSC (a transposed CSR, e.g. csr.t()) is accepted where only the coordinates of the values matter.
void check_compressed_matrix(const at::Tensor& t, const char* op, const char* arg) {
  check_ocl(t, op, arg);
  TORCH_CHECK(is_compressed(t), op, ": expected '", arg, "' to be a sparse CSR or CSC tensor, got ", t.layout());
  TORCH_CHECK_NOT_IMPLEMENTED(t.dim() == 2 && t.dense_dim() == 0, op,
                              ": on ocl only 2-D CSR/CSC tensors with scalar values are supported, got ", t.dim(),
                              "-D with ", t.dense_dim(), " dense dims");
}

// (rows, cols), int64: the coordinates of every stored value of a CSR or CSC matrix.
std::pair<at::Tensor, at::Tensor> compressed_coordinates(const at::Tensor& t) {
  if (t.layout() == c10::kSparseCsc) {
    at::Tensor cols =
        at::_convert_indices_from_csr_to_coo(t.ccol_indices(), t.row_indices(), false, false).select(0, 0);
    return {t.row_indices().to(c10::kLong), cols};
  }
  return {csr_rows(t), t.col_indices().to(c10::kLong)};
}

at::Tensor make_csr(const at::Tensor& crow, const at::Tensor& col, const at::Tensor& values, c10::IntArrayRef sizes) {
  return at::_sparse_compressed_tensor_unsafe(crow, col, values, sizes, values.options().layout(c10::kSparseCsr));
}

// Dot products of 16-bit values accumulate in float32 (as CUDA's and the CPU's opmath do).
at::Tensor opmath(const at::Tensor& t) {
  return c10::isReducedFloatingType(t.scalar_type()) ? t.to(c10::kFloat) : t;
}

// crow[r] = the number of entries with row < r, for sorted rows.
at::Tensor& coo_to_csr_indices_out(const at::Tensor& input, int64_t size, bool out_int32, at::Tensor& out) {
  check_ocl(input, "_convert_indices_from_coo_to_csr", "input");
  TORCH_CHECK(input.dim() <= 1, "_convert_indices_from_coo_to_csr: expected a 1-D input, got ", input.dim(), "-D");
  c10::DeviceGuard guard(input.device());
  at::native::resize_output(out, {size + 1});
  at::Tensor boundaries = at::arange(size + 1, input.options().dtype(c10::kLong));
  out.copy_(at::searchsorted(input.reshape({-1}).to(c10::kLong), boundaries, out_int32, false));
  return out;
}

// The row of entry e is the number of rows that end at or before e.
at::Tensor& csr_to_coo_indices_out(const at::Tensor& crow, const at::Tensor& col, bool out_int32, bool transpose,
                                   at::Tensor& out) {
  check_ocl(crow, "_convert_indices_from_csr_to_coo", "crow_indices");
  TORCH_CHECK(crow.dim() == 1 && col.dim() == 1,
              "_convert_indices_from_csr_to_coo: batched indices are not supported on ocl");
  c10::DeviceGuard guard(crow.device());
  int64_t nnz = col.size(0);
  at::native::resize_output(out, {2, nnz});
  if (nnz == 0) return out;
  at::Tensor entries = at::arange(nnz, crow.options().dtype(c10::kLong));
  at::Tensor ends = crow.narrow(0, 1, crow.size(0) - 1).to(c10::kLong).contiguous();
  out.select(0, transpose ? 1 : 0).copy_(at::searchsorted(ends, entries, false, true));
  out.select(0, transpose ? 0 : 1).copy_(col);
  return out;
}

at::Tensor coo_to_csr(const at::Tensor& coo) {
  TORCH_CHECK_NOT_IMPLEMENTED(coo.dim() == 2 && coo.sparse_dim() == 2,
                              "to_sparse_csr: on ocl only 2-D tensors with scalar values are supported, got ",
                              coo.dim(), "-D with ", coo.dense_dim(), " dense dims");
  at::Tensor c = coo.coalesce();
  at::Tensor indices = c._indices();
  at::Tensor crow = at::_convert_indices_from_coo_to_csr(indices.select(0, 0), c.size(0), false);
  return make_csr(crow, indices.select(0, 1).contiguous(), c._values(), c.sizes());
}

at::Tensor dense_to_csr(const at::Tensor& self, std::optional<int64_t> dense_dim) {
  check_ocl(self, "to_sparse_csr", "self");
  TORCH_CHECK_NOT_IMPLEMENTED(self.dim() == 2 && dense_dim.value_or(0) == 0,
                              "to_sparse_csr: on ocl only 2-D tensors with scalar values are supported, got ",
                              self.dim(), "-D with dense_dim ", dense_dim.value_or(0));
  return coo_to_csr(self.to_sparse(2));
}

at::Tensor coo_to_csr_op(const at::Tensor& self, std::optional<int64_t> dense_dim) {
  check_ocl(self, "to_sparse_csr", "self");
  TORCH_CHECK_NOT_IMPLEMENTED(!dense_dim.has_value() || *dense_dim == self.dense_dim(),
                              "to_sparse_csr: dense_dim must match the COO tensor's dense dims");
  return coo_to_csr(self);
}

at::Tensor csr_to_dense(const at::Tensor& self, std::optional<c10::ScalarType> dtype, std::optional<bool> masked_grad) {
  TORCH_CHECK(!dtype.has_value(), "dtype argument is not supported by sparse_csr_to_dense");
  check_compressed_matrix(self, "to_dense", "self");
  c10::DeviceGuard guard(self.device());
  int64_t n = self.size(1);
  at::Tensor dense = at::zeros(self.sizes(), self.values().options());
  if (self._nnz() == 0 || dense.numel() == 0) return dense;
  auto [rows, cols] = compressed_coordinates(self);
  at::Tensor linear = rows * n + cols;  // not in place: for CSC, rows is the tensor's own row_indices
  dense.view({-1}).index_add_(0, linear, self.values());
  return dense;
}

// self (dense or CSR) at the mask's pattern; self's own pattern only matters through its values.
at::Tensor sparse_mask_csr(const at::Tensor& self, const at::Tensor& mask) {
  check_csr_matrix(mask, "sparse_mask", "mask");
  check_ocl(self, "sparse_mask", "self");
  TORCH_CHECK(self.sizes().equals(mask.sizes()), "sparse_mask(): operands have incompatible sizes; self has size ",
              self.sizes(), " but mask has size ", mask.sizes());
  c10::DeviceGuard guard(mask.device());
  at::Tensor dense = self.layout() == c10::kStrided ? self : self.to_dense();
  at::Tensor linear = csr_rows(mask).mul_(mask.size(1)).add_(mask.col_indices());
  at::Tensor values = dense.reshape({-1}).index_select(0, linear);
  return make_csr(mask.crow_indices().clone(), mask.col_indices().clone(), values, mask.sizes());
}

at::Tensor& addmm_csr_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                          const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  bool sparse_left = is_compressed(mat1);
  const at::Tensor& sparse = sparse_left ? mat1 : mat2;
  check_compressed_matrix(sparse, "addmm", sparse_left ? "mat1" : "mat2");
  TORCH_CHECK_NOT_IMPLEMENTED(self.layout() == c10::kStrided && (sparse_left ? mat2 : mat1).layout() == c10::kStrided,
                              "addmm: on ocl only one sparse CSR/CSC operand with a dense self and other is supported");
  auto [rows, cols] = compressed_coordinates(sparse);
  return sparse_triplets_addmm_out(self, mat1, mat2, beta, alpha, rows, cols, sparse.values(), sparse_left, out,
                                   "addmm");
}

at::Tensor addmm_csr(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                     const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, (mat1.layout() == c10::kStrided ? mat1 : mat2).options().layout(c10::kStrided));
  return addmm_csr_out(self, mat1, mat2, beta, alpha, out);
}

// ATen's _sparse_csr_mm reaches CPU/CUDA-only stubs for CSC: mm is addmm into zeros here.
at::Tensor mm_compressed(const at::Tensor& self, const at::Tensor& mat2) {
  TORCH_CHECK_NOT_IMPLEMENTED(!(is_compressed(self) && is_compressed(mat2)),
                              "mm: a product of two sparse compressed tensors is not supported on ocl");
  TORCH_CHECK(self.dim() == 2 && mat2.dim() == 2, "mm: 2D matrices expected, got ", self.dim(), "D and ", mat2.dim(),
              "D");
  const at::Tensor& dense = is_compressed(self) ? mat2 : self;
  at::Tensor zeros = at::zeros({self.size(0), mat2.size(1)}, dense.options());
  return addmm_csr(zeros, self, mat2, 0, 1);
}

// addmv (and so mv, CSR @ vector): addmm with the vector as a one-column matrix.
at::Tensor& addmv_csr_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec,
                          const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  check_compressed_matrix(mat, "addmv", "mat");
  TORCH_CHECK(vec.dim() == 1, "addmv: vector expected, got ", vec.dim(), "-D tensor");
  TORCH_CHECK(self.dim() <= 1, "addmv: expected a 1-D or 0-D self, got ", self.dim(), "-D");
  at::Tensor column = at::empty({0}, vec.options());
  addmm_csr_out(self.reshape({self.numel() == 1 ? 1 : -1, 1}), mat, vec.unsqueeze(1), beta, alpha, column);
  at::native::resize_output(out, {mat.size(0)});
  out.copy_(column.squeeze(1));
  return out;
}

// alpha * (mat1 @ mat2) at self's pattern + beta * self: one dot product per stored value.
at::Tensor sampled_addmm_csr(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                             const c10::Scalar& beta, const c10::Scalar& alpha) {
  check_csr_matrix(self, "sparse_sampled_addmm");
  check_ocl(mat1, "sparse_sampled_addmm", "mat1");
  check_ocl(mat2, "sparse_sampled_addmm", "mat2");
  TORCH_CHECK(mat1.layout() == c10::kStrided && mat2.layout() == c10::kStrided,
              "sparse_sampled_addmm: Expected mat1 and mat2 to have strided layout");
  TORCH_CHECK_NOT_IMPLEMENTED(mat1.dim() == 2 && mat2.dim() == 2,
                              "sparse_sampled_addmm: on ocl only 2-D mat1 and mat2 are supported");
  TORCH_CHECK(mat1.size(1) == mat2.size(0), "sparse_sampled_addmm: mat1 and mat2 shapes cannot be multiplied (",
              mat1.size(0), "x", mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  TORCH_CHECK(self.size(0) == mat1.size(0) && self.size(1) == mat2.size(1), "sparse_sampled_addmm: self of size ",
              self.sizes(), " does not match the product's size (", mat1.size(0), ", ", mat2.size(1), ")");
  TORCH_CHECK(self.scalar_type() == mat1.scalar_type() && mat1.scalar_type() == mat2.scalar_type(),
              "sparse_sampled_addmm: Expected self, mat1 and mat2 to have the same dtype, got ", self.scalar_type(),
              ", ", mat1.scalar_type(), " and ", mat2.scalar_type());
  c10::DeviceGuard guard(self.device());
  at::Tensor values = self.values();
  at::Tensor result = beta.toComplexDouble() == 0.0 ? at::zeros_like(values) : values.mul(beta);
  if (self._nnz() > 0 && mat1.size(1) > 0) {
    at::Tensor lhs = opmath(mat1.index_select(0, csr_rows(self)));
    at::Tensor rhs = mat2.t().index_select(0, self.col_indices().to(c10::kLong));
    result.add_(lhs.mul_(rhs).sum(1).to(result.scalar_type()), alpha);
  }
  return make_csr(self.crow_indices().clone(), self.col_indices().clone(), result, self.sizes());
}

at::Tensor& sampled_addmm_csr_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                  const c10::Scalar& beta, const c10::Scalar& alpha, at::Tensor& out) {
  at::Tensor result = sampled_addmm_csr(self, mat1, mat2, beta, alpha);
  at::native::resize_as_sparse_compressed_(out, result);
  at::native::copy_sparse_compressed_(out, result, false);
  return out;
}

enum class MmReduce { Sum, Mean, Max, Min };

MmReduce parse_mm_reduce(c10::string_view reduce) {
  if (reduce == "sum") return MmReduce::Sum;
  if (reduce == "mean") return MmReduce::Mean;
  if (reduce == "amax") return MmReduce::Max;
  if (reduce == "amin") return MmReduce::Min;
  TORCH_CHECK(false, "reduce argument must be either sum, mean, amax or amin, got ", reduce);
}

// The stored values of a row, at least 1 (so empty rows divide by 1): the divisor of "mean".
at::Tensor row_counts(const at::Tensor& csr, const at::TensorOptions& opts) {
  at::Tensor crow = csr.crow_indices();
  int64_t m = crow.size(0) - 1;
  return (crow.narrow(0, 1, m) - crow.narrow(0, 0, m)).clamp_min(1).to(opts.dtype());
}

void check_mm_reduce(const at::Tensor& self, const at::Tensor& other) {
  check_csr_matrix(self, "sparse_mm_reduce");
  check_ocl(other, "sparse_mm_reduce", "other");
  TORCH_CHECK(other.layout() == c10::kStrided && other.dim() == 2, "sparse_mm_reduce: expected other to be a 2-D ",
              "strided tensor, got ", other.layout(), " ", other.dim(), "-D");
  TORCH_CHECK(self.size(1) == other.size(0), "sparse_mm_reduce: mat1 and mat2 shapes cannot be multiplied (",
              self.size(0), "x", self.size(1), " and ", other.size(0), "x", other.size(1), ")");
  TORCH_CHECK(self.scalar_type() == other.scalar_type(), "sparse_mm_reduce: expected self and other to have the ",
              "same dtype, got ", self.scalar_type(), " and ", other.scalar_type());
}

// out[r, :] = reduce over the row's values v (column c) of v * other[c, :]; empty rows are 0.
// arg_out (amax/amin while gradients are recorded, as on the CPU): the index of the first value
// reaching the extreme, nnz where the row is empty.
std::tuple<at::Tensor, at::Tensor> mm_reduce_csr(const at::Tensor& self, const at::Tensor& other,
                                                 c10::string_view reduce) {
  check_mm_reduce(self, other);
  MmReduce op = parse_mm_reduce(reduce);
  c10::DeviceGuard guard(self.device());
  int64_t m = self.size(0), k = other.size(1), nnz = self._nnz();
  at::Tensor out = at::zeros({m, k}, other.options());
  at::Tensor arg_out = at::empty({0}, other.options().dtype(c10::kLong));
  if (nnz == 0) return {out, arg_out};
  at::Tensor rows = csr_rows(self);
  // 16-bit inputs reduce in float32 and round once, as the CPU's kernel does.
  at::Tensor products = opmath(other.index_select(0, self.col_indices().to(c10::kLong)));
  products.mul_(self.values().unsqueeze(1));
  at::Tensor acc = at::zeros({m, k}, products.options());
  if (op == MmReduce::Sum || op == MmReduce::Mean) {
    acc.index_add_(0, rows, products);
    if (op == MmReduce::Mean) acc.div_(row_counts(self, acc.options()).unsqueeze(1));
    return {acc.to(out.scalar_type()), arg_out};
  }
  acc.index_reduce_(0, rows, products, op == MmReduce::Max ? "amax" : "amin", /*include_self=*/false);
  bool need_arg = at::GradMode::is_enabled() && (self.requires_grad() || other.requires_grad());
  if (need_arg) {
    at::Tensor best = acc.index_select(0, rows);
    at::Tensor hit = at::eq(products, best).logical_or_(at::isnan(products));
    at::Tensor entry = at::arange(nnz, arg_out.options()).unsqueeze(1).expand({nnz, k});
    at::Tensor candidate = at::where(hit, entry, nnz);
    arg_out = at::full({m, k}, nnz, arg_out.options()).index_reduce_(0, rows, candidate, "amin", true);
  }
  return {acc.to(out.scalar_type()), arg_out};
}

std::tuple<at::Tensor, at::Tensor> mm_reduce_csr_backward(const at::Tensor& self, const at::Tensor& grad_out,
                                                          const at::Tensor& other, c10::string_view reduce,
                                                          const at::Tensor& arg_out, std::array<bool, 2> mask) {
  check_mm_reduce(self, other);
  MmReduce op = parse_mm_reduce(reduce);
  c10::DeviceGuard guard(self.device());
  int64_t nnz = self._nnz(), k = other.size(1);
  at::Tensor rows = csr_rows(self);
  at::Tensor cols = self.col_indices().to(c10::kLong);
  at::Tensor values = self.values();
  bool by_arg = op == MmReduce::Max || op == MmReduce::Min;
  // For amax/amin each output element came from one value (arg_out; nnz: none): extend the
  // per-value tensors by one zero slot so "none" gathers and scatters nothing.
  at::Tensor arg = by_arg ? arg_out.reshape({-1}) : at::Tensor();
  at::Tensor cols_ext = by_arg ? at::cat({cols, at::zeros({1}, cols.options())}) : at::Tensor();
  at::Tensor grad_self, grad_other;
  if (mask[0]) {
    at::Tensor grad_values;
    if (by_arg) {
      at::Tensor source_rows = cols_ext.index_select(0, arg).view(arg_out.sizes());
      at::Tensor contrib = other.gather(0, source_rows).mul_(grad_out).masked_fill_(arg_out == nnz, 0);
      grad_values = at::zeros({nnz + 1}, values.options()).index_add_(0, arg, contrib.reshape({-1})).narrow(0, 0, nnz);
    } else {
      at::Tensor products = opmath(other.index_select(0, cols)).mul_(grad_out.index_select(0, rows));
      grad_values = products.sum(1).to(values.scalar_type());
      if (op == MmReduce::Mean) grad_values.div_(row_counts(self, values.options()).index_select(0, rows));
    }
    grad_self = make_csr(self.crow_indices().clone(), self.col_indices().clone(), grad_values, self.sizes());
  }
  if (mask[1]) {
    // Accumulated in float32 for 16-bit dtypes (several values may add into one element).
    at::Tensor wide_values = opmath(values);
    grad_other = at::zeros(other.sizes(), wide_values.options());
    if (by_arg) {
      at::Tensor values_ext = at::cat({wide_values, at::zeros({1}, wide_values.options())});
      at::Tensor contrib = values_ext.index_select(0, arg).view(arg_out.sizes()).mul(grad_out);
      grad_other.scatter_add_(0, cols_ext.index_select(0, arg).view(arg_out.sizes()), contrib);
    } else if (nnz > 0 && k > 0) {
      at::Tensor scale = wide_values;
      if (op == MmReduce::Mean) scale = scale / row_counts(self, scale.options()).index_select(0, rows);
      grad_other.index_add_(0, cols, opmath(grad_out.index_select(0, rows)).mul_(scale.unsqueeze(1)));
    }
  }
  if (grad_other.defined()) grad_other = grad_other.to(other.scalar_type());
  return {grad_self, grad_other};
}

// csr * dense (either order; the dense operand broadcast to the CSR's shape, or 0-dim): the CSR's pattern
// kept, each value times the dense element at its coordinates (the CPU keeps the pattern too, zeros
// included). Ours rather than ATen's mul_sparse_csr, which turns the dense operand into a CSR one first;
// csr * csr would need the COO intersection, which ocl does not have.
at::Tensor& mul_csr_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  bool self_is_csr = self.layout() == c10::kSparseCsr;
  const at::Tensor& csr = self_is_csr ? self : other;
  const at::Tensor& dense = self_is_csr ? other : self;
  check_csr_matrix(csr, "mul", self_is_csr ? "self" : "other");
  TORCH_CHECK_NOT_IMPLEMENTED(dense.layout() == c10::kStrided, "mul: on ocl a sparse CSR tensor can only be ",
                              "multiplied by a dense tensor or a scalar, got ", dense.layout());
  if (dense.dim() > 0) check_ocl(dense, "mul", self_is_csr ? "other" : "self");
  TORCH_CHECK(out.layout() == c10::kSparseCsr, "mul: expected a sparse CSR 'out', got ", out.layout());
  TORCH_CHECK(at::is_expandable_to(dense.sizes(), csr.sizes()), "mul: the dense operand of size ", dense.sizes(),
              " cannot be broadcast to the sparse operand's size ", csr.sizes());
  c10::DeviceGuard guard(csr.device());
  c10::ScalarType common = at::result_type(self, other);
  TORCH_CHECK(c10::canCast(common, out.scalar_type()), "Can't convert result type ", common, " to output ",
              out.scalar_type(), " in mul");
  at::Tensor factors = dense;
  if (dense.dim() > 0) {
    at::Tensor linear = csr_rows(csr) * csr.size(1) + csr.col_indices().to(c10::kLong);
    factors = dense.expand(csr.sizes()).reshape({-1}).index_select(0, linear);
  }
  at::Tensor values = csr.values().to(common).mul(factors.to(common)).to(out.scalar_type());
  at::Tensor result = make_csr(csr.crow_indices().clone(), csr.col_indices().clone(), values, csr.sizes());
  at::native::resize_as_sparse_compressed_(out, result);
  at::native::copy_sparse_compressed_(out, result, false);
  return out;
}

at::Tensor mul_csr(const at::Tensor& self, const at::Tensor& other) {
  const at::Tensor& csr = self.layout() == c10::kSparseCsr ? self : other;
  at::Tensor out = at::empty({0, 0}, csr.options().dtype(at::result_type(self, other)));
  return mul_csr_out(self, other, out);
}

at::Tensor& mul_csr_(at::Tensor& self, const at::Tensor& other) {
  return mul_csr_out(self, other, self);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_convert_indices_from_coo_to_csr.out", TORCH_FN(coo_to_csr_indices_out));
  m.impl("_convert_indices_from_csr_to_coo.out", TORCH_FN(csr_to_coo_indices_out));
  m.impl("_to_sparse_csr", TORCH_FN(dense_to_csr));
}

TORCH_LIBRARY_IMPL(aten, SparsePrivateUse1, m) {
  m.impl("_to_sparse_csr", TORCH_FN(coo_to_csr_op));
}

TORCH_LIBRARY_IMPL(aten, SparseCsrPrivateUse1, m) {
  // The tensor object: ATen's device-generic SparseCsrTensorImpl functions.
  m.impl("empty.memory_format", TORCH_FN(at::native::empty_sparse_compressed));
  m.impl("empty_like", TORCH_FN(at::native::empty_like_sparse_csr));
  m.impl("crow_indices", TORCH_FN(at::native::crow_indices_sparse_csr));
  m.impl("col_indices", TORCH_FN(at::native::col_indices_sparse_csr));
  m.impl("ccol_indices", TORCH_FN(at::native::ccol_indices_sparse_csr));
  m.impl("row_indices", TORCH_FN(at::native::row_indices_sparse_csr));
  m.impl("values", TORCH_FN(at::native::values_sparse_csr));
  m.impl("_nnz", TORCH_FN(at::native::_nnz_sparse_csr));
  m.impl("sparse_dim", TORCH_FN(at::native::sparse_dim_sparse_csr));
  m.impl("dense_dim", TORCH_FN(at::native::dense_dim_sparse_csr));
  m.impl("clone", TORCH_FN(at::native::clone_sparse_compressed));
  m.impl("copy_", TORCH_FN(at::native::copy_sparse_compressed_));
  m.impl("resize_as_sparse_", TORCH_FN(at::native::resize_as_sparse_compressed_));
  m.impl("zero_", TORCH_FN(at::native::zero_sparse_csr_));
  m.impl("fill_.Scalar", TORCH_FN(at::native::fill_sparse_csr_));
  m.impl("normal_", TORCH_FN(at::native::normal_sparse_csr_));
  m.impl("mul.Scalar", TORCH_FN(at::native::mul_scalar_sparse_csr));
  m.impl("mul_.Scalar", TORCH_FN(at::native::mul__scalar_sparse_csr));
  m.impl("_to_sparse_csr", TORCH_FN(at::native::sparse_compressed_to_sparse_csr));
  m.impl("_to_sparse.sparse_dim", TORCH_FN(static_cast<ToSparseDim>(at::native::sparse_compressed_to_sparse)));
  m.impl("_to_sparse", TORCH_FN(static_cast<ToSparseLayout>(at::native::sparse_compressed_to_sparse)));
  // What computes, on the device.
  m.impl("_to_dense", TORCH_FN(csr_to_dense));
  m.impl("sparse_mask", TORCH_FN(sparse_mask_csr));
  m.impl("addmm.out", TORCH_FN(addmm_csr_out));
  m.impl("addmm", TORCH_FN(addmm_csr));
  m.impl("mm", TORCH_FN(mm_compressed));
  m.impl("addmv.out", TORCH_FN(addmv_csr_out));
  m.impl("mul.Tensor", TORCH_FN(mul_csr));
  m.impl("mul_.Tensor", TORCH_FN(mul_csr_));
  m.impl("mul.out", TORCH_FN(mul_csr_out));
  m.impl("sparse_sampled_addmm", TORCH_FN(sampled_addmm_csr));
  m.impl("sparse_sampled_addmm.out", TORCH_FN(sampled_addmm_csr_out));
  m.impl("_sparse_mm_reduce_impl", TORCH_FN(mm_reduce_csr));
  m.impl("_sparse_mm_reduce_impl_backward", TORCH_FN(mm_reduce_csr_backward));
}

} // namespace pytorch_ocl
