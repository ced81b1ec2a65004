// Extremum reductions: amax/amin, max/min (values + indices, or all elements), argmax/argmin,
// aminmax. NaN propagates and ties keep the first index, as on the CPU.
#include "aten/ReduceLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <tuple>

namespace pytorch_ocl {

namespace {

// (value, index) is better than (av, ai) for max (CMP is >) or min (CMP is <): NaN beats
// numbers, then the extreme value, then the lower index.
std::string arg_prelude(const char* cmp) {
  return std::string("inline int arg_better(T bv, long bi, T av, long ai) {\n"
                     "  if (IS_NAN(bv)) return !IS_NAN(av) || bi < ai;\n"
                     "  if (IS_NAN(av)) return 0;\n"
                     "  return bv ") + cmp + " av || (bv == av && bi < ai);\n}\n";
}

// State {v, i}; i < 0 marks an empty state.
dlprim::ReduceOp arg_op(const char* name, const char* cmp, int n_outputs, const char* finalize) {
  dlprim::ReduceOp op;
  op.name = name;
  op.state = {"T v", "long i"};
  op.init = "a->v = 0; a->i = -1;";
  op.combine = "if (a->i < 0 || arg_better(x, (long)j, a->v, a->i)) { a->v = x; a->i = (long)j; }";
  op.merge = "if (b->i >= 0 && (a->i < 0 || arg_better(b->v, b->i, a->v, a->i))) *a = *b;";
  op.finalize = finalize;
  op.prelude = arg_prelude(cmp);
  op.n_outputs = n_outputs;
  op.y0 = n_outputs == 2 ? dlprim::ReduceValue::Acc : dlprim::ReduceValue::Index;
  op.y1 = dlprim::ReduceValue::Index;
  op.order_sensitive = true;
  return op;
}

const dlprim::ReduceOp k_max_dim = arg_op("max", ">", 2, "y0 = a->v; y1 = a->i;");
const dlprim::ReduceOp k_min_dim = arg_op("min", "<", 2, "y0 = a->v; y1 = a->i;");
const dlprim::ReduceOp k_argmax = arg_op("argmax", ">", 1, "y0 = a->i;");
const dlprim::ReduceOp k_argmin = arg_op("argmin", "<", 1, "y0 = a->i;");

// Values only: NaN sticks once seen.
const dlprim::ReduceOp k_amax{"amax", {"T v"}, "a->v = T_LOWEST;", "if (IS_NAN(x) || x > a->v) a->v = x;",
                              "if (IS_NAN(b->v) || b->v > a->v) a->v = b->v;", "y0 = a->v;"};
const dlprim::ReduceOp k_amin{"amin", {"T v"}, "a->v = T_HIGHEST;", "if (IS_NAN(x) || x < a->v) a->v = x;",
                              "if (IS_NAN(b->v) || b->v < a->v) a->v = b->v;", "y0 = a->v;"};
const dlprim::ReduceOp k_aminmax{"aminmax",
                                 {"T lo", "T hi"},
                                 "a->lo = T_HIGHEST; a->hi = T_LOWEST;",
                                 "if (IS_NAN(x) || x < a->lo) a->lo = x; if (IS_NAN(x) || x > a->hi) a->hi = x;",
                                 "if (IS_NAN(b->lo) || b->lo < a->lo) a->lo = b->lo;"
                                 " if (IS_NAN(b->hi) || b->hi > a->hi) a->hi = b->hi;",
                                 "y0 = a->lo; y1 = a->hi;",
                                 "",
                                 2};

// Values are compared in the input's compute type (int64 for integers and bool).
c10::ScalarType extremum_acc(c10::ScalarType t) {
  TORCH_CHECK(!c10::isComplexType(t), "max/min: complex inputs are not supported");
  return sum_acc_type(t);
}

void check_out(const at::Tensor& out, c10::ScalarType t, const char* name) {
  TORCH_CHECK(out.scalar_type() == t, name, ": Expected out tensor to have dtype ", t, ", but got ",
              out.scalar_type(), " instead");
}

at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  check_out(out, self.scalar_type(), "amax()");
  DimMask mask = reduction_mask(dim, self.dim());
  check_nonempty_reduction(self, mask, dim.empty(), "amax()");
  launch_reduction(k_amax, self, mask, keepdim, {out}, extremum_acc(self.scalar_type()), {0, 0}, "amax");
  return out;
}

at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  check_out(out, self.scalar_type(), "amin()");
  DimMask mask = reduction_mask(dim, self.dim());
  check_nonempty_reduction(self, mask, dim.empty(), "amin()");
  launch_reduction(k_amin, self, mask, keepdim, {out}, extremum_acc(self.scalar_type()), {0, 0}, "amin");
  return out;
}

std::tuple<at::Tensor&, at::Tensor&> value_index_out(const dlprim::ReduceOp& op, const at::Tensor& self, int64_t dim,
                                                     bool keepdim, at::Tensor& values, at::Tensor& indices,
                                                     const char* name) {
  check_out(values, self.scalar_type(), name);
  check_out(indices, c10::kLong, name);
  DimMask mask = single_dim_mask(dim, self.dim());
  check_nonempty_reduction(self, mask, false, name);
  launch_reduction(op, self, mask, keepdim, {values, indices}, extremum_acc(self.scalar_type()), {0, 0}, name);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  return value_index_out(k_max_dim, self, dim, keepdim, values, indices, "max()");
}
std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                 at::Tensor& values, at::Tensor& indices) {
  return value_index_out(k_min_dim, self, dim, keepdim, values, indices, "min()");
}

// max()/min() of all elements.
at::Tensor& all_extremum_out(const dlprim::ReduceOp& op, const at::Tensor& self, at::Tensor& out, const char* name) {
  check_out(out, self.scalar_type(), name);
  DimMask all;
  all.set();
  TORCH_CHECK(self.numel() > 0, name, ": Expected reduction dim to be specified for input.numel() == 0. Specify "
              "the reduction dim with the 'dim' argument.");
  launch_reduction(op, self, all, false, {out}, extremum_acc(self.scalar_type()), {0, 0}, name);
  return out;
}
at::Tensor& max_unary_out(const at::Tensor& self, at::Tensor& out) {
  return all_extremum_out(k_amax, self, out, "max()");
}
at::Tensor& min_unary_out(const at::Tensor& self, at::Tensor& out) {
  return all_extremum_out(k_amin, self, out, "min()");
}
at::Tensor max_all(const at::Tensor& self) {
  at::Tensor out = at::empty({}, self.options());
  return max_unary_out(self, out);
}
at::Tensor min_all(const at::Tensor& self) {
  at::Tensor out = at::empty({}, self.options());
  return min_unary_out(self, out);
}

// argmax/argmin without dim index the flattened tensor.
at::Tensor& arg_out(const dlprim::ReduceOp& op, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                    at::Tensor& out, const char* name) {
  check_out(out, c10::kLong, name);
  DimMask mask = dim ? single_dim_mask(*dim, self.dim()) : reduction_mask(std::nullopt, self.dim());
  check_nonempty_reduction(self, mask, !dim.has_value(), name);
  launch_reduction(op, self, mask, keepdim, {out}, extremum_acc(self.scalar_type()), {0, 0}, name);
  return out;
}
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  return arg_out(k_argmax, self, dim, keepdim, out, "argmax()");
}
at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  return arg_out(k_argmin, self, dim, keepdim, out, "argmin()");
}

std::tuple<at::Tensor&, at::Tensor&> aminmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                                                 at::Tensor& min, at::Tensor& max) {
  check_out(min, self.scalar_type(), "aminmax");
  check_out(max, self.scalar_type(), "aminmax");
  DimMask mask = dim ? single_dim_mask(*dim, self.dim()) : reduction_mask(std::nullopt, self.dim());
  if (dim)
    check_nonempty_reduction(self, mask, false, "aminmax");
  else
    TORCH_CHECK(self.numel() > 0, "aminmax(): cannot compute aminmax over an empty dimension as the operation "
                "has no identity.");
  launch_reduction(k_aminmax, self, mask, keepdim, {min, max}, extremum_acc(self.scalar_type()), {0, 0},
                   "aminmax");
  return {min, max};
}

std::tuple<at::Tensor, at::Tensor> aminmax_legacy(const at::Tensor& self) {
  at::Tensor lo = at::empty({0}, self.options()), hi = at::empty({0}, self.options());
  aminmax_out(self, std::nullopt, false, lo, hi);
  return {lo, hi};
}
std::tuple<at::Tensor, at::Tensor> aminmax_legacy_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  at::Tensor lo = at::empty({0}, self.options()), hi = at::empty({0}, self.options());
  aminmax_out(self, dim, keepdim, lo, hi);
  return {lo, hi};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("amax.out", TORCH_FN(amax_out));
  m.impl("amin.out", TORCH_FN(amin_out));
  m.impl("max.dim_max", TORCH_FN(max_dim_out));
  m.impl("min.dim_min", TORCH_FN(min_dim_out));
  m.impl("max.unary_out", TORCH_FN(max_unary_out));
  m.impl("min.unary_out", TORCH_FN(min_unary_out));
  m.impl("max", TORCH_FN(max_all));
  m.impl("min", TORCH_FN(min_all));
  m.impl("argmax.out", TORCH_FN(argmax_out));
  m.impl("argmin.out", TORCH_FN(argmin_out));
  m.impl("aminmax.out", TORCH_FN(aminmax_out));
  m.impl("_aminmax", TORCH_FN(aminmax_legacy));
  m.impl("_aminmax.dim", TORCH_FN(aminmax_legacy_dim));
}

} // namespace pytorch_ocl
