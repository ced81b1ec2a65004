// Host side of the indexing kernels (kernels/index.cl), all built through typed_kernel: the key
// kernels on the index type, data moves on a same-size integer type (fewer programs; half is
// not a register type without cl_khr_fp16), reductions on the real type.
#include <dlprim/index.h>
#include <dlprim/typed_kernels.h>

namespace dlprim {

namespace {

DType bits_type(DType t) {
  switch (dtype_size(t)) {
    case 1: return DType::U8;
    case 2: return DType::I16;
    case 4: return DType::I32;
    default: return DType::I64;
  }
}

// The accumulator-typed alpha argument (DL_ACC of the typed program).
void add_acc(KernelArgs& a, DType t, double v) {
  switch (compute_dtype(t)) {
    case DType::F32: a.add<cl_float>(static_cast<float>(v)); break;
    case DType::F64: a.add<cl_double>(v); break;
    case DType::Bool: a.add<cl_uchar>(v != 0 ? 1 : 0); break;
    case DType::U8: a.add<cl_uchar>(static_cast<cl_uchar>(v)); break;
    case DType::I8: a.add<cl_char>(static_cast<cl_char>(v)); break;
    case DType::I16: a.add<cl_short>(static_cast<cl_short>(v)); break;
    case DType::U16: a.add<cl_ushort>(static_cast<cl_ushort>(v)); break;
    case DType::I32: a.add<cl_int>(static_cast<cl_int>(v)); break;
    case DType::U32: a.add<cl_uint>(static_cast<cl_uint>(v)); break;
    case DType::U64: a.add<cl_ulong>(static_cast<cl_ulong>(v)); break;
    default: a.add<cl_long>(static_cast<cl_long>(v)); break;
  }
}

// Arguments shared by the gather, scatter and reduce kernels.
// The keyed kernels' arguments after the work-item count n.
void add_keyed_tail(KernelArgs& a, const KeyedLaunch& l) {
  uint64_t inner_n = l.inner.numel();
  a.add<cl_ulong>(inner_n).add<cl_int>(l.inner.rank);
  add_dims(a, l.inner.sizes, l.inner.rank);
  a.add(l.dense.mem).add<cl_ulong>(l.dense.offset).add<cl_long>(l.dense_row_stride);
  add_dims(a, l.dense.strides, l.inner.rank);
  a.add(l.big.mem).add<cl_ulong>(l.big.offset);
  add_dims(a, l.big.strides, l.inner.rank);
  if (l.keys.mem) a.add(l.keys.mem).add<cl_ulong>(l.keys.offset);
}

void add_keyed(KernelArgs& a, const KeyedLaunch& l) {
  a.add<cl_ulong>(l.rows * l.inner.numel());
  add_keyed_tail(a, l);
}

void run_keyed(const Context& ctx, cl_command_queue q, const KeyedLaunch& l, const char* name) {
  uint64_t n = l.rows * l.inner.numel();
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", bits_type(l.big.dtype), name);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  add_keyed(a, l);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

} // namespace

void index_keys(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, DevPtr keys, bool accumulate,
                const StridedOperand& idx, const std::array<int64_t, kMaxDims>& pos_strides, bool wrap,
                int64_t size, int64_t stride, bool has_skip, int64_t skip, DevPtr flag) {
  uint64_t n = shape.numel();
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", idx.dtype, "dl_index_keys");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n).add<cl_int>(shape.rank);
  add_dims(a, shape.sizes, shape.rank);
  a.add(keys.mem).add<cl_ulong>(keys.offset).add<cl_int>(accumulate ? 1 : 0);
  a.add(idx.mem).add<cl_ulong>(idx.offset);
  add_dims(a, idx.strides, shape.rank);
  add_dims(a, pos_strides, shape.rank);
  a.add<cl_long>(wrap ? -size : 0).add<cl_long>(size).add<cl_long>(stride).add<cl_int>(has_skip ? 1 : 0).add<cl_long>(skip);
  a.add(flag.mem).add<cl_ulong>(flag.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_gather(const Context& ctx, cl_command_queue q, const KeyedLaunch& l) {
  run_keyed(ctx, q, l, "dl_index_gather");
}

void index_gather_idx(const Context& ctx, cl_command_queue q, const KeyedLaunch& l, DevPtr idx, int64_t idx_stride,
                      int64_t size, int64_t stride, DevPtr flag) {
  uint64_t n = l.rows * l.inner.numel();
  if (n == 0) return;
  if (l.keys.mem) throw Error("index_gather_idx: takes no keys");
  TypedKernel k = typed_kernel(ctx, "index", bits_type(l.big.dtype), "dl_index_gather_idx");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  add_keyed(a, l);
  a.add(idx.mem).add<cl_ulong>(idx.offset).add<cl_long>(idx_stride);
  a.add<cl_long>(size).add<cl_long>(stride);
  a.add(flag.mem).add<cl_ulong>(flag.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_scatter(const Context& ctx, cl_command_queue q, const KeyedLaunch& l) {
  run_keyed(ctx, q, l, "dl_index_scatter");
}

uint64_t index_reduce_parts(const KeyedLaunch& l, IndexReduce mode) {
  const bool chunked = mode == IndexReduce::Sum && (l.big.dtype == DType::F32 || l.big.dtype == DType::F64) &&
                       l.rows >= 4 * kIndexReduceChunk;
  return chunked ? (l.rows + kIndexReduceChunk - 1) / kIndexReduceChunk * l.inner.numel() : 0;
}

void index_reduce(const Context& ctx, cl_command_queue q, const KeyedLaunch& l, DevPtr sorted_rows,
                  IndexReduce mode, bool include_self, double alpha, DevPtr parts) {
  uint64_t n = l.rows * l.inner.numel();
  if (n == 0) return;
  const uint64_t n_parts = index_reduce_parts(l, mode);
  const uint64_t chunk = n_parts && parts.mem ? kIndexReduceChunk : 0;
  if (chunk) {
    TypedKernel k = typed_kernel(ctx, "index", l.big.dtype, "dl_index_reduce_chunks");
    std::lock_guard<std::mutex> lock(*k.mutex);
    KernelArgs a(k.kernel);
    a.add<cl_ulong>(n_parts);
    add_keyed_tail(a, l);
    a.add(sorted_rows.mem).add<cl_ulong>(sorted_rows.offset);
    add_acc(a, l.big.dtype, alpha);
    a.add<cl_ulong>(l.rows).add<cl_ulong>(chunk).add(parts.mem).add<cl_ulong>(parts.offset);
    launch_1d(q, k.kernel, n_parts, ctx.work_group_size(256));
  }
  TypedKernel k = typed_kernel(ctx, "index", l.big.dtype, "dl_index_reduce");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  add_keyed(a, l);
  a.add(sorted_rows.mem).add<cl_ulong>(sorted_rows.offset);
  a.add<cl_int>(static_cast<int>(mode)).add<cl_int>(include_self ? 1 : 0);
  add_acc(a, l.big.dtype, alpha);
  a.add<cl_ulong>(l.rows).add<cl_ulong>(chunk);
  a.add(chunk ? parts.mem : sorted_rows.mem).add<cl_ulong>(chunk ? parts.offset : 0);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_select_positions(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, DevPtr cs,
                            bool want_coords, DevPtr coords, DevPtr keys,
                            const std::array<int64_t, kMaxDims>& key_strides) {
  uint64_t n = shape.numel();
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", DType::I64, "dl_index_select_positions");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n).add<cl_int>(shape.rank);
  add_dims(a, shape.sizes, shape.rank);
  a.add(cs.mem).add<cl_ulong>(cs.offset).add<cl_int>(want_coords ? 1 : 0);
  a.add(coords.mem ? coords.mem : cs.mem).add<cl_ulong>(coords.offset);
  a.add(keys.mem ? keys.mem : cs.mem).add<cl_ulong>(keys.offset);
  add_dims(a, key_strides, shape.rank);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_repeat(const Context& ctx, cl_command_queue q, DType repeats_type, uint64_t n, DevPtr repeats, DevPtr cs,
                  DevPtr out, int64_t total) {
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", repeats_type, "dl_index_repeat");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n).add(repeats.mem).add<cl_ulong>(repeats.offset).add(cs.mem).add<cl_ulong>(cs.offset);
  a.add(out.mem).add<cl_ulong>(out.offset).add<cl_long>(total);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_searchsorted(const Context& ctx, cl_command_queue q, DType t, uint64_t n, uint64_t per_row, bool one_row,
                        DevPtr values, DevPtr bounds, int64_t m, bool has_sorter, DevPtr sorter, bool right,
                        DevPtr out) {
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", t, "dl_index_searchsorted");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n).add<cl_ulong>(per_row ? per_row : 1).add<cl_int>(one_row ? 1 : 0);
  a.add(values.mem).add<cl_ulong>(values.offset).add(bounds.mem).add<cl_ulong>(bounds.offset).add<cl_long>(m);
  a.add<cl_int>(has_sorter ? 1 : 0).add(sorter.mem ? sorter.mem : values.mem).add<cl_ulong>(sorter.offset);
  a.add<cl_int>(right ? 1 : 0).add(out.mem).add<cl_ulong>(out.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_isin(const Context& ctx, cl_command_queue q, DType t, uint64_t n, DevPtr elements, DevPtr test, int64_t m,
                bool sorted, bool invert, DevPtr out) {
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", t, "dl_index_isin");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(n).add(elements.mem).add<cl_ulong>(elements.offset).add(test.mem).add<cl_ulong>(test.offset);
  a.add<cl_long>(m).add<cl_int>(sorted ? 1 : 0).add<cl_int>(invert ? 1 : 0).add(out.mem).add<cl_ulong>(out.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

void index_histc(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, const StridedOperand& x,
                 uint64_t start, uint64_t n, double lo, double hi, int64_t bins, int round16, DevPtr counts) {
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "index", x.dtype, "dl_index_histc");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add<cl_ulong>(start).add<cl_ulong>(n).add<cl_int>(shape.rank);
  add_dims(a, shape.sizes, shape.rank);
  add_dims(a, x.strides, shape.rank);
  a.add(x.mem).add<cl_ulong>(x.offset);
  add_acc(a, x.dtype, lo);
  add_acc(a, x.dtype, hi);
  a.add<cl_long>(bins).add<cl_int>(round16).add(counts.mem).add<cl_ulong>(counts.offset);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256));
}

} // namespace dlprim
