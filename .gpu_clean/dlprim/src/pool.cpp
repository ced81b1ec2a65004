#include <dlprim/pool.h>

namespace dlprim {

namespace {

// Argument tail after the buffers and the item count.
struct Tail {
  const PoolGeometry* geometry = nullptr;   // passed whole
  bool sizes = false;                       // adaptive: (D, H, W) and (OD, OH, OW) as int4
  std::initializer_list<int> ints;
  std::initializer_list<uint64_t> ulongs;
};

// Launches `name` over `total` items: buffers (mem, element offset) first, then total, then the tail.
void run(const Context& ctx, cl_command_queue q, DType t, const char* name, const char* label,
         std::initializer_list<Buffer> buffers, uint64_t total, const PoolGeometry& g, const Tail& tail) {
  if (total == 0) return;
  TypedKernel k = typed_kernel(ctx, "pool", t, name);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  for (const Buffer& b : buffers) a.add(b.mem).add<cl_ulong>(b.offset);
  a.add<cl_ulong>(total);
  if (tail.geometry) a.add(*tail.geometry);
  if (tail.sizes) a.add(cl_int4{{g.D, g.H, g.W, 1}}).add(cl_int4{{g.OD, g.OH, g.OW, 1}});
  for (int v : tail.ints) a.add<cl_int>(v);
  for (uint64_t v : tail.ulongs) a.add<cl_ulong>(v);
  launch_1d(q, k.kernel, total, ctx.work_group_size(256), label);
}

uint64_t out_total(uint64_t planes, const PoolGeometry& g) { return planes * g.OD * g.OH * g.OW; }
uint64_t in_total(uint64_t planes, const PoolGeometry& g) { return planes * g.D * g.H * g.W; }

} // namespace

void max_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      Buffer x, Buffer y, Buffer indices) {
  run(ctx, q, t, "max_pool_fwd", "max_pool", {x, y, indices}, out_total(planes, g), g, {&g});
}

void max_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       Buffer grad_y, Buffer indices, Buffer grad_x) {
  run(ctx, q, t, "max_pool_bwd", "max_pool_backward", {grad_y, indices, grad_x}, in_total(planes, g), g, {&g});
}

void avg_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                      bool count_include_pad, int divisor_override, Buffer x, Buffer y) {
  run(ctx, q, t, "avg_pool_fwd", "avg_pool", {x, y}, out_total(planes, g), g,
      {&g, false, {count_include_pad, divisor_override}});
}

void avg_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                       bool count_include_pad, int divisor_override, Buffer grad_y, Buffer grad_x) {
  run(ctx, q, t, "avg_pool_bwd", "avg_pool_backward", {grad_y, grad_x}, in_total(planes, g), g,
      {&g, false, {count_include_pad, divisor_override}});
}

void adaptive_pool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                           bool max, Buffer x, Buffer y, Buffer indices) {
  run(ctx, q, t, "adaptive_fwd", max ? "adaptive_max_pool" : "adaptive_avg_pool", {x, y, indices},
      out_total(planes, g), g, {nullptr, true, {max}});
}

void adaptive_pool_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PoolGeometry& g,
                            bool max, Buffer grad_y, Buffer indices, Buffer grad_x) {
  run(ctx, q, t, "adaptive_bwd", max ? "adaptive_max_pool_backward" : "adaptive_avg_pool_backward",
      {grad_y, indices, grad_x}, in_total(planes, g), g, {nullptr, true, {max}});
}

void max_unpool_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, uint64_t in_plane,
                        uint64_t out_plane, Buffer x, Buffer indices, Buffer y) {
  PoolGeometry unused{};
  run(ctx, q, t, "max_unpool_fwd", "max_unpool", {x, indices, y}, planes * in_plane, unused,
      {nullptr, false, {}, {in_plane, out_plane}});
}

} // namespace dlprim
