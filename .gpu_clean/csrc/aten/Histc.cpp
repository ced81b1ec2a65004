// histc on the device: the CPU's steps (histogram_histc_out) in its order, so results and errors
// match: bins > 0, the outer edges (the data's aminmax when min == max, widened by 1 when still
// equal; they must be finite and increasing), hist's dtype, then one counting kernel
// (dl_index_histc: the CPU's linear binning in the input's arithmetic, uint atomics) into an int
// tensor that becomes hist. Counts are exact; the CPU accumulates in hist's dtype, so 16-bit
// counts above 2048 per bin can differ (the CPU's are rounded per thread).
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <dlprim/index.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>

namespace pytorch_ocl {

namespace {

// Elements per counting launch: uint counts and a 32-bit-safe global size.
constexpr uint64_t kChunk = uint64_t(1) << 30;

// An edge as the CPU's linspace(min, max, bins + 1) stores it: rounded to self's dtype.
double edge_in(c10::ScalarType t, double v) {
  switch (t) {
    case c10::kHalf: return static_cast<double>(c10::Half(static_cast<float>(v)));
    case c10::kBFloat16: return static_cast<double>(c10::BFloat16(static_cast<float>(v)));
    case c10::kFloat: return static_cast<double>(static_cast<float>(v));
    default: return v;
  }
}

at::Tensor& histc_out(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max,
                      at::Tensor& hist) {
  check_ocl(self, "histc", "self");
  TORCH_CHECK(bins > 0, "torch.histogram(): bins must be > 0, but got ", bins, " for dimension 0");
  double lo = min.to<double>(), hi = max.to<double>();
  c10::DeviceGuard guard(self.device());
  if (lo == hi && self.numel() > 0) {
    auto extrema = at::aminmax(self);
    lo = std::get<0>(extrema).item<double>();
    hi = std::get<1>(extrema).item<double>();
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  TORCH_CHECK(!(std::isinf(lo) || std::isinf(hi) || std::isnan(lo) || std::isnan(hi)), "torch.histc: range of [",
              lo, ", ", hi, "] is not finite");
  TORCH_CHECK(lo < hi, "torch.histc: max must be larger than min");
  c10::ScalarType t = self.scalar_type();
  TORCH_CHECK(hist.scalar_type() == t, "torch.histogram: input tensor and hist tensor should have the same dtype, "
              "but got input ", t, " and hist ", hist.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t), "\"histc_ocl\" not implemented for '", c10::toString(t), "'");
  at::native::resize_output(hist, {bins});
  if (self.numel() == 0) return hist.zero_();

  at::Tensor x = self.dim() <= dlprim::kMaxDims ? self : self.reshape({-1});
  dlprim::RowMajorShape shape;
  dlprim::StridedOperand op;
  shape.rank = static_cast<int>(x.dim());
  for (int d = 0; d < shape.rank; ++d) {
    shape.sizes[d] = x.size(d);
    op.strides[d] = x.stride(d);
  }
  BufferRef xb = buffer_of(x);
  op.dtype = to_dlprim(t, "histc");
  op.mem = xb.mem;
  op.offset = xb.offset / x.itemsize();
  int round16 = t == c10::kHalf ? 1 : (t == c10::kBFloat16 ? 2 : 0);
  at::Tensor counts = at::zeros({bins}, self.options().dtype(c10::kInt));
  BufferRef cb = buffer_of(counts);
  int device = self.device().index();
  cl_command_queue q = current_queue(device);
  uint64_t n = static_cast<uint64_t>(x.numel());
  bool chunked = n > kChunk;  // counts of each chunk are folded into hist (exact up to 2^30 a chunk)
  if (chunked) hist.zero_();
  for (uint64_t start = 0; start < n; start += kChunk) {
    if (start > 0) counts.zero_();
    OCL_DLPRIM_CALL("histc", dlprim::index_histc(context(device), q, shape, op, start, std::min(kChunk, n - start),
                                                 edge_in(t, lo), edge_in(t, hi), bins, round16,
                                                 {cb.mem, cb.offset / 4}));
    note_enqueued(q);
    if (chunked) hist.add_(counts);
  }
  if (!chunked) hist.copy_(counts);
  return hist;
}

at::Tensor histc(const at::Tensor& self, int64_t bins, const c10::Scalar& min, const c10::Scalar& max) {
  at::Tensor hist = at::empty({0}, self.options());
  return histc_out(self, bins, min, max, hist);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("histc", TORCH_FN(histc));
  m.impl("histc.out", TORCH_FN(histc_out));
}

} // namespace pytorch_ocl
