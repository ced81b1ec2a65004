// Sampling ops: multinomial (per-row kernel) and randperm (random keys + device sort).
#include "aten/RandomLaunch.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/native/TensorFactories.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/multinomial.h>
#include <dlprim/sort.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor& multinomial_out(const at::Tensor& self, int64_t n_sample, bool replacement,
                            std::optional<at::Generator> gen, at::Tensor& result) {
  check_ocl(self, "multinomial", "self");
  TORCH_CHECK(result.device() == self.device(), "multinomial arguments must have the same device");
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "prob_dist must be 1 or 2 dim");
  TORCH_CHECK(c10::isFloatingType(self.scalar_type()),
              "multinomial only supports floating-point dtypes for input, got: ", self.scalar_type());
  TORCH_CHECK(result.scalar_type() == c10::kLong, "multinomial expects Long tensor out, got: ", result.scalar_type());
  TORCH_CHECK(n_sample > 0, "cannot sample n_sample <= 0 samples");
  int64_t n_cat = self.size(-1);
  TORCH_CHECK(replacement || n_sample <= n_cat,
              "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  TORCH_CHECK(n_cat <= (int64_t(1) << 24), "number of categories cannot exceed 2^24");
  int64_t n_rows = self.dim() == 1 ? 1 : self.size(0);
  if (self.dim() == 1)
    result.resize_({n_sample});
  else
    result.resize_({n_rows, n_sample});
  if (result.numel() == 0) return result;
  TORCH_CHECK(n_cat > 0, "multinomial: the distribution has no categories");

  int device = self.device().index();
  c10::DeviceGuard guard(self.device());
  dlprim::MultinomialArgs a;
  a.dtype = to_dlprim(self.scalar_type(), "multinomial");
  BufferRef pb = buffer_of(self), ob = buffer_of(result);
  a.probs = pb.mem;
  a.probs_offset = pb.offset / self.itemsize();
  a.row_stride = self.dim() == 1 ? 0 : self.stride(0);
  a.col_stride = self.stride(-1);
  a.n_rows = n_rows;
  a.n_categories = n_cat;
  a.out = ob.mem;
  a.out_offset = ob.offset / result.itemsize();
  a.out_row_stride = result.dim() == 1 ? 0 : result.stride(0);
  a.out_col_stride = result.stride(-1);
  a.n_sample = n_sample;
  a.replacement = replacement;
  auto seed_offset = next_philox(gen, device);
  a.seed = seed_offset.first;
  a.philox_offset = seed_offset.second;
  // Allocated as doubles so the byte offset is a multiple of 8.
  int64_t ws_bytes = static_cast<int64_t>(dlprim::multinomial_workspace_bytes(a.dtype, n_rows, n_cat));
  at::Tensor ws = at::empty({(ws_bytes + 7) / 8}, self.options().dtype(c10::kDouble).device(self.device()));
  at::Tensor flags = at::empty({n_rows}, self.options().dtype(c10::kInt));
  BufferRef wb = buffer_of(ws), fb = buffer_of(flags);
  a.workspace = wb.mem;
  a.workspace_offset = wb.offset;
  a.flags = fb.mem;
  a.flags_offset = fb.offset / sizeof(int32_t);
  OCL_TRACE("multinomial ", self.sizes(), " n_sample=", n_sample, " replacement=", replacement);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("multinomial", dlprim::multinomial(context(device), q, a));
  note_enqueued(q);
  // The CPU validates the probabilities; this needs the kernel's verdict (a device sync).
  at::Tensor f = flags.cpu();
  int any = 0;
  for (int64_t r = 0; r < n_rows; ++r) any |= f.data_ptr<int>()[r];
  if (replacement) {
    TORCH_CHECK(!(any & 1), "invalid multinomial distribution (encountering probability entry < 0, infinity or NaN)");
  } else {
    TORCH_CHECK(!(any & 1), "probability tensor contains either `inf`, `nan` or element < 0");
  }
  TORCH_CHECK(!(any & 2), "invalid multinomial distribution (sum of probabilities <= 0)");
  return result;
}

at::Tensor multinomial(const at::Tensor& self, int64_t n_sample, bool replacement, std::optional<at::Generator> gen) {
  at::Tensor result = at::empty({0}, self.options().dtype(c10::kLong));
  multinomial_out(self, n_sample, replacement, gen, result);
  return result;
}

// A random permutation: sort 63-bit random keys carrying the indices 0..n-1.
at::Tensor& randperm_out(int64_t n, std::optional<at::Generator> gen, at::Tensor& result) {
  check_ocl(result, "randperm", "out");
  TORCH_CHECK(n >= 0, "n must be non-negative, got", n);
  at::native::check_supported_max_int_with_precision(n, result);
  result.resize_({n});
  if (n == 0) return result;
  c10::DeviceGuard guard(result.device());
  int device = result.device().index();
  int64_t padded = static_cast<int64_t>(dlprim::next_pow2(static_cast<uint64_t>(n)));
  auto long_opts = result.options().dtype(c10::kLong);
  at::Tensor keys = at::empty({padded}, long_opts);
  dlprim::RandomParams p;
  p.range = uint64_t(1) << 63;
  launch_random(dlprim::Distribution::IntegerRange, {keys.narrow(0, 0, n)}, nullptr, p, gen, "randperm");
  if (padded > n) keys.narrow(0, n, padded - n).fill_(-1);  // all ones: after every real key
  at::Tensor values = at::arange(padded, long_opts);
  BufferRef kb = buffer_of(keys), vb = buffer_of(values);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("randperm", dlprim::sort_pairs(context(device), q, kb.mem, kb.offset / 8, vb.mem, vb.offset / 8, 1,
                                                 static_cast<uint64_t>(padded), false));
  note_enqueued(q);
  result.copy_(values.narrow(0, 0, n));
  return result;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multinomial", TORCH_FN(multinomial));
  m.impl("multinomial.out", TORCH_FN(multinomial_out));
  m.impl("randperm.generator_out", TORCH_FN(randperm_out));
}

} // namespace pytorch_ocl
