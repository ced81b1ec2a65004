#include <dlprim/pool.h>

namespace dlprim {

namespace {

// Launches `name` over `total` items with buffers first, then total and the geometry,
// then `extra` ints (avg options or adaptive sizes).
void run(const Context& ctx, cl_command_queue q, DType t, const char* name, const char* label,
         std::initializer_list<Buffer> buffers, uint64_t total, const PoolGeometry* g,
         std::initializer_list<int> extra) {
  if (total == 0) return;
  TypedKernel k = typed_kernel(ctx, "pool", t, name);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  for (const Buffer& b : buffers) a.add(b.mem).add<cl_ulong>(b.offset);
  a.add<cl_ulong>(total);
  if (g) a.add(*g);
  for (int v : extra) a.add<cl_int>(v);
  launch_1d(q, k.kernel, total, ctx.work_group_size(256), label);
}

uint64_t out_total(uint64_t planes, const PoolGeometry& g) { return planes * g.OH * g.OW; }
uint64_t in_total(uint64_t planes, const PoolGeometry& g) { return planes * g.H * g.W; }

} // namespace

void max_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      Buffer x, Buffer y, Buffer indices) {
  run(ctx, q, t, "max_pool_fwd", "max_pool2d", {x, y, indices}, out_total(planes, g), &g, {});
}

void max_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       Buffer grad_y, Buffer indices, Buffer grad_x) {
  run(ctx, q, t, "max_pool_bwd", "max_pool2d_backward", {grad_y, indices, grad_x}, in_total(planes, g), &g, {});
}

void avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      bool count_include_pad, int divisor_override, Buffer x, Buffer y) {
  run(ctx, q, t, "avg_pool_fwd", "avg_pool2d", {x, y}, out_total(planes, g), &g, {count_include_pad, divisor_override});
}

void avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       bool count_include_pad, int divisor_override, Buffer grad_y, Buffer grad_x) {
  run(ctx, q, t, "avg_pool_bwd", "avg_pool2d_backward", {grad_y, grad_x}, in_total(planes, g), &g,
      {count_include_pad, divisor_override});
}

void adaptive_avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes,
                               const PoolGeometry& g, Buffer x, Buffer y) {
  run(ctx, q, t, "adaptive_avg_fwd", "adaptive_avg_pool2d", {x, y}, out_total(planes, g), nullptr,
      {g.H, g.W, g.OH, g.OW});
}

void adaptive_avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes,
                                const PoolGeometry& g, Buffer grad_y, Buffer grad_x) {
  run(ctx, q, t, "adaptive_avg_bwd", "adaptive_avg_pool2d_backward", {grad_y, grad_x}, in_total(planes, g), nullptr,
      {g.H, g.W, g.OH, g.OW});
}

} // namespace dlprim
