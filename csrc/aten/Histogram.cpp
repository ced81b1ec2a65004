// histogram / histogramdd (histogram.bin_ct, histogram.bins_tensor, _histogramdd_bin_edges,
// _histogramdd_from_bin_cts, _histogramdd_from_bin_tensors) composed of native ops, with the CPU's
// checks, messages and steps (aten Histogram.cpp): outer edges from `range` or the data's aminmax
// (one host read, as on the CPU), widened by 0.5 when equal; equal-width edges by the native
// linspace; each coordinate's bin by searchsorted over its dimension's edges (a value on the
// rightmost edge joins the last bin, values outside the edges and NaNs are dropped); counts or
// weights summed with index_add in the input dtype; density divides by the total and by each
// dimension's bin lengths. float32 and float64, as on the CPU.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/full.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <cmath>

namespace pytorch_ocl {

namespace {

void check_dtype(const at::Tensor& self) {
  check_ocl(self, "histogramdd", "self");
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble,
                              "\"histogramdd\" not implemented for '", c10::toString(self.scalar_type()), "'");
}

// The CPU's histogramdd_check_inputs, for input [..., N] and N edge sequences.
void check_inputs(const at::Tensor& input, at::TensorList bins, const std::optional<at::Tensor>& weight) {
  TORCH_CHECK(input.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions, but got ",
              input.dim());
  int64_t N = input.size(-1);
  TORCH_CHECK(static_cast<int64_t>(bins.size()) == N, "torch.histogramdd: expected ", N,
              " sequences of bin edges for a ", N, "-dimensional histogram but got ", bins.size());
  for (int64_t d = 0; d < N; ++d) {
    check_ocl(bins[d], "histogramdd", "bins");
    TORCH_CHECK(input.dtype() == bins[d].dtype(), "torch.histogramdd: input tensor and bins tensors should",
                " have the same dtype, but got input with dtype ", input.dtype(), " and bins for dimension ", d,
                " with dtype ", bins[d].dtype());
    TORCH_CHECK(bins[d].dim() == 1, "torch.histogramdd: bins tensor should have one dimension,", " but got ",
                bins[d].dim(), " dimensions in the bins tensor for dimension ", d);
    TORCH_CHECK(bins[d].numel() > 0, "torch.histogramdd: bins tensor should have at least 1 element,", " but got ",
                bins[d].numel(), " elements in the bins tensor for dimension ", d);
  }
  if (weight.has_value() && weight->defined()) {
    check_ocl(*weight, "histogramdd", "weight");
    TORCH_CHECK(input.dtype() == weight->dtype(), "torch.histogramdd: if weight tensor is provided,"
                " input tensor and weight tensor should have the same dtype, but got input(", input.dtype(), ")",
                ", and weight(", weight->dtype(), ")");
    auto in_sizes = input.sizes().vec();
    in_sizes.pop_back();
    auto w_sizes = weight->sizes().vec();
    if (w_sizes.empty()) w_sizes = {1};
    TORCH_CHECK(in_sizes == w_sizes, "torch.histogramdd: if weight tensor is provided it should have"
                " the same shape as the input tensor excluding its innermost dimension, but got input with shape ",
                input.sizes(), " and weight with shape ", weight->sizes());
  }
}

// The histogram of the M points self2 [M, N] over the given edges.
at::Tensor histogram_core(const at::Tensor& self2, at::TensorList edges, const std::optional<at::Tensor>& weight,
                          bool density) {
  int64_t M = self2.size(0), N = self2.size(1);
  std::vector<int64_t> shape;
  int64_t total = 1;
  for (int64_t d = 0; d < N; ++d) {
    shape.push_back(edges[d].numel() - 1);
    total *= shape.back();
  }
  at::Tensor hist = at::zeros({total + 1}, self2.options());  // + a sink for dropped points
  if (M > 0 && total > 0) {
    at::Tensor flat = at::zeros({M}, self2.options().dtype(at::kLong));
    at::Tensor keep = at::ones({M}, self2.options().dtype(at::kBool));
    int64_t stride = total;
    for (int64_t d = 0; d < N; ++d) {
      stride /= shape[d];
      at::Tensor e = edges[d].contiguous(), x = self2.select(1, d).contiguous();
      at::Tensor bin = (at::searchsorted(e, x, false, true) - 1).clamp(0, shape[d] - 1);
      keep = keep.logical_and(x >= e.narrow(0, 0, 1)).logical_and(x <= e.narrow(0, shape[d], 1));
      flat = flat + bin * stride;
    }
    flat = at::where(keep, flat, at::full({}, total, flat.options()));
    at::Tensor w = weight.has_value() && weight->defined() ? weight->reshape({M}).contiguous()
                                                           : at::ones({M}, self2.options());
    hist = hist.index_add(0, flat, w);
  }
  hist = hist.narrow(0, 0, total).reshape(shape).contiguous();
  if (density) {
    hist = hist / hist.sum();
    for (int64_t d = 0; d < N; ++d) {
      std::vector<int64_t> view(N, 1);
      view[d] = shape[d];
      at::Tensor e = edges[d];
      hist = hist / (e.narrow(0, 1, shape[d]) - e.narrow(0, 0, shape[d])).reshape(view);
    }
  }
  return hist;
}

std::vector<at::Tensor> bin_edges(const at::Tensor& self, at::IntArrayRef bin_ct,
                                  std::optional<at::ArrayRef<double>> range) {
  check_dtype(self);
  TORCH_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 dimensions");
  int64_t N = self.size(-1);
  TORCH_CHECK(N == static_cast<int64_t>(bin_ct.size()),
              "histogramdd: The size of bins must be equal to the innermost dimension of the input.");
  at::Tensor x = self.reshape({-1, N});
  std::vector<double> lo(N, 0.), hi(N, 1.);
  if (range.has_value()) {
    TORCH_CHECK(static_cast<int64_t>(range->size()) == 2 * N, "torch.histogramdd: for a ", N,
                "-dimensional histogram", " range should have ", 2 * N, " elements, but got ", range->size());
    for (int64_t d = 0; d < N; ++d) lo[d] = (*range)[2 * d], hi[d] = (*range)[2 * d + 1];
  } else if (x.numel() > 0) {
    auto mm = at::aminmax(x, 0);
    at::Tensor both = at::stack({std::get<0>(mm), std::get<1>(mm)}).to(at::kDouble).cpu();
    for (int64_t d = 0; d < N; ++d) lo[d] = both[0][d].item<double>(), hi[d] = both[1][d].item<double>();
  }
  std::vector<at::Tensor> edges;
  for (int64_t d = 0; d < N; ++d) {
    TORCH_CHECK(std::isfinite(lo[d]) && std::isfinite(hi[d]), "torch.histogramdd: dimension ", d, "'s range [",
                lo[d], ", ", hi[d], "] is not finite");
    TORCH_CHECK(lo[d] <= hi[d], "torch.histogramdd: min should not exceed max, but got", " min ", lo[d], " max ",
                hi[d], " for dimension ", d);
    if (lo[d] == hi[d]) lo[d] -= 0.5, hi[d] += 0.5;
    TORCH_CHECK(bin_ct[d] > 0, "torch.histogram(): bins must be > 0, but got ", bin_ct[d], " for dimension ", d);
    edges.push_back(at::linspace(lo[d], hi[d], bin_ct[d] + 1, self.options()));
  }
  return edges;
}

std::vector<at::Tensor> histogramdd_bin_edges(const at::Tensor& self, at::IntArrayRef bins,
                                              std::optional<at::ArrayRef<double>> range,
                                              const std::optional<at::Tensor>& weight, bool density) {
  c10::DeviceGuard guard(self.device());
  return bin_edges(self, bins, range);
}

at::Tensor histogramdd_from_bin_cts(const at::Tensor& self, at::IntArrayRef bins,
                                    std::optional<at::ArrayRef<double>> range, const std::optional<at::Tensor>& weight,
                                    bool density) {
  c10::DeviceGuard guard(self.device());
  std::vector<at::Tensor> edges = bin_edges(self, bins, range);
  check_inputs(self, edges, weight);
  return histogram_core(self.reshape({-1, self.size(-1)}), edges, weight, density);
}

at::Tensor histogramdd_from_bin_tensors(const at::Tensor& self, at::TensorList bins,
                                        const std::optional<at::Tensor>& weight, bool density) {
  check_dtype(self);
  check_inputs(self, bins, weight);
  c10::DeviceGuard guard(self.device());
  return histogram_core(self.reshape({-1, self.size(-1)}), bins, weight, density);
}

std::optional<at::Tensor> flat_weight(const std::optional<at::Tensor>& weight) {
  if (!weight.has_value() || !weight->defined()) return weight;
  return weight->reshape({weight->numel()});
}

std::tuple<at::Tensor, at::Tensor> histogram_bin_ct(const at::Tensor& self, int64_t bins,
                                                    std::optional<at::ArrayRef<double>> range,
                                                    const std::optional<at::Tensor>& weight, bool density) {
  c10::DeviceGuard guard(self.device());
  at::Tensor x = self.reshape({self.numel(), 1});
  std::vector<at::Tensor> edges = bin_edges(x, {bins}, range);
  auto w = flat_weight(weight);
  check_inputs(x, edges, w);
  return {histogram_core(x, edges, w, density), edges[0]};
}

std::tuple<at::Tensor, at::Tensor> histogram_bins_tensor(const at::Tensor& self, const at::Tensor& bins,
                                                         const std::optional<at::Tensor>& weight, bool density) {
  check_dtype(self);
  c10::DeviceGuard guard(self.device());
  at::Tensor x = self.reshape({self.numel(), 1});
  auto w = flat_weight(weight);
  check_inputs(x, {bins}, w);
  return {histogram_core(x, {bins}, w, density), bins.contiguous().clone()};
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histogram.bin_ct", TORCH_FN(histogram_bin_ct));
  m.impl("histogram.bins_tensor", TORCH_FN(histogram_bins_tensor));
  m.impl("_histogramdd_bin_edges", TORCH_FN(histogramdd_bin_edges));
  m.impl("_histogramdd_from_bin_cts", TORCH_FN(histogramdd_from_bin_cts));
  m.impl("_histogramdd_from_bin_tensors", TORCH_FN(histogramdd_from_bin_tensors));
}

} // namespace pytorch_ocl
