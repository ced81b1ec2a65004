#include <dlprim/lstm.h>

namespace dlprim {

namespace {

// lstm.cl's group: 16 batch lanes (two rows each) x 4 hidden units.
constexpr size_t kLanes = 16, kRows = 32, kUnits = 4;

void launch(cl_command_queue q, cl_kernel k, int batch, int hidden, const char* label) {
  const size_t global[2] = {(size_t(batch) + kRows - 1) / kRows * kLanes, (size_t(hidden) + kUnits - 1) / kUnits * kUnits};
  const size_t local[2] = {kLanes, kUnits};
  launch_nd(q, k, 2, global, local, label);
}

// An absent operand: a valid buffer that the kernel never reads (its flag is 0).
KernelArgs& add_opt(KernelArgs& args, const Buffer& b, const Buffer& stand_in) {
  const bool has = b.mem != nullptr;
  return args.add(has ? b.mem : stand_in.mem).add<cl_ulong>(has ? b.offset : 0).add<cl_int>(has ? 1 : 0);
}

} // namespace

bool lstm_step_supported(const Context& ctx) {
  // The largest local footprint: the float64 forward, (16 + 32) rows of 17 double4 vectors.
  return ctx.info().max_work_group_size >= kLanes * kUnits && ctx.info().local_mem_size >= 48 * 17 * 32;
}

void lstm_step_forward(const Context& ctx, cl_command_queue q, DType t, const LstmStepForward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "lstm", t, "lstm_step_fwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  for (const Buffer* b : {&a.w, &a.gates, &a.h, &a.c, &a.y, &a.cy}) args.add(b->mem).add<cl_ulong>(b->offset);
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden);
  launch(q, k.kernel, a.batch, a.hidden, "lstm_step_fwd");
}

void lstm_step_backward(const Context& ctx, cl_command_queue q, DType t, const LstmStepBackward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "lstm", t, "lstm_step_bwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  add_opt(args, a.dg_next, a.w);
  add_opt(args, a.dh_add, a.w).add<cl_ulong>(a.dh_add_ld);
  for (const Buffer* b : {&a.gates, &a.cy, &a.cx}) args.add(b->mem).add<cl_ulong>(b->offset);
  add_opt(args, a.dc_in, a.w);
  for (const Buffer* b : {&a.dg, &a.dc}) args.add(b->mem).add<cl_ulong>(b->offset);
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden);
  launch(q, k.kernel, a.batch, a.hidden, "lstm_step_bwd");
}

} // namespace dlprim
