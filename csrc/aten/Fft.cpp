// torch.fft on ocl: the three aten primitives _fft_c2c, _fft_r2c and _fft_c2r (functional and
// .out, as torch registers them for CUDA) on VkFFT plans (dlprim/src/fft). Every torch.fft
// function, stft/istft and their derivatives reduce to these.
//
// Like CUDA's cuFFT path: the input is copied once into a dense [batch, signal...] layout (batch
// dims first, transformed dims in the order given, which also resolves conjugate views and any
// strides), transformed in at most 3 dims per VkFFT pass, and the result is returned as a
// permuted view of that buffer (torch accepts any strides from these ops). Normalization is a
// scale of the real view afterwards. Signal dims of size 1 are identities and are skipped.
#include "core/Device.h"
#include "core/Errors.h"
#include "core/Stream.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/fft.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace pytorch_ocl {

namespace {

enum Norm : int64_t { kNone = 0, kByRootN = 1, kByN = 2 };  // torch's fft_norm_mode

void check_input(const at::Tensor& self, const char* op, bool want_complex) {
  check_ocl(self, op, "self");
  c10::ScalarType t = self.scalar_type();
  if (want_complex) {
    TORCH_CHECK(t == c10::kComplexFloat || t == c10::kComplexDouble, op,
                ": expected a complex64 or complex128 input on ocl, got ", t);
  } else {
    TORCH_CHECK(t == c10::kFloat || t == c10::kDouble, op, ": expected a float32 or float64 input on ocl, got ", t);
  }
  bool dbl = t == c10::kDouble || t == c10::kComplexDouble;
  TORCH_CHECK(!dbl || device_info(self.device().index()).fp64, op,
              ": float64 transforms need a device with cl_khr_fp64");
}

std::vector<int64_t> wrap_dims(at::IntArrayRef dim, int64_t ndim, const char* op) {
  std::vector<int64_t> d;
  for (int64_t x : dim) {
    int64_t w = c10::maybe_wrap_dim(x, ndim);
    TORCH_CHECK(std::find(d.begin(), d.end(), w) == d.end(), op, ": dims must be unique, got ", dim);
    d.push_back(w);
  }
  return d;
}

// The dense layout of a pass: `self` permuted to (batch dims..., signal dims in `dims` order).
struct Layout {
  std::vector<int64_t> perm;   // permutation of self's dims: batch dims first, then dims
  int64_t batch = 1;
};

Layout layout_of(const at::Tensor& self, const std::vector<int64_t>& dims) {
  Layout l;
  std::vector<bool> is_signal(self.dim(), false);
  for (int64_t d : dims) is_signal[d] = true;
  for (int64_t d = 0; d < self.dim(); ++d)
    if (!is_signal[d]) {
      l.perm.push_back(d);
      l.batch *= self.size(d);
    }
  for (int64_t d : dims) l.perm.push_back(d);
  return l;
}

// A dense tensor of `sizes` (self's dim order) laid out in the order of `perm`, as a permuted view.
at::Tensor empty_permuted(at::IntArrayRef sizes, const std::vector<int64_t>& perm, const at::TensorOptions& opt) {
  std::vector<int64_t> dense(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) dense[i] = sizes[perm[i]];
  at::Tensor t = at::empty(dense, opt);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  return t.permute(inverse);
}

void run_pass(const at::Tensor& in, const at::Tensor& out, dlprim::FftKind kind, bool inverse,
              const std::vector<int64_t>& signal, int64_t batch, const char* op) {
  TORCH_INTERNAL_ASSERT(in.is_contiguous() && out.is_contiguous(), op, ": a VkFFT pass needs dense operands");
  dlprim::FftDesc d;
  d.kind = kind;
  d.inverse = inverse;
  d.double_precision = in.scalar_type() == c10::kDouble || in.scalar_type() == c10::kComplexDouble;
  d.rank = static_cast<int>(signal.size());
  for (size_t i = 0; i < signal.size(); ++i) d.n[i] = static_cast<uint64_t>(signal[i]);
  d.batch = static_cast<uint64_t>(batch);
  BufferRef bi = buffer_of(in), bo = buffer_of(out);
  int dev = out.device().index();
  cl_command_queue q = current_queue(dev);
  OCL_DLPRIM_CALL(op, dlprim::fft(context(dev), q, d, bi.mem, bi.offset, bo.mem, bo.offset));
  note_enqueued(q);
}

// Signal sizes of `dims` that are not 1 (length-1 transforms are identities), in order.
std::vector<int64_t> nontrivial(const at::Tensor& t, const std::vector<int64_t>& dims) {
  std::vector<int64_t> d;
  for (int64_t x : dims)
    if (t.size(x) != 1) d.push_back(x);
  return d;
}

// In-place complex transforms of `x` (dense in the layout of `perm`, batch dims first) over
// `dims` (a suffix of perm), 3 dims per VkFFT pass from the last.
void c2c_in_place(const at::Tensor& x, std::vector<int64_t> dims, bool forward, const char* op) {
  dims = nontrivial(x, dims);
  while (!dims.empty()) {
    size_t take = std::min<size_t>(3, dims.size());
    std::vector<int64_t> pass(dims.end() - take, dims.end());
    dims.resize(dims.size() - take);
    // A pass over inner dims of the dense layout: view the dense buffer as
    // [outer, pass dims..., inner] only when nothing follows them; otherwise re-layout.
    Layout l = layout_of(x, pass);
    at::Tensor dense = x.permute(l.perm);
    std::vector<int64_t> sig;
    for (int64_t d : pass) sig.push_back(x.size(d));
    if (dense.is_contiguous()) {
      run_pass(dense, dense, dlprim::FftKind::C2C, !forward, sig, l.batch, op);
    } else {
      at::Tensor tmp = dense.contiguous();
      run_pass(tmp, tmp, dlprim::FftKind::C2C, !forward, sig, l.batch, op);
      dense.copy_(tmp);
    }
  }
}

int64_t signal_numel(const at::Tensor& t, at::IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= t.size(d);
  return n;
}

// torch's normalization of a transform over `n` signal elements.
void normalize(const at::Tensor& out, int64_t norm, int64_t n) {
  if (norm == kNone || n == 0) return;
  double scale = norm == kByN ? 1.0 / static_cast<double>(n) : 1.0 / std::sqrt(static_cast<double>(n));
  (out.is_complex() ? at::view_as_real(out) : out).mul_(scale);
}

at::Tensor fft_c2c(const at::Tensor& self, c10::SymIntArrayRef sym_dim, int64_t norm, bool forward) {
  const char* op = "_fft_c2c";
  check_input(self, op, true);
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> dims = wrap_dims(C10_AS_INTARRAYREF_SLOW(sym_dim), self.dim(), op);
  Layout l = layout_of(self, dims);
  at::Tensor out = empty_permuted(self.sizes(), l.perm, self.options());
  if (out.numel() == 0) return out;
  out.copy_(self);  // dense, conjugation resolved
  c2c_in_place(out, dims, forward, op);
  normalize(out, norm, signal_numel(self, dims));
  return out;
}

at::Tensor fft_r2c(const at::Tensor& self, at::IntArrayRef dim, int64_t norm, bool onesided) {
  const char* op = "_fft_r2c";
  check_input(self, op, false);
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> dims = wrap_dims(dim, self.dim(), op);
  TORCH_CHECK(!dims.empty(), op, ": expected at least one dim");
  c10::ScalarType ct = c10::toComplexType(self.scalar_type());
  Layout l = layout_of(self, dims);
  int64_t last = dims.back(), n_last = self.size(last);
  std::vector<int64_t> out_sizes(self.sizes().begin(), self.sizes().end());
  if (onesided) out_sizes[last] = n_last / 2 + 1;
  at::Tensor out = empty_permuted(out_sizes, l.perm, self.options().dtype(ct));
  if (out.numel() == 0) return out;
  // A length-1 last dim or a two-sided result: the complex transform of the widened input.
  if (!onesided || n_last == 1) {
    at::Tensor full = onesided ? empty_permuted(self.sizes(), l.perm, self.options().dtype(ct)) : out;
    full.copy_(self);  // real -> complex
    c2c_in_place(full, dims, true, op);
    if (onesided) out.copy_(full);  // n_last == 1: the whole (one-element) last dim
    normalize(out, norm, signal_numel(self, dims));
    return out;
  }
  // Real-to-complex over the last dim (innermost in both dense layouts), then the other dims
  // as complex transforms: one-dim real plans are shared by every rank.
  at::Tensor src = self.permute(l.perm).contiguous();
  at::Tensor dst = out.permute(l.perm);
  run_pass(src, dst, dlprim::FftKind::R2C, false, {n_last}, src.numel() / n_last, op);
  c2c_in_place(out, std::vector<int64_t>(dims.begin(), dims.end() - 1), true, op);
  normalize(out, norm, signal_numel(self, dims));
  return out;
}

at::Tensor fft_c2r(const at::Tensor& self, at::IntArrayRef dim, int64_t norm, c10::SymInt sym_last) {
  const char* op = "_fft_c2r";
  check_input(self, op, true);
  c10::DeviceGuard guard(self.device());
  std::vector<int64_t> dims = wrap_dims(dim, self.dim(), op);
  TORCH_CHECK(!dims.empty(), op, ": expected at least one dim");
  int64_t n_last = sym_last.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(n_last >= 1, op, ": invalid last dim size ", n_last);
  int64_t last = dims.back();
  TORCH_CHECK(self.size(last) == n_last / 2 + 1, op, ": expected the last transformed dim of size ",
              n_last / 2 + 1, " for an output of size ", n_last, ", got ", self.size(last));
  c10::ScalarType rt = c10::toRealValueType(self.scalar_type());
  std::vector<int64_t> out_sizes(self.sizes().begin(), self.sizes().end());
  out_sizes[last] = n_last;
  Layout l = layout_of(self, dims);
  at::Tensor out = empty_permuted(out_sizes, l.perm, self.options().dtype(rt));
  if (out.numel() == 0) return out;
  // Inverse over the leading dims first (complex, in a dense copy, which also resolves
  // conjugation), then complex-to-real over the last dim, innermost in both dense layouts.
  at::Tensor work = empty_permuted(self.sizes(), l.perm, self.options());
  work.copy_(self);
  c2c_in_place(work, std::vector<int64_t>(dims.begin(), dims.end() - 1), false, op);
  // The CPU (pocketfft) reads only the real parts of the zero and Nyquist frequencies of the last
  // dim; VkFFT's real transform reads all of them: drop those imaginary parts.
  at::view_as_real(work.select(last, 0)).select(-1, 1).zero_();
  if (n_last % 2 == 0) at::view_as_real(work.select(last, n_last / 2)).select(-1, 1).zero_();
  if (n_last == 1) {
    out.copy_(work);  // the real part
  } else {
    at::Tensor src = work.permute(l.perm);
    run_pass(src, out.permute(l.perm), dlprim::FftKind::C2R, true, {n_last}, src.numel() / src.size(-1), op);
  }
  normalize(out, norm, signal_numel(out, dims));
  return out;
}

// The .out forms: compute, then resize and copy into out (as CUDA's).
at::Tensor& into(const at::Tensor& result, at::Tensor& out, const char* op) {
  TORCH_CHECK(out.scalar_type() == result.scalar_type(), op, ": expected out dtype ", result.scalar_type(),
              ", got ", out.scalar_type());
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor& fft_c2c_out(const at::Tensor& self, c10::SymIntArrayRef dim, int64_t norm, bool forward,
                        at::Tensor& out) {
  return into(fft_c2c(self, dim, norm, forward), out, "_fft_c2c.out");
}
at::Tensor& fft_r2c_out(const at::Tensor& self, at::IntArrayRef dim, int64_t norm, bool onesided, at::Tensor& out) {
  return into(fft_r2c(self, dim, norm, onesided), out, "_fft_r2c.out");
}
at::Tensor& fft_c2r_out(const at::Tensor& self, at::IntArrayRef dim, int64_t norm, c10::SymInt last,
                        at::Tensor& out) {
  return into(fft_c2r(self, dim, norm, std::move(last)), out, "_fft_c2r.out");
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fft_c2c", TORCH_FN(fft_c2c));
  m.impl("_fft_c2c.out", TORCH_FN(fft_c2c_out));
  m.impl("_fft_r2c", TORCH_FN(fft_r2c));
  m.impl("_fft_r2c.out", TORCH_FN(fft_r2c_out));
  m.impl("_fft_c2r", TORCH_FN(fft_c2r));
  m.impl("_fft_c2r.out", TORCH_FN(fft_c2r_out));
}

} // namespace pytorch_ocl
