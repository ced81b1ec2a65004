#include <dlprim/embedded.h>
#include <dlprim/reduce.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <tuple>

namespace dlprim {

namespace {

enum class Plan { PerItem, PerGroup };

struct PlanInfo {
  Plan plan;
  uint64_t n_out, R, chunks, chunk_len;
};

uint64_t prod(const std::array<int64_t, kMaxDims>& v, int rank) {
  uint64_t p = 1;
  for (int i = 0; i < rank; ++i) p *= static_cast<uint64_t>(v[i]);
  return p;
}

size_t group_size(const Context& ctx) {
  size_t l = 1;
  while (l * 2 <= ctx.work_group_size(256)) l *= 2;
  return l;
}

PlanInfo make_plan(const Context& ctx, const ReduceShape& s) {
  PlanInfo p{};
  p.n_out = prod(s.kept_sizes, s.kept_rank);
  p.R = prod(s.red_sizes, s.reduced_rank);
  p.chunks = 1;
  p.chunk_len = p.R;
  bool red_inner_contig = s.reduced_rank > 0 && s.red_in_strides[s.reduced_rank - 1] == 1;
  bool kept_inner_contig = s.kept_rank > 0 && s.kept_in_strides[s.kept_rank - 1] == 1;
  // Adjacent work-items should read adjacent elements: along the reduced dim when it is
  // the contiguous one, else along the outputs.
  if (p.R <= 16 || (!red_inner_contig && kept_inner_contig && p.n_out >= 64)) {
    p.plan = Plan::PerItem;
    return p;
  }
  p.plan = Plan::PerGroup;
  size_t L = group_size(ctx);
  uint64_t target_groups = 4ull * std::max<uint32_t>(1, ctx.info().compute_units);
  if (p.n_out < target_groups) {
    uint64_t by_groups = (target_groups + p.n_out - 1) / p.n_out;
    uint64_t by_work = std::max<uint64_t>(1, p.R / (L * 16));
    p.chunks = std::max<uint64_t>(1, std::min(by_groups, by_work));
    p.chunk_len = (p.R + p.chunks - 1) / p.chunks;
    p.chunks = (p.R + p.chunk_len - 1) / p.chunk_len;
  }
  return p;
}

// Offset of element `j` of a row-major index space (innermost dim last).
std::string offset_loop(const char* var, const char* idx, const char* rank, const char* sizes,
                        const char* strides) {
  std::ostringstream s;
  s << "    { ulong t = " << idx << "; for (int d = " << rank << " - 1; d >= 0; --d) { ulong q = t / (ulong)"
    << sizes << ".v[d]; " << var << " += (long)(t - q * (ulong)" << sizes << ".v[d]) * " << strides
    << ".v[d]; t = q; } }\n";
  return s.str();
}

std::string program_text(const ReduceOp& op, DType in, DType acc, DType out) {
  const char* at = compute_cl_type(acc);
  std::ostringstream s;
  if (in == DType::F64 || acc == DType::F64 || out == DType::F64)
    s << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
  s << kernel_source("common");
  std::string load_in = convert_expr(in, acc, load_expr(in, "in", "(long)in_o + ib + off"));
  std::string store_out = store_stmt(out, "out", "(long)out_o + ob",
                                     convert_expr(acc, out, "(" + op.finalize + ")"));
  std::string common_args =
      "ulong n_out, ulong R, ulong chunks, ulong chunk_len, int krank, dl_dims64 ksz, dl_dims64 kin, "
      "dl_dims64 kout, int rrank, dl_dims64 rsz, dl_dims64 rin, ";
  std::string tail_args = std::string(", __global ") + storage_cl_type(out) + "* out, ulong out_o, __global " +
                          at + "* part, ulong part_o, " + std::string(is_floating(acc) ? at : "float") + " w0";

  // One work-item per output.
  s << "__kernel void red_item(" << common_args << "__global const " << storage_cl_type(in)
    << "* in, ulong in_o" << tail_args << ") {\n"
    << "  ulong o = get_global_id(0); if (o >= n_out) return;\n  long ib = 0, ob = 0;\n"
    << "  { ulong t = o; for (int d = krank - 1; d >= 0; --d) { ulong q = t / (ulong)ksz.v[d]; long c = (long)(t - q * (ulong)ksz.v[d]);"
       " ib += c * kin.v[d]; ob += c * kout.v[d]; t = q; } }\n"
    << "  " << at << " acc = " << op.init << ";\n"
    << "  for (ulong j = 0; j < R; ++j) {\n    long off = 0;\n"
    << offset_loop("off", "j", "rrank", "rsz", "rin") << "    " << at << " x = " << load_in << ";\n    "
    << op.combine << "\n  }\n  " << store_out << "\n}\n";

  // One work-group per (output, chunk); partials of a chunked reduction go to `part`.
  for (int second = 0; second < 2; ++second) {
    const char* name = second ? "red_group_merge" : "red_group";
    std::string in_t = second ? at : storage_cl_type(in);
    std::string load = second ? "in[(long)in_o + ib + off]" : load_in;
    std::string fold = second ? std::string("{ ") + at + " a = acc, b = x; " + op.merge + " acc = a; }" : op.combine;
    s << "__kernel void " << name << "(" << common_args << "__global const " << in_t << "* in, ulong in_o"
      << tail_args << ", __local " << at << "* scratch) {\n"
      << "  ulong g = get_group_id(0); ulong o = g / chunks, c = g - o * chunks;\n"
      << "  size_t lid = get_local_id(0), L = get_local_size(0);\n  long ib = 0, ob = 0;\n"
      << "  { ulong t = o; for (int d = krank - 1; d >= 0; --d) { ulong q = t / (ulong)ksz.v[d]; long cc = (long)(t - q * (ulong)ksz.v[d]);"
         " ib += cc * kin.v[d]; ob += cc * kout.v[d]; t = q; } }\n"
      << "  " << at << " acc = " << op.init << ";\n"
      << "  ulong end = min(R, (c + 1) * chunk_len);\n"
      << "  for (ulong j = c * chunk_len + lid; j < end; j += L) {\n    long off = 0;\n"
      << offset_loop("off", "j", "rrank", "rsz", "rin") << "    " << at << " x = " << load << ";\n    "
      << fold << "\n  }\n"
      << "  scratch[lid] = acc;\n  barrier(CLK_LOCAL_MEM_FENCE);\n"
      << "  for (size_t s = L / 2; s > 0; s >>= 1) {\n    if (lid < s) { " << at
      << " a = scratch[lid], b = scratch[lid + s]; " << op.merge << " scratch[lid] = a; }\n"
      << "    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n"
      << "  if (lid == 0) {\n    acc = scratch[0];\n"
      << "    if (chunks == 1) { " << store_out << " } else { part[part_o + o * chunks + c] = acc; }\n  }\n}\n";
  }
  return s.str();
}

struct Kernels {
  std::mutex m;
  cl_kernel item = nullptr, group = nullptr, merge = nullptr;
};

Kernels& kernels_for(const Context& ctx, const ReduceOp& op, DType in, DType acc, DType out) {
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, const ReduceOp*, int, int, int>, Kernels> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), &op, int(in), int(acc), int(out))];
  }
  return *k;
}

template <class T>
void add_dims(KernelArgs& a, const std::array<int64_t, kMaxDims>& v) {
  struct { T v[kMaxDims]; } d{};
  for (int i = 0; i < kMaxDims; ++i) d.v[i] = static_cast<T>(v[i]);
  a.add(d);
}

void add_scale(KernelArgs& a, DType acc, double scale) {
  if (acc == DType::F64)
    a.add<cl_double>(scale);
  else
    a.add<cl_float>(static_cast<float>(scale));
}

} // namespace

uint64_t reduce_workspace_bytes(const Context& ctx, const ReduceShape& shape, DType acc) {
  PlanInfo p = make_plan(ctx, shape);
  return p.chunks > 1 ? p.n_out * p.chunks * dtype_size(acc) : 0;
}

void reduce(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc, const ReduceShape& shape,
            const StridedView& in, const StridedView& out, double scale, cl_mem workspace,
            uint64_t workspace_offset_bytes) {
  uint64_t part_o = workspace_offset_bytes / dtype_size(acc);
  PlanInfo p = make_plan(ctx, shape);
  if (p.n_out == 0) return;
  bool fp64 = in.dtype == DType::F64 || acc == DType::F64 || out.dtype == DType::F64;
  if (fp64 && !ctx.info().fp64)
    throw Error("reduction '" + op.name + "': device '" + ctx.info().name + "' does not support float64");
  Kernels& k = kernels_for(ctx, op, in.dtype, acc, out.dtype);
  std::lock_guard<std::mutex> lock(k.m);
  if (!k.item) {
    cl_program prog = ctx.program(program_text(op, in.dtype, acc, out.dtype));
    k.item = create_kernel(prog, "red_item");
    k.group = create_kernel(prog, "red_group");
    k.merge = create_kernel(prog, "red_group_merge");
  }
  size_t L = group_size(ctx);
  auto common = [&](KernelArgs& a, uint64_t R, uint64_t chunks, uint64_t chunk_len, const ReduceShape& s) {
    a.add<cl_ulong>(p.n_out).add<cl_ulong>(R).add<cl_ulong>(chunks).add<cl_ulong>(chunk_len);
    a.add<cl_int>(s.kept_rank);
    add_dims<cl_long>(a, s.kept_sizes);
    add_dims<cl_long>(a, s.kept_in_strides);
    add_dims<cl_long>(a, s.kept_out_strides);
    a.add<cl_int>(s.reduced_rank);
    add_dims<cl_long>(a, s.red_sizes);
    add_dims<cl_long>(a, s.red_in_strides);
  };
  cl_mem part = p.chunks > 1 ? workspace : out.mem;  // unused when not chunked, but must be valid
  if (p.chunks > 1 && !workspace) throw Error("reduction '" + op.name + "': missing workspace");
  if (p.plan == Plan::PerItem) {
    KernelArgs a(k.item);
    common(a, p.R, 1, p.R, shape);
    a.add(in.mem).add<cl_ulong>(in.offset).add(out.mem).add<cl_ulong>(out.offset).add(part).add<cl_ulong>(part_o);
    add_scale(a, acc, scale);
    launch_1d(q, k.item, p.n_out, L, op.name.c_str());
    return;
  }
  {
    KernelArgs a(k.group);
    common(a, p.R, p.chunks, p.chunk_len, shape);
    a.add(in.mem).add<cl_ulong>(in.offset).add(out.mem).add<cl_ulong>(out.offset).add(part).add<cl_ulong>(part_o);
    add_scale(a, acc, scale);
    a.add_local(L * dtype_size(acc));
    launch_1d(q, k.group, p.n_out * p.chunks * L, L, op.name.c_str());
  }
  if (p.chunks == 1) return;
  // Second pass: partials laid out [n_out, chunks], reduced over chunks.
  ReduceShape s2 = shape;
  int64_t stride = static_cast<int64_t>(p.chunks);
  for (int d = s2.kept_rank - 1; d >= 0; --d) {
    s2.kept_in_strides[d] = stride;
    stride *= s2.kept_sizes[d];
  }
  s2.reduced_rank = 1;
  s2.red_sizes = {};
  s2.red_in_strides = {};
  s2.red_sizes[0] = static_cast<int64_t>(p.chunks);
  s2.red_in_strides[0] = 1;
  KernelArgs a(k.merge);
  common(a, p.chunks, 1, p.chunks, s2);
  a.add(workspace).add<cl_ulong>(part_o).add(out.mem).add<cl_ulong>(out.offset).add(workspace).add<cl_ulong>(part_o);
  add_scale(a, acc, scale);
    a.add_local(L * dtype_size(acc));
  launch_1d(q, k.merge, p.n_out * L, L, op.name.c_str());
}

} // namespace dlprim
