// segment_reduce (torch.segment_reduce: sum / mean / max / min / prod over segments given by
// lengths or offsets, along any axis, with an optional initial value) and its backward, composed of
// native ops: each element's segment by searchsorted over the segment ends, then index_add /
// index_reduce into one row per (leading index, segment) plus a sink row for elements outside
// every segment. The CPU's semantics throughout: `initial` joins every segment's reduction (a
// mean divides by the element count only), empty segments give initial or the identity (0, NaN
// for mean, -inf / inf, 1); tied maxima / minima share positive gradients equally (negative ones
// go whole to each: a quirk of the CPU and CUDA kernels, kept for parity), and a product's
// gradient at its only zero is the product of the rest (initial included), zero with two zeros.
// float16/bfloat16 reduce in float32.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <limits>

namespace pytorch_ocl {

namespace {

enum class Red { Sum, Mean, Max, Min, Prod };

Red parse(c10::string_view reduce) {
  if (reduce == "sum") return Red::Sum;
  if (reduce == "mean") return Red::Mean;
  if (reduce == "max") return Red::Max;
  if (reduce == "min") return Red::Min;
  if (reduce == "prod") return Red::Prod;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, max, min or mean, got ", reduce);
}

// The segment layout: data as [B, N, inner], every element's row in the [B * S + 1, inner]
// result (the last row collects elements outside every segment) and each segment's length.
struct Segments {
  int64_t B = 1, N = 0, inner = 1, S = 0, axis = 0;
  std::vector<int64_t> out_shape;
  at::Tensor key, count;  // long [B * N], long [B * S + 1]
};

Segments segments(const at::Tensor& data, const std::optional<at::Tensor>& lengths,
                  const std::optional<at::Tensor>& offsets, int64_t axis, bool check) {
  const char* op = "segment_reduce";
  check_ocl(data, op, "data");
  TORCH_CHECK((lengths && lengths->defined()) || (offsets && offsets->defined()),
              "segment_reduce(): Either lengths or offsets must be defined");
  Segments s;
  s.axis = at::maybe_wrap_dim(axis, data.dim());
  at::Tensor off;
  if (lengths && lengths->defined()) {
    check_ocl(*lengths, op, "lengths");
    at::Tensor len = lengths->to(at::kLong);
    if (check && len.numel()) {
      TORCH_CHECK(!(len < 0).any().item<bool>(), "lengths contains negative value!");
      TORCH_CHECK((len.sum(-1) == data.size(s.axis)).all().item<bool>(),
                  "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) "
                  "when !unsafe.");
    }
    std::vector<int64_t> zshape = len.sizes().vec();
    zshape.back() = 1;
    off = at::cat({at::zeros(zshape, len.options()), len.cumsum(-1)}, -1);
  } else {
    check_ocl(*offsets, op, "offsets");
    off = offsets->to(at::kLong);
  }
  TORCH_CHECK(off.dim() == s.axis + 1, "segment_reduce(): Expected lengths / offsets to have ", s.axis + 1,
              " dims for axis ", s.axis, ", got ", off.dim());
  for (int64_t d = 0; d < s.axis; ++d) s.B *= data.size(d);
  s.N = data.size(s.axis);
  for (int64_t d = s.axis + 1; d < data.dim(); ++d) s.inner *= data.size(d);
  s.S = off.size(-1) - 1;
  s.out_shape = data.sizes().vec();
  s.out_shape[s.axis] = s.S;
  at::Tensor off2 = off.reshape({s.B, s.S + 1}).contiguous();
  at::Tensor pos = at::arange(s.N, off2.options()).unsqueeze(0).expand({s.B, s.N}).contiguous();
  // Element n of row b is in segment seg if off[seg] <= n < off[seg + 1].
  at::Tensor seg = at::searchsorted(off2.narrow(1, 1, s.S).contiguous(), pos, false, true);
  at::Tensor inside = (seg < s.S).logical_and(pos >= off2.narrow(1, 0, 1));
  at::Tensor rowbase = at::arange(s.B, off2.options()).unsqueeze(1) * s.S;
  s.key = at::where(inside, rowbase + seg, at::full({}, s.B * s.S, off2.options())).reshape({-1});
  s.count = at::zeros({s.B * s.S + 1}, off2.options()).index_add(0, s.key, at::ones_like(s.key));
  return s;
}

c10::ScalarType acc_of(const at::Tensor& t) { return t.scalar_type() == c10::kDouble ? c10::kDouble : c10::kFloat; }

at::Tensor segment_reduce(const at::Tensor& data, c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                          const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                          int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  TORCH_CHECK(!(indices && indices->defined()), "segment_reduce(): indices based reduction is not supported yet.");
  Red r = parse(reduce);
  c10::DeviceGuard guard(data.device());
  Segments s = segments(data, lengths, offsets, axis, !unsafe);
  c10::ScalarType acc = acc_of(data);
  at::Tensor x = data.reshape({s.B * s.N, s.inner}).to(acc);
  int64_t rows = s.B * s.S + 1;
  bool has_init = initial.has_value();
  double init = has_init ? initial->toDouble() : 0;
  double inf = std::numeric_limits<double>::infinity();
  at::Tensor out;
  switch (r) {
    case Red::Sum:
      out = at::full({rows, s.inner}, init, x.options()).index_add(0, s.key, x);
      break;
    case Red::Mean: {
      at::Tensor sum = at::full({rows, s.inner}, init, x.options()).index_add(0, s.key, x);
      at::Tensor cnt = s.count.to(acc).unsqueeze(1);
      at::Tensor empty = at::full({}, has_init ? init : std::numeric_limits<double>::quiet_NaN(), x.options());
      out = at::where(cnt > 0, sum / cnt.clamp_min(1), empty);
      break;
    }
    case Red::Max:
      out = at::full({rows, s.inner}, has_init ? init : -inf, x.options()).index_reduce(0, s.key, x, "amax");
      break;
    case Red::Min:
      out = at::full({rows, s.inner}, has_init ? init : inf, x.options()).index_reduce(0, s.key, x, "amin");
      break;
    case Red::Prod:
      out = at::full({rows, s.inner}, has_init ? init : 1.0, x.options()).index_reduce(0, s.key, x, "prod");
      break;
  }
  return out.narrow(0, 0, s.B * s.S).reshape(s.out_shape).to(data.scalar_type());
}

at::Tensor segment_reduce_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                   c10::string_view reduce, const std::optional<at::Tensor>& lengths,
                                   const std::optional<at::Tensor>& offsets, int64_t axis,
                                   const std::optional<at::Scalar>& initial) {
  Red r = parse(reduce);
  check_ocl(grad, "_segment_reduce_backward", "grad");
  c10::DeviceGuard guard(data.device());
  Segments s = segments(data, lengths, offsets, axis, false);
  c10::ScalarType acc = acc_of(data);
  at::Tensor x = data.reshape({s.B * s.N, s.inner}).to(acc);
  int64_t rows = s.B * s.S + 1;
  // Per-segment tensors get the sink row (zero gradient) so every element can gather its own.
  auto with_sink = [&](const at::Tensor& t) {
    at::Tensor t2 = t.to(acc).reshape({s.B * s.S, s.inner});
    return at::cat({t2, at::zeros({1, s.inner}, t2.options())}, 0);
  };
  at::Tensor g = with_sink(grad).index_select(0, s.key);
  at::Tensor zero = at::zeros({}, x.options());
  at::Tensor gx;
  switch (r) {
    case Red::Sum:
      gx = g;
      break;
    case Red::Mean:
      gx = g / s.count.to(acc).clamp_min(1).index_select(0, s.key).unsqueeze(1);
      break;
    case Red::Max:
    case Red::Min: {
      at::Tensor o = with_sink(output).index_select(0, s.key);
      // As the CPU and CUDA kernels do: every element equal to the result (or NaN) gets the
      // gradient, and with several of them only positive gradients are divided by their count.
      at::Tensor hitb = (x == o).logical_or(x.isnan());
      at::Tensor hit = hitb.to(acc);
      at::Tensor ties = at::zeros({rows, s.inner}, x.options()).index_add(0, s.key, hit).index_select(0, s.key);
      gx = at::where(hitb, g, zero);
      gx = at::where((ties >= 2).logical_and(gx > 0), gx / ties.clamp_min(1), gx);
      break;
    }
    case Red::Prod: {
      at::Tensor o = with_sink(output).index_select(0, s.key);
      at::Tensor is_zero = x == 0;
      at::Tensor zeros_in = at::zeros({rows, s.inner}, x.options()).index_add(0, s.key, is_zero.to(acc))
                                .index_select(0, s.key);
      double init = initial.has_value() ? initial->toDouble() : 1.0;
      at::Tensor rest = at::full({rows, s.inner}, init, x.options())
                            .index_reduce(0, s.key, at::where(is_zero, at::ones({}, x.options()), x), "prod")
                            .index_select(0, s.key);
      gx = at::where(zeros_in == 0, g * o / x,
                     at::where(is_zero.logical_and(zeros_in == 1), g * rest, zero));
      break;
    }
  }
  return gx.reshape(data.sizes()).to(data.scalar_type());
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("segment_reduce", TORCH_FN(segment_reduce));
  m.impl("_segment_reduce_backward", TORCH_FN(segment_reduce_backward));
}

} // namespace pytorch_ocl
