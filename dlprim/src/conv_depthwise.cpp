// Depthwise convolution (one input channel per group): direct kernels, no GEMM.
// conv_depthwise.cl is built per kernel size / width stride / width dilation with several outputs
// per work-item, and the work mapping that keeps a warp's loads contiguous for the tensor's layout
// (channels-last: consecutive channels; NCHW: consecutive columns). The same kernels serve CPU
// devices: unrolled taps and shared input rows beat one element per work-item there too (PoCL,
// 32x96x28x28 3x3: forward 43 -> 13 ms, input gradient 69 -> 14 ms).
#include <dlprim/env.h>
#include <dlprim/embedded.h>
#include <dlprim/rows.h>

#include "conv_internal.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

namespace dlprim {
namespace detail {

namespace {

// Work mapping and outputs per work-item of the GPU kernels.
struct DwVariant {
  bool chan_fast = false;
  int vw = 1;
};

// PYTORCH_OCL_DW_VW overrides the outputs per work-item (benchmarks compare them). Measured:
// on an H200 4 beats 2 and 1 from 112 columns down to 7; on PoCL (2 cores) 8 beats 4 by 1.2-1.6x
// (16 loses on the input gradient).
int vw_for(const Context& ctx, int64_t width) {
  if (const long n = env_int("PYTORCH_OCL_DW_VW", 1, 16, 0)) {
    if (n & (n - 1)) throw Error("PYTORCH_OCL_DW_VW: expected 1, 2, 4, 8 or 16, got " + std::to_string(n));
    return static_cast<int>(n);
  }
  int vw = cpu_mapping(ctx) ? 8 : 4;
  while (vw > 1 && vw > width) vw /= 2;
  return vw;
}

// Work-items of one launch stay below 2^31 (32-bit index math in the kernels): whole images per launch.
int64_t images_per_launch(uint64_t items_per_image) {
  return static_cast<int64_t>(std::max<uint64_t>(1, ((1ull << 31) - 1) / std::max<uint64_t>(items_per_image, 1)));
}

ConvTensor shifted(const ConvTensor& t, int64_t b0) {
  ConvTensor r = t;
  r.offset += static_cast<uint64_t>(b0 * t.sn);
  return r;
}

LockedKernel& dw_kernel(const Context& ctx, DType dtype, const ConvShape& s, const DwVariant& v, const char* name) {
  std::ostringstream defs;
  defs << "#define DKH " << s.KH << "\n#define DKW " << s.KW << "\n#define DSW " << s.sw << "\n#define DDW " << s.dw
       << "\n#define VW " << v.vw << "\n#define CHAN_FAST " << (v.chan_fast ? 1 : 0) << "\n";
  LockedKernel& slot = kernel_slot(ctx, std::string("dw|") + dtype_name(dtype) + "|" + name + "|" + defs.str());
  std::lock_guard<std::mutex> lock(slot.m);
  if (!slot.k)
    slot.k = create_kernel(ctx.program(gemm_program_head(dtype) + defs.str() + kernel_source("conv_depthwise")), name);
  return slot;
}

void add_dw_geometry(KernelArgs& a, const ConvShape& s) {
  a.add<cl_int>(static_cast<int>(s.K / s.groups)).add<cl_int>(static_cast<int>(s.H)).add<cl_int>(static_cast<int>(s.W));
  a.add<cl_int>(static_cast<int>(s.OH)).add<cl_int>(static_cast<int>(s.OW)).add<cl_int>(static_cast<int>(s.sh));
  a.add<cl_int>(static_cast<int>(s.ph)).add<cl_int>(static_cast<int>(s.pw)).add<cl_int>(static_cast<int>(s.dh));
}

// The weight gradient on GPUs: channels-last gradients give one work-item per (channel, slice of
// output rows), contiguous in channels; NCHW gradients one work-group per (channel, slice), its
// items walking the columns. Slices keep the device busy when few channels meet many positions;
// each slice's sums go to the workspace and conv_dw_weight_sum adds them in order.
struct WgradPlan {
  bool items = false;
  size_t local = 64;
  int64_t rows_per = 1, slices = 1;
  uint64_t workspace = 0;
};

WgradPlan wgrad_plan(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& dy) {
  WgradPlan p;
  p.items = dy.sc == 1 && s.K > 1;
  int64_t rows = s.N * s.OH;
  uint64_t cus = std::max<uint32_t>(ctx.info().compute_units, 1);
  uint64_t taps = static_cast<uint64_t>(s.KH) * s.KW;
  uint64_t acc_bytes = dtype_size(compute_dtype(dtype));
  // Partial sums stay under 16 MiB.
  uint64_t max_slices = std::max<uint64_t>(1, (16ull << 20) / (static_cast<uint64_t>(s.K) * taps * acc_bytes));
  uint64_t want;
  if (p.items) {
    want = (cus * 2048 + s.K - 1) / s.K;  // work-items
  } else {
    while (p.local > 1 && p.local * taps * acc_bytes > std::min<uint64_t>(ctx.info().local_mem_size / 2, 32768))
      p.local /= 2;
    p.local = std::min<size_t>(p.local, ctx.work_group_size(p.local));
    want = (cus * 32 + s.K - 1) / s.K;  // work-groups: long serial sums need many in flight
    // At least 8 positions per item.
    want = std::min<uint64_t>(want, std::max<uint64_t>(1, static_cast<uint64_t>(rows) * s.OW / (p.local * 8)));
  }
  uint64_t slices = std::max<uint64_t>(1, std::min<uint64_t>({want, max_slices, static_cast<uint64_t>(rows)}));
  p.rows_per = (rows + static_cast<int64_t>(slices) - 1) / static_cast<int64_t>(slices);
  p.slices = (rows + p.rows_per - 1) / p.rows_per;
  if (p.slices > 1) p.workspace = static_cast<uint64_t>(p.slices) * s.K * taps * acc_bytes;
  return p;
}

uint64_t forward_items_per_image(const ConvShape& s, int vw) {
  return static_cast<uint64_t>(s.K) * s.OH * ((s.OW + vw - 1) / vw);
}

uint64_t backward_data_items_per_image(const ConvShape& s, int vw) {
  return static_cast<uint64_t>(s.C) * s.H * ((s.W + vw - 1) / vw);
}

// The forward's variant: the weight gradient uses it too (VW and CHAN_FAST do not change its
// kernels), so that both come from one program build.
DwVariant forward_variant(const Context& ctx, const ConvShape& s, const ConvTensor& y) {
  return DwVariant{y.sc == 1 && s.K > 1, vw_for(ctx, s.OW)};
}

// Launches `k` over N images in chunks under 2^31 work-items; add_args(a, items, b0) sets the
// arguments of the chunk starting at image b0.
template <class AddArgs>
void launch_image_chunks(const Context& ctx, cl_command_queue q, LockedKernel& k, uint64_t per_image, int64_t N,
                         AddArgs add_args) {
  int64_t chunk = images_per_launch(per_image);
  std::lock_guard<std::mutex> lock(k.m);
  for (int64_t b0 = 0; b0 < N; b0 += chunk) {
    uint64_t items = per_image * static_cast<uint64_t>(std::min(chunk, N - b0));
    KernelArgs a(k.k);
    a.add<cl_uint>(static_cast<cl_uint>(items));
    add_args(a, b0);
    launch_1d(q, k.k, items, ctx.work_group_size(256));
  }
}

} // namespace

uint64_t depthwise_weight_workspace(const Context& ctx, const ConvShape& s, DType dtype, const ConvTensor& dy) {
  return wgrad_plan(ctx, s, dtype, dy).workspace;
}

void depthwise_forward(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype, const ConvTensor& x,
                       const ConvBuffer& w, const ConvBuffer& bias, const ConvTensor& y) {
  DwVariant v = forward_variant(ctx, s, y);
  launch_image_chunks(ctx, q, dw_kernel(ctx, dtype, s, v, "dw_forward"), forward_items_per_image(s, v.vw), s.N,
                      [&](KernelArgs& a, int64_t b0) {
                        a.add<cl_int>(static_cast<int>(s.K));
                        add_dw_geometry(a, s);
                        add_tensor(a, shifted(x, b0));
                        a.add(w.mem).add<cl_ulong>(w.offset).add(bias.mem ? bias.mem : w.mem).add<cl_ulong>(bias.offset);
                        a.add<cl_int>(bias.mem ? 1 : 0);
                        add_tensor(a, shifted(y, b0));
                      });
}

void depthwise_backward_data(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                             const ConvTensor& dy, const ConvBuffer& w, const ConvTensor& dx) {
  DwVariant v{dx.sc == 1 && s.C > 1, vw_for(ctx, s.W)};
  launch_image_chunks(ctx, q, dw_kernel(ctx, dtype, s, v, "dw_backward_data"), backward_data_items_per_image(s, v.vw),
                      s.N, [&](KernelArgs& a, int64_t b0) {
                        a.add<cl_int>(static_cast<int>(s.C));
                        add_dw_geometry(a, s);
                        add_tensor(a, shifted(dy, b0));
                        a.add(w.mem).add<cl_ulong>(w.offset);
                        add_tensor(a, shifted(dx, b0));
                      });
}

void depthwise_backward_weight(const Context& ctx, cl_command_queue q, const ConvShape& s, DType dtype,
                               const ConvTensor& x, const ConvTensor& dy, const ConvBuffer& dw, cl_mem ws,
                               uint64_t ws_offset) {
  uint64_t E = static_cast<uint64_t>(s.K) * s.KH * s.KW;
  WgradPlan p = wgrad_plan(ctx, s, dtype, dy);
  uint64_t part_off = ws_offset / dtype_size(compute_dtype(dtype));
  {
    LockedKernel& k = dw_kernel(ctx, dtype, s, forward_variant(ctx, s, dy),
                                p.items ? "dw_backward_weight_items" : "dw_backward_weight_groups");
    std::lock_guard<std::mutex> lock(k.m);
    KernelArgs a(k.k);
    uint64_t items = static_cast<uint64_t>(s.K) * p.slices;
    if (p.items) a.add<cl_uint>(static_cast<cl_uint>(items));
    a.add<cl_int>(static_cast<int>(s.K)).add<cl_int>(static_cast<int>(p.rows_per)).add<cl_int>(static_cast<int>(p.slices));
    add_dw_geometry(a, s);
    a.add<cl_int>(static_cast<int>(s.N));
    add_tensor(a, x);
    add_tensor(a, dy);
    a.add(dw.mem).add<cl_ulong>(dw.offset).add(p.slices > 1 ? ws : dw.mem).add<cl_ulong>(part_off);
    if (p.items) {
      launch_1d(q, k.k, items, ctx.work_group_size(256));
    } else {
      a.add_local(p.local * s.KH * s.KW * dtype_size(compute_dtype(dtype)));
      launch_1d(q, k.k, items * p.local, p.local);
    }
  }
  if (p.slices > 1) {
    LockedKernel& k = conv_kernel(ctx, dtype, "conv_dw_weight_sum");
    std::lock_guard<std::mutex> lock(k.m);
    KernelArgs a(k.k);
    a.add<cl_int>(static_cast<int>(E)).add<cl_int>(static_cast<int>(p.slices));
    a.add(ws).add<cl_ulong>(part_off);
    a.add(dw.mem).add<cl_ulong>(dw.offset);
    launch_1d(q, k.k, E, ctx.work_group_size(256));
  }
}

} // namespace detail
} // namespace dlprim
