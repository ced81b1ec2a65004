// See LinalgCommon.h.
#include "aten/LinalgCommon.h"

#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/MemoryOverlap.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <dlprim/autotune.h>
#include <dlprim/env.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace pytorch_ocl::linalg {

int64_t block_size() {
  // Read per call so tests can move the crossover (monkeypatch) and reach the blocked paths with
  // small matrices.
  const char* v = std::getenv("PYTORCH_OCL_LINALG_BLOCK");
  int64_t nb = v && *v ? std::atoll(v) : 0;
  if (nb > 0) return nb;
  // PYTORCH_OCL_TUNE=random:SEED: a seeded block size, so whole-network tests reach both paths.
  static const int64_t kChoices[] = {4, 8, 16, 64};
  int pick = dlprim::tune_variant("linalg_block", 4);
  return pick >= 0 ? kChoices[pick] : 64;
}

void check_dtype(const at::Tensor& t, const char* op, bool complex_ok) {
  c10::ScalarType s = t.scalar_type();
  if (complex_ok && (s == c10::kComplexFloat || s == c10::kComplexDouble)) return;
  TORCH_CHECK_NOT_IMPLEMENTED(s == c10::kFloat || s == c10::kDouble, op, ": dtype ", s,
                              " is not supported on ocl (float32 and float64",
                              complex_ok ? ", complex64 and complex128" : "", " only)");
}

int64_t batch_count(const at::Tensor& t, int64_t matrix_dims) {
  int64_t b = 1;
  for (int64_t d = 0; d < t.dim() - matrix_dims; ++d) b *= t.size(d);
  return b;
}

namespace {

// The stride between consecutive matrices when the batch dims collapse into one, else -1.
int64_t batch_stride(const at::Tensor& t, int64_t matrix_dims) {
  int64_t nb = t.dim() - matrix_dims;
  int64_t stride = 0;  // of the innermost batch dim of size > 1 seen so far
  int64_t span = -1;   // elements that dim's stride must equal for the next outer dim
  for (int64_t d = nb - 1; d >= 0; --d) {
    if (t.size(d) == 1) continue;
    if (span < 0) {
      stride = t.stride(d);
    } else if (t.stride(d) != span) {
      return -1;
    }
    span = t.stride(d) * t.size(d);
  }
  return stride;
}

} // namespace

bool flat_batches(const at::Tensor& t, int64_t matrix_dims) { return batch_stride(t, matrix_dims) >= 0; }

at::Tensor flat(const at::Tensor& t) {
  // The kernels read memory: a conjugate (or negative) view's values exist only once resolved.
  at::Tensor r = t.resolve_conj().resolve_neg();
  if (flat_batches(r)) return r;
  return at::native::cloneBatchedColumnMajor(r);
}

at::Tensor work_for(const at::Tensor& out, const at::Tensor& avoid) {
  bool overlap = avoid.defined() && at::get_overlap_status(out, avoid) != at::MemOverlapStatus::No &&
                 !out.is_same(avoid);
  if (!overlap && flat_batches(out) && at::has_internal_overlap(out) == at::MemOverlap::No) return out;
  return at::empty_strided(out.sizes(), at::native::batched_matrix_contiguous_strides(out.sizes(), true),
                           out.options());
}

void copy_into(const at::Tensor& dst, const at::Tensor& src) {
  bool same = dst.is_alias_of(src) && dst.storage_offset() == src.storage_offset() &&
              dst.sizes().equals(src.sizes()) && (dst.numel() <= 1 || dst.strides().equals(src.strides())) &&
              dst.scalar_type() == src.scalar_type() && dst.is_conj() == src.is_conj() &&
              dst.is_neg() == src.is_neg();
  if (!same) dst.copy_(src);
}

void write_back(const at::Tensor& out, const at::Tensor& work) { copy_into(out, work); }

dlprim::MatrixRef matrix_ref(const at::Tensor& t) {
  int64_t bs = batch_stride(t, 2);
  TORCH_INTERNAL_ASSERT(bs >= 0, "linalg: matrices not one stride apart");
  TORCH_INTERNAL_ASSERT(!t.is_conj() && !t.is_neg(), "linalg: a conjugate or negative view reached a kernel");
  BufferRef b = buffer_of(t);
  dlprim::MatrixRef r;
  r.mem = b.mem;
  r.offset = b.offset / t.element_size();
  r.batch_stride = bs;
  r.row_stride = t.stride(-2);
  r.col_stride = t.stride(-1);
  return r;
}

dlprim::IntVecRef int_ref(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.scalar_type() == c10::kInt);
  int64_t bs = t.dim() == 0 ? 0 : batch_stride(t, 1);
  TORCH_INTERNAL_ASSERT(bs >= 0 && (t.dim() == 0 || t.size(-1) <= 1 || t.stride(-1) == 1),
                        "linalg: int vectors not flat");
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / 4, bs};
}

dlprim::MatrixRef vec_ref(const at::Tensor& t) {
  TORCH_INTERNAL_ASSERT(t.is_contiguous() && !t.is_conj() && !t.is_neg());
  BufferRef b = buffer_of(t);
  dlprim::MatrixRef r;
  r.mem = b.mem;
  r.offset = b.offset / t.element_size();
  r.batch_stride = t.dim() == 0 ? 0 : t.size(-1);
  r.row_stride = 1;
  r.col_stride = 1;
  return r;
}

dlprim::LinalgType ltype_of(const at::Tensor& t, const char* op) {
  if (t.is_complex()) return {to_dlprim(c10::toRealValueType(t.scalar_type()), op), true};
  return to_dlprim(t.scalar_type(), op);
}

namespace {

dlprim::DType dtype_of(const at::Tensor& t, const char* op) { return to_dlprim(t.scalar_type(), op); }

cl_command_queue queue_of(const at::Tensor& t) { return current_queue(t.device().index()); }

// info as a contiguous int32 vector of the batch (info or a work copy, given back by `done`).
struct InfoBuffer {
  at::Tensor out, work;
  explicit InfoBuffer(const at::Tensor& info) : out(info) {
    work = info.is_contiguous() ? info : at::empty(info.sizes(), info.options());
  }
  dlprim::IntVecRef ref() const {
    BufferRef b = buffer_of(work);
    return {b.mem, b.offset / 4, 1};
  }
  void done() const { write_back(out, work); }
};

} // namespace

void cholesky_kernel(const at::Tensor& a, bool upper, const at::Tensor& info, const char* op) {
  InfoBuffer ib(info);
  dlprim::MatrixRef m = matrix_ref(a);
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  OCL_DLPRIM_CALL(op, dlprim::cholesky(context(device), q, ltype_of(a, op), batch_count(a), a.size(-1),
                                       upper ? m.transposed() : m, ib.ref()));
  note_enqueued(q);
  ib.done();
}

void lu_kernel(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op,
               const dlprim::LuLeafPlace& place) {
  InfoBuffer ib(info);
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  OCL_DLPRIM_CALL(op, dlprim::lu_factor(context(device), q, ltype_of(a, op), batch_count(a), a.size(-2), a.size(-1),
                                        matrix_ref(a), int_ref(pivots), ib.ref(), place));
  note_enqueued(q);
  ib.done();
}

namespace {

// PYTORCH_OCL_LINALG_ON_CHIP: 0 or 1, else -1 (unset).
int on_chip_setting() { return dlprim::env_switch("PYTORCH_OCL_LINALG_ON_CHIP"); }

// The on-chip kernels meant for GPUs (LU leaves in registers, small solves in local memory): with
// PYTORCH_OCL_LINALG_ON_CHIP unset, on GPUs only (a seeded pick under PYTORCH_OCL_TUNE=random). On
// PoCL's CPU device the LU leaf measured slower than the global-memory kernel (work-items are loops
// there, the per-item arrays memory anyway, and three barriers a column).
bool gpu_on_chip(const dlprim::Context& ctx, const char* label) {
  int use = on_chip_setting();
  if (use < 0) use = dlprim::tune_variant(label, 2);
  if (use < 0) use = ctx.info().is_cpu ? 0 : 1;
  return use != 0;
}

} // namespace

bool on_chip() { return on_chip_setting() != 0; }

// GPUs only by default: on PoCL's CPU device the block in registers measured 2x (float32) to 28x
// (complex64) slower than the global-memory path (the tiles kept across 64 barriers are memory there).
bool cholesky_block_fits(const at::Tensor& a, int64_t n) {
  const dlprim::Context& ctx = context(a.device().index());
  if (!gpu_on_chip(ctx, "cholesky_block")) return false;
  bool fits = false;  // builds the kernel's program (its group limit): a build error reads as PyTorch's
  OCL_DLPRIM_CALL("linalg", fits = dlprim::cholesky_block_fits(ctx, ltype_of(a, "linalg"), n));
  return fits;
}

bool wy_factor_kernel(const at::Tensor& s, const at::Tensor& tau, const at::Tensor& out, const char* op,
                      const at::Tensor& y, bool adjoint) {
  const int64_t n = s.size(-1);
  if (!on_chip() || !dlprim::wy_factor_fits(context(s.device().index()), ltype_of(s, op), n)) return false;
  int device = s.device().index();
  cl_command_queue q = queue_of(s);
  at::Tensor tau2 = tau.unsqueeze(-2);  // (..., 1, k): its batch stride; elements one apart
  if (!flat_batches(tau2) || (n > 1 && tau.stride(-1) != 1)) tau2 = tau.contiguous().unsqueeze(-2);
  dlprim::MatrixRef yr;
  if (y.defined()) yr = matrix_ref(y);
  OCL_DLPRIM_CALL(op, dlprim::wy_factor(context(device), q, ltype_of(s, op), batch_count(s), n, matrix_ref(s),
                                        matrix_ref(tau2), matrix_ref(out), y.defined() ? &yr : nullptr,
                                        y.defined() ? y.size(-1) : 0, adjoint));
  note_enqueued(q);
  return true;
}

void cholesky_block_kernel(const at::Tensor& a, const at::Tensor& inv, const at::Tensor& info, int64_t base,
                           const char* op) {
  TORCH_INTERNAL_ASSERT(info.is_contiguous() && info.scalar_type() == c10::kInt);
  BufferRef ib = buffer_of(info);
  dlprim::MatrixRef ir;
  if (inv.defined()) ir = matrix_ref(inv);
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  // "1": two columns a barrier (for comparisons; one measured faster on an H200: 4096 in 6.86 against 7.22 ms)
  const char* pair = dlprim::env_value("PYTORCH_OCL_CHOLESKY_PAIR");
  const bool two = pair && std::string(pair) == "1";
  OCL_DLPRIM_CALL(op, dlprim::cholesky_block(context(device), q, ltype_of(a, op), batch_count(a), a.size(-1),
                                             matrix_ref(a), inv.defined() ? &ir : nullptr,
                                             {ib.mem, ib.offset / 4, 1}, base, two));
  note_enqueued(q);
}

bool wy_product_on_chip(const at::Tensor& s) { return gpu_on_chip(context(s.device().index()), "wy_product"); }

int64_t lu_leaf_max_rows(const at::Tensor& a, int64_t w) {
  const dlprim::Context& ctx = context(a.device().index());
  if (!gpu_on_chip(ctx, "lu_leaf_registers")) return 0;
  return dlprim::lu_leaf_max_rows(ctx, ltype_of(a, "linalg"), w);
}

void lu_leaf_kernel(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op,
                    const dlprim::LuLeafPlace& place) {
  InfoBuffer ib(info);
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  OCL_DLPRIM_CALL(op, dlprim::lu_leaf(context(device), q, ltype_of(a, op), batch_count(a), a.size(-2), a.size(-1),
                                      matrix_ref(a), int_ref(pivots), ib.ref(), place));
  note_enqueued(q);
  ib.done();
}

bool lu_leaf_solve_fits(const at::Tensor& a, int64_t rows, int64_t cols) {
  return dlprim::lu_leaf_solve_fits(context(a.device().index()), ltype_of(a, "linalg"), rows, cols);
}

void lu_swap_solve_kernel(const at::Tensor& a, const at::Tensor& pivots, int64_t k0, int64_t k1, const char* op) {
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  OCL_DLPRIM_CALL(op, dlprim::lu_swap_solve(context(device), q, ltype_of(a, op), batch_count(a), a.size(-2),
                                            a.size(-1), matrix_ref(a), int_ref(pivots), k0, k1));
  note_enqueued(q);
}

namespace {

// The one-work-group-per-matrix kernels (trsm, laswp) treat the columns of the right-hand side
// independently; one matrix with many columns is split into a batch of kWide-column chunks (views,
// batch stride kWide columns) so they spread over the device's compute units instead of one, with
// the same arithmetic per column. Returns the chunks [c, rows, kWide] and the remaining columns.
constexpr int64_t kWide = 32;

bool wide(const at::Tensor& x) { return x.dim() == 2 && x.size(-1) >= 2 * kWide; }

std::pair<at::Tensor, at::Tensor> column_chunks(const at::Tensor& x) {
  const int64_t n = x.size(-1), c = n / kWide;
  at::Tensor chunks = x.narrow(-1, 0, c * kWide).unflatten(-1, {c, kWide}).movedim(-2, 0);
  return {chunks, x.narrow(-1, c * kWide, n - c * kWide)};
}

} // namespace

void trsm_kernel(const at::Tensor& a, const at::Tensor& x, bool lower, bool transpose, bool unit, const char* op,
                 bool conj) {
  if (wide(x)) {
    auto [chunks, tail] = column_chunks(x);
    trsm_kernel(a.expand({chunks.size(0), a.size(0), a.size(1)}), chunks, lower, transpose, unit, op, conj);
    if (tail.size(-1) > 0) trsm_kernel(a, tail, lower, transpose, unit, op, conj);
    return;
  }
  dlprim::MatrixRef ar = matrix_ref(a);
  if (transpose) ar = ar.transposed();
  int device = x.device().index();
  cl_command_queue q = queue_of(x);
  const dlprim::Context& ctx = context(device);
  if (dlprim::triangular_solve_local_fits(ctx, ltype_of(x, op), x.size(-2), x.size(-1)) &&
      gpu_on_chip(ctx, "trsm_local")) {
    OCL_DLPRIM_CALL(op, dlprim::triangular_solve_local(ctx, q, ltype_of(x, op), batch_count(x), x.size(-2),
                                                       x.size(-1), ar, matrix_ref(x), lower != transpose, unit,
                                                       conj && x.is_complex()));
    note_enqueued(q);
    return;
  }
  OCL_DLPRIM_CALL(op, dlprim::triangular_solve(context(device), q, ltype_of(x, op), batch_count(x), x.size(-2),
                                               x.size(-1), ar, matrix_ref(x), lower != transpose, unit,
                                               conj && x.is_complex()));
  note_enqueued(q);
}

void cholesky_lower(const at::Tensor& a, bool upper, const at::Tensor& info, const char* op) {
  int64_t nb = block_size();
  if (a.size(-1) > nb) {
    blocked_cholesky(upper ? a.mT() : a, info, nb, op);
  } else {
    cholesky_kernel(a, upper, info, op);
  }
}

void lu_factor(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op) {
  int64_t nb = block_size();
  if (std::min(a.size(-2), a.size(-1)) > nb) {
    blocked_lu(a, pivots, info, nb, op);
  } else {
    lu_kernel(a, pivots, info, op);
  }
}

void trsm(const at::Tensor& a, const at::Tensor& x, bool lower, bool transpose, bool unit, const char* op,
          bool conj) {
  int64_t nb = block_size();
  if (x.size(-2) > nb) {
    blocked_trsm(transpose ? a.mT() : a, x, lower != transpose, unit, nb, op, conj);
  } else {
    trsm_kernel(a, x, lower, transpose, unit, op, conj);
  }
}

void laswp(const at::Tensor& x, const at::Tensor& pivots, bool reverse, const char* op) {
  if (wide(x) && pivots.dim() == 1) {  // see column_chunks
    auto [chunks, tail] = column_chunks(x);
    laswp(chunks, pivots.expand({chunks.size(0), pivots.size(0)}), reverse, op);
    if (tail.size(-1) > 0) laswp(tail, pivots, reverse, op);
    return;
  }
  int device = x.device().index();
  cl_command_queue q = queue_of(x);
  OCL_DLPRIM_CALL(op, dlprim::apply_pivots(context(device), q, ltype_of(x, op), batch_count(x), x.size(-2),
                                           x.size(-1), matrix_ref(x), int_ref(pivots), pivots.size(-1), reverse));
  note_enqueued(q);
}

at::Tensor permutation(const at::Tensor& pivots, int64_t m, const char* op) {
  std::vector<int64_t> shape = pivots.sizes().vec();
  shape.back() = m;
  at::Tensor perm = at::empty(shape, pivots.options().dtype(c10::kLong));
  at::Tensor piv = flat_batches(pivots, 1) && (pivots.size(-1) <= 1 || pivots.stride(-1) == 1)
                       ? pivots : pivots.contiguous();
  BufferRef pb = buffer_of(perm);
  int device = pivots.device().index();
  cl_command_queue q = queue_of(pivots);
  OCL_DLPRIM_CALL(op, dlprim::pivots_to_permutation(context(device), q, batch_count(piv, 1), m, piv.size(-1),
                                                    int_ref(piv), pb.mem, pb.offset / 8));
  note_enqueued(q);
  return perm;
}

void lu_solve_in_place(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& x, bool adjoint,
                       const char* op) {
  if (!adjoint) {  // A = P L U: x <- U^-1 L^-1 P^T x
    laswp(x, pivots, false, op);
    trsm(LU, x, /*lower=*/true, false, /*unit=*/true, op);
    trsm(LU, x, /*lower=*/false, false, false, op);
  } else {  // A^H = U^H L^H P^T: x <- P L^-H U^-H x (A^T for real)
    trsm(LU, x, /*lower=*/false, true, false, op, /*conj=*/true);
    trsm(LU, x, /*lower=*/true, true, /*unit=*/true, op, /*conj=*/true);
    laswp(x, pivots, true, op);
  }
}

void geqrf_in_place(const at::Tensor& work, const at::Tensor& tau, const char* op) {
  int64_t nb = block_size();
  const int64_t m = work.size(-2), n = work.size(-1);
  // Tall and skinny (one panel of more than 4 nb rows and 16 columns) too: the blocked path's single
  // panel is the recursive one (leaves on chip), where the one-work-group kernel walks every column.
  if (std::min(m, n) > nb || (m > 4 * nb && n > 16)) {
    blocked_geqrf(work, tau, nb, op);
  } else {
    geqrf_kernel(work, tau, op);
  }
}

namespace {

// tau (..., k) with its elements one apart and its batches one stride apart (a narrowed slice of a
// contiguous tau, the recursive panel's, needs no copy): a vector per matrix for the kernels.
dlprim::MatrixRef tau_ref(const at::Tensor& tau) {
  at::Tensor t2 = tau.unsqueeze(-2);
  TORCH_INTERNAL_ASSERT(flat_batches(t2) && (tau.size(-1) <= 1 || tau.stride(-1) == 1), "linalg: tau not flat");
  return matrix_ref(t2);
}

} // namespace

void geqrf_kernel(const at::Tensor& work, const at::Tensor& tau, const char* op, const at::Tensor& v, int64_t v_top) {
  int device = work.device().index();
  cl_command_queue q = queue_of(work);
  dlprim::MatrixRef vr;
  if (v.defined()) vr = matrix_ref(v);
  OCL_DLPRIM_CALL(op, dlprim::geqrf(context(device), q, ltype_of(work, op), batch_count(work), work.size(-2),
                                    work.size(-1), matrix_ref(work), tau_ref(tau), v.defined() ? &vr : nullptr, v_top));
  note_enqueued(q);
}

int64_t geqrf_leaf_max_rows(const at::Tensor& a, int64_t w) {
  const dlprim::Context& ctx = context(a.device().index());
  if (!gpu_on_chip(ctx, "qr_leaf_registers")) return 0;
  return dlprim::geqrf_leaf_max_rows(ctx, ltype_of(a, "linalg"), w);
}

void geqrf_leaf_kernel(const at::Tensor& a, const at::Tensor& tau, const at::Tensor& v, const char* op,
                       int64_t v_top) {
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  dlprim::MatrixRef vr;
  if (v.defined()) vr = matrix_ref(v);
  OCL_DLPRIM_CALL(op, dlprim::geqrf_leaf(context(device), q, ltype_of(a, op), batch_count(a), a.size(-2),
                                         a.size(-1), matrix_ref(a), tau_ref(tau), v.defined() ? &vr : nullptr, v_top));
  note_enqueued(q);
}

void unit_lower_kernel(const at::Tensor& a, const at::Tensor& v, const char* op) {
  int device = a.device().index();
  cl_command_queue q = queue_of(a);
  OCL_DLPRIM_CALL(op, dlprim::unit_lower(context(device), q, ltype_of(a, op), batch_count(a), a.size(-2), a.size(-1),
                                         matrix_ref(a), matrix_ref(v)));
  note_enqueued(q);
}

void orgqr_into(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& out, const char* op) {
  int64_t nb = block_size();
  if (tau.size(-1) > nb) {
    blocked_orgqr(v, tau, out, nb, op);
    return;
  }
  int device = out.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::householder_product(context(device), q, ltype_of(out, op),
                                                  batch_count(out), out.size(-2), out.size(-1), tau.size(-1),
                                                  matrix_ref(v), vec_ref(tau), matrix_ref(out)));
  note_enqueued(q);
}

} // namespace pytorch_ocl::linalg
