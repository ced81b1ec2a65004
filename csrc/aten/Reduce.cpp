// Reductions over any set of dims: each op is one table row for the dlprim reduce generator.
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/fill.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/reduce.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// name, identity, fold x into acc, merge b into a, result (w0 = 1/N for means)
const dlprim::ReduceOp k_sum{"sum", "0", "acc = acc + x;", "a = a + b;", "acc"};
const dlprim::ReduceOp k_mean{"mean", "0", "acc = acc + x;", "a = a + b;", "acc * w0"};

// One dim of the input as the reduction sees it.
struct DimInfo {
  int64_t size, in_stride, out_stride;
  bool reduced;
};

// Appends a dim as the new innermost one, merged into the previous when all its strides
// continue it. False when more than kMaxDims dims remain unmerged.
bool push_dim(int& rank, std::array<int64_t, dlprim::kMaxDims>& sizes, std::array<int64_t, dlprim::kMaxDims>& in,
              std::array<int64_t, dlprim::kMaxDims>* out, const DimInfo& d) {
  if (rank > 0 && in[rank - 1] == d.in_stride * d.size && (!out || (*out)[rank - 1] == d.out_stride * d.size)) {
    sizes[rank - 1] *= d.size;
    in[rank - 1] = d.in_stride;
    if (out) (*out)[rank - 1] = d.out_stride;
    return true;
  }
  if (rank == dlprim::kMaxDims) return false;
  sizes[rank] = d.size;
  in[rank] = d.in_stride;
  if (out) (*out)[rank] = d.out_stride;
  ++rank;
  return true;
}

bool describe(const std::vector<DimInfo>& dims, dlprim::ReduceShape& shape) {
  shape = dlprim::ReduceShape();
  for (const DimInfo& d : dims) {
    if (d.size == 1) continue;
    bool ok = d.reduced ? push_dim(shape.reduced_rank, shape.red_sizes, shape.red_in_strides, nullptr, d)
                        : push_dim(shape.kept_rank, shape.kept_sizes, shape.kept_in_strides, &shape.kept_out_strides, d);
    if (!ok) return false;
  }
  return true;
}

void run_reduce(const dlprim::ReduceOp& op, const at::Tensor& self, at::OptionalIntArrayRef dim_opt, bool keepdim,
                at::Tensor& out, const char* name) {
  check_ocl(self, name, "self");
  check_ocl(out, name, "out");
  TORCH_CHECK(self.device() == out.device(), name, ": self and out are on different devices");
  int64_t ndim = self.dim();
  auto mask = at::dim_list_to_bitset(dim_opt.value_or(c10::IntArrayRef{}), ndim);
  bool all = !dim_opt.has_value() || dim_opt->empty();
  std::vector<int64_t> out_shape;
  for (int64_t d = 0; d < ndim; ++d) {
    bool reduced = all || mask[d];
    if (!reduced)
      out_shape.push_back(self.size(d));
    else if (keepdim)
      out_shape.push_back(1);
  }
  at::native::resize_output(out, out_shape);
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(self.device());
  if (self.numel() == 0) {
    out.fill_(op.name == "mean" ? std::numeric_limits<double>::quiet_NaN() : 0.0);
    return;
  }

  std::vector<DimInfo> dims;
  int64_t out_dim = 0;
  for (int64_t d = 0; d < ndim; ++d) {
    bool reduced = all || mask[d];
    int64_t os = (!reduced || keepdim) ? out.stride(out_dim++) : 0;
    dims.push_back({self.size(d), self.stride(d), os, reduced});
  }
  at::Tensor input = self;
  dlprim::ReduceShape shape;
  if (!describe(dims, shape)) {
    // Too many unmergeable dims: copy the input with kept dims first and reduced dims last,
    // which merges each group into one dim.
    std::vector<int64_t> perm;
    for (int pass = 0; pass < 2; ++pass)
      for (int64_t d = 0; d < ndim; ++d)
        if (dims[d].reduced == (pass == 1)) perm.push_back(d);
    input = self.permute(perm).contiguous();
    std::vector<DimInfo> permuted;
    for (size_t i = 0; i < perm.size(); ++i) permuted.push_back({input.size(i), input.stride(i), dims[perm[i]].out_stride, dims[perm[i]].reduced});
    TORCH_CHECK(describe(permuted, shape), name, ": cannot describe the reduction of shape ", self.sizes());
  }
  dlprim::DType in_t = to_dlprim(self.scalar_type(), name), out_t = to_dlprim(out.scalar_type(), name);
  dlprim::DType acc = dlprim::is_floating(out_t) ? dlprim::compute_dtype(out_t) : dlprim::accumulate_dtype(out_t);
  double n_reduced = static_cast<double>(self.numel()) / static_cast<double>(std::max<int64_t>(1, out.numel()));
  int device = self.device().index();
  dlprim::Context& ctx = context(device);
  uint64_t ws_bytes = 0;
  OCL_DLPRIM_CALL(name, ws_bytes = dlprim::reduce_workspace_bytes(ctx, shape, acc));
  at::Tensor ws;
  if (ws_bytes) ws = at::empty({static_cast<int64_t>(ws_bytes)}, self.options().dtype(at::kByte));
  BufferRef in_buf = buffer_of(input), out_buf = buffer_of(out);
  dlprim::StridedView in{in_t, in_buf.mem, in_buf.offset / input.itemsize()};
  dlprim::StridedView outv{out_t, out_buf.mem, out_buf.offset / out.itemsize()};
  BufferRef ws_buf = ws.defined() ? buffer_of(ws) : BufferRef{};
  OCL_TRACE(name, " in=", self.sizes(), " ", self.scalar_type(), " out=", out.sizes(), " ", out.scalar_type(),
            " kept_rank=", shape.kept_rank, " reduced_rank=", shape.reduced_rank);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(name, dlprim::reduce(ctx, q, op, acc, shape, in, outv, 1.0 / n_reduced, ws_buf.mem, ws_buf.offset));
  note_enqueued(q);
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  run_reduce(k_sum, self, dim, keepdim, out, "sum");
  return out;
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  c10::ScalarType t = dtype.value_or(self.scalar_type());
  TORCH_CHECK(c10::isFloatingType(t), "mean(): could not infer output dtype. Input dtype must be either a "
              "floating point or complex dtype. Got: ", t);
  run_reduce(k_mean, self, dim, keepdim, out, "mean");
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.IntList_out", TORCH_FN(sum_out));
  m.impl("mean.out", TORCH_FN(mean_out));
}

} // namespace pytorch_ocl
