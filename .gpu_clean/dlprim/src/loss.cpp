#include <dlprim/loss.h>

namespace dlprim {

void nll_loss_per_sample(const Context& ctx, cl_command_queue q, DType t, NllShape s, Buffer x, Buffer target,
                         Buffer w, Buffer loss, Buffer weight_used, int64_t ignore_index) {
  uint64_t n = s.B * s.S;
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "nll_loss", t, "nll_per_sample");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(x.mem).add<cl_ulong>(x.offset).add(target.mem).add<cl_ulong>(target.offset);
  a.add(w.mem ? w.mem : x.mem).add<cl_ulong>(w.offset).add<cl_int>(w.mem != nullptr);
  a.add(loss.mem).add<cl_ulong>(loss.offset).add(weight_used.mem).add<cl_ulong>(weight_used.offset);
  a.add<cl_ulong>(n).add<cl_long>(static_cast<cl_long>(s.C)).add<cl_ulong>(s.S).add<cl_long>(ignore_index);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "nll_loss");
}

void nll_loss_backward(const Context& ctx, cl_command_queue q, DType t, NllShape s, Buffer grad, bool per_sample,
                       Buffer total_weight, Buffer target, Buffer w, Buffer grad_x, int64_t ignore_index) {
  uint64_t n = s.B * s.S;
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "nll_loss", t, "nll_backward");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(grad.mem).add<cl_ulong>(grad.offset).add<cl_int>(per_sample);
  a.add(total_weight.mem ? total_weight.mem : grad.mem).add<cl_ulong>(total_weight.offset);
  a.add<cl_int>(total_weight.mem != nullptr);
  a.add(target.mem).add<cl_ulong>(target.offset).add(w.mem ? w.mem : grad.mem).add<cl_ulong>(w.offset);
  a.add<cl_int>(w.mem != nullptr).add(grad_x.mem).add<cl_ulong>(grad_x.offset);
  a.add<cl_ulong>(n).add<cl_long>(static_cast<cl_long>(s.C)).add<cl_ulong>(s.S).add<cl_long>(ignore_index);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "nll_loss_backward");
}

} // namespace dlprim
