#include <dlprim/gather.h>

namespace dlprim {

namespace {
// The kernels only move elements: they run on an unsigned integer type of the same width, so
// 16-bit floats need no half support and float64 no cl_khr_fp64.
DType bits_type(DType t) {
  switch (dtype_size(t)) {
    case 1: return DType::U8;
    case 2: return DType::U16;
    case 4: return DType::U32;
    default: return DType::U64;
  }
}
} // namespace

void gather_dim(const Context& ctx, cl_command_queue q, DType t, Buffer src, Buffer index, Buffer out, int rank, int dim,
                const int64_t* sizes, const int64_t* src_strides) {
  if (rank > kGatherMaxDims) throw Error("gather: more than 8 dimensions");
  uint64_t n = 1;
  cl_long8 sz{}, st{};
  for (int d = 0; d < rank; ++d) {
    n *= uint64_t(sizes[d]);
    sz.s[d] = sizes[d];
    st.s[d] = src_strides[d];
  }
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "gather", bits_type(t), "gather_dim");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(src.mem).add<cl_ulong>(src.offset).add(index.mem).add<cl_ulong>(index.offset);
  a.add(out.mem).add<cl_ulong>(out.offset).add<cl_ulong>(n).add<cl_int>(rank).add<cl_int>(dim);
  a.add<cl_long8>(sz).add<cl_long8>(st);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "gather");
}

void masked_compact(const Context& ctx, cl_command_queue q, DType t, Buffer src, Buffer mask, Buffer pos, Buffer out,
                    uint64_t n) {
  if (n == 0) return;
  TypedKernel k = typed_kernel(ctx, "gather", bits_type(t), "masked_compact");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs a(k.kernel);
  a.add(src.mem).add<cl_ulong>(src.offset).add(mask.mem).add<cl_ulong>(mask.offset);
  a.add(pos.mem).add<cl_ulong>(pos.offset).add(out.mem ? out.mem : src.mem).add<cl_ulong>(out.offset).add<cl_ulong>(n);
  launch_1d(q, k.kernel, n, ctx.work_group_size(256), "masked_select");
}

} // namespace dlprim
