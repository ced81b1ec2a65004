// Shape ops that move data: cat (stack reaches it), flip, roll, tril/triu, unfold's backward.
// cat and roll copy slices through copy_ (any dtypes and strides); flip and tril/triu are
// positional ops (one kernel reading each element where it comes from).
#include "aten/RowMajor.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <dlprim/cat.h>

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/flip.h>
#include <ATen/ops/roll.h>
#include <ATen/ops/view_as_real.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

const dlprim::PositionalOp k_tril{"tril", "y0 = (c[rank - 1] - c[rank - 2] <= k0) ? x0 : (dl_ct)0;", true};
const dlprim::PositionalOp k_triu{"triu", "y0 = (c[rank - 1] - c[rank - 2] >= k0) ? x0 : (dl_ct)0;", true};
const dlprim::PositionalOp k_gather_copy{"flip", "y0 = x0;", true};

template <const dlprim::PositionalOp* Op>
at::Tensor& triangle_out(const at::Tensor& self, int64_t diagonal, at::Tensor& out) {
  const char* name = Op->name.c_str();
  TORCH_CHECK(self.dim() >= 2, name, ": input tensor must have at least 2 dimensions");
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), name, ": expected out to have dtype ", self.scalar_type(),
              " but got ", out.scalar_type());
  at::native::resize_output(out, self.sizes());
  if (self.scalar_type() == c10::kComplexFloat) {  // moved as 64-bit integers: 0 is complex 0
    at::Tensor bits = out.view(c10::kLong);
    triangle_out<Op>(self.resolve_conj().view(c10::kLong), diagonal, bits);
    return out;
  }
  if (self.scalar_type() == c10::kComplexDouble) {  // no 128-bit integer: the two double planes (re, im)
    at::Tensor planes = at::view_as_real(out).movedim(-1, 0);
    triangle_out<Op>(at::view_as_real(self.resolve_conj()).movedim(-1, 0), diagonal, planes);
    return out;
  }
  dlprim::PositionalParams params;
  params.k[0] = diagonal;
  launch_positional(*Op, self.scalar_type(), out, &self, 2, params);
  return out;
}

bool is_legacy_empty(const at::Tensor& t) { return t.dim() == 1 && t.size(0) == 0; }

// Above this many output elements, with inputs of this many elements on average, a cat is bound by memory,
// not launches: each input then goes through copy_ (TensorIterator's merged dims, 32-bit indices, vector
// loads) instead of the one-launch kernel's per-element 64-bit coordinate walk (GPT-2's backward cats of the
// q/k/v gradients in bf16 took 120 us there against CUDA's 40 us on an H100). Many small inputs keep the
// one-launch kernel (4 inputs per launch).
constexpr int64_t kCatOneLaunchMaxElements = 1 << 18;
constexpr int64_t kCatCopyMinElementsPerInput = 1 << 16;

// cat of same-dtype inputs without conjugate/negative bits as one launch per 4 inputs (the
// KV-cache append of decoding is one launch instead of one copy per input).
bool cat_one_launch(const std::vector<std::reference_wrapper<const at::Tensor>>& tensors, int64_t dim,
                    const at::Tensor& out) {
  const int64_t rank = out.dim();
  if (rank > dlprim::kMaxDims || out.numel() == 0 || out.is_conj() || out.is_neg()) return false;
  if (out.numel() > kCatOneLaunchMaxElements &&
      out.numel() >= kCatCopyMinElementsPerInput * static_cast<int64_t>(tensors.size()))
    return false;
  const int64_t bytes = out.itemsize();
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return false;
  std::vector<const at::Tensor*> parts;
  for (const at::Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    if (t.scalar_type() != out.scalar_type() || t.is_conj() || t.is_neg()) return false;
    parts.push_back(&t);
  }
  const int device = out.device().index();
  cl_command_queue q = current_queue(device);
  int64_t pos = 0;
  size_t i = 0;
  while (i < parts.size()) {
    // One launch over the slice of out that the next (up to) kCatMaxInputs non-empty inputs fill.
    dlprim::CatInput in[dlprim::kCatMaxInputs];
    int count = 0;
    const int64_t first = pos;
    for (; i < parts.size() && count < dlprim::kCatMaxInputs; ++i) {
      const at::Tensor& t = *parts[i];
      if (t.size(dim) == 0) continue;
      BufferRef b = buffer_of(t);
      in[count].mem = b.mem;
      in[count].offset = b.offset / bytes;
      for (int64_t d = 0; d < rank; ++d) in[count].strides[d] = t.stride(d);
      in[count].start = pos - first;
      pos += t.size(dim);
      ++count;
    }
    if (count == 0) break;
    at::Tensor slice = out.narrow(dim, first, pos - first);
    dlprim::RowMajorShape shape;
    shape.rank = static_cast<int>(rank);
    dlprim::StridedOperand o;
    BufferRef ob = buffer_of(slice);
    o.mem = ob.mem;
    o.offset = ob.offset / bytes;
    for (int64_t d = 0; d < rank; ++d) {
      shape.sizes[d] = slice.size(d);
      o.strides[d] = slice.stride(d);
    }
    OCL_DLPRIM_CALL("cat", dlprim::cat(context(device), q, static_cast<int>(bytes), shape, static_cast<int>(dim), o,
                                       in, count));
    note_enqueued(q);
  }
  return true;
}

at::Tensor& cat_out(const at::ITensorListRef& tensor_list, int64_t dim, at::Tensor& out) {
  auto tensors = tensor_list.materialize();
  TORCH_CHECK(!tensors.empty(), "torch.cat(): expected a non-empty list of Tensors");
  check_ocl(out, "cat", "out");
  dim = at::legacy_cat_wrap_dim(dim, tensors);
  const at::Tensor* ref = nullptr;  // the first tensor that is not a legacy empty one
  for (const at::Tensor& t : tensors)
    if (!is_legacy_empty(t)) {
      ref = &t;
      break;
    }
  at::assert_no_internal_overlap(out);
  std::vector<int64_t> sizes = ref ? ref->sizes().vec() : tensors[0].get().sizes().vec();
  int64_t cat_size = 0;
  c10::ScalarType type = at::native::result_type(tensor_list);
  c10::optional<c10::MemoryFormat> format;
  bool same_format = true;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& t = tensors[i];
    TORCH_CHECK(t.device() == out.device(), "torch.cat(): all input tensors and out must be on the same device, but "
                "got tensor ", i, " on ", t.device(), " and out on ", out.device());
    at::assert_no_overlap(out, t);
    if (is_legacy_empty(t)) continue;
    TORCH_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ", ref->dim(), " and ",
                t.dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      TORCH_CHECK(d == dim || t.size(d) == ref->size(d), "Sizes of tensors must match except in dimension ", dim,
                  ". Expected size ", ref->size(d), " but got size ", t.size(d), " for tensor number ", i,
                  " in the list.");
    cat_size += t.size(dim);
    c10::MemoryFormat f = t.suggest_memory_format();
    if (!format) format = f;
    same_format = same_format && *format == f;
  }
  TORCH_CHECK(c10::canCast(type, out.scalar_type()), "torch.cat(): input types can't be cast to the desired output type ",
              out.scalar_type());
  if (ref) sizes[dim] = cat_size;
  if (at::native::resize_output(out, sizes) && same_format && format && *format != c10::MemoryFormat::Contiguous)
    out.unsafeGetTensorImpl()->empty_tensor_restride(*format);
  if (!ref) return out;
  c10::DeviceGuard guard(out.device());
  if (cat_one_launch(tensors, dim, out)) return out;
  int64_t offset = 0;
  for (const at::Tensor& t : tensors) {
    if (is_legacy_empty(t)) continue;
    int64_t n = t.size(dim);
    if (n > 0 && t.numel() > 0) out.narrow(dim, offset, n).copy_(t);
    offset += n;
  }
  return out;
}

// Reads each output element from the mirrored position: the input operand walks the flipped
// dims with negated strides from their last element.
at::Tensor flip(const at::Tensor& self, at::IntArrayRef dims) {
  check_ocl(self, "flip", "self");
  if (self.scalar_type() == c10::kComplexFloat)  // moved as the 64-bit integers of its bits
    return at::flip(self.resolve_conj().view(c10::kLong), dims).view(c10::kComplexFloat);
  const int64_t ndim = self.dim();
  auto flipped = at::dim_list_to_bitset(dims, ndim);
  at::Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  if (self.numel() == 0) return out;
  std::vector<int64_t> sizes, in_strides, out_strides;
  std::vector<bool> flip_dim;
  int64_t in_offset = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    int64_t n = self.size(d);
    if (n == 1) continue;
    bool f = flipped[d];
    int64_t is = f ? -self.stride(d) : self.stride(d);
    if (f) in_offset += (n - 1) * self.stride(d);
    if (!sizes.empty() && flip_dim.back() == f && in_strides.back() == is * n && out_strides.back() == out.stride(d) * n) {
      sizes.back() *= n;  // same direction and contiguous with the previous dim in both tensors: merge
      in_strides.back() = is;
      out_strides.back() = out.stride(d);
      continue;
    }
    sizes.push_back(n);
    in_strides.push_back(is);
    out_strides.push_back(out.stride(d));
    flip_dim.push_back(f);
  }
  TORCH_CHECK(sizes.size() <= static_cast<size_t>(dlprim::kMaxDims), "flip: more than ", dlprim::kMaxDims,
              " dims remain after merging (input of shape ", self.sizes(), ", dims ", dims, ")");
  dlprim::RowMajorShape shape;
  shape.rank = static_cast<int>(sizes.size());
  dlprim::StridedOperand in_op, out_op;
  BufferRef ib = buffer_of(self), ob = buffer_of(out);
  in_op.dtype = out_op.dtype = to_dlprim(self.scalar_type(), "flip");
  in_op.mem = ib.mem;
  in_op.offset = ib.offset / self.itemsize() + in_offset;
  out_op.mem = ob.mem;
  out_op.offset = ob.offset / out.itemsize();
  for (int d = 0; d < shape.rank; ++d) {
    shape.sizes[d] = sizes[d];
    in_op.strides[d] = in_strides[d];
    out_op.strides[d] = out_strides[d];
  }
  c10::DeviceGuard guard(self.device());
  int device = self.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("flip", dlprim::positional(context(device), q, k_gather_copy, in_op.dtype, shape, out_op, &in_op, {}));
  note_enqueued(q);
  return out;
}

// roll along one dim: two slice copies.
at::Tensor roll_one(const at::Tensor& self, int64_t shift, int64_t dim) {
  dim = c10::maybe_wrap_dim(dim, self.dim());
  at::Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  if (self.numel() == 0) return out;
  int64_t n = self.size(dim);
  int64_t start = (n - shift) % n;
  if (start < 0) start += n;
  out.narrow(dim, 0, n - start).copy_(self.narrow(dim, start, n - start));
  if (start > 0) out.narrow(dim, n - start, start).copy_(self.narrow(dim, 0, start));
  return out;
}

at::Tensor roll(const at::Tensor& self, at::IntArrayRef shifts, at::IntArrayRef dims) {
  check_ocl(self, "roll", "self");
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {
    // no dims: roll the flattened tensor
    return roll_one(self.contiguous().view(self.numel()), shifts[0], 0).view(self.sizes());
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ", shifts.size(),
              ", dims:", dims.size());
  at::Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) out = roll_one(out, shifts[i], dims[i]);
  return dims.size() == 0 ? self.clone() : out;
}

// The gradient of x.unfold(dim, size, step): each input element sums the window entries it
// appeared in. Chunks of `step` columns of the windows land on distinct input elements, so
// each chunk is one accumulation without write conflicts. 16-bit gradients sum in float32 and
// round once (rounding after each chunk lost up to 2.5 times the CPU's error against float64).
at::Tensor unfold_backward(const at::Tensor& grad, at::IntArrayRef input_sizes, int64_t dim, int64_t size, int64_t step) {
  check_ocl(grad, "unfold_backward", "grad_in");
  at::Tensor out = at::zeros(input_sizes, grad.options());
  if (out.numel() == 0 || grad.numel() == 0) return out;
  if (input_sizes.empty()) {
    out.copy_(grad.reshape({}));
    return out;
  }
  dim = c10::maybe_wrap_dim(dim, static_cast<int64_t>(input_sizes.size()));
  at::Tensor windows = out.unfold(dim, size, step);  // a view shaped like grad
  if (step >= size) {
    windows.copy_(grad);
    return out;
  }
  bool narrow = grad.scalar_type() == c10::kHalf || grad.scalar_type() == c10::kBFloat16;
  at::Tensor sum = narrow ? at::zeros(input_sizes, grad.options().dtype(c10::kFloat)) : out;
  windows = sum.unfold(dim, size, step);
  for (int64_t first = 0; first < size; first += step) {
    int64_t len = std::min(step, size - first);
    at::Tensor target = windows.narrow(-1, first, len);
    target.add_(grad.narrow(-1, first, len));
  }
  return narrow ? sum.to(grad.scalar_type()) : out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("tril.out", TORCH_FN(triangle_out<&k_tril>));
  m.impl("triu.out", TORCH_FN(triangle_out<&k_triu>));
  m.impl("cat.out", TORCH_FN(cat_out));
  m.impl("flip", TORCH_FN(flip));
  m.impl("roll", TORCH_FN(roll));
  m.impl("unfold_backward", TORCH_FN(unfold_backward));
}

} // namespace pytorch_ocl
