// Statistical reductions: var/std (+ mean) with correction (Welford, mergeable), vector
// norms of any order, logsumexp (online max-shifted sum).
#include "aten/ReduceLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/add.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/squeeze.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/real.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/var.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <tuple>

namespace pytorch_ocl {

namespace {

// ---------------------------------------------------------------- var / std

// Welford: mean m, sum of squared deviations m2, count n; chunks merge with Chan's formula.
// w0 is the correction; var = m2 / max(0, n - correction) as on the CPU (0/0 -> NaN).
dlprim::ReduceOp welford_op(const char* name, const char* finalize, int n_outputs) {
  dlprim::ReduceOp op;
  op.name = name;
  op.state = {"T m", "T m2", "long n"};
  op.init = "a->m = 0; a->m2 = 0; a->n = 0;";
  op.combine = "a->n += 1; T d = x - a->m; a->m += d / (T)a->n; a->m2 += d * (x - a->m);";
  op.merge =
      "if (b->n == 0) return;\n"
      "if (a->n == 0) { *a = *b; return; }\n"
      "long n = a->n + b->n; T d = b->m - a->m; T f = (T)b->n / (T)n;\n"
      "a->m += d * f; a->m2 += b->m2 + d * d * (T)a->n * f; a->n = n;";
  op.prelude =
      "inline T welford_var(const acc_t* a, W correction) {\n"
      "  T div = (T)a->n - (T)correction;\n  return a->m2 / (div > 0 ? div : (T)0);\n}\n"
      "inline T welford_mean(const acc_t* a) { return a->n ? a->m : (T)NAN; }\n";
  op.finalize = finalize;
  op.n_outputs = n_outputs;
  return op;
}

const dlprim::ReduceOp k_var = welford_op("var", "y0 = welford_var(a, w0);", 1);
const dlprim::ReduceOp k_std = welford_op("std", "y0 = sqrt(welford_var(a, w0));", 1);
const dlprim::ReduceOp k_var_mean = welford_op("var_mean", "y0 = welford_var(a, w0); y1 = welford_mean(a);", 2);
const dlprim::ReduceOp k_std_mean =
    welford_op("std_mean", "y0 = sqrt(welford_var(a, w0)); y1 = welford_mean(a);", 2);

c10::ScalarType stat_acc(c10::ScalarType t) { return t == c10::kDouble ? c10::kDouble : c10::kFloat; }

void check_var_input(const at::Tensor& self, const char* name) {
  TORCH_CHECK(self.device().type() == kOcl, name, ": expected an ocl tensor");
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "std and var only support floating point and complex dtypes");
}

double correction_of(const std::optional<c10::Scalar>& correction) {
  return correction ? correction->toDouble() : 1.0;
}

// The variance of complex values: var(re) + var(im) (|z - mean|^2 averaged), a real result.
at::Tensor complex_var(const at::Tensor& self, at::OptionalIntArrayRef dim,
                       const std::optional<c10::Scalar>& correction, bool keepdim) {
  TORCH_CHECK(self.device().type() == kOcl, "var: expected an ocl tensor");
  at::Tensor z = self.resolve_conj();
  return at::add(at::var(at::real(z), dim, correction, keepdim), at::var(at::imag(z), dim, correction, keepdim));
}

at::Tensor& var_std_out(const dlprim::ReduceOp& op, const at::Tensor& self, at::OptionalIntArrayRef dim,
                        const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out,
                        const char* name) {
  if (self.is_complex()) {
    at::Tensor v = complex_var(self, dim, correction, keepdim);
    if (&op == &k_std) v = at::sqrt(v);
    at::native::resize_output(out, v.sizes());
    out.copy_(v);
    return out;
  }
  check_var_input(self, name);
  launch_reduction(op, self, reduction_mask(dim, self.dim()), keepdim, {out}, stat_acc(self.scalar_type()),
                   {correction_of(correction), 0}, name);
  return out;
}

at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                    bool keepdim, at::Tensor& out) {
  return var_std_out(k_var, self, dim, correction, keepdim, out, "var");
}
at::Tensor& std_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                    bool keepdim, at::Tensor& out) {
  return var_std_out(k_std, self, dim, correction, keepdim, out, "std");
}
at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
               bool keepdim) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return var_out(self, dim, correction, keepdim, out);
}
at::Tensor std_(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                bool keepdim) {
  at::Tensor out = at::empty({0}, self.options().dtype(c10::toRealValueType(self.scalar_type())));
  return std_out(self, dim, correction, keepdim, out);
}

std::tuple<at::Tensor, at::Tensor> stat_mean(const dlprim::ReduceOp& op, const at::Tensor& self,
                                             at::OptionalIntArrayRef dim,
                                             const std::optional<c10::Scalar>& correction, bool keepdim,
                                             const char* name) {
  if (self.is_complex()) {
    at::Tensor v = complex_var(self, dim, correction, keepdim);
    return {&op == &k_std_mean ? at::sqrt(v) : v, at::mean(self, dim, keepdim)};
  }
  check_var_input(self, name);
  at::Tensor v = at::empty({0}, self.options()), m = at::empty({0}, self.options());
  launch_reduction(op, self, reduction_mask(dim, self.dim()), keepdim, {v, m}, stat_acc(self.scalar_type()),
                   {correction_of(correction), 0}, name);
  return {v, m};
}
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction, bool keepdim) {
  return stat_mean(k_var_mean, self, dim, correction, keepdim, "var_mean");
}
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction, bool keepdim) {
  return stat_mean(k_std_mean, self, dim, correction, keepdim, "std_mean");
}

// ---------------------------------------------------------------- norms

// sum of |x|^p then the p-th root; w0 = p, w1 = 1/p for the general case.
const dlprim::ReduceOp k_norm0{"norm0", {"T s"}, "a->s = 0;", "a->s += (T)(x != 0);", "a->s += b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_norm1{"norm1", {"T s"}, "a->s = 0;", "a->s += fabs(x);", "a->s += b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_norm2{"norm2", {"T s"}, "a->s = 0;", "a->s += x * x;", "a->s += b->s;", "y0 = sqrt(a->s);"};
const dlprim::ReduceOp k_norm_inf{"norm_inf", {"T s"}, "a->s = 0;",
                                  "T ax = fabs(x); if (IS_NAN(ax) || ax > a->s) a->s = ax;",
                                  "if (IS_NAN(b->s) || b->s > a->s) a->s = b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_norm_neg_inf{"norm_neg_inf", {"T s"}, "a->s = T_HIGHEST;",
                                      "T ax = fabs(x); if (IS_NAN(ax) || ax < a->s) a->s = ax;",
                                      "if (IS_NAN(b->s) || b->s < a->s) a->s = b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_norm_p{"norm_p", {"T s"}, "a->s = 0;", "a->s += pow(fabs(x), w0);", "a->s += b->s;",
                                "y0 = pow(a->s, w1);"};

at::Tensor& vector_norm_impl(const at::Tensor& self, double ord, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<c10::ScalarType> dtype, at::Tensor& out, const char* name) {
  check_ocl(self, name, "self");
  if (self.is_complex()) {  // the norm of the magnitudes, a real result
    TORCH_CHECK(!dtype || c10::isComplexType(*dtype), name, ": dtype should be complex for complex input, got ",
                *dtype);
    return vector_norm_impl(at::abs(self), ord, dim, keepdim,
                            dtype ? std::optional<c10::ScalarType>(c10::toRealValueType(*dtype)) : std::nullopt, out,
                            name);
  }
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()), name,
              ": Expected a floating point or complex tensor as input. Got ", self.scalar_type());
  c10::ScalarType result = dtype.value_or(self.scalar_type());
  TORCH_CHECK(out.scalar_type() == result, name, ": Expected out tensor to have dtype ", result, ", but got ",
              out.scalar_type(), " instead");
  DimMask mask = reduction_mask(dim, self.dim());
  if (ord < 0 || std::isinf(ord)) {
    bool all = !dim.has_value() || dim->empty();
    TORCH_CHECK(!(all && self.numel() == 0), name, " cannot compute the ", ord,
                " norm on an empty tensor because the operation does not have an identity");
    for (int64_t d = 0; d < self.dim(); ++d)
      TORCH_CHECK(!mask[d] || self.size(d) != 0, name, " cannot compute the ", ord, " norm on the dimension ", d,
                  " because this dimension is empty and the operation does not have an identity");
  }
  const dlprim::ReduceOp* op = &k_norm_p;
  if (ord == 0)
    op = &k_norm0;
  else if (ord == 1)
    op = &k_norm1;
  else if (ord == 2)
    op = &k_norm2;
  else if (std::isinf(ord))
    op = ord > 0 ? &k_norm_inf : &k_norm_neg_inf;
  launch_reduction(*op, self, mask, keepdim, {out}, stat_acc(result), {ord, 1.0 / ord}, name);
  return out;
}

at::Tensor& linalg_vector_norm_out(const at::Tensor& self, const c10::Scalar& ord, at::OptionalIntArrayRef dim,
                                   bool keepdim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  return vector_norm_impl(self, ord.toDouble(), dim, keepdim, dtype, out, "linalg.vector_norm");
}

at::Tensor& norm_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim, bool keepdim,
                     at::Tensor& out) {
  return vector_norm_impl(self, p ? p->toDouble() : 2.0, dim, keepdim, std::nullopt, out, "norm");
}

at::Tensor& norm_dtype_out(const at::Tensor& self, const std::optional<c10::Scalar>& p, at::IntArrayRef dim,
                           bool keepdim, c10::ScalarType dtype, at::Tensor& out) {
  return vector_norm_impl(self, p ? p->toDouble() : 2.0, dim, keepdim, dtype, out, "norm");
}

// ---------------------------------------------------------------- logsumexp

// Online: m is the running max, s = sum exp(x - m). -inf contributes nothing, equal
// infinities add 1 instead of exp(inf - inf), NaN propagates through m or s.
const dlprim::ReduceOp k_logsumexp{
    "logsumexp",
    {"T m", "T s"},
    "a->m = -INFINITY; a->s = 0;",
    "if (x == -INFINITY) return;\n"
    "if (x > a->m) { a->s = a->s * exp(a->m - x) + 1; a->m = x; }\n"
    "else if (x == a->m) a->s += 1;\n"
    "else a->s += exp(x - a->m);",
    "if (b->s == 0) return;\n"
    "if (a->s == 0) { *a = *b; return; }\n"
    "if (a->m == b->m) a->s += b->s;\n"
    "else if (a->m > b->m) a->s += b->s * exp(b->m - a->m);\n"
    "else { a->s = a->s * exp(a->m - b->m) + b->s; a->m = b->m; }",
    "y0 = a->s == 0 ? (T)-INFINITY : a->m + log(a->s);"};

// Complex as the CPU: shifted by the max real part (0 where infinite), log(sum exp(x - m)) + m,
// on the native complex exp/sum/log.
void complex_logsumexp(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  if (self.numel() == 0) {
    at::sum_out(out, at::exp(self), dim, keepdim);
    out.log_();
    return;
  }
  at::Tensor m = at::amax(at::real(self), dim, true);
  m.masked_fill_(at::eq(at::abs(m), INFINITY), 0);
  at::sum_out(out, at::exp(at::sub(self, m)), dim, keepdim);
  out.log_().add_(keepdim ? m : at::squeeze(m, dim));
}

at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  TORCH_CHECK(c10::isFloatingType(out.scalar_type()) || c10::isComplexType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ", out.scalar_type());
  if (self.is_complex() || out.is_complex()) {
    complex_logsumexp(self, dim, keepdim, out);
    return out;
  }
  launch_reduction(k_logsumexp, self, reduction_mask(dim, self.dim()), keepdim, {out}, stat_acc(out.scalar_type()),
                   {0, 0}, "logsumexp");
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("var.correction_out", TORCH_FN(var_out));
  m.impl("std.correction_out", TORCH_FN(std_out));
  m.impl("var.correction", TORCH_FN(var));
  m.impl("std.correction", TORCH_FN(std_));
  m.impl("var_mean.correction", TORCH_FN(var_mean));
  m.impl("std_mean.correction", TORCH_FN(std_mean));
  m.impl("linalg_vector_norm.out", TORCH_FN(linalg_vector_norm_out));
  m.impl("norm.out", TORCH_FN(norm_out));
  m.impl("norm.dtype_out", TORCH_FN(norm_dtype_out));
  m.impl("logsumexp.out", TORCH_FN(logsumexp_out));
}

} // namespace pytorch_ocl
