// Reduction generator: program text for a ReduceOp (reduce.cl + a generated prefix),
// shape normalisation and the launch plan.
#include <dlprim/embedded.h>
#include <dlprim/int_math.h>
#include <dlprim/reduce.h>
#include <dlprim/rows.h>

#include "reduce_op_text.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <numeric>
#include <sstream>
#include <tuple>

namespace dlprim {

uint64_t ReduceShape::n_out() const {
  uint64_t p = 1;
  for (int i = 0; i < kept_rank; ++i) p *= static_cast<uint64_t>(kept_sizes[i]);
  return p;
}

uint64_t ReduceShape::n_reduced() const {
  uint64_t p = 1;
  for (int i = 0; i < reduced_rank; ++i) p *= static_cast<uint64_t>(red_sizes[i]);
  return p;
}

namespace {

// ---------------------------------------------------------------- shape normalisation

// Appends `d` as the innermost dim of a group, merged into the previous one when every
// stride continues it.
bool push_dim(int& rank, std::array<int64_t, kMaxDims>& sizes, std::array<int64_t, kMaxDims>* strides[3],
              const int64_t* s, int n_strides, int64_t size) {
  if (rank > 0) {
    bool merge = true;
    for (int k = 0; k < n_strides; ++k) merge = merge && (*strides[k])[rank - 1] == s[k] * size;
    if (merge) {
      sizes[rank - 1] *= size;
      for (int k = 0; k < n_strides; ++k) (*strides[k])[rank - 1] = s[k];
      return true;
    }
  }
  if (rank == kMaxDims) return false;
  sizes[rank] = size;
  for (int k = 0; k < n_strides; ++k) (*strides[k])[rank] = s[k];
  ++rank;
  return true;
}

// Kept dims sorted so the smallest input stride is innermost (adjacent outputs read
// adjacent memory); reduced dims likewise unless the op reports indices.
std::vector<ReduceDim> sorted(std::vector<ReduceDim> dims, bool reduced, bool keep_order) {
  std::vector<ReduceDim> out;
  for (const ReduceDim& d : dims)
    if (d.size != 1 && d.reduced == reduced) out.push_back(d);
  if (!keep_order)
    std::stable_sort(out.begin(), out.end(), [](const ReduceDim& a, const ReduceDim& b) {
      return std::llabs(a.in_stride) > std::llabs(b.in_stride);
    });
  return out;
}

// red_cols (for CPU devices) is compiled only there, red_colv/red_col1 only where the GPU
// mappings are used.
std::string program_text(const ReduceOp& op, DType in, DType acc, DType out0, DType out1, bool cpu, bool gpu) {
  return reduce_op_text(op, in, acc, out0, out1) + (cpu ? "#define DL_CPU_KERNELS 1\n" : "") +
         (gpu ? "#define DL_GPU_KERNELS 1\n" : "") + kernel_source("reduce");
}

struct Kernels {
  std::mutex m;  // argument setting + enqueue of one cl_kernel must not interleave
  cl_kernel tile = nullptr, tile_vec = nullptr, merge = nullptr, cols = nullptr, colv = nullptr, col1 = nullptr;
};

Kernels& kernels_for(const Context& ctx, const ReduceOp& op, DType in, DType acc, DType out0, DType out1) {
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, const ReduceOp*, int, int, int, int>, Kernels> cache;
  Kernels* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), &op, int(in), int(acc), int(out0), int(out1))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->tile) {
    bool cpu = ctx.info().is_cpu;
    bool gpu = !cpu_mapping(ctx);
    cl_program prog = ctx.program(program_text(op, in, acc, out0, out1, cpu, gpu));
    k->tile = create_kernel(prog, "red_tile");
    k->tile_vec = create_kernel(prog, "red_tile_vec");
    k->merge = create_kernel(prog, "red_merge");
    if (cpu) k->cols = create_kernel(prog, "red_cols");
    if (gpu) {
      k->colv = create_kernel(prog, "red_colv");
      k->col1 = create_kernel(prog, "red_col1");
    }
  }
  return *k;
}

// ---------------------------------------------------------------- plan

constexpr uint64_t kColsBlock = 128;  // COLS_OB in reduce.cl

uint64_t pow2_ceil(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}
uint64_t pow2_floor(uint64_t v) {
  uint64_t p = 1;
  while (p * 2 <= v) p <<= 1;
  return p;
}

struct Plan {
  uint64_t n_out = 0, R = 0, Ri = 1;
  int64_t si = 0;
  int outer_rank = 0;  // reduced dims besides the innermost
  bool col = false, vec = false;
  bool cols = false;  // CPU column kernel (red_cols)
  bool colv = false;  // GPU column kernel (red_colv when vec, else red_col1); TO/TR = TX/TY
  uint64_t C = 0;     // colv: columns (the innermost kept dim)
  uint32_t L = 1, TO = 1, TR = 1;
  uint64_t chunks = 1, chunk_len = 0;
  uint32_t merge_TR = 1;
};

size_t state_bytes(const ReduceOp& op) { return 8 * std::max<size_t>(1, op.state.size()); }

Plan make_plan(const Context& ctx, const ReduceOp& op, DType acc, const ReduceShape& s, const ReduceTensor& in) {
  (void)acc;
  const DeviceInfo& dev = ctx.info();
  Plan p;
  p.n_out = s.n_out();
  p.R = s.n_reduced();
  if (s.reduced_rank > 0) {
    p.Ri = static_cast<uint64_t>(s.red_sizes[s.reduced_rank - 1]);
    p.si = s.red_in[s.reduced_rank - 1];
    p.outer_rank = s.reduced_rank - 1;
  }
  // Work-group size: a power of two within the device limit and a share of local memory.
  uint64_t local_cap = dev.local_mem_size ? dev.local_mem_size / (2 * state_bytes(op)) : 256;
  p.L = static_cast<uint32_t>(pow2_floor(std::max<uint64_t>(1, std::min<uint64_t>(ctx.work_group_size(256), local_cap))));
  if (p.n_out == 0) return p;
  p.chunk_len = p.R;
  if (p.R == 0) return p;

  int vw = reduce_vector_width(in.dtype);
  int64_t kin_min = s.kept_rank > 0 ? std::llabs(s.kept_in[s.kept_rank - 1]) : INT64_MAX;
  p.col = s.kept_rank > 0 && p.n_out > 1 && kin_min < std::llabs(p.si);
  bool aligned = in.offset % vw == 0;
  for (int d = 0; d < s.kept_rank; ++d) aligned = aligned && s.kept_in[d] % vw == 0;
  p.vec = !p.col && vw > 1 && p.outer_rank == 0 && p.si == 1 && aligned && p.R >= static_cast<uint64_t>(vw);
  uint64_t step = p.vec ? static_cast<uint64_t>(vw) : 1;  // elements per thread per iteration

  // Groups for a long reduction: on GPUs about one resident wave (a compute unit holds
  // ~2048 threads, i.e. 8 groups of 256), each thread then loading tens of vectors; on CPUs a
  // few work-items per core for balance.
  uint64_t cus = std::max<uint32_t>(1, dev.compute_units);
  bool cpu = cpu_mapping(ctx);
  uint64_t target_groups = cpu ? cus * 4 : cus * std::max<uint64_t>(1, 2048 / p.L);
  uint64_t min_per_thread = cpu ? 64 : 32;  // elements a thread should reduce at least

  if (p.col && cpu) {
    // Work-items run one after another: each owns a block of adjacent outputs (red_cols).
    p.cols = true;
    p.vec = false;
    uint64_t tiles = ceil_div(p.n_out, kColsBlock);
    if (tiles < target_groups)
      p.chunks = std::min(ceil_div(target_groups, tiles), std::max<uint64_t>(1, p.R / min_per_thread));
  } else if (p.col && p.outer_rank == 0 && s.kept_in[s.kept_rank - 1] == 1 && s.kept_sizes[s.kept_rank - 1] >= 16) {
    // Contiguous columns (red_colv): TX threads across the columns, each owning VEC adjacent
    // ones when every row start is VEC-aligned; TY threads across rows.
    p.colv = true;
    p.C = static_cast<uint64_t>(s.kept_sizes[s.kept_rank - 1]);
    bool al = in.offset % vw == 0 && p.si % vw == 0 && p.C % vw == 0;
    for (int d = 0; d + 1 < s.kept_rank; ++d) al = al && s.kept_in[d] % vw == 0;
    p.vec = vw > 1 && al;
    uint64_t w = p.vec ? static_cast<uint64_t>(vw) : 1;
    p.TO = static_cast<uint32_t>(std::min<uint64_t>({p.L, 64, pow2_ceil(ceil_div(p.C, w))}));
    p.TR = static_cast<uint32_t>(std::min<uint64_t>(p.L / p.TO, pow2_ceil(ceil_div(p.R, 4))));
    uint64_t tiles = (p.n_out / p.C) * ceil_div(p.C, p.TO * w);
    if (tiles < target_groups) {
      uint64_t by_groups = ceil_div(target_groups, tiles);
      uint64_t by_work = std::max<uint64_t>(1, p.R / (static_cast<uint64_t>(p.TR) * min_per_thread));
      p.chunks = std::min(by_groups, by_work);
    }
  } else if (p.col) {
    // Adjacent threads on adjacent outputs; the rest of the group splits the reduced range.
    p.TO = static_cast<uint32_t>(std::min<uint64_t>({p.L, 64, pow2_ceil(p.n_out)}));
    p.TR = static_cast<uint32_t>(std::min<uint64_t>(p.L / p.TO, pow2_ceil(ceil_div(p.R, 4))));
    p.TO = static_cast<uint32_t>(std::min<uint64_t>(p.L / p.TR, pow2_ceil(p.n_out)));
  } else if (cpu) {
    // One work-item per (output, chunk), reading a contiguous span.
    p.TR = 1;
    p.TO = static_cast<uint32_t>(std::min<uint64_t>(p.L, pow2_ceil(p.n_out)));
  } else {
    // Row plan: at least 16 loads per thread before the local-memory tree.
    p.TR = static_cast<uint32_t>(std::min<uint64_t>(p.L, pow2_ceil(ceil_div(p.R, step * 16))));
    p.TO = static_cast<uint32_t>(std::min<uint64_t>(p.L / p.TR, pow2_ceil(p.n_out)));
  }
  uint64_t tiles = ceil_div(p.n_out, p.TO);
  // A short reduction stays one launch: when one group's threads load at most 16 times each (GPU
  // mappings) or one work-item reads at most 4096 elements (CPU), a merge launch costs more than
  // the loads it spreads (batch-1 decoding: an RMSNorm mean over a few thousand elements).
  const uint64_t short_r = cpu ? 4096 : static_cast<uint64_t>(p.TR) * step * 16;
  if (!p.cols && !p.colv && tiles < target_groups && p.R > short_r) {
    uint64_t by_groups = ceil_div(target_groups, tiles);
    uint64_t by_work = std::max<uint64_t>(1, p.R / (static_cast<uint64_t>(p.TR) * min_per_thread));
    p.chunks = std::min(by_groups, by_work);
  }
  if (p.chunks > 1) {
    p.chunk_len = ceil_div(ceil_div(p.R, p.chunks), step) * step;
    p.chunks = ceil_div(p.R, p.chunk_len);
  }
  if (p.chunks > 1) p.merge_TR = static_cast<uint32_t>(std::min<uint64_t>(p.L, pow2_ceil(p.chunks)));
  return p;
}


} // namespace

bool describe_reduction(const ReduceOp& op, const std::vector<ReduceDim>& dims, ReduceShape& shape) {
  shape = ReduceShape();
  for (const ReduceDim& d : sorted(dims, false, false)) {
    std::array<int64_t, kMaxDims>* strides[3] = {&shape.kept_in, &shape.kept_out0, &shape.kept_out1};
    int64_t s[3] = {d.in_stride, d.out_stride[0], d.out_stride[1]};
    if (!push_dim(shape.kept_rank, shape.kept_sizes, strides, s, 3, d.size)) return false;
  }
  for (const ReduceDim& d : sorted(dims, true, op.order_sensitive)) {
    std::array<int64_t, kMaxDims>* strides[3] = {&shape.red_in, nullptr, nullptr};
    int64_t s[1] = {d.in_stride};
    if (!push_dim(shape.reduced_rank, shape.red_sizes, strides, s, 1, d.size)) return false;
  }
  return true;
}

uint64_t reduce_workspace_bytes(const Context& ctx, const ReduceOp& op, DType acc, const ReduceShape& shape,
                                const ReduceTensor& in) {
  Plan p = make_plan(ctx, op, acc, shape, in);
  return p.chunks > 1 ? p.n_out * p.chunks * state_bytes(op) : 0;
}

void reduce(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc, const ReduceShape& shape,
            const ReduceTensor& in, const std::vector<ReduceTensor>& outs, std::array<double, 2> params,
            cl_mem workspace, uint64_t workspace_offset_bytes) {
  if (static_cast<int>(outs.size()) != op.n_outputs)
    throw Error("reduction '" + op.name + "': wrong number of outputs");
  const ReduceTensor& o0 = outs[0];
  const ReduceTensor& o1 = outs.size() > 1 ? outs[1] : outs[0];
  Plan p = make_plan(ctx, op, acc, shape, in);
  if (p.n_out == 0) return;
  bool fp64 = in.dtype == DType::F64 || acc == DType::F64 || o0.dtype == DType::F64 || o1.dtype == DType::F64;
  if (fp64 && !ctx.info().fp64)
    throw Error("reduction '" + op.name + "': device '" + ctx.info().name + "' does not support float64");
  if (p.chunks > 1 && !workspace) throw Error("reduction '" + op.name + "': missing workspace");
  if (workspace_offset_bytes % 8 != 0) throw Error("reduction '" + op.name + "': misaligned workspace");
  Kernels& k = kernels_for(ctx, op, in.dtype, acc, o0.dtype, o1.dtype);
  std::lock_guard<std::mutex> lock(k.m);
  cl_mem part = p.chunks > 1 ? workspace : o0.mem;  // a valid buffer even when unused
  uint64_t part_off = p.chunks > 1 ? workspace_offset_bytes : 0;

  cl_kernel tile = p.vec ? k.tile_vec : k.tile;
  if (p.colv) {
    cl_kernel kc = p.vec ? k.colv : k.col1;
    KernelArgs a(kc);
    a.add<cl_ulong>(p.n_out).add<cl_ulong>(p.C).add<cl_ulong>(p.R).add<cl_long>(p.si);
    a.add<cl_ulong>(p.chunks).add<cl_ulong>(p.chunk_len);
    a.add<cl_uint>(p.TO).add<cl_uint>(p.TR);
    a.add<cl_int>(shape.kept_rank);
    add_dims<cl_long>(a, shape.kept_sizes);
    add_dims<cl_long>(a, shape.kept_in);
    add_dims<cl_long>(a, shape.kept_out0);
    add_dims<cl_long>(a, shape.kept_out1);
    a.add(in.mem).add<cl_ulong>(in.offset);
    a.add(o0.mem).add<cl_ulong>(o0.offset).add(o1.mem).add<cl_ulong>(o1.offset);
    a.add(part).add<cl_ulong>(part_off);
    add_param(a, acc, params[0]);
    add_param(a, acc, params[1]);
    a.add_local(static_cast<size_t>(p.L) * state_bytes(op));
    uint64_t w = p.vec ? static_cast<uint64_t>(reduce_vector_width(in.dtype)) : 1;
    uint64_t groups = (p.n_out / p.C) * ceil_div(p.C, p.TO * w) * p.chunks;
    launch_1d(q, kc, groups * p.TO * p.TR, p.TO * p.TR, op.name.c_str());
  } else if (p.cols) {
    KernelArgs a(k.cols);
    a.add<cl_ulong>(p.n_out).add<cl_ulong>(p.R).add<cl_ulong>(p.Ri).add<cl_long>(p.si);
    a.add<cl_ulong>(p.chunks).add<cl_ulong>(p.chunk_len);
    a.add<cl_int>(shape.kept_rank);
    add_dims<cl_long>(a, shape.kept_sizes);
    add_dims<cl_long>(a, shape.kept_in);
    add_dims<cl_long>(a, shape.kept_out0);
    add_dims<cl_long>(a, shape.kept_out1);
    a.add<cl_int>(p.outer_rank);
    add_dims<cl_long>(a, shape.red_sizes);
    add_dims<cl_long>(a, shape.red_in);
    a.add(in.mem).add<cl_ulong>(in.offset);
    a.add(o0.mem).add<cl_ulong>(o0.offset).add(o1.mem).add<cl_ulong>(o1.offset);
    a.add(part).add<cl_ulong>(part_off);
    add_param(a, acc, params[0]);
    add_param(a, acc, params[1]);
    launch_1d(q, k.cols, ceil_div(p.n_out, kColsBlock) * p.chunks, 8, op.name.c_str());
  } else {
    KernelArgs a(tile);
    a.add<cl_ulong>(p.n_out).add<cl_ulong>(p.R).add<cl_ulong>(p.Ri).add<cl_long>(p.si);
    a.add<cl_ulong>(p.chunks).add<cl_ulong>(p.chunk_len);
    a.add<cl_uint>(p.TO).add<cl_uint>(p.TR).add<cl_int>(p.col ? 1 : 0);
    a.add<cl_int>(shape.kept_rank);
    add_dims<cl_long>(a, shape.kept_sizes);
    add_dims<cl_long>(a, shape.kept_in);
    add_dims<cl_long>(a, shape.kept_out0);
    add_dims<cl_long>(a, shape.kept_out1);
    a.add<cl_int>(p.outer_rank);
    add_dims<cl_long>(a, shape.red_sizes);
    add_dims<cl_long>(a, shape.red_in);
    a.add(in.mem).add<cl_ulong>(in.offset);
    a.add(o0.mem).add<cl_ulong>(o0.offset).add(o1.mem).add<cl_ulong>(o1.offset);
    a.add(part).add<cl_ulong>(part_off);
    add_param(a, acc, params[0]);
    add_param(a, acc, params[1]);
    a.add_local(static_cast<size_t>(p.L) * state_bytes(op));
    uint64_t groups = ceil_div(p.n_out, p.TO) * p.chunks;
    launch_1d(q, tile, groups * p.TO * p.TR, p.TO * p.TR, op.name.c_str());
  }
  if (p.chunks == 1) return;
  KernelArgs a(k.merge);
  a.add<cl_ulong>(p.n_out).add<cl_ulong>(p.chunks).add<cl_ulong>(p.R).add<cl_uint>(p.merge_TR);
  a.add<cl_int>(shape.kept_rank);
  add_dims<cl_long>(a, shape.kept_sizes);
  add_dims<cl_long>(a, shape.kept_out0);
  add_dims<cl_long>(a, shape.kept_out1);
  a.add(workspace).add<cl_ulong>(part_off);
  a.add(o0.mem).add<cl_ulong>(o0.offset).add(o1.mem).add<cl_ulong>(o1.offset);
  add_param(a, acc, params[0]);
  add_param(a, acc, params[1]);
  a.add_local(static_cast<size_t>(p.L) * state_bytes(op));
  uint64_t per_group = p.L / p.merge_TR;
  launch_1d(q, k.merge, ceil_div(p.n_out, per_group) * p.L, p.L, op.name.c_str());
}

} // namespace dlprim
