// Scans along one dim: cumsum, cumprod, cummax/cummin (values + indices), logcumsumexp.
// Each op is one dlprim ReduceOp row run by the scan kernel (merge = earlier ⊕ later).
#include "aten/ReduceLaunch.h"
#include "aten/RowsLaunch.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/add.h>
#include <ATen/ops/angle.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/complex.h>
#include <ATen/ops/cummax.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/logaddexp.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/real.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/where.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/WrapDimMinimal.h>
#include <dlprim/scan.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

const dlprim::ReduceOp k_cumsum{"cumsum", {"T s"}, "a->s = 0;", "a->s += x;", "a->s += b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_cumprod{"cumprod", {"T s"}, "a->s = 1;", "a->s *= x;", "a->s *= b->s;", "y0 = a->s;"};

// Running extremum and its index. As on the CPU, a later equal value takes over (>=) and
// every NaN takes over; numbers after a NaN do not.
dlprim::ReduceOp cum_extremum(const char* name, const char* cmp) {
  dlprim::ReduceOp op;
  op.name = name;
  op.state = {"T v", "long i"};
  op.init = "a->v = 0; a->i = -1;";
  op.combine = std::string("if (a->i < 0 || IS_NAN(x) || (!IS_NAN(a->v) && x ") + cmp +
               " a->v)) { a->v = x; a->i = (long)j; }";
  op.merge = std::string("if (b->i < 0) return;\nif (a->i < 0 || IS_NAN(b->v) || (!IS_NAN(a->v) && b->v ") + cmp +
             " a->v)) *a = *b;";
  op.finalize = "y0 = a->v; y1 = a->i;";
  op.n_outputs = 2;
  op.y1 = dlprim::ReduceValue::Index;
  return op;
}
const dlprim::ReduceOp k_cummax = cum_extremum("cummax", ">=");
const dlprim::ReduceOp k_cummin = cum_extremum("cummin", "<=");

// (running max m, s = sum exp(x - m)) as in logsumexp.
const dlprim::ReduceOp k_logcumsumexp{
    "logcumsumexp",
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

void run_scan(const dlprim::ReduceOp& op, const at::Tensor& self, int64_t dim, const std::vector<at::Tensor>& outs_in,
              c10::ScalarType acc, const char* name) {
  check_ocl(self, name, "self");
  dim = c10::maybe_wrap_dim(dim, self.dim());
  for (const at::Tensor& o : outs_in) {
    check_ocl(o, name, "out");
    at::native::resize_output(o, self.sizes());
  }
  if (self.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  RowsOutputs outs(outs_in, {self});
  at::Tensor input = self;
  std::vector<at::Tensor> all = {input};
  for (const at::Tensor& o : outs.tensors) all.push_back(o);
  dlprim::RowsShape shape;
  if (!rows_of(all, dim, shape)) {
    input = self.contiguous();
    all = {input};
    for (at::Tensor& o : outs.tensors) {
      if (!o.is_contiguous()) o = at::empty(o.sizes(), o.options());
      all.push_back(o);
    }
    TORCH_CHECK(rows_of(all, dim, shape), name, ": cannot describe shape ", self.sizes());
  }
  std::vector<dlprim::RowsTensor> out_views;
  for (const at::Tensor& o : outs.tensors) out_views.push_back(rows_tensor(o, name));
  int device = self.device().index();
  OCL_TRACE(name, " ", self.sizes(), " ", self.scalar_type(), " dim=", dim, " out=", outs_in[0].scalar_type());
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::scan(context(device), q, op, to_dlprim(acc, name), shape, rows_tensor(input, name),
                                     out_views, {0, 0}));
  note_enqueued(q);
  outs.copy_back();
}

at::Tensor& cumsum_like(const dlprim::ReduceOp& op, const at::Tensor& self, int64_t dim,
                        std::optional<c10::ScalarType> dtype, at::Tensor& out, const char* name) {
  if (dtype)
    TORCH_CHECK(out.scalar_type() == *dtype, name, ": Expected out tensor to have dtype ", *dtype, ", but got ",
                out.scalar_type(), " instead");
  if (out.is_complex() && &op == &k_cumsum) {  // a running sum of each component
    at::native::resize_output(out, self.sizes());
    if (self.dim() == 0) return out.copy_(self);  // nothing to scan (and parts' only dim is (re, im))
    at::Tensor parts = at::view_as_real(self.to(out.scalar_type()).resolve_conj());
    at::Tensor out_parts = at::view_as_real(out);
    run_scan(op, parts, c10::maybe_wrap_dim(dim, self.dim()), {out_parts}, sum_acc_type(out_parts.scalar_type()),
             name);
    return out;
  }
  if (out.is_complex() && &op == &k_cumprod) {
    // Hillis-Steele: after the step with shift s every element holds the product of the s * 2
    // values ending at it; ceil(log2 n) launches of the complex mul row.
    at::native::resize_output(out, self.sizes());
    int64_t d = c10::maybe_wrap_dim(dim, self.dim());
    at::Tensor x = self.to(out.scalar_type()).resolve_conj();
    int64_t n = self.dim() == 0 ? 1 : self.size(d);
    for (int64_t s = 1; s < n; s *= 2)
      x = at::cat({x.narrow(d, 0, s), at::mul(x.narrow(d, s, n - s), x.narrow(d, 0, n - s))}, d);
    return out.copy_(x);
  }
  run_scan(op, self, dim, {out}, sum_acc_type(out.scalar_type()), name);
  return out;
}

at::Tensor& cumsum_out(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  return cumsum_like(k_cumsum, self, dim, dtype, out, "cumsum");
}
at::Tensor& cumprod_out(const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  return cumsum_like(k_cumprod, self, dim, dtype, out, "cumprod");
}

void cummax_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  run_scan(k_cummax, self, dim, {values, indices}, sum_acc_type(self.scalar_type()), "cummax");
}
void cummin_helper(const at::Tensor& self, at::Tensor& values, at::Tensor& indices, int64_t dim) {
  run_scan(k_cummin, self, dim, {values, indices}, sum_acc_type(self.scalar_type()), "cummin");
}

// The CPU's complex logcumsumexp is sequential, acc = logaddexp(x_i, acc): its imaginary part is the
// anchor's (x_i where Re x_i >= Re acc, but acc where both are -inf; else acc) plus a principal angle,
// so it leaves the principal branch along the row. The Hillis-Steele value v is right modulo 2 pi i;
// the CPU's branch comes back from it: Im out_i = Im x_r + sum_{j = r..i} Arg(exp(v_j - anchor_j)),
// r the last x anchor (a cumsum, a cummax of the anchor positions and a gather), in double where
// the device has it (the CPU accumulates complex64 in complex128).
at::Tensor cpu_branch(const at::Tensor& x, const at::Tensor& v, int64_t d) {
  int64_t n = x.size(d);
  at::Tensor prev = at::cat({at::full_like(v.narrow(d, 0, 1), -INFINITY), v.narrow(d, 0, n - 1)}, d);
  at::Tensor xr = at::real(x), pr = at::real(prev);
  at::Tensor reset = at::logical_or(at::gt(xr, pr), at::logical_and(at::eq(xr, pr), at::ne(xr, -INFINITY)));
  bool fp64 = context(x.device().index()).info().fp64;
  c10::ScalarType acc = fp64 ? c10::kDouble : c10::kFloat;
  at::Tensor a = at::angle(at::exp(at::sub(v, at::where(reset, x, prev)))).to(acc);
  a = at::where(at::eq(at::real(v), -INFINITY), 0, a);  // all -inf so far: the -inf anchor stays
  at::Tensor c = at::cumsum(a, d);
  at::Tensor offset = at::sub(at::where(reset, at::imag(x).to(acc), 0), at::sub(c, a));
  std::vector<int64_t> shape(x.dim(), 1);
  shape[d] = n;
  at::Tensor pos = at::arange(n, x.options().dtype(c10::kLong)).view(shape).expand(x.sizes());
  at::Tensor r = std::get<0>(at::cummax(at::where(reset, pos, 0), d));
  at::Tensor im = at::add(at::gather(offset, d, r), c).to(at::real(v).scalar_type());
  return at::complex(at::real(v).contiguous(), im);
}

at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  if (out.is_complex()) {  // Hillis-Steele steps of the complex logaddexp row, then the CPU's branch
    at::native::resize_output(out, self.sizes());
    int64_t d = c10::maybe_wrap_dim(dim, self.dim());
    at::Tensor x = self.to(out.scalar_type()).resolve_conj();
    if (self.dim() == 0 || self.numel() == 0) return out.copy_(x);
    int64_t n = self.size(d);
    at::Tensor v = x;
    for (int64_t s = 1; s < n; s *= 2)
      v = at::cat({v.narrow(d, 0, s), at::logaddexp(v.narrow(d, 0, n - s), v.narrow(d, s, n - s))}, d);
    return out.copy_(cpu_branch(x, v, d));
  }
  TORCH_CHECK(c10::isFloatingType(out.scalar_type()), "logcumsumexp: expected a floating point result, got ",
              out.scalar_type());
  c10::ScalarType acc = out.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat;
  run_scan(k_logcumsumexp, self, dim, {out}, acc, "logcumsumexp");
  return out;
}
at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  at::Tensor out = at::empty({0}, self.options());
  return logcumsumexp_out(self, dim, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cumsum.out", TORCH_FN(cumsum_out));
  m.impl("cumprod.out", TORCH_FN(cumprod_out));
  m.impl("_cummax_helper", TORCH_FN(cummax_helper));
  m.impl("_cummin_helper", TORCH_FN(cummin_helper));
  m.impl("_logcumsumexp.out", TORCH_FN(logcumsumexp_out));
  m.impl("_logcumsumexp", TORCH_FN(logcumsumexp));
}

} // namespace pytorch_ocl
