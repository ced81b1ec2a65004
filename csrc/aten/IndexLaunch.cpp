#include "aten/IndexLaunch.h"

#include <dlprim/capture.h>

#include "core/DeferredChecks.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/SmallVector.h>
#include <dlprim/sort.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>

namespace pytorch_ocl {

namespace {


// Row-major dims with size-1 dims dropped and neighbours merged where every operand allows.
struct Merged {
  dlprim::RowMajorShape shape;
  c10::SmallVector<std::array<int64_t, dlprim::kMaxDims>, 2> strides;
  bool ok = true;
};

// Small vectors throughout: this runs on every gather (an embedding lookup per decode step).
Merged merge_dims(c10::IntArrayRef sizes, std::initializer_list<c10::IntArrayRef> strides_in) {
  const c10::IntArrayRef* strides = strides_in.begin();
  const size_t n_ops = strides_in.size();
  c10::SmallVector<int64_t, dlprim::kMaxDims> sz;
  c10::SmallVector<c10::SmallVector<int64_t, dlprim::kMaxDims>, 2> st(n_ops);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    bool merge = !sz.empty();
    for (size_t k = 0; merge && k < n_ops; ++k) merge = st[k].back() == strides[k][d] * sizes[d];
    if (merge) {
      sz.back() *= sizes[d];
      for (size_t k = 0; k < n_ops; ++k) st[k].back() = strides[k][d];
      continue;
    }
    sz.push_back(sizes[d]);
    for (size_t k = 0; k < n_ops; ++k) st[k].push_back(strides[k][d]);
  }
  Merged m;
  m.strides.resize(n_ops);
  if (sz.size() > static_cast<size_t>(dlprim::kMaxDims)) {
    m.ok = false;
    return m;
  }
  m.shape.rank = static_cast<int>(sz.size());
  for (size_t d = 0; d < sz.size(); ++d) {
    m.shape.sizes[d] = sz[d];
    for (size_t k = 0; k < n_ops; ++k) m.strides[k][d] = st[k][d];
  }
  return m;
}

dlprim::DevPtr dev_ptr(const at::Tensor& t) {
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

dlprim::StridedOperand operand(const at::Tensor& t, const std::array<int64_t, dlprim::kMaxDims>& strides,
                               const char* op) {
  dlprim::StridedOperand o;
  o.dtype = to_dlprim(t.scalar_type(), op);
  BufferRef b = buffer_of(t);
  o.mem = b.mem;
  o.offset = b.offset / t.itemsize();
  o.strides = strides;
  return o;
}

// The stride that walks the first `n` dims of `t` as one flattened dim, if there is one.
bool flat_row_stride(const at::Tensor& t, int64_t n, int64_t& stride) {
  stride = 0;
  int64_t expected = -1;
  for (int64_t d = n - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (expected < 0) {
      stride = t.stride(d);
    } else if (t.stride(d) != expected) {
      return false;
    }
    expected = t.stride(d) * t.size(d);
  }
  return true;
}

enum class Kind { Gather, Scatter, Reduce };

struct ReduceArgs {
  dlprim::IndexReduce mode;
  bool include_self;
  double alpha;
  at::Tensor sorted_rows;
  bool chunked;  // long runs summed as partial sums of chunks (not the CPU's sequential rounding)
};

// index_gather_direct's index (the gather then needs no keys).
struct DirectIndex {
  dlprim::DevPtr idx, flag;
  int64_t idx_stride, size, stride;
};

void run_keyed(Kind kind, const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys,
               int64_t rows, const at::Tensor& dense_in, const ReduceArgs* red, const char* op,
               const DirectIndex* direct = nullptr) {
  if (rows == 0) return;
  c10::DeviceGuard guard(big.device());
  const int64_t n_row_dims = dense_in.dim() - static_cast<int64_t>(inner_dims.size());
  at::Tensor dense = dense_in;
  int64_t row_stride = 0;
  if (!flat_row_stride(dense, n_row_dims, row_stride)) {
    dense = kind == Kind::Gather ? at::empty(dense_in.sizes(), dense_in.options()) : dense_in.contiguous();
    flat_row_stride(dense, n_row_dims, row_stride);
  }
  c10::SmallVector<int64_t, dlprim::kMaxDims> inner_sizes, dense_strides, big_strides;
  for (size_t i = 0; i < inner_dims.size(); ++i) {
    inner_sizes.push_back(big.size(inner_dims[i]));
    dense_strides.push_back(dense.stride(n_row_dims + i));
    big_strides.push_back(big.stride(inner_dims[i]));
  }
  Merged m = merge_dims(inner_sizes, {dense_strides, big_strides});
  if (!m.ok) {
    // Too many unmergeable dims: run on dense copies (rare).
    at::Tensor big_c = big.contiguous();
    at::Tensor dense_c = kind == Kind::Gather ? at::empty(dense.sizes(), dense.options()) : dense.contiguous();
    TORCH_CHECK(big.is_contiguous() || kind == Kind::Gather || big.dim() <= 25, op, ": unsupported layout");
    run_keyed(kind, big_c, inner_dims, keys, rows, dense_c, red, op, direct);
    if (kind == Kind::Gather) dense_in.copy_(dense_c);
    else if (!big.is_same(big_c)) const_cast<at::Tensor&>(big).copy_(big_c);
    return;
  }
  dlprim::KeyedLaunch l;
  l.rows = static_cast<uint64_t>(rows);
  l.inner = m.shape;
  l.dense = operand(dense, m.strides[0], op);
  l.big = operand(big, m.strides[1], op);
  l.dense_row_stride = row_stride;
  if (keys.defined()) l.keys = dev_ptr(keys);
  int device = big.device().index();
  cl_command_queue q = current_queue(device);
  OCL_TRACE(op, " rows=", rows, " inner=", inner_sizes, " ", big.scalar_type());
  switch (kind) {
    case Kind::Gather:
      if (direct) {
        OCL_DLPRIM_CALL(op, dlprim::index_gather_idx(context(device), q, l, direct->idx, direct->idx_stride,
                                                     direct->size, direct->stride,
                                                     direct->flag));
      } else {
        OCL_DLPRIM_CALL(op, dlprim::index_gather(context(device), q, l));
      }
      break;
    case Kind::Scatter: OCL_DLPRIM_CALL(op, dlprim::index_scatter(context(device), q, l)); break;
    case Kind::Reduce: {
      // Long runs (an embedding row many tokens share) are summed in chunks through a scratch of partial sums.
      const int64_t n_parts = red->chunked ? static_cast<int64_t>(dlprim::index_reduce_parts(l, red->mode)) : 0;
      at::Tensor parts = n_parts ? at::empty({n_parts}, big.options()) : at::Tensor();
      OCL_DLPRIM_CALL(op, dlprim::index_reduce(context(device), q, l, dev_ptr(red->sorted_rows), red->mode,
                                               red->include_self, red->alpha,
                                               parts.defined() ? dev_ptr(parts) : dlprim::DevPtr{}));
      break;
    }
  }
  note_enqueued(q);
  if (kind == Kind::Gather && !dense.is_same(dense_in)) const_cast<at::Tensor&>(dense_in).copy_(dense);
}

} // namespace

KeyBuilder::KeyBuilder(c10::Device device, c10::IntArrayRef row_sizes, const char* op, bool for_sort, bool no_keys)
    : op_(op), row_sizes_(row_sizes.vec()) {
  rows_ = c10::multiply_integers(row_sizes);
  auto opts = at::TensorOptions().device(device).dtype(c10::kLong);
  int64_t n = for_sort ? static_cast<int64_t>(dlprim::next_pow2(static_cast<uint64_t>(rows_))) : rows_;
  if (!no_keys) keys_ = for_sort ? at::full({n}, -1, opts) : at::empty({n}, opts);
  if (rows_ == 0) return;
  device_ = device.index();
  queue_ = current_queue(device_);
  // A capture records the flag's clearing and never reads it: a private zeroed flag, as before.
  capturing_ = dlprim::capture::any_active() && dlprim::capture::capturing(queue_);
  if (capturing_) {
    flag_ = at::zeros({1}, opts.dtype(c10::kInt));
    flag_ptr_ = dev_ptr(flag_);
  } else {
    slot_ = acquire_flag(device_, queue_, index_check_mode() == IndexCheckMode::Off);
    flag_ptr_ = {slot_.mem, static_cast<uint64_t>(slot_.offset)};
  }
}

KeyBuilder::~KeyBuilder() {
  // An op that failed after its key kernels ran: its slot is still looked at (and freed) later.
  if (slot_.slot >= 0 && !committed_) {
    const char* op = op_;
    commit_flag(device_, queue_, slot_, [op] { TORCH_CHECK_INDEX(false, op, ": index out of range"); });
  }
}

void KeyBuilder::add(const at::Tensor& idx_in, int64_t size, int64_t stride, int64_t dim, bool wrap,
                     c10::IntArrayRef pos,
                     std::optional<int64_t> skip) {
  TORCH_CHECK_INDEX(idx_in.scalar_type() == c10::kLong || idx_in.scalar_type() == c10::kInt, op_,
                    ": tensors used as indices must be long or int tensors, got ", idx_in.scalar_type());
  if (rows_ == 0) return;
  check_ocl(idx_in, op_, "index");
  at::Tensor idx = idx_in.expand(row_sizes_);
  std::vector<int64_t> pos_v = pos.empty() ? std::vector<int64_t>(row_sizes_.size(), 0) : pos.vec();
  Merged m = merge_dims(row_sizes_, {idx.strides(), pos_v});
  if (!m.ok) {
    idx = idx.contiguous();
    m = merge_dims(row_sizes_, {idx.strides(), pos_v});
    TORCH_CHECK(m.ok, op_, ": index shape ", c10::IntArrayRef(row_sizes_), " has too many dims");
  }
  int device = idx.device().index();
  c10::DeviceGuard guard(idx.device());
  cl_command_queue q = current_queue(device);
  dlprim::StridedOperand io = operand(idx, m.strides[0], op_);
  OCL_DLPRIM_CALL(op_, dlprim::index_keys(context(device), q, m.shape, dev_ptr(keys_), !first_, io, m.strides[1],
                                          wrap, size, stride, skip.has_value(), skip.value_or(0), flag_ptr_));
  note_enqueued(q);
  first_ = false;
  added_.push_back({idx_in, size, dim, wrap, idx_in._version()});
}

const at::Tensor& KeyBuilder::finish() {
  if (rows_ == 0 || capturing_ || slot_.slot < 0) return keys_;
  // Inside a graph capture the flag cannot be read back (nothing has run yet): the bad rows keep their
  // key -1, which the kernels skip, as with PYTORCH_OCL_INDEX_CHECK=0 (CUDA checks with a device assert).
  // Otherwise the flag is looked at where the host next waits for this queue (DeferredChecks.h), or
  // now with PYTORCH_OCL_INDEX_CHECK=sync. The raiser names the first bad index from the index
  // tensors, kept alive until then (an index modified in place since gives a message without it).
  const char* op = op_;
  commit_flag(device_, queue_, slot_, [op, added = std::move(added_)] {
    for (const Added& a : added) {
      if (a.idx._version() != a.version) continue;
      at::Tensor cpu = a.idx.to(c10::kCPU, c10::kLong).contiguous();
      const int64_t* p = cpu.data_ptr<int64_t>();
      for (int64_t i = 0; i < cpu.numel(); ++i)
        TORCH_CHECK_INDEX(p[i] >= (a.wrap ? -a.size : 0) && p[i] < a.size, op, ": index ", p[i],
                          " is out of bounds for dimension ", a.dim, " with size ", a.size);
    }
    TORCH_CHECK_INDEX(false, op, ": index out of range");
  });
  committed_ = true;
  check_now_if_sync(device_, queue_);
  return keys_;
}

// Gathers and scatters only move elements: a complex64 element moves as the 64-bit integer of
// its bits (the kernels have no complex type; conjugate views are resolved first).
namespace {
at::Tensor as_bits(const at::Tensor& t) {
  return t.scalar_type() == c10::kComplexFloat ? t.resolve_conj().view(c10::kLong) : t;
}
} // namespace

void keyed_gather(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys, int64_t rows,
                  const at::Tensor& dense, const char* op) {
  TORCH_CHECK(!dense.is_conj(), op, ": a conjugate view as the result is not supported on ocl");
  run_keyed(Kind::Gather, as_bits(big), inner_dims, keys, rows, as_bits(dense), nullptr, op);
}

void index_gather_direct(const at::Tensor& big, int64_t dim, const at::Tensor& idx, const at::Tensor& dense,
                         const char* op) {
  const int64_t n = idx.numel();
  if (n == 0) return;
  TORCH_INTERNAL_ASSERT(idx.dim() == 1 && idx.scalar_type() == c10::kLong && idx.device() == big.device());
  check_ocl(idx, op, "index");
  KeyBuilder kb(big.device(), {n}, op, false, /*no_keys=*/true);
  kb.note(idx, big.size(dim), dim);
  BufferRef ib = buffer_of(idx);
  DirectIndex d{{ib.mem, ib.offset / 8}, kb.flag(), idx.stride(0), big.size(dim), big.stride(dim)};
  TORCH_CHECK(!dense.is_conj(), op, ": a conjugate view as the result is not supported on ocl");
  run_keyed(Kind::Gather, as_bits(big), dims_except(big.dim(), dim), at::Tensor(), n, as_bits(dense), nullptr, op, &d);
  kb.finish();
}

void keyed_scatter(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys,
                   int64_t rows, const at::Tensor& dense, const char* op) {
  TORCH_CHECK(!big.is_conj(), op, ": a conjugate view as the destination is not supported on ocl");
  run_keyed(Kind::Scatter, as_bits(big), inner_dims, keys, rows, as_bits(dense), nullptr, op);
}

void keyed_reduce(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys, int64_t rows,
                  const at::Tensor& dense, dlprim::IndexReduce mode, bool include_self, double alpha,
                  const char* op, bool chunked) {
  if (rows == 0) return;
  c10::DeviceGuard guard(big.device());
  int64_t padded = keys.numel();
  TORCH_INTERNAL_ASSERT(padded == static_cast<int64_t>(dlprim::next_pow2(static_cast<uint64_t>(rows))));
  at::Tensor order = at::arange(padded, keys.options());
  int device = big.device().index();
  cl_command_queue q = current_queue(device);
  dlprim::DevPtr kp = dev_ptr(keys), op_ptr = dev_ptr(order);
  OCL_DLPRIM_CALL(op, dlprim::sort_pairs(context(device), q, kp.mem, kp.offset, op_ptr.mem, op_ptr.offset, 1,
                                         static_cast<uint64_t>(padded), false));
  note_enqueued(q);
  ReduceArgs red{mode, include_self, alpha, order, chunked};
  run_keyed(Kind::Reduce, big, inner_dims, keys, rows, dense, &red, op);
}

std::vector<int64_t> dims_except(int64_t ndim, int64_t dim) {
  std::vector<int64_t> v;
  for (int64_t d = 0; d < ndim; ++d)
    if (d != dim) v.push_back(d);
  return v;
}

at::Tensor device_scalar(const c10::Scalar& s, const at::Tensor& like) {
  return at::full({}, s, like.options());
}

dlprim::IndexReduce parse_reduce(c10::string_view reduce, const char* op) {
  if (reduce == "sum" || reduce == "add") return dlprim::IndexReduce::Sum;
  if (reduce == "prod" || reduce == "multiply") return dlprim::IndexReduce::Prod;
  if (reduce == "mean") return dlprim::IndexReduce::Mean;
  if (reduce == "amax") return dlprim::IndexReduce::Amax;
  if (reduce == "amin") return dlprim::IndexReduce::Amin;
  TORCH_CHECK(false, op, ": reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

at::Tensor mask_positions(const at::Tensor& mask, c10::IntArrayRef key_strides, bool coords, const char* op) {
  c10::DeviceGuard guard(mask.device());
  auto long_opts = mask.options().dtype(c10::kLong);
  const int64_t ndim = mask.dim();
  if (mask.numel() == 0) return at::empty(coords ? std::vector<int64_t>{0, ndim} : std::vector<int64_t>{0}, long_opts);
  TORCH_CHECK(ndim <= dlprim::kMaxDims, op, ": tensors of more than ", dlprim::kMaxDims, " dims are not supported");
  at::Tensor flags = mask.scalar_type() == c10::kBool ? mask : mask.ne(0);
  at::Tensor cs = at::cumsum(flags.reshape({-1}), 0, c10::kLong);
  int64_t count = cs[-1].item<int64_t>();
  at::Tensor out = at::empty(coords ? std::vector<int64_t>{count, ndim} : std::vector<int64_t>{count}, long_opts);
  if (count == 0) return out;
  dlprim::RowMajorShape shape;
  shape.rank = static_cast<int>(ndim);
  std::array<int64_t, dlprim::kMaxDims> ks{};
  for (int64_t d = 0; d < ndim; ++d) {
    shape.sizes[d] = mask.size(d);
    ks[d] = coords ? 0 : key_strides[d];
  }
  int device = mask.device().index();
  cl_command_queue q = current_queue(device);
  dlprim::DevPtr none{};
  OCL_DLPRIM_CALL(op, dlprim::index_select_positions(context(device), q, shape, dev_ptr(cs), coords,
                                                     coords ? dev_ptr(out) : none, coords ? none : dev_ptr(out), ks));
  note_enqueued(q);
  return out;
}

} // namespace pytorch_ocl
