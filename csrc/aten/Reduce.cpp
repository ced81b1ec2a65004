// Sum-like reductions (sum, mean, prod, nansum), logical ones (any, all, count_nonzero) and hash_tensor:
// each op is one dlprim ReduceOp row; ReduceLaunch does shapes, strides and aliasing.
#include "aten/ReduceLaunch.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/count_nonzero.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// state, init, combine (x at index j), merge (b into a), finalize (y0 from a and count n)
const dlprim::ReduceOp k_sum{"sum", {"T s"}, "a->s = 0;", "a->s += x;", "a->s += b->s;", "y0 = a->s;"};
const dlprim::ReduceOp k_nansum{"nansum", {"T s"}, "a->s = 0;", "if (!IS_NAN(x)) a->s += x;", "a->s += b->s;",
                                "y0 = a->s;"};
const dlprim::ReduceOp k_mean{"mean", {"T s"}, "a->s = 0;", "a->s += x;", "a->s += b->s;", "y0 = a->s / (T)n;"};
const dlprim::ReduceOp k_prod{"prod", {"T s"}, "a->s = 1;", "a->s *= x;", "a->s *= b->s;", "y0 = a->s;"};
// Logical results are counts/flags in a long; x keeps the input's type so that 0.5 or NaN
// count as true.
const dlprim::ReduceOp k_any{"any", {"long b"}, "a->b = 0;", "a->b |= (x != 0);", "a->b |= b->b;", "y0 = a->b;", "",
                             1, dlprim::ReduceValue::Index};
const dlprim::ReduceOp k_all{"all", {"long b"}, "a->b = 1;", "a->b &= (x != 0);", "a->b &= b->b;", "y0 = a->b;", "",
                             1, dlprim::ReduceValue::Index};
const dlprim::ReduceOp k_count_nonzero{"count_nonzero", {"long c"}, "a->c = 0;", "a->c += (x != 0);",
                                       "a->c += b->c;", "y0 = a->c;", "", 1, dlprim::ReduceValue::Index};

// hash_tensor (mode 0, the CPU's xor_sum): the xor of the elements upcast to their 64-bit type (float64 /
// int64) and read as uint64. float32 and 16-bit floats (loaded as float) get their float64 bits from integer
// operations, exact for zeros, subnormals, infinities and NaN (quietened, as the CPU's conversion does), so
// devices without float64 hash them too.
const char* k_f64_bits = R"CL(
inline ulong dl_f32_as_f64_bits(float f) {
  const uint u = as_uint(f), e = (u >> 23) & 0xffu, m = u & 0x7fffffu;
  const ulong s = (ulong)(u >> 31) << 63;
  if (e == 0xffu) return s | 0x7ff0000000000000ul | ((ulong)m << 29) | (m ? 0x0008000000000000ul : 0ul);
  if (e == 0) {
    if (m == 0) return s;
    const int p = 31 - (int)clz(m);  // the subnormal's leading bit: the value is 2^(p - 149) (1 + ...)
    return s | ((ulong)(p - 149 + 1023) << 52) | (((ulong)m << (52 - p)) & 0xffffffffffffful);
  }
  return s | ((ulong)(e + 896u) << 52) | ((ulong)m << 29);
}
)CL";
const dlprim::ReduceOp k_hash_f32{"hash_tensor", {"ulong h"}, "a->h = 0;", "a->h ^= dl_f32_as_f64_bits(x);",
                                  "a->h ^= b->h;", "y0 = (long)a->h;", k_f64_bits, 1, dlprim::ReduceValue::Index};
const dlprim::ReduceOp k_hash_f64{"hash_tensor", {"ulong h"}, "a->h = 0;", "a->h ^= as_ulong(x);", "a->h ^= b->h;",
                                  "y0 = (long)a->h;", "", 1, dlprim::ReduceValue::Index};
const dlprim::ReduceOp k_hash_int{"hash_tensor", {"ulong h"}, "a->h = 0;", "a->h ^= (ulong)x;", "a->h ^= b->h;",
                                  "y0 = (long)a->h;", "", 1, dlprim::ReduceValue::Index};

// Result dtype of sum/prod/nansum: `dtype`, else integers (and bool) widen to int64.
c10::ScalarType sum_result_type(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  if (dtype) return *dtype;
  return c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? c10::kLong : self.scalar_type();
}

void check_out_dtype(const at::Tensor& out, c10::ScalarType expected, const char* name) {
  TORCH_CHECK(out.scalar_type() == expected, name, ": Expected out tensor to have dtype ", expected,
              ", but got ", out.scalar_type(), " instead");
}

// Sums of complex tensors: the same reduction over the view_as_real of input and output, whose
// trailing (re, im) dim is never reduced.
at::Tensor complex_prod(const at::Tensor& self, const DimMask& mask, bool keepdim);

at::Tensor& complex_sum_like(const dlprim::ReduceOp& op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                             at::Tensor& out, const char* name) {
  if (&op == &k_prod && out.is_complex()) {
    at::Tensor p = complex_prod(self.to(out.scalar_type()), mask, keepdim);
    at::native::resize_output(out, p.sizes());
    out.copy_(p);
    return out;
  }
  TORCH_CHECK(self.is_complex() && out.is_complex() && (&op == &k_sum || &op == &k_mean), name, ": ",
              self.scalar_type(), " input with ", out.scalar_type(), " output is not supported on ocl");
  DimMask m = mask;
  for (int64_t d = self.dim(); d < static_cast<int64_t>(m.size()); ++d) m.reset(d);
  at::native::resize_output(out, reduced_shape(self, m, keepdim));
  at::Tensor out_parts = at::view_as_real(out);
  c10::ScalarType acc = sum_acc_type(out_parts.scalar_type());
  launch_reduction(op, at::view_as_real(self.resolve_conj()), m, keepdim, {out_parts}, acc, {0, 0}, name);
  return out;
}

// The product of complex values over the dims of `mask`: the reduced dims moved last and
// flattened, then halved by pairwise complex multiplications (ceil(log2 n) launches of the
// complex mul row) until one value is left.
at::Tensor complex_prod(const at::Tensor& self, const DimMask& mask, bool keepdim) {
  std::vector<int64_t> keep, red, kept_sizes, out_sizes;
  int64_t n = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (mask[d]) {
      red.push_back(d);
      n *= self.size(d);
      if (keepdim) out_sizes.push_back(1);
    } else {
      keep.push_back(d);
      kept_sizes.push_back(self.size(d));
      out_sizes.push_back(self.size(d));
    }
  }
  std::vector<int64_t> order = keep;
  order.insert(order.end(), red.begin(), red.end());
  std::vector<int64_t> flat = kept_sizes;
  flat.push_back(n);
  at::Tensor x = self.resolve_conj().permute(order).reshape(flat);
  if (n == 0) return at::ones(out_sizes, self.options());
  while (x.size(-1) > 1) {
    int64_t len = x.size(-1), half = len / 2;
    at::Tensor y = at::mul(x.narrow(-1, 0, half), x.narrow(-1, half, half));
    x = len % 2 ? at::cat({y, x.narrow(-1, len - 1, 1)}, -1) : y;
  }
  return x.reshape(out_sizes);
}

// Shared by the sum-like ops: the result dtype is `dtype`, or that of an out already
// allocated by the functional form, or the op's default.
at::Tensor& sum_like(const dlprim::ReduceOp& op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                     std::optional<c10::ScalarType> dtype, at::Tensor& out, const char* name) {
  if (dtype) check_out_dtype(out, *dtype, name);
  if (self.is_complex() || out.is_complex()) return complex_sum_like(op, self, mask, keepdim, out, name);
  c10::ScalarType acc = sum_acc_type(out.scalar_type());
  launch_reduction(op, self, mask, keepdim, {out}, acc, {0, 0}, name);
  return out;
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  return sum_like(k_sum, self, reduction_mask(dim, self.dim()), keepdim, dtype, out, "sum");
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  TORCH_CHECK(!c10::isComplexType(self.scalar_type()), "nansum does not support complex inputs");
  // For integers nothing is NaN: a plain sum.
  const dlprim::ReduceOp& op = c10::isIntegralType(self.scalar_type(), true) ? k_sum : k_nansum;
  return sum_like(op, self, reduction_mask(dim, self.dim()), keepdim, dtype, out, "nansum");
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<c10::ScalarType> dtype) {
  at::Tensor out = at::empty({0}, self.options().dtype(sum_result_type(self, dtype)));
  return nansum_out(self, dim, keepdim, dtype, out);
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  c10::ScalarType t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t),
              "mean(): could not infer output dtype. ", (dtype ? "Optional" : "Input"),
              " dtype must be either a floating point or complex dtype. Got: ", t);
  return sum_like(k_mean, self, reduction_mask(dim, self.dim()), keepdim, dtype, out, "mean");
}

at::Tensor& prod_int_out(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype,
                         at::Tensor& out) {
  return sum_like(k_prod, self, single_dim_mask(dim, self.dim()), keepdim, dtype, out, "prod");
}

at::Tensor prod(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  at::Tensor out = at::empty({}, self.options().dtype(sum_result_type(self, dtype)));
  DimMask all;
  all.set();
  return sum_like(k_prod, self, all, false, dtype, out, "prod");
}

at::Tensor& prod_out(const at::Tensor& self, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  DimMask all;
  all.set();
  return sum_like(k_prod, self, all, false, dtype, out, "prod");
}

// any/all: bool results, except uint8 inputs which give uint8 (as on CPU).
at::Tensor& logical_out(const dlprim::ReduceOp& op, const at::Tensor& self, const DimMask& mask, bool keepdim,
                        at::Tensor& out, const char* name) {
  c10::ScalarType expected = self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  check_out_dtype(out, expected, name);
  if (self.is_complex()) return logical_out(op, at::ne(self, 0), mask, keepdim, out, name);
  // x is compared with 0 in the input's own type (float stays float).
  c10::ScalarType acc = c10::isFloatingType(self.scalar_type()) ? sum_acc_type(self.scalar_type()) : c10::kLong;
  launch_reduction(op, self, mask, keepdim, {out}, acc, {0, 0}, name);
  return out;
}

// dim=None reduces everything; an explicit empty list reduces nothing (CPU semantics).
DimMask logical_mask(at::OptionalIntArrayRef dim, int64_t ndim) {
  if (dim.has_value() && dim->empty()) return DimMask();
  return reduction_mask(dim, ndim);
}

at::Tensor& any_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return logical_out(k_any, self, single_dim_mask(dim, self.dim()), keepdim, out, "any");
}
at::Tensor& any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  return logical_out(k_any, self, logical_mask(dim, self.dim()), keepdim, out, "any");
}
at::Tensor& any_all_out(const at::Tensor& self, at::Tensor& out) {
  return logical_out(k_any, self, logical_mask(std::nullopt, self.dim()), false, out, "any");
}
at::Tensor& all_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  return logical_out(k_all, self, single_dim_mask(dim, self.dim()), keepdim, out, "all");
}
at::Tensor& all_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  return logical_out(k_all, self, logical_mask(dim, self.dim()), keepdim, out, "all");
}
at::Tensor& all_all_out(const at::Tensor& self, at::Tensor& out) {
  return logical_out(k_all, self, logical_mask(std::nullopt, self.dim()), false, out, "all");
}

// equal (istft's window check, torch.equal): same sizes and every element ==, as CUDA's (mixed dtypes
// compare in their promoted type, as eq does); complex tensors compare their components.
bool equal(const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(self.device() == other.device(), "Cannot compare two tensors on different devices. Got: ",
              self.device(), " and ", other.device());
  if (!self.is_same_size(other)) return false;
  if (self.numel() == 0) return true;
  if (self.is_complex())
    return at::view_as_real(self.resolve_conj()).eq(at::view_as_real(other.resolve_conj())).all().item<bool>();
  return self.eq(other).all().item<bool>();
}

at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode, at::Tensor& out) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  TORCH_CHECK(!self.is_complex(), "\"xor_sum\" not implemented for '", self.scalar_type(), "'");
  check_out_dtype(out, c10::kUInt64, "hash_tensor");
  const DimMask mask = reduction_mask(dim, self.dim());
  if (dim.empty() || self.dim() == 0) {
    TORCH_CHECK(self.numel() != 0, "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.");
  } else {
    check_nonempty_reduction(self, mask, false, "hash_tensor");
  }
  const c10::ScalarType t = self.scalar_type();
  const bool f64 = t == c10::kDouble, flt = c10::isFloatingType(t);
  const dlprim::ReduceOp& op = f64 ? k_hash_f64 : flt ? k_hash_f32 : k_hash_int;
  launch_reduction(op, self, mask, keepdim, {out}, f64 ? c10::kDouble : flt ? c10::kFloat : c10::kLong, {0, 0},
                   "hash_tensor");
  return out;
}

at::Tensor count_nonzero(const at::Tensor& self, at::IntArrayRef dims) {
  if (self.is_complex()) return at::count_nonzero(at::ne(self, 0), dims);
  at::Tensor out = at::empty({0}, self.options().dtype(c10::kLong));
  c10::ScalarType acc = c10::isFloatingType(self.scalar_type()) ? sum_acc_type(self.scalar_type()) : c10::kLong;
  launch_reduction(k_count_nonzero, self, reduction_mask(dims, self.dim()), false, {out}, acc, {0, 0},
                   "count_nonzero");
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean.out", TORCH_FN(mean_out));
  m.impl("nansum.out", TORCH_FN(nansum_out));
  m.impl("nansum", TORCH_FN(nansum));
  m.impl("prod.int_out", TORCH_FN(prod_int_out));
  m.impl("prod", TORCH_FN(prod));
  m.impl("prod.out", TORCH_FN(prod_out));
  m.impl("any.out", TORCH_FN(any_out));
  m.impl("any.dims_out", TORCH_FN(any_dims_out));
  m.impl("any.all_out", TORCH_FN(any_all_out));
  m.impl("all.out", TORCH_FN(all_out));
  m.impl("all.dims_out", TORCH_FN(all_dims_out));
  m.impl("all.all_out", TORCH_FN(all_all_out));
  m.impl("count_nonzero.dim_IntList", TORCH_FN(count_nonzero));
  m.impl("hash_tensor.out", TORCH_FN(hash_tensor_out));
  m.impl("equal", TORCH_FN(equal));
}

} // namespace pytorch_ocl
