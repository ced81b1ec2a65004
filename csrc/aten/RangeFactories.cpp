// Index-based factories: arange, linspace, logspace, eye, tril_indices/triu_indices. Each is a positional op whose
// value is computed from the element's index; sizes, checks and arithmetic follow the CPU
// (the same intermediate types where the device has them).
#include "aten/RowMajor.h"
#include "core/Device.h"
#include "core/TensorUtils.h"

#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/view_as_real.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>

namespace pytorch_ocl {

namespace {

using dlprim::Scalar;

const dlprim::PositionalOp k_arange{"arange", "y0 = f0 + f1 * (dl_ct)idx;", false};
// The second half counts back from the end, so the last value is exactly `end` (as the CPU).
// DL_ROUND repeats the CPU's rounding of each step for float16/bfloat16 (it computes in that type).
const dlprim::PositionalOp k_linspace{
    "linspace",
    "y0 = (long)idx < k0 ? DL_ROUND(f0 + DL_ROUND(f1 * DL_ROUND((dl_ct)idx)))\n"
    "                    : DL_ROUND(f2 - DL_ROUND(f1 * DL_ROUND((dl_ct)(k1 - (long)idx - 1))));",
    false};
const dlprim::PositionalOp k_logspace{
    "logspace", "y0 = pow(f3, (long)idx < k0 ? f0 + f1 * (dl_ct)idx : f2 - f1 * (dl_ct)(k1 - (long)idx - 1));",
    false};
const dlprim::PositionalOp k_eye{"eye", "y0 = c[0] == c[1];", false};

bool device_has_fp64(const at::Tensor& t) { return context(t.device().index()).info().fp64; }

// float64 where the CPU computes in double and the device can, else float32.
c10::ScalarType double_if_possible(const at::Tensor& t) { return device_has_fp64(t) ? c10::kDouble : c10::kFloat; }

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  check_ocl(out, "arange", "out");
  c10::ScalarType compute = c10::kFloat;
  dlprim::PositionalParams params;
  int64_t size = 0;
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, out.scalar_type(), "arange_ocl", [&]() {
    using acc_t = at::acc_type<scalar_t, false>;  // the CPU's: double for float, int64 for integers
    auto xstart = start.to<acc_t>();
    auto xend = end.to<acc_t>();
    auto xstep = step.to<acc_t>();
    TORCH_CHECK(xstep > 0 || xstep < 0, "step must be nonzero");
    TORCH_CHECK(std::isfinite(static_cast<double>(xstart)) && std::isfinite(static_cast<double>(xend)),
                "unsupported range: ", xstart, " -> ", xend);
    TORCH_CHECK(((xstep > 0) && (xend >= xstart)) || ((xstep < 0) && (xend <= xstart)),
                "upper bound and larger bound inconsistent with step sign");
    double size_d;
    if constexpr (std::is_same_v<scalar_t, int64_t>) {
      // int64 has more precision than double: count in integers
      int64_t sgn = (xstep > 0) - (xstep < 0);
      size_d = std::ceil(static_cast<double>((xend - xstart + xstep - sgn) / xstep));
    } else {
      size_d = std::ceil((end.to<double>() - start.to<double>()) / step.to<double>());
    }
    TORCH_CHECK(size_d >= 0 && size_d <= static_cast<double>(std::numeric_limits<int64_t>::max()),
                "invalid size, possible overflow?");
    size = static_cast<int64_t>(size_d);
    if constexpr (std::is_integral_v<acc_t>) {
      compute = c10::kLong;
      params.f = {Scalar::integral(static_cast<int64_t>(xstart)), Scalar::integral(static_cast<int64_t>(xstep))};
    } else {
      compute = std::is_same_v<acc_t, double> ? double_if_possible(out) : c10::kFloat;
      params.f = {Scalar::floating(static_cast<double>(xstart)), Scalar::floating(static_cast<double>(xstep))};
    }
  });
  if (out.numel() != size) {
    if (out.numel() > 0)
      TORCH_WARN("The number of elements in the out tensor of shape ", out.sizes(), " is ", out.numel(),
                 " which does not match the computed number of elements ", size,
                 ". Note that this may occur as a result of rounding error. "
                 "The out tensor will be resized to a tensor of shape (", size, ",).");
    out.resize_({size});
  }
  launch_positional(k_arange, compute, out, nullptr, 0, params);
  return out;
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  check_ocl(out, "linspace", "out");
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(start);
  dlprim::PositionalParams params;
  params.k = {steps / 2, steps};
  c10::ScalarType compute = c10::kFloat;
  if (out.is_complex()) {
    // The CPU's complex step (e - s) / (steps - 1), then start + step * i (and end - step * (n - 1 - i))
    // with a real i: each component is the real linspace of that component.
    at::Tensor planes = at::view_as_real(out);
    AT_DISPATCH_COMPLEX_TYPES(out.scalar_type(), "linspace_ocl", [&]() {
      const scalar_t s = start.to<scalar_t>(), e = end.to<scalar_t>();
      const scalar_t st = (e - s) / static_cast<scalar_t>(steps - 1);
      for (int k = 0; k < 2; ++k) {
        auto part = [k](const scalar_t& z) { return Scalar::floating(static_cast<double>(k ? z.imag() : z.real())); };
        params.f = {part(s), part(st), part(e)};
        at::Tensor plane = planes.select(-1, k);
        launch_positional(k_linspace, plane.scalar_type(), plane, nullptr, 0, params);
      }
    });
    return out;
  }
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, out.scalar_type(), "linspace_ocl", [&]() {
    // The CPU's types: the step in the output type, in double for integers.
    using step_t = std::conditional_t<std::is_integral_v<scalar_t>, double, scalar_t>;
    const scalar_t s = start.to<scalar_t>();
    const scalar_t e = end.to<scalar_t>();
    const step_t st = (static_cast<step_t>(e) - static_cast<step_t>(s)) / (steps - 1);
    params.f = {Scalar::floating(static_cast<double>(s)), Scalar::floating(static_cast<double>(st)),
                Scalar::floating(static_cast<double>(e))};
    if constexpr (std::is_same_v<scalar_t, double> || std::is_integral_v<scalar_t>) compute = double_if_possible(out);
  });
  launch_positional(k_linspace, compute, out, nullptr, 0, params);
  return out;
}

at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  check_ocl(out, "logspace", "out");
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  if (out.numel() != steps) out.resize_({steps});
  if (steps == 0) return out;
  if (steps == 1) return out.fill_(std::pow(base, start.to<double>()));
  dlprim::PositionalParams params;
  params.k = {steps / 2, steps};
  AT_DISPATCH_ALL_TYPES_AND2(c10::kHalf, c10::kBFloat16, out.scalar_type(), "logspace_ocl", [&]() {
    // The CPU computes the exponents and powers in double.
    const scalar_t s = start.to<scalar_t>();
    const scalar_t e = end.to<scalar_t>();
    const double st = static_cast<double>(e - s) / (steps - 1);
    params.f = {Scalar::floating(static_cast<double>(s)), Scalar::floating(st), Scalar::floating(static_cast<double>(e)),
                Scalar::floating(base)};
  });
  launch_positional(k_logspace, double_if_possible(out), out, nullptr, 0, params);
  return out;
}

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  check_ocl(out, "eye", "out");
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  out.resize_({n, m});
  if (out.is_complex()) {  // the real plane is the identity, the imaginary plane zero
    if (out.numel() == 0) return out;
    at::Tensor planes = at::view_as_real(out);
    planes.select(-1, 1).zero_();
    at::Tensor re = planes.select(-1, 0);
    launch_positional(k_eye, re.scalar_type(), re, nullptr, 2, {});
    return out;
  }
  launch_positional(k_eye, out.scalar_type(), out, nullptr, 2, {});
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

// tril_indices / triu_indices: the coordinates of a triangle of a row x col matrix, row-major (the
// CPU's order), as the nonzero entries of a triangular mask built on the device.
at::Tensor tri_indices(const char* op, bool lower, int64_t row, int64_t col, int64_t offset,
                       std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                       std::optional<at::Device> device) {
  at::ScalarType t = dtype.value_or(at::kLong);
  TORCH_CHECK(row >= 0, "row must be non-negative, got", row);
  TORCH_CHECK(col >= 0, "col must be non-negative, got", col);
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided, "only support layout=torch.strided, got",
              layout.value_or(at::kStrided));
  TORCH_CHECK_NOT_IMPLEMENTED(t == at::kLong || t == at::kInt, "\"", op, "\" not implemented for '", t, "'");
  at::Tensor mask = at::ones({row, col}, at::TensorOptions().dtype(at::kBool).device(device));
  mask = lower ? mask.tril(offset) : mask.triu(offset);
  return mask.nonzero().t().to(t).contiguous();
}

at::Tensor tril_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool>) {
  return tri_indices("tril_indices", true, row, col, offset, dtype, layout, device);
}

at::Tensor triu_indices(int64_t row, int64_t col, int64_t offset, std::optional<at::ScalarType> dtype,
                        std::optional<at::Layout> layout, std::optional<at::Device> device, std::optional<bool>) {
  return tri_indices("triu_indices", false, row, col, offset, dtype, layout, device);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("arange.start_out", TORCH_FN(arange_out));
  m.impl("linspace.out", TORCH_FN(linspace_out));
  m.impl("logspace.out", TORCH_FN(logspace_out));
  m.impl("eye.m_out", TORCH_FN(eye_m_out));
  m.impl("eye.out", TORCH_FN(eye_out));
  m.impl("tril_indices", TORCH_FN(tril_indices));
  m.impl("triu_indices", TORCH_FN(triu_indices));
}

} // namespace pytorch_ocl
