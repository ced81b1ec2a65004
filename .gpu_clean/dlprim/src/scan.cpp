#include <dlprim/embedded.h>
#include <dlprim/scan.h>

#include "reduce_op_text.h"

#include <map>
#include <mutex>
#include <tuple>

namespace dlprim {

namespace {

struct Kernel {
  std::mutex m;
  cl_kernel k = nullptr;
};

} // namespace

void scan(const Context& ctx, cl_command_queue q, const ReduceOp& op, DType acc, const RowsShape& shape,
          const RowsTensor& in, const std::vector<RowsTensor>& outs, std::array<double, 2> params) {
  if (static_cast<int>(outs.size()) != op.n_outputs) throw Error("scan '" + op.name + "': wrong number of outputs");
  uint64_t rows = shape.n_rows();
  if (rows == 0 || shape.length == 0) return;
  const RowsTensor& o0 = outs[0];
  const RowsTensor& o1 = outs.size() > 1 ? outs[1] : outs[0];
  bool fp64 = in.dtype == DType::F64 || acc == DType::F64 || o0.dtype == DType::F64 || o1.dtype == DType::F64;
  if (fp64 && !ctx.info().fp64)
    throw Error("scan '" + op.name + "': device '" + ctx.info().name + "' does not support float64");

  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, const ReduceOp*, int, int, int, int>, Kernel> cache;
  Kernel* k;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    k = &cache[std::make_tuple(ctx.context(), &op, int(in.dtype), int(acc), int(o0.dtype), int(o1.dtype))];
  }
  std::lock_guard<std::mutex> lock(k->m);
  if (!k->k)
    k->k = create_kernel(ctx.program(reduce_op_text(op, in.dtype, acc, o0.dtype, o1.dtype) + kernel_source("scan")),
                         "scan_rows");

  size_t state = 8 * std::max<size_t>(1, op.state.size());  // bounds sizeof(acc_t)
  uint64_t local_cap = ctx.info().local_mem_size ? ctx.info().local_mem_size / (2 * state) : 256;
  // rows_tiling gives a row about length / 4 threads: one block of TR * SCAN_K (4) elements.
  RowsTiling t = rows_tiling(ctx, shape, static_cast<uint32_t>(std::min<uint64_t>(256, local_cap)));
  KernelArgs a(k->k);
  a.add<cl_ulong>(rows).add<cl_ulong>(static_cast<uint64_t>(shape.length));
  a.add<cl_uint>(t.TO).add<cl_uint>(t.TR).add<cl_int>(t.col_order ? 1 : 0);
  a.add<cl_int>(shape.rank);
  add_dims<cl_long>(a, shape.sizes);
  for (int i = 0; i < kRowTensors; ++i) add_dims<cl_long>(a, shape.strides[i]);
  for (int i = 0; i < kRowTensors; ++i) a.add<cl_long>(shape.step[i]);
  a.add(in.mem).add<cl_ulong>(in.offset).add(o0.mem).add<cl_ulong>(o0.offset).add(o1.mem).add<cl_ulong>(o1.offset);
  add_param(a, acc, params[0]);
  add_param(a, acc, params[1]);
  size_t L = static_cast<size_t>(t.TO) * t.TR;
  a.add_local(L * state);
  uint64_t groups = (rows + t.TO - 1) / t.TO;
  launch_1d(q, k->k, groups * L, L);
}

} // namespace dlprim
