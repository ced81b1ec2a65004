#include <dlprim/upsample.h>

namespace dlprim {

namespace {

void run(const Context& ctx, cl_command_queue q, DType t, const char* name, const char* label, Buffer a, Buffer b,
         uint64_t total, const UpsampleGeometry& g) {
  if (total == 0) return;
  TypedKernel k = typed_kernel(ctx, "upsample", t, name);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.mem).add<cl_ulong>(a.offset).add(b.mem).add<cl_ulong>(b.offset).add<cl_ulong>(total);
  args.add(cl_int4{{g.in[0], g.in[1], g.in[2], 1}}).add(cl_int4{{g.out[0], g.out[1], g.out[2], 1}});
  // Nearest indices are computed in float on the CPU whatever the dtype; linear/cubic in the
  // accumulate type (double for float64).
  args.add(cl_float4{{float(g.scale[0]), float(g.scale[1]), float(g.scale[2]), 0.f}});
  for (double s : g.scale) {
    if (t == DType::F64) args.add<cl_double>(s);
    else args.add<cl_float>(float(s));
  }
  args.add(cl_int2{{int(g.mode), g.align_corners ? 1 : 0}});
  launch_1d(q, k.kernel, total, ctx.work_group_size(256), label);
}

uint64_t count(uint64_t planes, const int* s) { return planes * uint64_t(s[0]) * s[1] * s[2]; }

} // namespace

void upsample_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const UpsampleGeometry& g,
                      Buffer x, Buffer y) {
  run(ctx, q, t, int(g.mode) >= 4 ? "upsample_aa_fwd" : "upsample_fwd", "upsample", x, y, count(planes, g.out), g);
}

void upsample_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const UpsampleGeometry& g,
                       Buffer grad_y, Buffer grad_x) {
  run(ctx, q, t, int(g.mode) >= 4 ? "upsample_aa_bwd" : "upsample_bwd", "upsample_backward", grad_y, grad_x, count(planes, g.in), g);
}

} // namespace dlprim
