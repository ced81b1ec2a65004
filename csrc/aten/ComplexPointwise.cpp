// Complex pointwise ops on the components of their operands (see ComplexOps.h): k_rows gives the
// complex form of a pointwise-table row (arithmetic, exp/log/trig/hyperbolic and inverses, pow,
// logical ops, where/masked_fill/lerp/addcmul/addcdiv, activation backwards), plus the
// complex-only ops conj_physical, complex, polar and angle. Written for this backend: the bodies
// call kernels/complex.cl's float2/double2 helpers (Smith's division, Kahan's tanh, ...).
#include "aten/ComplexOps.h"
#include "aten/Launch.h"
#include "core/TensorUtils.h"

#include <dlprim/embedded.h>

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pytorch_ocl {

namespace {

// Bodies over operands A, B, C as (A_RE, A_IM), ... and outputs (y0, y1) = (re, im) of a
// complex result (y0 alone for a real or bool one); w0, w1 = a complex param (alpha, value)
// where an op takes one. Each use picks a variant (see variant()) binding an operand to two
// tensor inputs (complex), one input and a literal 0 (real), or two params (a CPU scalar), so
// nothing is loaded for nothing. The math is kernels/complex.cl's (dl_c = float2 / double2);
// A, B, C are the operands as dl_c.
struct CxOp {
  const char* name;
  const char* body;
  int n_outputs, n_operands, n_params;
};
#define CX_FN(fn) "dl_c r = " fn "(A); y0 = r.x; y1 = r.y;"
#define CX_ROW(id, body, outs, operands, params) {PW_##id, {"cx_" #id, body, outs, operands, params}}
struct CxRow {
  PwId id;
  CxOp op;
};
const CxRow k_rows[] = {
    CX_ROW(neg, "y0 = -A_RE; y1 = -A_IM;", 2, 1, 0),
    CX_ROW(abs, "y0 = hypot(A_RE, A_IM);", 1, 1, 0),
    CX_ROW(sgn, "dl_t r = hypot(A_RE, A_IM); y0 = r == 0 ? 0 : A_RE / r; y1 = r == 0 ? 0 : A_IM / r;", 2, 1, 0),
    CX_ROW(reciprocal, "dl_c r = dl_cdiv(DL_C(1, 0), A); y0 = r.x; y1 = r.y;", 2, 1, 0),
    CX_ROW(exp, CX_FN("dl_cexp"), 2, 1, 0),
    CX_ROW(exp2, "dl_c r = dl_cexp(A * DL_LN2); y0 = r.x; y1 = r.y;", 2, 1, 0),
    CX_ROW(expm1, CX_FN("dl_cexpm1"), 2, 1, 0),
    CX_ROW(log, CX_FN("dl_clog"), 2, 1, 0),
    CX_ROW(log2, "dl_c r = dl_clog(A) / DL_LN2; y0 = r.x; y1 = r.y;", 2, 1, 0),
    CX_ROW(log10, "dl_c r = dl_clog(A) / DL_LN10; y0 = r.x; y1 = r.y;", 2, 1, 0),
    CX_ROW(log1p, CX_FN("dl_clog1p"), 2, 1, 0),
    CX_ROW(sqrt, CX_FN("dl_csqrt"), 2, 1, 0),
    CX_ROW(rsqrt, CX_FN("dl_crsqrt"), 2, 1, 0),
    CX_ROW(sin, CX_FN("dl_csin"), 2, 1, 0),
    CX_ROW(cos, CX_FN("dl_ccos"), 2, 1, 0),
    CX_ROW(tan, CX_FN("dl_ctan"), 2, 1, 0),
    CX_ROW(asin, CX_FN("dl_casin"), 2, 1, 0),
    CX_ROW(acos, CX_FN("dl_cacos"), 2, 1, 0),
    CX_ROW(atan, CX_FN("dl_catan"), 2, 1, 0),
    CX_ROW(sinh, CX_FN("dl_csinh"), 2, 1, 0),
    CX_ROW(cosh, CX_FN("dl_ccosh"), 2, 1, 0),
    CX_ROW(tanh, CX_FN("dl_ctanh"), 2, 1, 0),
    CX_ROW(asinh, CX_FN("dl_casinh"), 2, 1, 0),
    CX_ROW(acosh, CX_FN("dl_cacosh"), 2, 1, 0),
    CX_ROW(atanh, CX_FN("dl_catanh"), 2, 1, 0),
    CX_ROW(sigmoid, CX_FN("dl_csigmoid"), 2, 1, 0),
    CX_ROW(sinc, CX_FN("dl_csinc"), 2, 1, 0),
    CX_ROW(silu, "dl_c r = dl_cmul(A, dl_csigmoid(A)); y0 = r.x; y1 = r.y;", 2, 1, 0),
    // backward rules of the complex activations (ATen's): grad * conj(d output / d input)
    CX_ROW(tanh_backward, "dl_c d = DL_C(1, 0) - dl_cmul(B, B); dl_c r = dl_cmul(A, DL_C(d.x, -d.y)); y0 = r.x; y1 = r.y;",
           2, 2, 0),
    CX_ROW(sigmoid_backward, "dl_c d = dl_cmul(DL_C(1, 0) - B, B); dl_c r = dl_cmul(A, DL_C(d.x, -d.y));"
                             " y0 = r.x; y1 = r.y;", 2, 2, 0),
    CX_ROW(silu_backward, "dl_c s = dl_csigmoid(B); dl_c d = dl_cmul(s, DL_C(1, 0) + dl_cmul(B, DL_C(1, 0) - s));"
                          " dl_c r = dl_cmul(A, DL_C(d.x, -d.y)); y0 = r.x; y1 = r.y;", 2, 2, 0),
    CX_ROW(isnan, "y0 = isnan(A_RE) || isnan(A_IM);", 1, 1, 0),
    CX_ROW(logical_not, "y0 = A_RE == 0 && A_IM == 0;", 1, 1, 0),
    // Real alpha keeps a + b exact when b holds infinities (complex alpha would make 0 * inf):
    // add/sub/rsub take the complex form (w1 != 0) only for a complex alpha.
    CX_ROW(add, "if (w1 == 0) { y0 = A_RE + w0 * B_RE; y1 = A_IM + w0 * B_IM; }"
                " else { dl_c r = A + dl_cmul(DL_C(w0, w1), B); y0 = r.x; y1 = r.y; }", 2, 2, 2),
    CX_ROW(sub, "if (w1 == 0) { y0 = A_RE - w0 * B_RE; y1 = A_IM - w0 * B_IM; }"
                " else { dl_c r = A - dl_cmul(DL_C(w0, w1), B); y0 = r.x; y1 = r.y; }", 2, 2, 2),
    CX_ROW(rsub, "if (w1 == 0) { y0 = B_RE - w0 * A_RE; y1 = B_IM - w0 * A_IM; }"
                 " else { dl_c r = B - dl_cmul(DL_C(w0, w1), A); y0 = r.x; y1 = r.y; }", 2, 2, 2),
    CX_ROW(mul, "y0 = A_RE * B_RE - A_IM * B_IM; y1 = A_RE * B_IM + A_IM * B_RE;", 2, 2, 0),
    CX_ROW(div, "dl_c r = dl_cdiv(A, B); y0 = r.x; y1 = r.y;", 2, 2, 0),
    CX_ROW(pow, "dl_c r = dl_cpow(A, B); y0 = r.x; y1 = r.y;", 2, 2, 0),
    CX_ROW(logaddexp, "dl_c r = dl_clogaddexp(A, B); y0 = r.x; y1 = r.y;", 2, 2, 0),
    // one component of a x b from (A, B, C, D) = (a[k+1], a[k+2], b[k+1], b[k+2]), as the CPU's
    CX_ROW(linalg_cross, "dl_c r = dl_cmul(A, D) - dl_cmul(B, C); y0 = r.x; y1 = r.y;", 2, 4, 0),
    CX_ROW(eq, "y0 = A_RE == B_RE && A_IM == B_IM;", 1, 2, 0),
    CX_ROW(ne, "y0 = A_RE != B_RE || A_IM != B_IM;", 1, 2, 0),
    CX_ROW(logical_and, "y0 = (A_RE != 0 || A_IM != 0) && (B_RE != 0 || B_IM != 0);", 1, 2, 0),
    CX_ROW(logical_or, "y0 = (A_RE != 0 || A_IM != 0) || (B_RE != 0 || B_IM != 0);", 1, 2, 0),
    CX_ROW(logical_xor, "y0 = (A_RE != 0 || A_IM != 0) != (B_RE != 0 || B_IM != 0);", 1, 2, 0),
    // where(cond, a, b) and masked_fill(self, mask, value): the condition is a real operand
    CX_ROW(where, "y0 = A_RE != 0 ? B_RE : C_RE; y1 = A_RE != 0 ? B_IM : C_IM;", 2, 3, 0),
    CX_ROW(masked_fill, "y0 = B_RE != 0 ? C_RE : A_RE; y1 = B_RE != 0 ? C_IM : A_IM;", 2, 3, 0),
    // lerp as the CPU: from the nearer end by |weight| < 0.5
    CX_ROW(lerp, "dl_c d = B - A; dl_c r = dl_cabs(C) < (dl_t)0.5 ? A + dl_cmul(C, d) : B - dl_cmul(d, DL_C(1, 0) - C);"
                 " y0 = r.x; y1 = r.y;", 2, 3, 0),
    CX_ROW(addcmul, "dl_c r = A + dl_cmul(dl_cmul(DL_C(w0, w1), B), C); y0 = r.x; y1 = r.y;", 2, 3, 2),
    CX_ROW(addcdiv, "dl_c r = A + dl_cdiv(dl_cmul(DL_C(w0, w1), B), C); y0 = r.x; y1 = r.y;", 2, 3, 2),
};
#undef CX_FN
#undef CX_ROW
const CxOp k_conj{"cx_conj", "y0 = A_RE; y1 = -A_IM;", 2, 1, 0};
const CxOp k_angle{"cx_angle", "y0 = atan2(A_IM, A_RE);", 1, 1, 0};
const CxOp k_complex{"cx_complex", "y0 = A_RE; y1 = B_RE;", 2, 2, 0};
const CxOp k_polar{"cx_polar", "y0 = A_RE * cos(B_RE); y1 = A_RE * sin(B_RE);", 2, 2, 0};

const CxOp* row_op(PwId id) {
  for (const CxRow& r : k_rows)
    if (r.id == id) return &r.op;
  return nullptr;
}

c10::ScalarType real_type(c10::ScalarType t) { return c10::isComplexType(t) ? c10::toRealValueType(t) : t; }

enum Kind : char { kComplex = 'c', kReal = 'r', kScalar = 's' };

// The ElementwiseOp of `op` for operand kinds `kinds` (one char per operand), made once and kept
// (the generator keys compiled programs by the op's address).
const dlprim::ElementwiseOp& variant(const CxOp& op, const std::string& kinds) {
  static std::mutex mu;
  static std::map<std::pair<const CxOp*, std::string>, std::unique_ptr<dlprim::ElementwiseOp>> made;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = made[{&op, kinds}];
  if (slot) return *slot;
  std::string prelude = dlprim::kernel_source("complex");
  int x = 0, w = op.n_params;
  for (size_t k = 0; k < kinds.size(); ++k) {
    std::string re = std::string("#define ") + char('A' + k) + "_RE ", im = std::string("#define ") + char('A' + k) + "_IM ";
    if (kinds[k] == kComplex) {
      prelude += re + "x" + std::to_string(x) + "\n" + im + "x" + std::to_string(x + 1) + "\n";
      x += 2;
    } else if (kinds[k] == kReal) {
      prelude += re + "x" + std::to_string(x++) + "\n" + im + "((dl_t)0)\n";
    } else {
      prelude += re + "w" + std::to_string(w) + "\n" + im + "w" + std::to_string(w + 1) + "\n";
      w += 2;
    }
    prelude += std::string("#define ") + char('A' + k) + " DL_C(" + char('A' + k) + "_RE, " + char('A' + k) + "_IM)\n";
  }
  slot = std::make_unique<dlprim::ElementwiseOp>(
      dlprim::ElementwiseOp{std::string(op.name) + "_" + kinds, op.body, prelude, op.n_outputs, x, w});
  return *slot;
}

// Runs `op` with output `out` (complex or real, already sized) over the components of `ins`
// (broadcast to out's shape), computing in the real type of `compute`.
void launch_components(const CxOp& op, const at::Tensor& out, const std::vector<at::Tensor>& ins,
                       c10::ScalarType compute, std::vector<dlprim::Scalar> params = {}) {
  if (out.numel() == 0) return;
  params.resize(op.n_params);
  std::string kinds;
  at::TensorIteratorConfig cfg;
  // The components of one tensor interleave: the iterator's overlap check would reject them.
  // The op-level iterator (or the caller) checked overlap of the complex operands.
  cfg.set_check_mem_overlap(false).check_all_same_dtype(false).resize_outputs(false);
  auto add = [&](const at::Tensor& t, bool output) {
    if (output)
      cfg.add_owned_output(t);
    else
      cfg.add_owned_const_input(t);
  };
  if (out.is_complex()) {
    at::Tensor parts = at::view_as_real(out);
    add(parts.select(-1, 0), true);
    add(parts.select(-1, 1), true);
  } else {
    add(out, true);
  }
  for (const at::Tensor& t : ins) {
    if (t.dim() == 0 && t.device().is_cpu()) {  // a CPU scalar: its value, as two params
      c10::complex<double> v = t.item().toComplexDouble();
      params.push_back(dlprim::Scalar::floating(v.real()));
      params.push_back(dlprim::Scalar::floating(v.imag()));
      kinds += kScalar;
    } else if (t.is_complex()) {
      at::Tensor parts = at::view_as_real(t.resolve_conj());
      add(parts.select(-1, 0), false);
      add(parts.select(-1, 1), false);
      kinds += kComplex;
    } else {
      add(t, false);
      kinds += kReal;
    }
  }
  auto iter = cfg.build();
  launch_elementwise(variant(op, kinds), iter, real_type(compute), params);
}

// Allocates (undefined) or checks and resizes `out` for a result of `dtype` shaped like `self`.
at::Tensor unary_result(const at::Tensor& out, const at::Tensor& self, c10::ScalarType dtype, const char* name) {
  if (!out.defined()) return at::empty_like(self, self.options().dtype(dtype));
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), name, ": result type ", dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  return out;
}

// Writes `op` of complex (or, for angle, real) `self` into `out` of dtype `dtype`.
at::Tensor run_unary(const CxOp& op, const at::Tensor& out, const at::Tensor& self, c10::ScalarType dtype) {
  at::Tensor result = unary_result(out, self, dtype, op.name + 3);  // "cx_abs" -> "abs"
  if (out.defined()) at::assert_no_internal_overlap(result);
  if (result.scalar_type() != dtype) {
    // out of another dtype (e.g. complex128 out of a complex64 op): compute, then convert.
    at::Tensor tmp = at::empty_like(self, self.options().dtype(dtype));
    launch_components(op, tmp, {self}, self.scalar_type());
    result.copy_(tmp);
    return result;
  }
  launch_components(op, result, {self}, self.scalar_type());
  return result;
}

} // namespace

bool pw_has_complex(PwId id) { return row_op(id) != nullptr; }

at::Tensor pw_complex_unary(PwId id, const at::Tensor& out, const at::Tensor& self) {
  const CxOp* op = row_op(id);
  TORCH_CHECK(op != nullptr && op->n_operands == 1, pw_row(id).op.name, ": complex inputs are not supported on ocl");
  c10::ScalarType dtype = op->n_outputs == 2 ? self.scalar_type()
                          : id == PW_abs    ? c10::toRealValueType(self.scalar_type())
                                            : c10::kBool;
  return run_unary(*op, out, self, dtype);
}

void pw_complex_launch(PwId id, const at::Tensor& out, const std::vector<at::Tensor>& ins, c10::ScalarType compute,
                       const c10::Scalar& param) {
  const CxOp* op = row_op(id);
  TORCH_CHECK(op != nullptr && op->n_operands == static_cast<int>(ins.size()), pw_row(id).op.name,
              ": complex inputs are not supported on ocl");
  std::vector<dlprim::Scalar> params;
  if (op->n_params == 2) {
    c10::complex<double> a = param.toComplexDouble();
    params = {dlprim::Scalar::floating(a.real()), dlprim::Scalar::floating(a.imag())};
  }
  bool complex_out = op->n_outputs == 2;
  if (complex_out && out.scalar_type() != compute) {  // e.g. a complex128 out of complex64 inputs
    at::Tensor tmp = at::empty(out.sizes(), out.options().dtype(compute));
    launch_components(*op, tmp, ins, compute, params);
    out.copy_(tmp);
    return;
  }
  launch_components(*op, out, ins, compute, params);
}

void pw_complex_binary(PwId id, at::TensorIteratorBase& iter, const c10::Scalar& alpha) {
  pw_complex_launch(id, iter.output(), {iter.input(0), iter.input(1)}, iter.common_dtype(), alpha);
}

namespace {

at::Tensor& conj_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "conj_physical: expected out dtype ", self.scalar_type(),
              ", got ", out.scalar_type());
  if (!self.is_complex()) {
    at::native::resize_output(out, self.sizes());
    if (!out.is_same(self)) out.copy_(self);
    return out;
  }
  run_unary(k_conj, out, self, self.scalar_type());
  return out;
}

at::Tensor& conj_physical_(at::Tensor& self) { return conj_out(self, self); }

// angle of integers and bool: the default float dtype, computed on the input converted to it (the
// kernel body's atan2 takes floating operands only).
at::Tensor angle_impl(const at::Tensor& self, const at::Tensor& out) {
  c10::ScalarType t = self.scalar_type();
  c10::ScalarType dtype = c10::isComplexType(t)   ? c10::toRealValueType(t)
                          : c10::isFloatingType(t) ? t
                                                   : c10::typeMetaToScalarType(c10::get_default_dtype());
  if (c10::isIntegralType(t, /*includeBool=*/true)) return run_unary(k_angle, out, self.to(dtype), dtype);
  return run_unary(k_angle, out, self, dtype);
}

at::Tensor& angle_out(const at::Tensor& self, at::Tensor& out) {
  angle_impl(self, out);
  return out;
}

at::Tensor angle(const at::Tensor& self) { return angle_impl(self, at::Tensor()); }

// complex(real, imag) and polar(abs, angle): two real tensors of one floating dtype make a
// complex tensor of the broadcast shape.
at::Tensor& two_reals_out(const CxOp& op, const at::Tensor& a, const at::Tensor& b, at::Tensor& out,
                          const char* name) {
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "Expected object of scalar type ", a.scalar_type(),
              " but got scalar type ", b.scalar_type(), " for second argument");
  TORCH_CHECK(a.scalar_type() == c10::kFloat || a.scalar_type() == c10::kDouble || a.scalar_type() == c10::kHalf,
              "Expected both inputs to be Half, Float or Double tensors but got ", a.scalar_type(), " and ",
              b.scalar_type());
  c10::ScalarType ct = c10::toComplexType(a.scalar_type());
  TORCH_CHECK(out.scalar_type() == ct, name, ": Expected object of scalar type ", ct,
              " but got scalar type ", out.scalar_type(), " for argument 'out'");
  check_ocl(a, name, "first input");
  check_ocl(b, name, "second input");
  at::native::resize_output(out, at::infer_size(a.sizes(), b.sizes()));
  launch_components(op, out, {a, b}, ct);
  return out;
}

at::Tensor& complex_out(const at::Tensor& re, const at::Tensor& im, at::Tensor& out) {
  return two_reals_out(k_complex, re, im, out, "complex");
}
at::Tensor& polar_out(const at::Tensor& abs, const at::Tensor& angle, at::Tensor& out) {
  return two_reals_out(k_polar, abs, angle, out, "polar");
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("conj_physical.out", TORCH_FN(conj_out));
  m.impl("conj_physical_", TORCH_FN(conj_physical_));
  m.impl("angle", TORCH_FN(angle));
  m.impl("angle.out", TORCH_FN(angle_out));
  m.impl("complex.out", TORCH_FN(complex_out));
  m.impl("polar.out", TORCH_FN(polar_out));
}

} // namespace pytorch_ocl
