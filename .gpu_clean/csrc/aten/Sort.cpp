// sort (and argsort/msort, which decompose into it), topk, and the selections kthvalue, median and
// nanmedian on dlprim's bitonic pair sort.
// Each value becomes a 64-bit key whose unsigned order is the value order (NaN largest, as
// torch.sort); keys carry their positions, and equal keys keep position order, so the sort is
// stable. The encoders work on the bits of the values (a same-size integer view of the tensor).
#include "aten/RowMajor.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/ReduceOpsUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/native/SortingUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/where.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>
#include <c10/core/DeviceGuard.h>
#include <dlprim/sort.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// Encoders: x0 holds the value's bits (sign-extended to long); k0 = bits of the type. Floating
// types: NaN becomes the largest key and -0 becomes +0; negative values reverse their order.
#define OCL_FLOAT_KEY(sign, mask, nan_above)                                                   \
  "ulong u = (ulong)x0 & " mask "; ulong s = " sign ";\n"                                      \
  "if ((u & ~s) > " nan_above ") { y0 = (long)0xFFFFFFFFFFFFFFFFUL; }\n"                       \
  "else { if (u == s) u = 0; y0 = (long)((u & s) ? (~u & " mask ") : (u | s)); }"
const dlprim::PositionalOp k_key_f32{"sort", OCL_FLOAT_KEY("0x80000000UL", "0xFFFFFFFFUL", "0x7F800000UL"), true};
const dlprim::PositionalOp k_key_f64{
    "sort", OCL_FLOAT_KEY("0x8000000000000000UL", "0xFFFFFFFFFFFFFFFFUL", "0x7FF0000000000000UL"), true};
const dlprim::PositionalOp k_key_f16{"sort", OCL_FLOAT_KEY("0x8000UL", "0xFFFFUL", "0x7C00UL"), true};
const dlprim::PositionalOp k_key_bf16{"sort", OCL_FLOAT_KEY("0x8000UL", "0xFFFFUL", "0x7F80UL"), true};
const dlprim::PositionalOp k_key_signed{"sort", "y0 = (long)((ulong)x0 ^ 0x8000000000000000UL);", true};
const dlprim::PositionalOp k_key_unsigned{"sort", "y0 = x0;", true};

// Decoders: the inverse (a NaN comes back as the type's default quiet NaN).
#define OCL_FLOAT_VALUE(sign, mask, qnan)                                                             \
  "ulong k = (ulong)x0; ulong s = " sign ";\n"                                                        \
  "if (k == 0xFFFFFFFFFFFFFFFFUL) { y0 = (long)" qnan "; }\n"                                         \
  "else { y0 = (long)((k & s) ? (k & ~s) : (~k & " mask ")); }"
const dlprim::PositionalOp k_value_f32{"sort", OCL_FLOAT_VALUE("0x80000000UL", "0xFFFFFFFFUL", "0x7FC00000UL"), true};
const dlprim::PositionalOp k_value_f64{
    "sort", OCL_FLOAT_VALUE("0x8000000000000000UL", "0xFFFFFFFFFFFFFFFFUL", "0x7FF8000000000000UL"), true};
const dlprim::PositionalOp k_value_f16{"sort", OCL_FLOAT_VALUE("0x8000UL", "0xFFFFUL", "0x7E00UL"), true};
const dlprim::PositionalOp k_value_bf16{"sort", OCL_FLOAT_VALUE("0x8000UL", "0xFFFFUL", "0x7FC0UL"), true};
const dlprim::PositionalOp k_value_signed{"sort", "y0 = (long)((ulong)x0 ^ 0x8000000000000000UL);", true};
const dlprim::PositionalOp k_value_unsigned{"sort", "y0 = x0;", true};

const dlprim::PositionalOp k_iota{"sort", "y0 = c[rank - 1];", false};

struct Codec {
  const dlprim::PositionalOp *key, *value;
  c10::ScalarType bits;  // the integer type the values are viewed as
};

Codec codec_for(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return {&k_key_f32, &k_value_f32, c10::kInt};
    case c10::kDouble: return {&k_key_f64, &k_value_f64, c10::kLong};
    case c10::kHalf: return {&k_key_f16, &k_value_f16, c10::kShort};
    case c10::kBFloat16: return {&k_key_bf16, &k_value_bf16, c10::kShort};
    case c10::kChar: case c10::kShort: case c10::kInt: case c10::kLong:
      return {&k_key_signed, &k_value_signed, t};
    case c10::kByte: case c10::kBool: case c10::kUInt16: case c10::kUInt32: case c10::kUInt64:
      return {&k_key_unsigned, &k_value_unsigned, t};
    default: TORCH_CHECK_NOT_IMPLEMENTED(false, "sort: dtype ", t, " is not supported on ocl");
  }
}

// The rows of self along dim as (rows, width) long tensors: keys (codec order; `pad` beyond the
// n real ones when width > n) and positions 0..width-1. Returns the shape of self with dim last.
std::vector<int64_t> encode_rows(const at::Tensor& self, int64_t dim, int64_t width, int64_t pad, const Codec& codec,
                                 at::Tensor* keys, at::Tensor* pos) {
  int64_t n = self.size(dim), rows = self.numel() / n;
  auto long_opts = self.options().dtype(c10::kLong);
  *keys = at::empty({rows, width}, long_opts);
  if (width > n) keys->fill_(pad);
  *pos = at::empty({rows, width}, long_opts);
  at::Tensor x = self.movedim(dim, -1);
  std::vector<int64_t> row_shape = x.sizes().vec();
  at::Tensor real_keys = keys->narrow(1, 0, n).view(row_shape);
  at::Tensor bits = x.view(codec.bits);  // read as long: sign-extended, the encoders mask
  launch_positional(*codec.key, c10::kLong, real_keys, &bits, 0, {});
  launch_positional(k_iota, c10::kLong, *pos, nullptr, 1, {});
  return row_shape;
}

// Sorts `self` along `dim` into values (first `k` of each row) and their indices.
void sort_impl(const at::Tensor& self, int64_t dim, bool descending, int64_t k, const at::Tensor& values,
               const at::Tensor& indices, const char* name) {
  check_ocl(self, name, "self");
  c10::DeviceGuard guard(self.device());
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
    return;
  }
  if (values.numel() == 0) return;
  Codec codec = codec_for(self.scalar_type());
  int64_t n = self.size(dim);
  int64_t padded = static_cast<int64_t>(dlprim::next_pow2(static_cast<uint64_t>(n)));
  int64_t rows = self.numel() / n;
  // Padding sorts last either way: the largest key ascending, the smallest descending, and
  // after real keys on ties (its positions are larger).
  at::Tensor keys, pos;
  std::vector<int64_t> row_shape = encode_rows(self, dim, padded, descending ? 0 : -1, codec, &keys, &pos);
  BufferRef kb = buffer_of(keys), pb = buffer_of(pos);
  int device = self.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::sort_pairs(context(device), q, kb.mem, kb.offset / 8, pb.mem, pb.offset / 8,
                                           static_cast<uint64_t>(rows), static_cast<uint64_t>(padded), descending));
  note_enqueued(q);
  std::vector<int64_t> out_shape = row_shape;
  out_shape.back() = k;
  indices.movedim(dim, -1).copy_(pos.narrow(1, 0, k).view(out_shape));
  at::Tensor sorted_keys = keys.narrow(1, 0, k).view(out_shape);
  at::Tensor out_bits = values.movedim(dim, -1).view(codec.bits);
  launch_positional(*codec.value, c10::kLong, out_bits, &sorted_keys, 0, {});
}

std::tuple<at::Tensor&, at::Tensor&> sort_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                              bool descending, at::Tensor& values, at::Tensor& indices) {
  dim = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), "sort: expected values to have dtype ",
              self.scalar_type(), " but got ", values.scalar_type());
  TORCH_CHECK(indices.scalar_type() == c10::kLong, "sort: expected indices to have dtype Long but got ",
              indices.scalar_type());
  at::native::resize_output(values, self.sizes());
  at::native::resize_output(indices, self.sizes());
  sort_impl(self, dim, descending, self.dim() == 0 ? 1 : self.size(dim), values, indices, "sort");
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, int64_t k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  dim = c10::maybe_wrap_dim(dim, self.dim(), true);
  int64_t size = self.dim() == 0 ? 1 : self.size(dim);
  TORCH_CHECK(k >= 0 && k <= size, "selected index k out of range");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[dim] = k;
  at::native::resize_output(values, shape);
  at::native::resize_output(indices, shape);
  if (k == 0) return {values, indices};
  sort_impl(self, dim, largest, k, values, indices, "topk");
  return {values, indices};
}

// ---------------------------------------------------------------- selections
// kthvalue runs the CPU's own quickselect per row on the keys (dlprim::select_kth), so its index
// among ties is the CPU's. median/nanmedian: the CPU's nth_element breaks ties by position, which
// is the stable sort's order, so a sort gives the CPU's values and indices (nanmedian of an all-NaN
// row: see all_nan_position).

// The CPU's dtype set for these ops (AT_DISPATCH_ALL_TYPES_AND2(Half, BFloat16)).
void check_select_dtype(const at::Tensor& self, const char* cpu_name) {
  c10::ScalarType t = self.scalar_type();
  bool ok = t == c10::kByte || t == c10::kChar || t == c10::kShort || t == c10::kInt || t == c10::kLong ||
            t == c10::kHalf || t == c10::kBFloat16 || t == c10::kFloat || t == c10::kDouble;
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", cpu_name, "\" not implemented for '", c10::toString(t), "'");
}

// Ascending stable sort of self along dim (NaN last), the first `k` of each row.
std::tuple<at::Tensor, at::Tensor> sorted_prefix(const at::Tensor& self, int64_t dim, int64_t k, const char* name) {
  std::vector<int64_t> shape = self.sizes().vec();
  shape[dim] = k;
  at::Tensor values = at::empty(shape, self.options());
  at::Tensor indices = at::empty(shape, self.options().dtype(c10::kLong));
  sort_impl(self, dim, false, k, values, indices, name);
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, int64_t k, int64_t dim_, bool keepdim,
                                                  at::Tensor& values, at::Tensor& indices) {
  // kthvalue_out_impl_cpu's checks, in its order.
  int64_t dim = c10::maybe_wrap_dim(dim_, self.dim(), /*wrap_scalar=*/true);
  int64_t slicesize = self.dim() == 0 ? 1 : self.size(dim);
  at::native::zero_numel_check_dims(self, dim, "kthvalue()");
  TORCH_CHECK(k >= 1 && k <= slicesize, "kthvalue(): selected number k out of range for dimension ", dim);
  at::assert_no_overlap(self, values);
  at::native::_reduction_with_indices_allocate_or_resize_output(values, indices, self, dim_, keepdim);
  check_select_dtype(self, "kthvalue_cpu");
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
  } else if (self.numel() > 0) {
    check_ocl(self, "kthvalue", "self");
    c10::DeviceGuard guard(self.device());
    Codec codec = codec_for(self.scalar_type());
    int64_t n = self.size(dim);
    at::Tensor keys, pos;
    std::vector<int64_t> row_shape = encode_rows(self, dim, n, 0, codec, &keys, &pos);
    BufferRef kb = buffer_of(keys), pb = buffer_of(pos);
    int device = self.device().index();
    cl_command_queue q = current_queue(device);
    OCL_DLPRIM_CALL("kthvalue", dlprim::select_kth(context(device), q, kb.mem, kb.offset / 8, pb.mem, pb.offset / 8,
                                                   static_cast<uint64_t>(keys.size(0)), static_cast<uint64_t>(n),
                                                   static_cast<uint64_t>(k - 1)));
    note_enqueued(q);
    row_shape.back() = 1;
    indices.movedim(dim, -1).copy_(pos.narrow(1, k - 1, 1).view(row_shape));
    values.copy_(at::gather(self, dim, indices));  // the element itself: keys fold -0 into +0
  }
  if (!keepdim) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

// Position in the sorted row of the CPU's median (ignore_nan: nanmedian): (n - 1) / 2 without
// NaN; median with NaN takes the first NaN (the first NaN in sorted order, as the sort is stable
// and puts NaN last); nanmedian takes (n - nans - 1) / 2.
// A row of n NaNs is the exception: nanmedian's comparator finds them all equivalent, so the
// CPU's std::nth_element leaves there whichever element its pivoting moves first, a function of n
// alone: the same call on n equivalent positions here gives it.
int64_t all_nan_position(int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::nth_element(order.begin(), order.begin(), order.end(), [](int64_t, int64_t) { return false; });
  return order[0];
}

at::Tensor median_positions(const at::Tensor& self, int64_t dim, bool ignore_nan) {
  int64_t n = self.size(dim);
  at::Tensor nans = at::sum(at::isnan(self), {dim}, /*keepdim=*/true, c10::kLong);
  if (ignore_nan)
    return at::where(nans.eq(n), c10::Scalar(all_nan_position(n)), at::rsub(nans, n - 1).div_(2, "floor"));
  return at::where(nans.gt(0), at::rsub(nans, n), c10::Scalar((n - 1) / 2));
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_impl(const at::Tensor& self, int64_t dim_, bool keepdim,
                                                     bool ignore_nan, at::Tensor& values, at::Tensor& indices) {
  const char* name = ignore_nan ? "nanmedian()" : "median()";
  // median_with_indices_impl's checks, in its order.
  int64_t dim = c10::maybe_wrap_dim(dim_, self.dim());
  at::native::zero_numel_check_dims(self, dim, name);
  TORCH_CHECK(values.device() == self.device() && indices.device() == self.device(), name,
              ": expected values and indices on ", self.device());
  TORCH_CHECK(indices.scalar_type() == c10::kLong, name, ": expected indices to have dtype Long but got ",
              indices.scalar_type());
  TORCH_CHECK(values.scalar_type() == self.scalar_type(), name, ": expected values to have dtype ",
              self.scalar_type(), " but got ", values.scalar_type());
  std::vector<int64_t> kept = self.sizes().vec();
  if (self.dim() > 0) kept[dim] = 1;
  at::native::resize_output(values, kept);
  at::native::resize_output(indices, kept);
  check_select_dtype(self, ignore_nan ? "nanmedian_cpu" : "median_out");
  if (self.dim() == 0) {
    values.copy_(self);
    indices.zero_();
  } else if (self.numel() > 0) {
    int64_t n = self.size(dim);
    if (!c10::isFloatingType(self.scalar_type())) {  // no NaN: a fixed position, only a prefix sorted
      auto sorted = sorted_prefix(self, dim, (n - 1) / 2 + 1, "median");
      indices.copy_(std::get<1>(sorted).narrow(dim, (n - 1) / 2, 1));
    } else {
      auto sorted = sorted_prefix(self, dim, n, "median");
      indices.copy_(at::gather(std::get<1>(sorted), dim, median_positions(self, dim, ignore_nan)));
    }
    values.copy_(at::gather(self, dim, indices));  // the element itself (-0, NaN payloads kept)
  }
  if (!keepdim && self.dim() > 0) {
    values.squeeze_(dim);
    indices.squeeze_(dim);
  }
  return {values, indices};
}

std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                    at::Tensor& values, at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, false, values, indices);
}
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& self, int64_t dim, bool keepdim,
                                                       at::Tensor& values, at::Tensor& indices) {
  return median_dim_impl(self, dim, keepdim, true, values, indices);
}

// median() / nanmedian(): the value of the flattened tensor's selection; NaN when empty, made as
// the CPU makes it (a float NaN converted to self's dtype on the host).
at::Tensor median_all_impl(const at::Tensor& self, bool ignore_nan) {
  check_select_dtype(self, ignore_nan ? "nanmedian_cpu" : "median_cpu");
  if (self.numel() == 0)
    return at::full({}, std::numeric_limits<float>::quiet_NaN()).to(self.scalar_type()).to(self.device());
  at::Tensor values = at::empty({0}, self.options());
  at::Tensor indices = at::empty({0}, self.options().dtype(c10::kLong));
  median_dim_impl(self.reshape({-1}), 0, false, ignore_nan, values, indices);
  return values;
}
at::Tensor median_all(const at::Tensor& self) { return median_all_impl(self, false); }
at::Tensor nanmedian_all(const at::Tensor& self) { return median_all_impl(self, true); }

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.values_stable", TORCH_FN(sort_out));
  m.impl("topk.values", TORCH_FN(topk_out));
  m.impl("kthvalue.values", TORCH_FN(kthvalue_out));
  m.impl("median.dim_values", TORCH_FN(median_dim_out));
  m.impl("nanmedian.dim_values", TORCH_FN(nanmedian_dim_out));
  m.impl("median", TORCH_FN(median_all));
  m.impl("nanmedian", TORCH_FN(nanmedian_all));
}

} // namespace pytorch_ocl
