// Launches of the fused attention kernels (kernels/attention.cl): the per-head-dim layout (threads
// per row, rows per work-group, key tile) and the program text.
#include <dlprim/attention.h>
#include <dlprim/embedded.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

struct Layout {
  int tpr = 1, br = 64, bc = 32;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Local memory of the largest kernel (dk/dv: two staged tiles, two exchange arrays, 2 BC scalars).
uint64_t local_bytes(const Layout& l, int64_t D, int64_t DV, size_t es) {
  int64_t dp = ceil_div(D, l.tpr) * l.tpr, dvp = ceil_div(DV, l.tpr) * l.tpr;
  int64_t xs = static_cast<int64_t>(l.tpr) * l.bc + 1;
  return static_cast<uint64_t>(l.bc * dp + l.bc * dvp + 2 * l.br * xs + 2 * l.bc) * es;
}

// Each thread keeps <= 32 elements of every row vector in registers: TPR = ceil(dim / 32) threads
// per row, ~128 threads per work-group, and the widest key tile (<= 32) whose staging fits local memory.
Layout layout_for(const Context& ctx, int64_t D, int64_t DV, DType compute) {
  Layout l;
  l.tpr = static_cast<int>(std::max<int64_t>(1, ceil_div(std::max(D, DV), 32)));
  l.br = std::max(1, 128 / l.tpr);
  size_t es = dtype_size(compute);
  uint64_t limit = ctx.info().local_mem_size ? ctx.info().local_mem_size : 32768;
  while (l.bc > 4 && local_bytes(l, D, DV, es) > limit) l.bc /= 2;
  while (l.br > 1 && local_bytes(l, D, DV, es) > limit) l.br /= 2;
  if (local_bytes(l, D, DV, es) > limit) throw Error("attention: head dims too large for the device's local memory");
  return l;
}

std::string program_text(DType dtype, DType compute, int64_t D, int64_t DV, const Layout& l, bool mask) {
  std::ostringstream s;
  if (compute == DType::F64) s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common");
  s << "#define T " << compute_cl_type(compute) << "\n#define ST " << storage_cl_type(dtype) << "\n"
    << "#define LOAD(p, i) (" << convert_expr(dtype, compute, load_expr(dtype, "(p)", "(i)")) << ")\n"
    << "#define STORE(p, i, v) do { " << store_stmt(dtype, "(p)", "(i)", convert_expr(compute, dtype, "(v)"))
    << " } while (0)\n"
    << "#define D " << D << "\n#define DV " << DV << "\n#define TPR " << l.tpr << "\n#define BR " << l.br
    << "\n#define BC " << l.bc << "\n#define HAS_MASK " << (mask ? 1 : 0) << "\n";
  s << kernel_source("attention");
  return s.str();
}

struct Kernels {
  std::mutex m;
  cl_kernel fwd = nullptr, dq = nullptr, dkdv = nullptr;
};

using Key = std::tuple<cl_context, int, int64_t, int64_t, bool>;

Kernels& kernels_for(const Context& ctx, DType dtype, int64_t D, int64_t DV, bool mask, Layout* layout) {
  static std::mutex map_mutex;
  static std::map<Key, Kernels> cache;
  static std::map<Key, Layout> layouts;
  DType compute = compute_dtype(dtype);
  Key key(ctx.context(), static_cast<int>(dtype), D, DV, mask);
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    auto it = layouts.find(key);
    if (it == layouts.end()) it = layouts.emplace(key, layout_for(ctx, D, DV, compute)).first;
    *layout = it->second;
    k = &cache[key];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->fwd) {
    cl_program prog = ctx.program(program_text(dtype, compute, D, DV, *layout, mask));
    k->dq = create_kernel(prog, "attn_bwd_dq");
    k->dkdv = create_kernel(prog, "attn_bwd_dkdv");
    k->fwd = create_kernel(prog, "attn_fwd");
  }
  return *k;
}

struct Strides {
  cl_long b, h, l, d;
};

void add_tensor(KernelArgs& args, const AttnTensor& t, cl_mem fallback) {
  args.add(t.mem ? t.mem : fallback).add<cl_ulong>(t.offset);
  args.add(Strides{t.sb, t.sh, t.sl, t.sd});
}

void add_common(KernelArgs& args, const AttnShape& s, DType compute, const AttnTensor& Q, const AttnTensor& K,
                const AttnTensor& V, const AttnTensor& M) {
  args.add<cl_int>(static_cast<cl_int>(s.L)).add<cl_int>(static_cast<cl_int>(s.S));
  args.add<cl_int>(static_cast<cl_int>(s.Hq)).add<cl_int>(static_cast<cl_int>(s.Hq / s.Hk));
  if (compute == DType::F64)
    args.add<cl_double>(s.scale);
  else
    args.add<cl_float>(static_cast<float>(s.scale));
  args.add<cl_int>(s.causal ? 1 : 0);
  add_tensor(args, Q, nullptr);
  add_tensor(args, K, nullptr);
  add_tensor(args, V, nullptr);
  add_tensor(args, M, Q.mem);  // unread without a mask; any valid buffer
}

void check(const Context& ctx, const AttnShape& s, DType dtype) {
  if (s.Hk <= 0 || s.Hq % s.Hk != 0) throw Error("attention: query heads must be a multiple of key/value heads");
  if (s.D > kAttnMaxHeadDim || s.DV > kAttnMaxHeadDim) throw Error("attention: head dim above 512");
  if (compute_dtype(dtype) == DType::F64 && !ctx.info().fp64)
    throw Error("attention: device '" + ctx.info().name + "' does not support float64 (no cl_khr_fp64)");
  if (s.L > INT32_MAX || s.S > INT32_MAX || s.B * s.Hq > 65535LL * 65535LL)
    throw Error("attention: sequence or batch too large");
}

} // namespace

void attention_forward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                       const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& O,
                       cl_mem lse, uint64_t lse_offset) {
  check(ctx, s, dtype);
  if (s.B * s.Hq * s.L == 0) return;
  Layout l;
  Kernels& k = kernels_for(ctx, dtype, s.D, s.DV, s.has_mask, &l);
  std::lock_guard<std::mutex> lock(k.m);
  KernelArgs args(k.fwd);
  add_common(args, s, compute_dtype(dtype), Q, K, V, M);
  add_tensor(args, O, nullptr);
  args.add(lse).add<cl_ulong>(lse_offset);
  size_t nt = static_cast<size_t>(l.br) * l.tpr;
  size_t global[3] = {nt, static_cast<size_t>(ceil_div(s.L, l.br)), static_cast<size_t>(s.B * s.Hq)};
  size_t local[3] = {nt, 1, 1};
  launch_nd(q, k.fwd, 3, global, local, "attention_forward");
}

void attention_backward(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype, const AttnTensor& Q,
                        const AttnTensor& K, const AttnTensor& V, const AttnTensor& M, const AttnTensor& dO,
                        cl_mem lse, uint64_t lse_offset, cl_mem delta, uint64_t delta_offset, const AttnTensor& dQ,
                        const AttnTensor& dK, const AttnTensor& dV) {
  check(ctx, s, dtype);
  Layout l;
  Kernels& k = kernels_for(ctx, dtype, s.D, s.DV, s.has_mask, &l);
  std::lock_guard<std::mutex> lock(k.m);
  size_t nt = static_cast<size_t>(l.br) * l.tpr;
  size_t local[3] = {nt, 1, 1};
  DType compute = compute_dtype(dtype);
  if (s.B * s.Hq * s.L > 0 && dQ.mem) {
    KernelArgs args(k.dq);
    add_common(args, s, compute, Q, K, V, M);
    add_tensor(args, dO, nullptr);
    args.add(lse).add<cl_ulong>(lse_offset).add(delta).add<cl_ulong>(delta_offset);
    add_tensor(args, dQ, nullptr);
    size_t global[3] = {nt, static_cast<size_t>(ceil_div(s.L, l.br)), static_cast<size_t>(s.B * s.Hq)};
    launch_nd(q, k.dq, 3, global, local, "attention_backward_dq");
  }
  if (s.B * s.Hk * s.S > 0 && dK.mem && dV.mem) {
    KernelArgs args(k.dkdv);
    add_common(args, s, compute, Q, K, V, M);
    add_tensor(args, dO, nullptr);
    args.add(lse).add<cl_ulong>(lse_offset).add(delta).add<cl_ulong>(delta_offset);
    add_tensor(args, dK, nullptr);
    add_tensor(args, dV, nullptr);
    size_t global[3] = {nt, static_cast<size_t>(ceil_div(s.S, l.br)), static_cast<size_t>(s.B * s.Hk)};
    launch_nd(q, k.dkdv, 3, global, local, "attention_backward_dkdv");
  }
}

} // namespace dlprim
