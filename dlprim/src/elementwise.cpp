#include <dlprim/elementwise.h>
#include <dlprim/embedded.h>
#include <dlprim/env.h>
#include <dlprim/program_cache.h>
#include <dlprim/rows.h>
#include <dlprim/thread_memo.h>

#include "elementwise_text.h"

#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <unordered_map>

namespace dlprim {

uint64_t EwShape::numel() const {
  uint64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= static_cast<uint64_t>(sizes[d]);
  return n;
}

namespace {

using namespace ew_detail;

struct ProgramKey {
  cl_context ctx;
  const ElementwiseOp* op;
  uint64_t operands[3];  // 6 bits per operand: dtype + scalar flag + broadcast flag, 10 operands a word
  uint32_t compute;
  uint64_t aliases = 0;  // 4 bits per input: the output it aliases + 1 (elementwise_multi), 16 inputs
  bool operator==(const ProgramKey& o) const {
    return ctx == o.ctx && op == o.op && operands[0] == o.operands[0] && operands[1] == o.operands[1] &&
           operands[2] == o.operands[2] && compute == o.compute && aliases == o.aliases;
  }
};

struct ProgramKeyHash {
  size_t operator()(const ProgramKey& k) const {
    size_t h = std::hash<const void*>()(k.ctx);
    h = h * 31 + std::hash<const void*>()(k.op);
    for (uint64_t w : k.operands) h = h * 31 + std::hash<uint64_t>()(w);
    return (h * 31 + k.compute) * 31 + std::hash<uint64_t>()(k.aliases);
  }
};

struct Kernels {
  std::mutex m;  // clSetKernelArg + enqueue on one cl_kernel must not interleave
  cl_kernel contig = nullptr, vec4 = nullptr, strided32 = nullptr, strided64 = nullptr;
  cl_kernel rows = nullptr;  // built on first use (GPU mappings only)
  cl_kernel multi = nullptr, multi_vec = nullptr;  // elementwise_multi's, each in its own program
};


void add_scalar(KernelArgs& args, DType t, const Scalar& v) {
  double f = v.is_floating ? v.f : static_cast<double>(v.i);
  int64_t i = v.is_floating ? static_cast<int64_t>(v.f) : v.i;
  switch (compute_dtype(t)) {
    case DType::Bool: args.add<cl_uchar>(v.is_floating ? (v.f != 0) : (v.i != 0)); break;
    case DType::U8: args.add<cl_uchar>(static_cast<cl_uchar>(i)); break;
    case DType::I8: args.add<cl_char>(static_cast<cl_char>(i)); break;
    case DType::I16: args.add<cl_short>(static_cast<cl_short>(i)); break;
    case DType::U16: args.add<cl_ushort>(static_cast<cl_ushort>(i)); break;
    case DType::I32: args.add<cl_int>(static_cast<cl_int>(i)); break;
    case DType::U32: args.add<cl_uint>(static_cast<cl_uint>(i)); break;
    case DType::I64: args.add<cl_long>(i); break;
    case DType::U64: args.add<cl_ulong>(static_cast<cl_ulong>(i)); break;
    case DType::F32: args.add<cl_float>(static_cast<float>(f)); break;
    case DType::F64: args.add<cl_double>(f); break;
    default: throw Error("elementwise: no scalar argument of this type");
  }
}

bool fits_32bit(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  const int64_t lim = std::numeric_limits<int32_t>::max();
  if (shape.numel() > static_cast<uint64_t>(lim)) return false;
  auto span_ok = [&](const EwOperand& o) {
    if (o.is_scalar) return true;
    int64_t span = 0;
    for (int d = 0; d < shape.rank; ++d) span += (shape.sizes[d] - 1) * std::abs(o.strides[d]);
    return span <= lim;
  };
  for (auto& o : outs)
    if (!span_ok(o)) return false;
  for (auto& i : ins)
    if (!span_ok(i)) return false;
  return true;
}

bool all_contiguous(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  // TensorIterator coalesces contiguous operands into a single dim of stride 1.
  if (shape.rank > 1) return false;
  for (auto& o : outs)
    if (shape.rank == 1 && o.strides[0] != 1) return false;
  for (auto& i : ins)
    if (!i.is_scalar && shape.rank == 1 && i.strides[0] != 1) return false;
  return true;
}

// Whether every array operand starts at a multiple of kVecWidth (scalars and elementwise_multi's
// broadcast inputs, read one value at a time, aside).
bool vector_aligned(const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  for (auto* list : {&outs, &ins})
    for (auto& o : *list)
      if (!o.is_scalar && !o.is_broadcast && o.offset % kVecWidth != 0) return false;
  return true;
}

// Whether ew_rows covers this launch: at most 2 dims (inner size a multiple of kVecWidth),
// outputs unit-stride along the inner dim, inputs unit-stride or broadcast (stride 0) along
// it, vector operands aligned at every row start.
bool rows_layout(const EwShape& shape, const std::vector<EwOperand>& outs, const std::vector<EwOperand>& ins) {
  if (shape.rank < 1 || shape.rank > 2 || shape.sizes[0] % kVecWidth != 0) return false;
  if (shape.numel() / kVecWidth > std::numeric_limits<uint32_t>::max()) return false;
  auto ok = [&](const EwOperand& o, bool output) {
    if (o.is_scalar) return true;
    int64_t r = shape.rank == 2 ? o.strides[1] : 0;
    if (o.strides[0] == 0 && !output) return true;
    return o.strides[0] == 1 && o.offset % kVecWidth == 0 && r % kVecWidth == 0;
  };
  for (auto& o : outs)
    if (!ok(o, true)) return false;
  for (auto& i : ins)
    if (!ok(i, false)) return false;
  return true;
}

// The kernel slots of (op, operand dtypes, compute type) in this context.
Kernels& kernels_for(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                     const std::vector<EwOperand>& ins) {
  ProgramKey key{ctx.context(), &op, {0, 0, 0}, static_cast<uint32_t>(compute)};
  int n = 0;  // 10 operands per word (60 of its bits)
  for (auto* list : {&outs, &ins})
    for (auto& o : *list) {
      if (n >= 30) throw Error("elementwise op '" + op.name + "': too many operands");
      uint64_t bits = static_cast<uint64_t>(o.dtype) | (o.is_scalar ? 16u : 0u) | (o.is_broadcast ? 32u : 0u);
      key.operands[n / 10] |= bits << (6 * (n % 10));
      ++n;
    }
  for (size_t k = 0; k < ins.size(); ++k)
    if (ins[k].alias >= 0) {
      if (k >= 16 || ins[k].alias >= 15) throw Error("elementwise op '" + op.name + "': alias out of range");
      key.aliases |= static_cast<uint64_t>(ins[k].alias + 1) << (4 * k);
    }

  // Per-op hot path: a per-thread memo skips the global lock and the hash lookup (entries are never erased
  // and unordered_map keeps their addresses across rehashes).
  thread_local ThreadMemo<ProgramKey, Kernels, 16, ProgramKeyHash> memo;
  return memo.get(key, [&key] {
    static std::mutex map_mutex;
    static std::unordered_map<ProgramKey, Kernels, ProgramKeyHash> cache;
    std::lock_guard<std::mutex> lock(map_mutex);
    return &cache[key];
  });
}

// The contiguous / vector / strided kernels (one program), under k.m.
void build_main(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<EwOperand>& outs,
                const std::vector<EwOperand>& ins, Kernels& k) {
  if (k.contig) return;
  cl_program prog = ctx.program(program_text(op, compute, outs, ins, {kContig, kVec, kStrided32, kStrided64}));
  k.contig = create_kernel(prog, "ew_contig");
  k.vec4 = create_kernel(prog, "ew_vec4");
  k.strided32 = create_kernel(prog, "ew_strided32");
  k.strided64 = create_kernel(prog, "ew_strided64");
}

} // namespace

void elementwise_prepare(const Context& ctx, const ElementwiseOp& op, DType compute, const std::vector<DType>& outputs,
                         const std::vector<DType>& inputs) {
  if (!speculative_builds(ctx.info())) return;
  auto operands = [](const std::vector<DType>& dtypes) {
    std::vector<EwOperand> v(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) v[i].dtype = dtypes[i];
    return v;
  };
  if (static_cast<int>(outputs.size()) != op.n_outputs || static_cast<int>(inputs.size()) != op.n_inputs) return;
  std::vector<EwOperand> outs = operands(outputs), ins = operands(inputs);
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64) return;
  build_in_background(ctx.info(), [&ctx, &op, compute, outs, ins] {
    Kernels& k = kernels_for(ctx, op, compute, outs, ins);
    std::lock_guard<std::mutex> lock(k.m);
    build_main(ctx, op, compute, outs, ins, k);
  });
}

void elementwise(const Context& ctx, cl_command_queue q, const ElementwiseOp& op, DType compute,
                 const EwShape& shape, const std::vector<EwOperand>& outs,
                 const std::vector<EwOperand>& ins, const std::vector<Scalar>& params) {
  if (static_cast<int>(outs.size()) != op.n_outputs || static_cast<int>(ins.size()) != op.n_inputs ||
      static_cast<int>(params.size()) != op.n_params)
    throw Error("elementwise op '" + op.name + "': wrong number of operands");
  uint64_t n = shape.numel();
  if (n == 0) return;
  if (shape.rank > kMaxDims) {
    // Rare (more than 8 dims that cannot be merged): one launch per index of the outermost dim.
    EwShape inner = shape;
    int last = --inner.rank;
    for (int64_t j = 0; j < shape.sizes[last]; ++j) {
      auto shifted = [&](std::vector<EwOperand> ops) {
        for (auto& o : ops)
          if (!o.is_scalar) o.offset += static_cast<uint64_t>(j * o.strides[last]);
        return ops;
      };
      elementwise(ctx, q, op, compute, inner, shifted(outs), shifted(ins), params);
    }
    return;
  }
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64)
    throw Error("elementwise op '" + op.name + "': device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");

  Kernels* k = &kernels_for(ctx, op, compute, outs, ins);
  std::lock_guard<std::mutex> lock(k->m);
  build_main(ctx, op, compute, outs, ins, *k);

  bool contig = all_contiguous(shape, outs, ins);
  bool narrow = !contig && fits_32bit(shape, outs, ins);
  // Contiguous operands that all start on a vector boundary take the vectorized kernel for
  // the whole vectors; the rest (and unaligned views) the one-element-per-item kernel.
  uint64_t n_vec = contig && vector_aligned(outs, ins) ? n / kVecWidth : 0;
  auto launch = [&](cl_kernel kernel, uint64_t items, uint64_t first) {
    KernelArgs args(kernel);
    if (narrow)
      args.add<cl_uint>(static_cast<cl_uint>(items));
    else
      args.add<cl_ulong>(items);
    if (!contig) {
      args.add<cl_int>(shape.rank);
      narrow ? add_dims<cl_int>(args, shape.sizes, shape.rank) : add_dims<cl_long>(args, shape.sizes, shape.rank);
    }
    auto add_operand = [&](const EwOperand& o) {
      if (o.is_scalar) {
        add_scalar(args, compute, o.value);
        return;
      }
      args.add(o.mem).add<cl_ulong>(o.offset + first);
      if (!contig)
        narrow ? add_dims<cl_int>(args, o.strides, shape.rank) : add_dims<cl_long>(args, o.strides, shape.rank);
    };
    for (auto& o : outs) add_operand(o);
    for (auto& i : ins) add_operand(i);
    for (auto& p : params) add_scalar(args, compute, p);
    launch_1d(q, kernel, items, ctx.work_group_size(256), op.name.c_str());
  };
  if (!contig && !cpu_mapping(ctx) && rows_layout(shape, outs, ins)) {
    // GPUs: the strided kernel's per-element index math (a division per dim) and scalar
    // accesses cost more than the memory traffic of, e.g., [N, M] + [M].
    if (!k->rows) k->rows = create_kernel(ctx.program(program_text(op, compute, outs, ins, {kRows})), "ew_rows");
    uint64_t mv = static_cast<uint64_t>(shape.sizes[0]) / kVecWidth;
    KernelArgs args(k->rows);
    args.add<cl_uint>(static_cast<cl_uint>(n / kVecWidth)).add<cl_uint>(static_cast<cl_uint>(mv));
    auto row_stride = [&](const EwOperand& o) { return shape.rank == 2 ? o.strides[1] : int64_t(0); };
    for (auto& o : outs) args.add(o.mem).add<cl_ulong>(o.offset).add<cl_long>(row_stride(o));
    for (auto& i : ins) {
      if (i.is_scalar) {
        add_scalar(args, compute, i.value);
        continue;
      }
      args.add(i.mem).add<cl_ulong>(i.offset).add<cl_long>(row_stride(i)).add<cl_int>(i.strides[0] == 0 ? 1 : 0);
    }
    for (auto& p : params) add_scalar(args, compute, p);
    launch_1d(q, k->rows, n / kVecWidth, ctx.work_group_size(256), op.name.c_str());
    return;
  }
  if (!contig) {
    launch(narrow ? k->strided32 : k->strided64, n, 0);
    return;
  }
  if (n_vec) launch(k->vec4, n_vec, 0);
  uint64_t done = n_vec * kVecWidth;
  if (done < n) launch(k->contig, n - done, done);
}

void elementwise_multi(const Context& ctx, cl_command_queue q, const ElementwiseOp& op, DType compute,
                       const std::vector<EwMultiItem>& items, const std::vector<Scalar>& params) {
  if (items.empty()) return;
  const std::vector<EwOperand>& outs = items[0].outputs;
  const std::vector<EwOperand>& ins = items[0].inputs;
  if (static_cast<int>(outs.size()) != op.n_outputs || static_cast<int>(ins.size()) != op.n_inputs ||
      static_cast<int>(params.size()) != op.n_params)
    throw Error("elementwise op '" + op.name + "': wrong number of operands");
  if (needs_fp64(compute, outs, ins) && !ctx.info().fp64)
    throw Error("elementwise op '" + op.name + "': device '" + ctx.info().name +
                "' does not support float64 (no cl_khr_fp64)");
  const int slots = multi_slots(ctx.info().max_parameter_size, compute, outs, ins);
  Kernels& k = kernels_for(ctx, op, compute, outs, ins);
  std::lock_guard<std::mutex> lock(k.m);
  auto multi_kernel = [&](bool vec) {
    cl_kernel& kernel = vec ? k.multi_vec : k.multi;
    if (!kernel)
      kernel = create_kernel(
          ctx.program(program_head(op, compute, outs, ins) + multi_kernel_text(op, compute, outs, ins, slots, vec)),
          vec ? "ew_multi_vec4" : "ew_multi");
    return kernel;
  };
  // An item runs on vectors when its size and every array operand's offset (broadcast inputs aside) are
  // multiples of kVecWidth, as the optimizers' parameters nearly always are (vector loads and stores instead of
  // one element per work-item).
  // PYTORCH_OCL_MULTI_VEC=0 keeps every item scalar (for measuring the vector items against them).
  const char* vec_env = env_value("PYTORCH_OCL_MULTI_VEC");
  const bool vec_on = !vec_env || std::strcmp(vec_env, "0") != 0;
  auto vec_item = [vec_on](const EwMultiItem& it) {
    return vec_on && it.n % kVecWidth == 0 && vector_aligned(it.outputs, it.inputs);
  };
  const uint64_t kMaxItems = std::numeric_limits<int32_t>::max();
  const int arrays = multi_arrays(outs, ins);
  const size_t meta_bytes = multi_meta_bytes(slots, arrays);
  thread_local std::vector<uint8_t> meta;  // reused: no allocation per launch
  // Vector items and the others launch apart (the items are independent, so their order is free).
  std::vector<const EwMultiItem*> groups[2];
  for (const EwMultiItem& it : items) {
    if (it.n == 0) continue;
    if (it.n > kMaxItems) throw Error("elementwise op '" + op.name + "': tensor too large for one item");
    groups[vec_item(it) ? 1 : 0].push_back(&it);
  }
  for (bool vec : {true, false}) {
    const std::vector<const EwMultiItem*>& group = groups[vec ? 1 : 0];
    size_t first = 0;
    while (first < group.size()) {
      // The next launch: up to `slots` items, under 2^31 work-items in all.
      std::vector<const EwMultiItem*> chunk;
      uint64_t total = 0;
      size_t next = first;
      for (; next < group.size() && static_cast<int>(chunk.size()) < slots; ++next) {
        if (total + group[next]->n > kMaxItems) break;
        chunk.push_back(group[next]);
        total += group[next]->n;
      }
      first = next;
      const uint64_t per = vec ? kVecWidth : 1;  // elements per work-item
      cl_kernel kernel = multi_kernel(vec);
      KernelArgs args(kernel);
      args.add<cl_uint>(static_cast<cl_uint>(total / per));
      // The by-value struct of multi_kernel_text: offsets (slot-major), then the ends.
      meta.assign(meta_bytes, 0);
      cl_ulong* offsets = reinterpret_cast<cl_ulong*>(meta.data());
      cl_uint* ends = reinterpret_cast<cl_uint*>(meta.data() + 8 * static_cast<size_t>(slots) * std::max(arrays, 1));
      uint64_t end = 0;
      for (int j = 0; j < slots; ++j) {
        if (j < static_cast<int>(chunk.size())) end += chunk[j]->n;
        ends[j] = static_cast<cl_uint>(end / per);
        const EwMultiItem& it = *chunk[j < static_cast<int>(chunk.size()) ? j : 0];  // unused slots repeat item 0
        int a = j * arrays;
        for (auto& o : it.outputs) offsets[a++] = o.offset;
        for (auto& i : it.inputs)
          if (!i.is_scalar && i.alias < 0) offsets[a++] = i.offset;
      }
      args.add_raw(meta_bytes, meta.data());
      for (int j = 0; j < slots; ++j) {
        const EwMultiItem& it = *chunk[j < static_cast<int>(chunk.size()) ? j : 0];
        for (auto& o : it.outputs) args.add(o.mem);
        for (auto& i : it.inputs) {
          if (i.is_scalar)
            add_scalar(args, compute, i.value);
          else if (i.alias < 0)
            args.add(i.mem);
        }
      }
      for (auto& p : params) add_scalar(args, compute, p);
      launch_1d(q, kernel, total / per, ctx.work_group_size(256), op.name.c_str());
    }
  }
}

} // namespace dlprim
