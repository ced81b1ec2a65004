// sort (and argsort/msort, which decompose into it) and topk on dlprim's bitonic pair sort.
// Each value becomes a 64-bit key whose unsigned order is the value order (NaN largest, as
// torch.sort); keys carry their positions, and equal keys keep position order, so the sort is
// stable. The encoders work on the bits of the values (a same-size integer view of the tensor).
#include "aten/RowMajor.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
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
  auto long_opts = self.options().dtype(c10::kLong);
  // Padding sorts last either way: the largest key ascending, the smallest descending, and
  // after real keys on ties (its positions are larger).
  at::Tensor keys = at::empty({rows, padded}, long_opts).fill_(descending ? 0 : -1);
  at::Tensor pos = at::empty({rows, padded}, long_opts);
  at::Tensor x = self.movedim(dim, -1);
  std::vector<int64_t> row_shape = x.sizes().vec();
  at::Tensor real_keys = keys.narrow(1, 0, n).view(row_shape);
  at::Tensor bits = x.view(codec.bits);  // read as long: sign-extended, the encoders mask
  launch_positional(*codec.key, c10::kLong, real_keys, &bits, 0, {});
  launch_positional(k_iota, c10::kLong, pos, nullptr, 1, {});
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

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sort.values_stable", TORCH_FN(sort_out));
  m.impl("topk.values", TORCH_FN(topk_out));
}

} // namespace pytorch_ocl
