#include <dlprim/pad.h>

namespace dlprim {

namespace {

void run(const Context& ctx, cl_command_queue q, DType t, const char* name, const char* label, Buffer a, Buffer b,
         uint64_t total, const PadGeometry& g) {
  if (total == 0) return;
  TypedKernel k = typed_kernel(ctx, "pad", t, name);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.mem).add<cl_ulong>(a.offset).add(b.mem).add<cl_ulong>(b.offset).add<cl_ulong>(total);
  args.add(cl_int4{{g.in[0], g.in[1], g.in[2], 1}}).add(cl_int4{{g.out[0], g.out[1], g.out[2], 1}});
  args.add(cl_int4{{g.before[0], g.before[1], g.before[2], 0}}).add<cl_int>(int(g.mode));
  launch_1d(q, k.kernel, total, ctx.work_group_size(256), label);
}

uint64_t count(uint64_t planes, const int* s) { return planes * uint64_t(s[0]) * s[1] * s[2]; }

} // namespace

void pad_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PadGeometry& g, Buffer x,
                 Buffer y) {
  run(ctx, q, t, "pad_fwd", g.mode == PadMode::Reflect ? "reflection_pad" : "replication_pad", x, y,
      count(planes, g.out), g);
}

void pad_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PadGeometry& g,
                  Buffer grad_y, Buffer grad_x) {
  run(ctx, q, t, "pad_bwd", g.mode == PadMode::Reflect ? "reflection_pad_backward" : "replication_pad_backward",
      grad_y, grad_x, count(planes, g.in), g);
}

} // namespace dlprim
