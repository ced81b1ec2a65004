// Host side of kernels/grid_sample.cl: one work-item per output location.
#include <dlprim/grid_sample.h>

namespace dlprim {

namespace {

cl_long8 strides(const GridOperand& o) { return cl_long8{{o.s[0], o.s[1], o.s[2], o.s[3], o.s[4], 0, 0, 0}}; }

uint64_t locations(const GridSampleShape& g) { return uint64_t(g.N) * g.OD * g.OH * g.OW; }

void add_shape(KernelArgs& a, const GridSampleShape& g) {
  a.add(cl_int8{{g.N, g.C, g.D, g.H, g.W, g.OD, g.OH, g.OW}});
  a.add(cl_int4{{g.dims, g.mode, g.pad, g.align_corners ? 1 : 0}});
}

} // namespace

void grid_sample_forward(const Context& ctx, cl_command_queue q, DType t, const GridSampleShape& g,
                         const GridOperand& x, const GridOperand& grid, const GridOperand& y) {
  uint64_t n = locations(g);
  if (n == 0 || g.C == 0) return;
  TypedKernel k = typed_kernel(ctx, "grid_sample", t, "dl_grid_sample_fwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n);
  add_shape(a, g);
  a.add(x.mem).add<cl_ulong>(x.offset).add(strides(x));
  a.add(grid.mem).add<cl_ulong>(grid.offset).add(strides(grid));
  a.add(y.mem).add<cl_ulong>(y.offset).add(strides(y));
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "grid_sample");
}

bool grid_sample_backward_supported(const Context& ctx, DType t) {
  return t != DType::F64 || ctx.info().has_extension("cl_khr_int64_base_atomics");
}

void grid_sample_backward(const Context& ctx, cl_command_queue q, DType t, const GridSampleShape& g, bool want_input,
                          bool want_grid, const GridOperand& grad_y, const GridOperand& x, const GridOperand& grid,
                          Buffer grad_input_acc, Buffer grad_grid) {
  uint64_t n = locations(g);
  if (n == 0 || (!want_input && !want_grid)) return;
  if (want_input && !grid_sample_backward_supported(ctx, t))
    throw Error("grid_sample backward: float64 needs cl_khr_int64_base_atomics, which device '" + ctx.info().name +
                "' lacks");
  TypedKernel k = typed_kernel(ctx, "grid_sample", t, "dl_grid_sample_bwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n);
  add_shape(a, g);
  a.add(cl_int2{{want_input ? 1 : 0, want_grid ? 1 : 0}});
  a.add(grad_y.mem).add<cl_ulong>(grad_y.offset).add(strides(grad_y));
  a.add(x.mem).add<cl_ulong>(x.offset).add(strides(x));
  a.add(grid.mem).add<cl_ulong>(grid.offset).add(strides(grid));
  // Unused outputs still need a valid buffer argument: the input's (never written).
  a.add(grad_input_acc.mem ? grad_input_acc.mem : x.mem).add<cl_ulong>(grad_input_acc.offset);
  a.add(grad_grid.mem ? grad_grid.mem : x.mem).add<cl_ulong>(grad_grid.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "grid_sample_backward");
}

} // namespace dlprim
