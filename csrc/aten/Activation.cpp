// Activation rows of the pointwise table and their backward ops: the act0..act3 (self +
// scalars) and bw0..bw2 (grad_output, self + scalars) wrapper templates, and the activations
// with their own signature (relu, hardtanh, hardswish, gelu, elu/leaky_relu backward,
// log_sigmoid, prelu, glu).
#include "aten/ComplexOps.h"
#include "aten/PointwiseTable.h"
#include "core/Device.h"
#include "core/TensorUtils.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <c10/util/string_view.h>

#include <array>
#include <atomic>
#include <tuple>

namespace pytorch_ocl {

namespace {

using Params = std::vector<dlprim::Scalar>;

// Scalar parameters must fit an integral dtype, as the CPU's Scalar::to<T>() checks.
void check_fits(const at::Tensor& self, std::initializer_list<c10::Scalar> params) {
  for (const c10::Scalar& p : params) {
    switch (self.scalar_type()) {
      case c10::kByte: p.to<uint8_t>(); break;
      case c10::kChar: p.to<int8_t>(); break;
      case c10::kShort: p.to<int16_t>(); break;
      case c10::kInt: p.to<int32_t>(); break;
      default: break;
    }
  }
}

// The backward row of an activation (grad_output, self -> grad_input), or PW_COUNT.
PwId backward_of(PwId id) {
  switch (id) {
    case PW_relu: return PW_threshold_backward;  // relu's autograd formula
    case PW_gelu: return PW_gelu_backward;
    case PW_silu: return PW_silu_backward;
    case PW_mish: return PW_mish_backward;
    case PW_hardswish: return PW_hardswish_backward;
    case PW_hardsigmoid: return PW_hardsigmoid_backward;
    case PW_elu: return PW_elu_backward;
    case PW_leaky_relu: return PW_leaky_relu_backward;
    case PW_softplus: return PW_softplus_backward;
    case PW_log_sigmoid_forward: return PW_log_sigmoid_backward;
    default: return PW_COUNT;
  }
}

// Speculative build (cold start): an activation's first forward on a dtype queues the program of its backward,
// which the same training step runs (the grad of self's dtype): it builds in the background meanwhile.
void prepare_backward(PwId id, const at::TensorIteratorBase& iter) {
  static std::array<std::atomic<uint32_t>, PW_COUNT> seen{};  // per row, a bit per dtype met
  const PwId bw = backward_of(id);
  const c10::ScalarType t = iter.common_dtype();
  const uint32_t bit = 1u << (static_cast<int>(t) & 31);
  if (bw == PW_COUNT || (seen[id].fetch_or(bit) & bit)) return;
  const char* name = pw_row(bw).op.name.c_str();
  dlprim::DType d = to_dlprim(t, name);
  dlprim::elementwise_prepare(context(iter.device(0).index()), pw_row(bw).op, d, {d}, {d, d});
}

at::Tensor run_act(PwId id, const at::Tensor& self, const Params& params, const at::Tensor& out) {
  if (self.is_complex() && params.empty() && pw_has_complex(id)) return pw_complex_unary(id, out, self);
  pw_check_dtype(id, self.scalar_type());
  at::TensorIterator iter;
  iter.build_borrowing_unary_op(out, self);
  pw_launch(id, iter, params);
  if (iter.numel() > 0) prepare_backward(id, iter);
  return pw_result(out, iter);
}

at::Tensor run_bw(PwId id, const at::Tensor& grad, const at::Tensor& self, const Params& params,
                  const at::Tensor& grad_input) {
  auto iter = at::TensorIterator::borrowing_binary_op(grad_input, grad, self);
  if (pw_is_complex(iter.common_dtype()) && params.empty() && pw_has_complex(id)) {
    pw_complex_binary(id, iter);
    return pw_result(grad_input, iter);
  }
  pw_check_dtype(id, iter.common_dtype());
  pw_launch(id, iter, params);
  return pw_result(grad_input, iter);
}

dlprim::Scalar sc(const c10::Scalar& s) { return to_dlprim_scalar(s); }

// The kinds' runners (PwForms): `out` undefined allocates the result.
template <PwId Id>
at::Tensor act0_run(const at::Tensor& out, const at::Tensor& self) {
  return run_act(Id, self, {}, out);
}
template <PwId Id>
at::Tensor act1_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& a) {
  return run_act(Id, self, {sc(a)}, out);
}
template <PwId Id>
at::Tensor act2_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& a, const c10::Scalar& b) {
  check_fits(self, {a, b});
  return run_act(Id, self, {sc(a), sc(b)}, out);
}
template <PwId Id>
at::Tensor act3_run(const at::Tensor& out, const at::Tensor& self, const c10::Scalar& a, const c10::Scalar& b,
                    const c10::Scalar& c) {
  return run_act(Id, self, {sc(a), sc(b), sc(c)}, out);
}

template <PwId Id>
at::Tensor bw0_run(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& self) {
  return run_bw(Id, grad, self, {}, grad_input);
}
template <PwId Id>
at::Tensor bw1_run(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& self,
                   const c10::Scalar& a) {
  return run_bw(Id, grad, self, {sc(a)}, grad_input);
}
template <PwId Id>
at::Tensor bw2_run(const at::Tensor& grad_input, const at::Tensor& grad, const at::Tensor& self,
                   const c10::Scalar& a, const c10::Scalar& b) {
  return run_bw(Id, grad, self, {sc(a), sc(b)}, grad_input);
}

// Ops that are not structured: functional, out and in-place forms share one runner.
at::Tensor relu(const at::Tensor& self) { return run_act(PW_relu, self, {}, at::Tensor()); }
at::Tensor& relu_(at::Tensor& self) {
  run_act(PW_relu, self, {}, self);
  return self;
}

at::Tensor run_hardtanh(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max,
                        const at::Tensor& out) {
  TORCH_CHECK(self.scalar_type() != c10::kBool, "Bool inputs not supported for hardtanh");
  TORCH_CHECK(self.scalar_type() != c10::kByte || (min.to<int64_t>() >= 0 && max.to<int64_t>() >= 0),
              "cannot do hardtanh on an unsigned type with negative limits");
  return run_act(PW_hardtanh, self, {sc(min), sc(max)}, out);
}
at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max) {
  return run_hardtanh(self, min, max, at::Tensor());
}
at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max, at::Tensor& out) {
  run_hardtanh(self, min, max, out);
  return out;
}
at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& min, const c10::Scalar& max) {
  run_hardtanh(self, min, max, self);
  return self;
}
at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& min,
                             const c10::Scalar& max) {
  return run_bw(PW_hardtanh_backward, grad, self, {sc(min), sc(max)}, at::Tensor());
}

at::Tensor hardswish(const at::Tensor& self) { return run_act(PW_hardswish, self, {}, at::Tensor()); }
at::Tensor& hardswish_out(const at::Tensor& self, at::Tensor& out) {
  run_act(PW_hardswish, self, {}, out);
  return out;
}
at::Tensor& hardswish_(at::Tensor& self) {
  run_act(PW_hardswish, self, {}, self);
  return self;
}
at::Tensor hardswish_backward(const at::Tensor& grad, const at::Tensor& self) {
  return run_bw(PW_hardswish_backward, grad, self, {}, at::Tensor());
}
// Upstream's functional silu_backward is CompositeImplicitAutograd (six kernels and their
// allocations); a kernel registered for this backend takes precedence over it.
at::Tensor silu_backward(const at::Tensor& grad, const at::Tensor& self) {
  return run_bw(PW_silu_backward, grad, self, {}, at::Tensor());
}
at::Tensor mish_backward(const at::Tensor& grad, const at::Tensor& self) {
  return run_bw(PW_mish_backward, grad, self, {}, at::Tensor());
}

at::Tensor& leaky_relu_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                                    bool self_is_result, at::Tensor& grad_input) {
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
              "version instead. File an issue at https://github.com/pytorch/pytorch if you do require supporting "
              "in-place leakRelu backward calculation with negative slope");
  run_bw(PW_leaky_relu_backward, grad, self, {sc(slope)}, grad_input);
  return grad_input;
}

at::Tensor& elu_backward_out(const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                             const c10::Scalar& input_scale, bool is_result, const at::Tensor& self_or_result,
                             at::Tensor& grad_input) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, please call out-of-place "
              "version instead.");
  run_bw(PW_elu_backward, grad, self_or_result,
         {sc(alpha), sc(scale), sc(input_scale), pw_scalar(is_result ? 1.0 : 0.0)}, grad_input);
  return grad_input;
}

double gelu_mode(c10::string_view approximate) {
  if (approximate == "none") return 0;
  if (approximate == "tanh") return 1;
  TORCH_CHECK(false, "approximate argument must be either none or tanh.");
}
at::Tensor& gelu_out(const at::Tensor& self, c10::string_view approximate, at::Tensor& out) {
  run_act(PW_gelu, self, {pw_scalar(gelu_mode(approximate))}, out);
  return out;
}
at::Tensor& gelu_backward_out(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate,
                              at::Tensor& grad_input) {
  run_bw(PW_gelu_backward, grad, self, {pw_scalar(gelu_mode(approximate))}, grad_input);
  return grad_input;
}

// log_sigmoid: the backward recomputes exp(-|x|), so `buffer` stays empty (as on CUDA).
std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self, at::Tensor& output,
                                                             at::Tensor& buffer) {
  run_act(PW_log_sigmoid_forward, self, {}, output);
  return std::forward_as_tuple(output, buffer);
}
std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  at::Tensor out = run_act(PW_log_sigmoid_forward, self, {}, at::Tensor());
  return {out, at::empty({0}, self.options())};
}
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer,
                                     at::Tensor& grad_input) {
  run_bw(PW_log_sigmoid_backward, grad, self, {}, grad_input);
  return grad_input;
}
at::Tensor log_sigmoid_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor& buffer) {
  return run_bw(PW_log_sigmoid_backward, grad, self, {}, at::Tensor());
}

// prelu: weight broadcasts to self; the weight gradient keeps self's shape (autograd sums it).
at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  pw_check_dtype(PW_prelu, self.scalar_type());
  at::Tensor out = at::empty({0}, self.options());
  auto iter = at::TensorIteratorConfig().allow_cpu_scalars(true).add_output(out).add_const_input(self).add_const_input(weight).build();
  pw_launch(PW_prelu, iter, self.scalar_type(), {});
  return out;
}
std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  pw_check_dtype(PW_prelu_backward, self.scalar_type());
  at::Tensor grad_self = at::empty({0}, self.options());
  at::Tensor grad_weight = at::empty({0}, weight.options());
  auto iter = at::TensorIteratorConfig()
                  .allow_cpu_scalars(true)
                  .add_output(grad_self)
                  .add_output(grad_weight)
                  .add_const_input(self)
                  .add_const_input(weight)
                  .add_const_input(grad)
                  .build();
  pw_launch(PW_prelu_backward, iter, self.scalar_type(), {});
  return {grad_self, grad_weight};
}

// glu: the halves of self along dim are two strided views, no copies.
int64_t glu_dim(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  int64_t d = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              self.size(d));
  return d;
}
at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  int64_t d = glu_dim(self, dim), half = self.size(d) / 2;
  auto iter = at::TensorIterator::binary_op(out, self.narrow(d, 0, half), self.narrow(d, half, half));
  pw_check_dtype(PW_glu, iter.common_dtype());
  pw_launch(PW_glu, iter);
  return out;
}
at::Tensor& glu_backward_out(const at::Tensor& grad, const at::Tensor& self, int64_t dim, at::Tensor& grad_input) {
  int64_t d = glu_dim(self, dim), half = self.size(d) / 2;
  pw_check_dtype(PW_glu_backward, self.scalar_type());
  at::native::resize_output(grad_input, self.sizes());
  if (self.numel() == 0) return grad_input;
  auto iter = at::TensorIteratorConfig()
                  .add_owned_output(grad_input.narrow(d, 0, half))
                  .add_owned_output(grad_input.narrow(d, half, half))
                  .add_owned_const_input(self.narrow(d, 0, half))
                  .add_owned_const_input(self.narrow(d, half, half))
                  .add_const_input(grad)
                  .build();
  pw_launch(PW_glu_backward, iter, self.scalar_type(), {});
  return grad_input;
}
at::Tensor glu_backward(const at::Tensor& grad, const at::Tensor& self, int64_t dim) {
  at::Tensor grad_input = at::empty({0}, self.options());
  glu_backward_out(grad, self, dim, grad_input);
  return grad_input;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
#define OCL_PW_REG_act0(id, aten) pw_impl_forms<OCL_PW_FORMS(act0_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_act1(id, aten) pw_impl_forms<OCL_PW_FORMS(act1_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_act2(id, aten) pw_impl_forms<OCL_PW_FORMS(act2_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_act3(id, aten) pw_impl_forms<OCL_PW_FORMS(act3_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_bw0(id, aten) pw_impl_forms<OCL_PW_FORMS(bw0_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_bw1(id, aten) pw_impl_forms<OCL_PW_FORMS(bw1_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_bw2(id, aten) pw_impl_forms<OCL_PW_FORMS(bw2_run<PW_##id>)>(m, PW_##id, aten);
#define OCL_PW_REG_custom(i, p, o) OCL_PW_SKIP
#define OCL_PW_SKIP(id, aten)
#define OCL_PW_REG(kind, id, aten, dtypes, prelude, versions, body) OCL_PW_REG_##kind(id, aten)
  OCL_POINTWISE_ACTIVATION(OCL_PW_REG)

  pw_impl(m, PW_relu, "relu", TORCH_FN(relu));
  pw_impl(m, PW_relu, "relu_", TORCH_FN(relu_));
  pw_impl(m, PW_hardtanh, "hardtanh", TORCH_FN(hardtanh));
  pw_impl(m, PW_hardtanh, "hardtanh.out", TORCH_FN(hardtanh_out));
  pw_impl(m, PW_hardtanh, "hardtanh_", TORCH_FN(hardtanh_));
  pw_impl(m, PW_hardtanh_backward, "hardtanh_backward", TORCH_FN(hardtanh_backward));
  pw_impl(m, PW_silu_backward, "silu_backward", TORCH_FN(silu_backward));
  pw_impl(m, PW_hardswish, "hardswish", TORCH_FN(hardswish));
  pw_impl(m, PW_hardswish, "hardswish.out", TORCH_FN(hardswish_out));
  pw_impl(m, PW_hardswish, "hardswish_", TORCH_FN(hardswish_));
  pw_impl(m, PW_hardswish_backward, "hardswish_backward", TORCH_FN(hardswish_backward));
  pw_impl(m, PW_mish_backward, "mish_backward", TORCH_FN(mish_backward));
  pw_impl(m, PW_leaky_relu_backward, "leaky_relu_backward.grad_input", TORCH_FN(leaky_relu_backward_out));
  pw_impl(m, PW_elu_backward, "elu_backward.grad_input", TORCH_FN(elu_backward_out));
  pw_impl(m, PW_gelu, "gelu.out", TORCH_FN(gelu_out));
  pw_impl(m, PW_gelu_backward, "gelu_backward.grad_input", TORCH_FN(gelu_backward_out));
  pw_impl(m, PW_log_sigmoid_forward, "log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  pw_impl(m, PW_log_sigmoid_forward, "log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  pw_impl(m, PW_log_sigmoid_backward, "log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  pw_impl(m, PW_log_sigmoid_backward, "log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  pw_impl(m, PW_prelu, "_prelu_kernel", TORCH_FN(prelu_kernel));
  pw_impl(m, PW_prelu_backward, "_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
  pw_impl(m, PW_glu, "glu.out", TORCH_FN(glu_out));
  pw_impl(m, PW_glu_backward, "glu_backward", TORCH_FN(glu_backward));
  pw_impl(m, PW_glu_backward, "glu_backward.grad_input", TORCH_FN(glu_backward_out));
}

} // namespace pytorch_ocl
