// Matrix products (floating, complex and integer dtypes; addr also bool): mm, addmm, _addmm_activation, bmm, baddbmm, addbmm, addmv (mv), dot, vdot,
// addr. Every one is a dlprim GEMM on 3-D views ([batch, rows, cols]); vectors are matrices
// with one row or column, so no operand is copied unless it has no unit stride. matmul,
// linear, outer, inner and einsum decompose above us into these (CompositeImplicitAutograd).
#include "aten/ComplexGemm.h"
#include "aten/GemmRunner.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

void check_inputs(const char* op, const at::Tensor& out, std::initializer_list<const at::Tensor*> ins,
                  bool bool_ok = false) {
  check_ocl(out, op, "out");
  c10::ScalarType t = ins.begin()[0]->scalar_type();
  for (const at::Tensor* x : ins) {
    check_ocl(*x, op, "input");
    TORCH_CHECK(x->device() == out.device(), op, ": expected all tensors on the same device, but found ", x->device(),
                " and ", out.device());
    TORCH_CHECK(x->scalar_type() == t, op, ": expected the operands to have the same dtype, but got: ", t, " != ",
                x->scalar_type());
  }
  TORCH_CHECK(out.scalar_type() == t, op, ": expected out tensor to have dtype ", t, ", but got ", out.scalar_type(),
              " instead");
  // Integers run dlprim's one-work-item-per-output GEMM, wrapping as the CPU's. Bool has no product on the
  // CPU either (addr's logical form aside).
  TORCH_CHECK_TYPE(c10::isFloatingType(t) || c10::isIntegralType(t, /*includeBool=*/bool_ok) ||
                       (c10::isComplexType(t) && t != c10::kComplexHalf),
                   op, ": dtype ", t, " is not supported on the ocl device");
}

// Runs `c` with alpha and beta (beta applies only where c.d is set), or for complex operands
// its complex form on the real GEMM (ComplexGemm.cpp).
void run(GemmCall& c, const c10::Scalar& alpha, const c10::Scalar& beta) {
  if (c.out.is_complex()) {
    complex_gemm(c.op, c.a, c.b, c.out, c.d.defined() ? &c.d : nullptr, beta, alpha, c.sum_batches,
                 c.alpha_zero_skips);
    return;
  }
  // Integer products take alpha and beta truncated to integers, as the CPU's.
  bool integral = c10::isIntegralType(c.out.scalar_type(), /*includeBool=*/false);
  c.alpha = integral ? static_cast<double>(alpha.toLong()) : alpha.toDouble();
  c.beta = !c.d.defined() ? 0.0 : integral ? static_cast<double>(beta.toLong()) : beta.toDouble();
  run_gemm(c);
}

// [M, K] -> [1, M, K]
at::Tensor as3(const at::Tensor& t) { return t.unsqueeze(0); }
// A vector as a column ([K] -> [1, K, 1]) or a row ([N] -> [1, 1, N]).
at::Tensor column3(const at::Tensor& v) { return v.unsqueeze(1).unsqueeze(0); }
at::Tensor row3(const at::Tensor& v) { return v.unsqueeze(0).unsqueeze(0); }

void gemm2d(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out, const at::Tensor* self,
            const c10::Scalar& beta, const c10::Scalar& alpha, dlprim::Activation act = dlprim::Activation::None) {
  GemmCall c;
  c.op = op;
  c.a = as3(a);
  c.b = as3(b);
  c.out = as3(out);
  if (self) c.d = as3(self->expand({out.size(0), out.size(1)}));
  c.act = act;
  TORCH_CHECK(!out.is_complex() || act == dlprim::Activation::None, op, ": complex operands are not supported");
  run(c, alpha, beta);
}

void check_mm_shapes(const char* op, const at::Tensor& m1, const at::Tensor& m2) {
  TORCH_CHECK(m1.dim() == 2, op, ": mat1 must be a matrix, got ", m1.dim(), "-D tensor");
  TORCH_CHECK(m2.dim() == 2, op, ": mat2 must be a matrix, got ", m2.dim(), "-D tensor");
  TORCH_CHECK(m1.size(1) == m2.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (", m1.size(0), "x",
              m1.size(1), " and ", m2.size(0), "x", m2.size(1), ")");
}

at::Tensor& mm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_mm_shapes("mm", self, mat2);
  check_inputs("mm", out, {&self, &mat2});
  at::native::resize_output(out, {self.size(0), mat2.size(1)});
  gemm2d("mm", self, mat2, out, nullptr, 0, 1);
  return out;
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  check_mm_shapes("addmm", mat1, mat2);
  check_inputs("addmm", out, {&self, &mat1, &mat2});
  at::native::resize_output(out, {mat1.size(0), mat2.size(1)});
  gemm2d("addmm", mat1, mat2, out, &self, beta, alpha);
  return out;
}

// ATen's CPU kernel applies the exact (erf) GELU; that is the reference we match.
at::Tensor& addmm_activation_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                 const c10::Scalar& beta, const c10::Scalar& alpha, bool use_gelu, at::Tensor& out) {
  check_mm_shapes("_addmm_activation", mat1, mat2);
  check_inputs("_addmm_activation", out, {&self, &mat1, &mat2});
  at::native::resize_output(out, {mat1.size(0), mat2.size(1)});
  gemm2d("_addmm_activation", mat1, mat2, out, &self, beta, alpha,
         use_gelu ? dlprim::Activation::Gelu : dlprim::Activation::Relu);
  return out;
}

void check_bmm_shapes(const char* op, const at::Tensor& b1, const at::Tensor& b2) {
  TORCH_CHECK(b1.dim() == 3, op, ": batch1 must be a 3D tensor");
  TORCH_CHECK(b2.dim() == 3, op, ": batch2 must be a 3D tensor");
  TORCH_CHECK(b1.size(0) == b2.size(0), op, ": batch1 and batch2 must have same number of batches, got ",
              b1.size(0), " and ", b2.size(0));
  TORCH_CHECK(b1.size(2) == b2.size(1), op, ": Expected size for first two dimensions of batch2 tensor to be: [",
              b1.size(0), ", ", b1.size(2), "] but got: [", b2.size(0), ", ", b2.size(1), "].");
}

void run_batched(const char* op, const at::Tensor& b1, const at::Tensor& b2, const at::Tensor& out,
                 const at::Tensor* self, const c10::Scalar& beta, const c10::Scalar& alpha, bool sum_batches) {
  GemmCall c;
  c.op = op;
  c.a = b1;
  c.b = b2;
  c.out = sum_batches ? as3(out) : out;
  if (self) c.d = sum_batches ? as3(self->expand({b1.size(1), b2.size(2)})) : self->expand(out.sizes());
  c.sum_batches = sum_batches;
  c.alpha_zero_skips = sum_batches;  // ATen's baddbmm evaluates 0 * (b1 @ b2); addbmm does not
  run(c, sum_batches && b1.size(0) == 0 ? c10::Scalar(0) : alpha, beta);  // an empty sum
}

at::Tensor& bmm_out(const at::Tensor& self, const at::Tensor& mat2, at::Tensor& out) {
  check_bmm_shapes("bmm", self, mat2);
  check_inputs("bmm", out, {&self, &mat2});
  at::native::resize_output(out, {self.size(0), self.size(1), mat2.size(2)});
  run_batched("bmm", self, mat2, out, nullptr, 0, 1, false);
  return out;
}

at::Tensor& baddbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                        const c10::Scalar& alpha, at::Tensor& out) {
  check_bmm_shapes("baddbmm", b1, b2);
  check_inputs("baddbmm", out, {&self, &b1, &b2});
  at::native::resize_output(out, {b1.size(0), b1.size(1), b2.size(2)});
  run_batched("baddbmm", b1, b2, out, &self, beta, alpha, false);
  return out;
}

at::Tensor& addbmm_out(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                       const c10::Scalar& alpha, at::Tensor& out) {
  check_bmm_shapes("addbmm", b1, b2);
  check_inputs("addbmm", out, {&self, &b1, &b2});
  at::native::resize_output(out, {b1.size(1), b2.size(2)});
  run_batched("addbmm", b1, b2, out, &self, beta, alpha, true);
  return out;
}

at::Tensor addbmm(const at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                  const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, self.options());
  return addbmm_out(self, b1, b2, beta, alpha, out);
}

at::Tensor& addbmm_(at::Tensor& self, const at::Tensor& b1, const at::Tensor& b2, const c10::Scalar& beta,
                    const c10::Scalar& alpha) {
  check_bmm_shapes("addbmm_", b1, b2);
  TORCH_CHECK(self.dim() == 2 && self.size(0) == b1.size(1) && self.size(1) == b2.size(2),
              "addbmm_: self must have shape [", b1.size(1), ", ", b2.size(2), "], got ", self.sizes());
  return addbmm_out(self, b1, b2, beta, alpha, self);
}

at::Tensor& addmv_out(const at::Tensor& self, const at::Tensor& mat, const at::Tensor& vec, const c10::Scalar& beta,
                      const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(mat.dim() == 2 && vec.dim() == 1 && mat.size(1) == vec.size(0),
              "addmv: size mismatch, got input (", self.sizes(), "), mat (", mat.sizes(), "), vec (", vec.sizes(), ")");
  check_inputs("addmv", out, {&self, &mat, &vec});
  at::native::resize_output(out, {mat.size(0)});
  GemmCall c;
  c.op = "addmv";
  c.a = as3(mat);
  c.b = column3(vec);
  c.out = column3(out);
  if (beta.toComplexDouble() != c10::complex<double>(0, 0)) c.d = column3(self.expand({mat.size(0)}));
  run(c, alpha, beta);
  return out;
}

at::Tensor dot_impl(const char* op, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.dim() == 1 && other.dim() == 1, "1D tensors expected, but got ", self.dim(), "D and ", other.dim(),
              "D tensors");
  TORCH_CHECK(self.numel() == other.numel(), "inconsistent tensor size, expected tensor [", self.numel(),
              "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
              other.numel(), " elements respectively");
  at::Tensor out = at::empty({}, self.options());
  check_inputs(op, out, {&self, &other});
  GemmCall c;
  c.op = op;
  c.a = row3(self);
  c.b = column3(other);
  c.out = out.view({1, 1, 1});
  run(c, 1, 0);
  return out;
}

at::Tensor dot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("dot", self, other); }
// vdot conjugates its first operand (a conjugate view; the complex GEMM resolves it).
at::Tensor vdot(const at::Tensor& self, const at::Tensor& other) { return dot_impl("vdot", self.conj(), other); }

at::Tensor& addr_out(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                     const c10::Scalar& alpha, at::Tensor& out) {
  TORCH_CHECK(vec1.dim() == 1 && vec2.dim() == 1, "addr: Expected 1-D argument vec1, but got ", vec1.dim(), "-D");
  check_inputs("addr", out, {&self, &vec1, &vec2}, /*bool_ok=*/true);
  if (c10::isIntegralType(out.scalar_type(), /*includeBool=*/true)) {  // ATen's addr checks these (addmm truncates)
    TORCH_CHECK(!beta.isFloatingPoint(), "For integral input tensors, argument beta must not be a floating point number.");
    TORCH_CHECK(!alpha.isFloatingPoint(), "For integral input tensors, argument alpha must not be a floating point number.");
  }
  if (out.scalar_type() == at::kBool) {  // ATen's logical form: (beta && self) || (alpha && vec1 && vec2)
    at::Tensor r = at::logical_and(vec1.unsqueeze(1), vec2.unsqueeze(0));
    if (!alpha.toBool()) r.zero_();
    if (beta.toBool()) r = at::logical_or(r, self.expand({vec1.size(0), vec2.size(0)}));
    at::native::resize_output(out, r.sizes());
    return out.copy_(r);
  }
  at::native::resize_output(out, {vec1.size(0), vec2.size(0)});
  GemmCall c;
  c.op = "addr";
  c.alpha_zero_skips = false;  // ATen's addr evaluates 0 * outer (NaN/inf propagate)
  c.a = column3(vec1);
  c.b = row3(vec2);
  c.out = as3(out);
  if (beta.toComplexDouble() != c10::complex<double>(0, 0)) c.d = as3(self.expand({vec1.size(0), vec2.size(0)}));
  run(c, alpha, beta);
  return out;
}

at::Tensor addr(const at::Tensor& self, const at::Tensor& vec1, const at::Tensor& vec2, const c10::Scalar& beta,
                const c10::Scalar& alpha) {
  at::Tensor out = at::empty({0}, vec1.options());
  return addr_out(self, vec1, vec2, beta, alpha, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("mm.out", TORCH_FN(mm_out));
  m.impl("addmm.out", TORCH_FN(addmm_out));
  m.impl("_addmm_activation.out", TORCH_FN(addmm_activation_out));
  m.impl("bmm.out", TORCH_FN(bmm_out));
  m.impl("baddbmm.out", TORCH_FN(baddbmm_out));
  m.impl("addbmm.out", TORCH_FN(addbmm_out));
  m.impl("addbmm", TORCH_FN(addbmm));
  m.impl("addbmm_", TORCH_FN(addbmm_));
  m.impl("addmv.out", TORCH_FN(addmv_out));
  m.impl("dot", TORCH_FN(dot));
  m.impl("vdot", TORCH_FN(vdot));
  m.impl("addr.out", TORCH_FN(addr_out));
  m.impl("addr", TORCH_FN(addr));
}

} // namespace pytorch_ocl
