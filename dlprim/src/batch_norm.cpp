#include <dlprim/norm.h>
#include <dlprim/rows.h>

#include <algorithm>

namespace dlprim {

namespace {

size_t group_size(const Context& ctx) {
  size_t l = 1;
  while (l * 2 <= ctx.work_group_size(256)) l *= 2;
  return l;
}

void add_acc(KernelArgs& a, DType t, double v) {
  if (t == DType::F64)
    a.add<cl_double>(v);
  else
    a.add<cl_float>(static_cast<float>(v));
}

// A per-channel buffer argument (pointer + element offset); an absent optional one is
// replaced by `dummy`, which the kernel does not read.
void add_buf(KernelArgs& a, const Buffer& b, const Buffer& dummy) {
  const Buffer& u = b.mem ? b : dummy;
  a.add(u.mem).add<cl_ulong>(u.offset);
}

// The arguments bn_stats and bn_stats_finish end with: eps, momentum, the saved and running
// statistics (absent ones bound to save_mean) and whether running statistics are updated.
void add_stats_outputs(KernelArgs& a, DType t, double eps, double momentum, const Buffer& save_mean,
                       const Buffer& save_invstd, const Buffer& run_mean, const Buffer& run_var) {
  add_acc(a, t, eps);
  add_acc(a, t, momentum);
  add_buf(a, save_mean, save_mean);
  add_buf(a, save_invstd, save_mean);
  add_buf(a, run_mean, save_mean);
  add_buf(a, run_var, save_mean);
  a.add<cl_int>(run_mean.mem != nullptr);
}

// How the per-channel sums are cut: `slices` work-groups per channel, each over a chunk of the
// images and a chunk of the positions (the kernel's DL_BN_GEOMETRY). One work-group per channel
// leaves most of a GPU idle when there are few channels over many positions (resnet's 64-channel
// layers at 112x112: 64 groups streaming 400k values each at batch 32); slices of at least 16
// values per work item fix that. CPU devices: no slices.
struct Slices {
  uint64_t slices = 1, n_chunk = 0, i_chunk = 0, i_slices = 1, l0 = 1;
};

uint64_t pow2_at_least(uint64_t v, uint64_t cap) {
  uint64_t p = 1;
  while (p < v && p < cap) p *= 2;
  return p;
}

Slices slices_of(const Context& ctx, BatchNormShape s) {
  Slices r;
  uint64_t L = group_size(ctx);
  r.n_chunk = s.N;
  r.i_chunk = s.HW;
  uint64_t M = s.N * s.HW;
  uint64_t wanted = 8ull * std::max<uint32_t>(ctx.info().compute_units, 1);
  if (!cpu_mapping(ctx) && s.C > 0 && M > 0 && s.C < wanted) {
    uint64_t n = std::min<uint64_t>({(wanted + s.C - 1) / s.C, M / (L * 16), 256});
    if (n > 1) {
      uint64_t ps = std::min<uint64_t>(n, s.N);
      r.n_chunk = (s.N + ps - 1) / ps;
      ps = (s.N + r.n_chunk - 1) / r.n_chunk;
      uint64_t hs = std::min<uint64_t>((n + ps - 1) / ps, std::max<uint64_t>(1, r.n_chunk * s.HW / (L * 16)));
      r.i_chunk = (s.HW + hs - 1) / hs;
      r.i_slices = (s.HW + r.i_chunk - 1) / r.i_chunk;  // every slice non-empty
      r.slices = ps * r.i_slices;
    }
  }
  r.l0 = pow2_at_least(std::min(s.HW, r.i_chunk), L);
  return r;
}

void add_geometry(KernelArgs& a, BatchNormShape s, const Slices& sl) {
  a.add<cl_ulong>(s.N).add<cl_ulong>(s.C).add<cl_ulong>(s.HW).add<cl_ulong>(sl.n_chunk).add<cl_ulong>(sl.i_chunk);
  a.add<cl_ulong>(sl.i_slices).add<cl_ulong>(sl.l0);
}

// The elementwise passes' 2-D range: groups of l0 positions x L / l0 planes, each group over
// `chunk` positions of its planes; planes are cut into chunks only when there are too few
// groups otherwise (a batch of one large image).
struct PlaneLaunch {
  size_t global[2], local[2];
  uint64_t chunk;
};

PlaneLaunch plane_launch(const Context& ctx, BatchNormShape s) {
  uint64_t L = group_size(ctx), planes = s.N * s.C;
  uint64_t l0 = pow2_at_least(s.HW, L), l1 = L / l0;
  uint64_t groups = (planes + l1 - 1) / l1, split = 1;
  uint64_t wanted = 8ull * std::max<uint32_t>(ctx.info().compute_units, 1);
  if (!cpu_mapping(ctx) && groups < wanted)
    split = std::max<uint64_t>(1, std::min<uint64_t>((wanted + groups - 1) / groups, s.HW / (l0 * 4)));
  PlaneLaunch p;
  p.chunk = (s.HW + split - 1) / split;
  p.chunk = (p.chunk + l0 - 1) / l0 * l0;
  split = (s.HW + p.chunk - 1) / p.chunk;
  p.global[0] = l0 * split;
  p.global[1] = groups * l1;
  p.local[0] = l0;
  p.local[1] = l1;
  return p;
}

} // namespace

uint64_t batch_norm_workspace_bytes(const Context& ctx, DType t, BatchNormShape s) {
  Slices sl = slices_of(ctx, s);
  return sl.slices > 1 ? sl.slices * s.C * 2 * dtype_size(compute_dtype(t)) : 0;
}

void batch_norm_stats(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer x, double eps,
                      double momentum, Buffer save_mean, Buffer save_invstd, Buffer run_mean, Buffer run_var,
                      Buffer ws) {
  if (s.C == 0) return;
  Slices sl = slices_of(ctx, s);
  size_t L = group_size(ctx);
  size_t moments_local = 3 * L * dtype_size(compute_dtype(t));  // dl_bn_moments' (count, mean, m2) per item
  if (sl.slices > 1) {
    if (!ws.mem) throw Error("batch_norm_stats: missing workspace (batch_norm_workspace_bytes)");
    {
      TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_stats_part");
      std::lock_guard<std::mutex> lock(*k.mutex);
      KernelArgs a(k.kernel);
      a.add(x.mem).add<cl_ulong>(x.offset);
      add_geometry(a, s, sl);
      a.add(ws.mem).add<cl_ulong>(ws.offset).add_local(moments_local);
      launch_1d(q, k.kernel, sl.slices * s.C * L, L, "batch_norm_stats");
    }
    TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_stats_finish");
    std::lock_guard<std::mutex> lock(*k.mutex);
    KernelArgs a(k.kernel);
    a.add(ws.mem).add<cl_ulong>(ws.offset);
    add_geometry(a, s, sl);
    a.add<cl_ulong>(sl.slices);
    add_stats_outputs(a, t, eps, momentum, save_mean, save_invstd, run_mean, run_var);
    launch_1d(q, k.kernel, s.C, ctx.work_group_size(256), "batch_norm_stats");
    return;
  }
  TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_stats");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(x.mem).add<cl_ulong>(x.offset);
  add_geometry(a, s, sl);
  add_stats_outputs(a, t, eps, momentum, save_mean, save_invstd, run_mean, run_var);
  a.add_local(moments_local);
  launch_1d(q, k.kernel, s.C * L, L, "batch_norm_stats");
}

void batch_norm_apply(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer x, Buffer y,
                      Buffer mean, Buffer invstd, bool invstd_is_var, double eps, Buffer w, Buffer b) {
  if (s.N * s.C * s.HW == 0) return;
  PlaneLaunch p = plane_launch(ctx, s);
  TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_apply");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(x.mem).add<cl_ulong>(x.offset).add(y.mem).add<cl_ulong>(y.offset).add<cl_ulong>(s.N * s.C);
  a.add<cl_ulong>(s.C).add<cl_ulong>(s.HW).add<cl_ulong>(p.chunk);
  add_buf(a, mean, mean);
  add_buf(a, invstd, mean);
  a.add<cl_int>(invstd_is_var);
  add_acc(a, t, eps);
  add_buf(a, w, mean);
  add_buf(a, b, mean);
  a.add<cl_int>(w.mem != nullptr).add<cl_int>(b.mem != nullptr);
  launch_nd(q, k.kernel, 2, p.global, p.local, "batch_norm");
}

// The trailing arguments of bn_bwd_reduce and bn_bwd_reduce_finish (DL_BN_BWD_SUMS_ARGS).
static void add_bwd_sums(KernelArgs& a, const Buffer& sum_g, const Buffer& sum_gx, const Buffer& invstd, const Buffer& gw) {
  add_buf(a, sum_g, sum_g);
  add_buf(a, sum_gx, sum_g);
  add_buf(a, invstd, sum_g);
  add_buf(a, gw, sum_g);
  a.add<cl_int>(gw.mem ? 1 : 0);
}

void batch_norm_backward_reduce(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer g, Buffer x,
                                Buffer mean, Buffer sum_g, Buffer sum_gx, Buffer ws, Buffer invstd, Buffer grad_w) {
  if (s.C == 0) return;
  if (grad_w.mem && !invstd.mem) throw Error("batch_norm_backward_reduce: the weight gradient needs invstd");
  Slices sl = slices_of(ctx, s);
  size_t L = group_size(ctx);
  if (sl.slices > 1) {
    if (!ws.mem) throw Error("batch_norm_backward_reduce: missing workspace (batch_norm_workspace_bytes)");
    {
      TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_bwd_reduce_part");
      std::lock_guard<std::mutex> lock(*k.mutex);
      KernelArgs a(k.kernel);
      a.add(g.mem).add<cl_ulong>(g.offset).add(x.mem).add<cl_ulong>(x.offset);
      add_geometry(a, s, sl);
      add_buf(a, mean, mean);
      a.add(ws.mem).add<cl_ulong>(ws.offset).add_local(L * dtype_size(compute_dtype(t)));
      launch_1d(q, k.kernel, sl.slices * s.C * L, L, "batch_norm_backward_reduce");
    }
    TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_bwd_reduce_finish");
    std::lock_guard<std::mutex> lock(*k.mutex);
    KernelArgs a(k.kernel);
    a.add(ws.mem).add<cl_ulong>(ws.offset).add<cl_ulong>(s.C).add<cl_ulong>(sl.slices);
    add_bwd_sums(a, sum_g, sum_gx, invstd, grad_w);
    launch_1d(q, k.kernel, s.C, ctx.work_group_size(256), "batch_norm_backward_reduce");
    return;
  }
  TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_bwd_reduce");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(g.mem).add<cl_ulong>(g.offset).add(x.mem).add<cl_ulong>(x.offset);
  add_geometry(a, s, sl);
  add_buf(a, mean, mean);
  a.add_local(L * dtype_size(compute_dtype(t)));
  add_bwd_sums(a, sum_g, sum_gx, invstd, grad_w);
  launch_1d(q, k.kernel, s.C * L, L, "batch_norm_backward_reduce");
}

void batch_norm_backward_input(const Context& ctx, cl_command_queue q, DType t, BatchNormShape s, Buffer g, Buffer x,
                               Buffer mean, Buffer invstd, Buffer w, Buffer sum_g, Buffer sum_gx, bool training,
                               Buffer gx) {
  if (s.N * s.C * s.HW == 0) return;
  PlaneLaunch p = plane_launch(ctx, s);
  TypedKernel k = typed_kernel(ctx, "batch_norm", t, "bn_bwd_apply");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(g.mem).add<cl_ulong>(g.offset).add(x.mem).add<cl_ulong>(x.offset).add(gx.mem).add<cl_ulong>(gx.offset);
  a.add<cl_ulong>(s.N * s.C).add<cl_ulong>(s.C).add<cl_ulong>(s.HW).add<cl_ulong>(p.chunk).add<cl_ulong>(s.N * s.HW);
  add_buf(a, mean, mean);
  add_buf(a, invstd, mean);
  add_buf(a, w, mean);
  a.add<cl_int>(w.mem != nullptr);
  add_buf(a, sum_g, mean);
  add_buf(a, sum_gx, mean);
  a.add<cl_int>(training);
  launch_nd(q, k.kernel, 2, p.global, p.local, "batch_norm_backward");
}

} // namespace dlprim
