#include "aten/GemmRunner.h"

#include "core/Errors.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/Context.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

namespace pytorch_ocl {

namespace {

bool has_unit_stride(const at::Tensor& t3) {
  return t3.stride(2) == 1 || t3.size(2) == 1 || t3.stride(1) == 1 || t3.size(1) == 1;
}

dlprim::GemmMatrix matrix_of(const at::Tensor& t3) {
  dlprim::GemmMatrix m;
  BufferRef buf = buffer_of(t3);
  m.mem = buf.mem;
  m.offset = buf.offset / t3.itemsize();
  m.batch_stride = t3.stride(0);
  m.row_stride = t3.stride(1);
  m.col_stride = t3.stride(2);
  return m;
}

// True when a and b are provably disjoint blocks of one row- or column-major matrix: the same
// strides (one of them 1, the other the leading dimension ld), batch dims of size 1, neither
// wrapping past ld, and their row ranges or column ranges apart. Blocked factorizations update
// one block of the work matrix from others (A22 -= L21 U12); get_overlap_status answers TooHard
// for any two non-contiguous views, which made the GEMM write a temporary and copy it back.
// false (not known) in every other case: the caller then stays conservative.
bool disjoint_blocks(const at::Tensor& a, const at::Tensor& b) {
  if (a.dim() < 2 || b.dim() < 2 || a.itemsize() != b.itemsize()) return false;
  for (const at::Tensor* t : {&a, &b})
    for (int64_t d = 0; d < t->dim() - 2; ++d)
      if (t->size(d) != 1) return false;
  if (a.stride(-2) != b.stride(-2) || a.stride(-1) != b.stride(-1)) return false;
  const int64_t inner = a.stride(-1) == 1 ? -1 : a.stride(-2) == 1 ? -2 : 0;
  if (inner == 0) return false;
  const int64_t outer = inner == -1 ? -2 : -1, ld = a.stride(outer);
  if (ld < 1) return false;
  // Element (i, j) of a block (i along the unit stride) sits at i0 + i + (j0 + j) * ld.
  auto i0 = [&](const at::Tensor& t) { return t.storage_offset() % ld; };
  auto j0 = [&](const at::Tensor& t) { return t.storage_offset() / ld; };
  if (i0(a) + a.size(inner) > ld || i0(b) + b.size(inner) > ld) return false;
  const bool rows_apart = i0(a) + a.size(inner) <= i0(b) || i0(b) + b.size(inner) <= i0(a);
  const bool cols_apart = j0(a) + a.size(outer) <= j0(b) || j0(b) + b.size(outer) <= j0(a);
  return rows_apart || cols_apart;
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (!b.defined() || a.numel() == 0 || b.numel() == 0) return false;
  // get_overlap_status answers TooHard for any expanded operand (a broadcast bias) before it
  // looks at storages: tensors of different storages never overlap.
  if (!a.storage().is_alias_of(b.storage())) return false;
  if (disjoint_blocks(a, b)) return false;
  return at::get_overlap_status(a, b) != at::MemOverlapStatus::No;
}

bool same_view(const at::Tensor& a, const at::Tensor& b) {
  return a.data_ptr() == b.data_ptr() && a.sizes().equals(b.sizes()) && a.strides().equals(b.strides());
}

} // namespace

dlprim::Fp32Math matmul_fp32_math() {
  return at::globalContext().float32MatmulPrecision() == at::Float32MatmulPrecision::HIGHEST ? dlprim::Fp32Math::Exact
                                                                                            : dlprim::Fp32Math::Tf32;
}

void run_gemm(const GemmCall& c) {
  const at::Tensor& out = c.out;
  if (out.numel() == 0) return;
  c10::DeviceGuard guard(out.device());
  at::assert_no_internal_overlap(out);
  at::Tensor a = has_unit_stride(c.a) ? c.a : c.a.contiguous();
  at::Tensor b = has_unit_stride(c.b) ? c.b : c.b.contiguous();
  bool use_d = c.d.defined() && c.beta != 0;
  bool need_tmp = overlaps(out, a) || overlaps(out, b) || (use_d && overlaps(out, c.d) && !same_view(out, c.d));
  at::Tensor target = need_tmp ? at::empty(out.sizes(), out.options()) : out;

  dlprim::Gemm g;
  g.dtype = to_dlprim(out.scalar_type(), c.op);
  g.M = a.size(1);
  g.K = a.size(2);
  g.N = b.size(2);
  g.a = matrix_of(a);
  g.b = matrix_of(b);
  if (c.sum_batches) {
    g.batch = 1;
    g.k_outer = a.size(0);
    g.a.outer_stride = g.a.batch_stride;
    g.b.outer_stride = g.b.batch_stride;
    g.a.batch_stride = g.b.batch_stride = 0;
  } else {
    g.batch = a.size(0);
  }
  g.c = matrix_of(target);
  if (use_d) {
    g.has_d = true;
    g.d = matrix_of(c.d);
  }
  g.alpha = c.alpha;
  g.beta = c.beta;
  g.act = c.act;
  g.alpha_zero_skips = c.alpha_zero_skips;
  g.fp32_math = matmul_fp32_math();

  int device = out.device().index();
  dlprim::Context& ctx = context(device);
  uint64_t ws_bytes = 0;
  OCL_DLPRIM_CALL(c.op, ws_bytes = dlprim::gemm_workspace_bytes(ctx, g));
  at::Tensor ws;
  BufferRef ws_buf;
  if (ws_bytes) {
    ws = at::empty({static_cast<int64_t>(ws_bytes)}, out.options().dtype(at::kByte));
    ws_buf = buffer_of(ws);
  }
  OCL_TRACE(c.op, " M=", g.M, " N=", g.N, " K=", g.K, " batch=", g.batch, " k_outer=", g.k_outer, " ",
            out.scalar_type(), " workspace=", ws_bytes);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(c.op, dlprim::gemm(ctx, q, g, ws_buf.mem, ws_buf.offset));
  note_enqueued(q);
  if (need_tmp) out.copy_(target);
}

} // namespace pytorch_ocl
