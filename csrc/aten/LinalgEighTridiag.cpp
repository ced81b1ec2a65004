// linalg.eigh / eigvalsh of real symmetric matrices above eigh_crossover(): the two-stage path of
// LAPACK's ?syev (blocked ?sytrd, then ?steqr on the tridiagonal, Q from ?orgtr) on the device,
// instead of the one-work-group Jacobi kernel whose sweeps are O(n^3) each on one compute unit.
// The per-column steps are kernels/linalg_tridiag.cl's; the O(n^3) parts are GEMMs: each panel's
// rank-2nb trailing update (one baddbmm) and Q = H_1 ... H_{n-1} by the blocked orgqr (compact WY,
// LinalgBlocked.cpp). The QL iteration's rotations then turn Q into the eigenvectors.
#include "aten/LinalgCommon.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/Stream.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/exp2.h>
#include <ATen/ops/log2.h>
#include <ATen/ops/ones_like.h>
#include <ATen/ops/round.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <dlprim/autotune.h>
#include <dlprim/env.h>

#include <algorithm>
#include <cstdlib>

namespace pytorch_ocl::linalg {

namespace {

dlprim::MatrixRef flat_ref(const at::Tensor& t) {
  // Contiguous (batch, ...) buffers: one matrix (or vector) per batch entry.
  TORCH_INTERNAL_ASSERT(t.is_contiguous());
  BufferRef b = buffer_of(t);
  dlprim::MatrixRef r;
  r.mem = b.mem;
  r.offset = b.offset / t.element_size();
  r.batch_stride = t.numel() / std::max<int64_t>(1, t.size(0));
  r.row_stride = r.col_stride = 1;
  return r;
}

// QL sweeps per eigenvalue before giving up (LAPACK's steqr: 30 n in all; tql2: 30 each). PYTORCH_OCL_EIGH_QL_SWEEPS
// lowers it, so that a test can see the failure to converge reported.
int64_t ql_max_sweeps() {
  const char* v = dlprim::env_value("PYTORCH_OCL_EIGH_QL_SWEEPS");
  const int64_t s = v && *v ? std::atoll(v) : 0;
  return s > 0 ? s : 60;
}

} // namespace

int64_t eigh_crossover() {
  const char* v = dlprim::env_value("PYTORCH_OCL_EIGH_CROSSOVER");
  const int64_t c = v && *v ? std::atoll(v) : -1;
  if (c >= 0) return c;
  // PYTORCH_OCL_TUNE=random:SEED: a seeded crossover, so tests reach both paths with small matrices.
  static const int64_t kChoices[] = {32, 2};
  const int pick = dlprim::tune_variant("eigh_crossover", 2);
  return pick >= 0 ? kChoices[pick] : 32;
}

void eigh_tridiag(const at::Tensor& sym, const at::Tensor& w, const at::Tensor* vectors, const char* op) {
  const int64_t n = sym.size(-1), batch = batch_count(sym);
  TORCH_INTERNAL_ASSERT(n >= 2 && !sym.is_complex());
  at::Tensor a = sym.reshape({batch, n, n}).contiguous();  // sym's storage when it is contiguous: destroyed
  // Scaled by a power of two near max |a_ij| (exact), as ?syev scales matrices near over- or
  // underflow: the reflectors' and Sturm counts' squares stay in range; eigenvalues scaled back.
  at::Tensor amax = a.abs().amax({1, 2}, /*keepdim=*/true);
  at::Tensor scale = at::where(amax.gt(0), at::exp2(at::round(at::log2(amax))), at::ones_like(amax));
  a.div_(scale);
  const int64_t nb = std::max<int64_t>(1, std::min(block_size(), n - 1));
  const auto opts = a.options();
  at::Tensor vw = at::zeros({batch, 2 * nb, n}, opts);
  at::Tensor d = at::empty({batch, n}, opts), e = at::empty({batch, n}, opts);
  at::Tensor tau = at::empty({batch, n - 1}, opts), p = at::empty({batch, n + 2 * nb}, opts);
  const int device = a.device().index();
  dlprim::Context& ctx = context(device);
  cl_command_queue q = current_queue(device);
  const dlprim::DType t = ltype_of(a, op).real;
  const auto A = flat_ref(a), VW = flat_ref(vw), D = flat_ref(d), E = flat_ref(e), TAU = flat_ref(tau),
             P = flat_ref(p);
  for (int64_t k0 = 0; k0 < n - 1; k0 += nb) {
    const int64_t k1 = std::min(n - 1, k0 + nb);
    if (k0 > 0) vw.zero_();
    for (int64_t i = k0; i < k1; ++i) {
      const int64_t j = i - k0;
      OCL_DLPRIM_CALL(op, dlprim::tridiag_column(ctx, q, t, batch, n, nb, i, j, A, VW, D, E, TAU));
      OCL_DLPRIM_CALL(op, dlprim::tridiag_rowdot(ctx, q, t, batch, n, nb, i, j, A, VW, P));
      OCL_DLPRIM_CALL(op, dlprim::tridiag_w(ctx, q, t, batch, n, nb, i, j, VW, P, TAU));
    }
    note_enqueued(q);
    // A22 -= V W^T + W V^T as one GEMM of inner size 2 nb: [V W] [W V]^T.
    const int64_t m = n - k1;
    at::Tensor x = vw.narrow(-1, k1, m);
    at::Tensor xs = at::cat({x.narrow(1, nb, nb), x.narrow(1, 0, nb)}, 1);
    a.narrow(1, k1, m).narrow(2, k1, m).baddbmm_(x.mT(), xs, 1, -1);
  }
  d.narrow(1, n - 1, 1).copy_(a.select(2, n - 1).narrow(1, n - 1, 1));
  at::Tensor z, qm;
  if (vectors) {
    // Q = diag(1, H_1 ... H_{n-1}) (?orgtr). The QL kernel's work-items rotate rows of Q:
    // column-major on GPUs (neighbouring items, neighbouring addresses), row-major on CPU devices
    // (each item walks its own row: 10x faster on PoCL at n = 1024); seeded under PYTORCH_OCL_TUNE.
    const int pick = dlprim::tune_variant("tridiag_ql_layout", 2);
    const bool row_major = pick >= 0 ? pick == 1 : ctx.info().is_cpu;
    z = at::empty({batch, n, n}, opts);
    qm = row_major ? z : z.mT();
    qm.zero_();
    qm.select(1, 0).select(1, 0).fill_(1);
    orgqr_into(a.narrow(1, 1, n - 1).narrow(2, 0, n - 1), tau, qm.narrow(1, 1, n - 1).narrow(2, 1, n - 1), op);
  }
  at::Tensor wv = w.reshape({batch, n});
  if (!vectors) {
    OCL_DLPRIM_CALL(op, dlprim::tridiag_bisect(ctx, q, t, batch, n, D, E, flat_ref(wv)));
    note_enqueued(q);
    wv.mul_(scale.squeeze(-1));
    return;
  }
  size_t g = 1;
  size_t groups = 0;
  OCL_DLPRIM_CALL(op, groups = dlprim::tridiag_ql_groups(ctx, t, n, &g));
  at::Tensor scr = at::empty({static_cast<int64_t>(groups) * batch * 4 * n}, opts);
  at::Tensor iscr = at::empty({static_cast<int64_t>(groups) * batch * n}, opts.dtype(c10::kInt));
  BufferRef sb = buffer_of(scr), ib = buffer_of(iscr);
  dlprim::MatrixRef zref = flat_ref(z);
  zref.row_stride = qm.stride(1);
  zref.col_stride = qm.stride(2);
  dlprim::MatrixRef vref = matrix_ref(*vectors);
  at::Tensor info = at::zeros({batch}, opts.dtype(c10::kInt));
  BufferRef infob = buffer_of(info);
  q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::tridiag_ql(ctx, q, t, batch, n, D, E, sb.mem, sb.offset / scr.element_size(), ib.mem,
                                         ib.offset / 4, flat_ref(wv), &zref, &vref, infob.mem, infob.offset / 4,
                                         ql_max_sweeps()));
  note_enqueued(q);
  wv.mul_(scale.squeeze(-1));
  // LAPACK's failure to converge, as the CPU raises it (its error code: the eigenvalues given up on).
  at::_linalg_check_errors(info.reshape(sym.sizes().slice(0, sym.dim() - 2)), op, sym.dim() == 2);
}

} // namespace pytorch_ocl::linalg
