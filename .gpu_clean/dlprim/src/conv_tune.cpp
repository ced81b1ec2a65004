// Scratch tensors and wall-clock timing for the convolution path choices (implicit GEMM tile
// configs, im2col, Winograd), and the shape buckets of their autotuning classes.
#include "conv_internal.h"

#include <algorithm>
#include <chrono>

namespace dlprim {
namespace detail {

std::string shape_bucket(int64_t v) {
  int b = 0;
  for (int64_t lim = 16; v > lim && b < 6; lim *= 4) ++b;
  return std::to_string(b);
}

std::string batch_bucket(int64_t z) {
  int b = 0;
  for (int64_t lim = 1; z > lim && b < 5; lim *= 4) ++b;  // 1, 2-4, 5-16, 17-64, 65-256, more
  return std::to_string(b);
}

ConvScratch::ConvScratch(const Context& ctx, const ConvShape& s, DType dtype) : ctx_(ctx), s_(s), dtype_(dtype) {
  // The timed batch: the layer's own up to a cap (tile choices depend on how many
  // work-groups the batch makes), fewer where the tensors would be large; CPUs time a couple of
  // images only, to keep the choice cheap.
  uint64_t per_image = static_cast<uint64_t>(s.C * s.H * s.W + s.K * s.OH * s.OW) * dtype_size(dtype);
  int64_t cap = ctx.info().is_cpu ? 2 : 64;
  if (per_image) cap = std::min<int64_t>(cap, std::max<int64_t>(1, static_cast<int64_t>((512ull << 20) / per_image)));
  s_.N = std::max<int64_t>(1, std::min<int64_t>(s.N, cap));
}

ConvScratch::~ConvScratch() {
  for (cl_mem m : {x_, w_, y_, ws_})
    if (m) clReleaseMemObject(m);
  if (q_) clReleaseCommandQueue(q_);
}

cl_mem ConvScratch::alloc(uint64_t bytes) {
  cl_int err = CL_SUCCESS;
  uint64_t n = std::max<uint64_t>(bytes, 16);
  cl_mem m = clCreateBuffer(ctx_.context(), CL_MEM_READ_WRITE, n, nullptr, &err);
  DLPRIM_CL_CHECK(err);
  float zero = 0;
  DLPRIM_CL_CHECK(clEnqueueFillBuffer(q_, m, &zero, sizeof(zero), 0, n / 4 * 4, 0, nullptr, nullptr));
  return m;
}

void ConvScratch::setup() {
  if (q_) return;
  q_ = ctx_.create_queue();
  size_t es = dtype_size(dtype_);
  x_ = alloc(static_cast<uint64_t>(s_.N) * s_.C * s_.H * s_.W * es);
  w_ = alloc(static_cast<uint64_t>(s_.K) * (s_.C / s_.groups) * s_.KH * s_.KW * es);
  y_ = alloc(static_cast<uint64_t>(s_.N) * s_.K * s_.OH * s_.OW * es);
}

ConvTensor ConvScratch::x() {
  setup();
  return {x_, 0, s_.C * s_.H * s_.W, s_.H * s_.W, s_.W, 1};
}

ConvTensor ConvScratch::y() {
  setup();
  return {y_, 0, s_.K * s_.OH * s_.OW, s_.OH * s_.OW, s_.OW, 1};
}

ConvBuffer ConvScratch::w() {
  setup();
  return {w_, 0};
}

double ConvScratch::time_us(uint64_t ws_bytes, const std::function<void(cl_command_queue, cl_mem)>& run) {
  setup();
  if (ws_bytes > ws_bytes_) {
    if (ws_) clReleaseMemObject(ws_);
    ws_ = nullptr;
    ws_ = alloc(ws_bytes);
    ws_bytes_ = ws_bytes;
  }
  run(q_, ws_);  // warm-up (builds programs)
  DLPRIM_CL_CHECK(clFinish(q_));
  double best = -1;
  for (int r = 0; r < 3; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    run(q_, ws_);
    DLPRIM_CL_CHECK(clFinish(q_));
    double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    best = best < 0 ? us : std::min(best, us);
  }
  return best;
}

} // namespace detail
} // namespace dlprim
