#include <dlprim/norm.h>
#include <dlprim/typed_kernels.h>

namespace dlprim {

namespace {

size_t group_size(const Context& ctx, uint64_t N) {
  size_t l = 1;
  while (l * 2 <= ctx.work_group_size(256) && l < N) l *= 2;
  return l;
}

void add_acc(KernelArgs& a, DType t, double v) {
  if (t == DType::F64)
    a.add<cl_double>(v);
  else
    a.add<cl_float>(static_cast<float>(v));
}

} // namespace

void layer_norm_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t rows, uint64_t N, double eps,
                        Buffer x, Buffer y, Buffer w, Buffer b, Buffer mean, Buffer rstd) {
  if (rows == 0) return;
  TypedKernel k = typed_kernel(ctx, "layer_norm", t, "layer_norm_fwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  size_t L = group_size(ctx, N);
  KernelArgs a(k.kernel);
  a.add(x.mem).add<cl_ulong>(x.offset).add(y.mem).add<cl_ulong>(y.offset);
  a.add(w.mem ? w.mem : x.mem).add<cl_ulong>(w.offset).add(b.mem ? b.mem : x.mem).add<cl_ulong>(b.offset);
  a.add(mean.mem).add<cl_ulong>(mean.offset).add(rstd.mem).add<cl_ulong>(rstd.offset).add<cl_ulong>(N);
  add_acc(a, t, eps);
  a.add<cl_int>(w.mem != nullptr).add<cl_int>(b.mem != nullptr).add_local(L * dtype_size(compute_dtype(t)));
  launch_1d(q, k.kernel, rows * L, L, "layer_norm");
}

void layer_norm_backward_input(const Context& ctx, cl_command_queue q, DType t, uint64_t rows, uint64_t N,
                               Buffer grad, Buffer x, Buffer w, Buffer mean, Buffer rstd, Buffer dx) {
  if (rows == 0) return;
  TypedKernel k = typed_kernel(ctx, "layer_norm", t, "layer_norm_bwd_input");
  std::lock_guard<std::mutex> lock(*k.mutex);
  size_t L = group_size(ctx, N);
  KernelArgs a(k.kernel);
  a.add(grad.mem).add<cl_ulong>(grad.offset).add(x.mem).add<cl_ulong>(x.offset);
  a.add(w.mem ? w.mem : x.mem).add<cl_ulong>(w.offset).add(mean.mem).add<cl_ulong>(mean.offset);
  a.add(rstd.mem).add<cl_ulong>(rstd.offset);
  a.add(dx.mem).add<cl_ulong>(dx.offset).add<cl_ulong>(N).add<cl_int>(w.mem != nullptr);
  a.add_local(L * dtype_size(compute_dtype(t)));
  launch_1d(q, k.kernel, rows * L, L, "layer_norm_backward");
}

} // namespace dlprim
