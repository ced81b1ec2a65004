// linalg_ldl_factor_ex (linalg.ldl_factor / ldl_factor_ex) and linalg_ldl_solve on dlprim's
// Bunch-Kaufman kernels (kernels/linalg_ldl.cl: LAPACK's ?sytf2 / ?hetf2 and ?sytrs / ?hetrs
// algorithms, lower triangle, one work-group per matrix), so LD and the pivots come out as the
// CPU's. Both ops are structured: only the .out overloads are registered (the functional forms
// reach them after torch's meta checks and allocation); the wrappers repeat the CPU's checks, in
// its words, for direct .out calls. torch defines no derivative for either op: autograd raises
// above the backend, as on the CPU.
#include "aten/LinalgCommon.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <ATen/native/LinearAlgebraUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <torch/library.h>

#include <vector>

namespace pytorch_ocl {

namespace {

using namespace pytorch_ocl::linalg;

// The structured wrapper's out= check (registering the .out overload skips it), in its words
// ("Expected out tensor to have dtype float, but got double instead").
void check_out(const at::Tensor& out, c10::ScalarType dtype, const char* op) {
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ", c10::scalarTypeToTypeMeta(dtype),
              ", but got ", c10::scalarTypeToTypeMeta(out.scalar_type()), " instead");
  check_ocl(out, op, "out");
}

// t itself when the kernels can write it (int32 vectors one stride apart, unit stride inside),
// else a contiguous buffer of its shape to copy back.
at::Tensor int_work(const at::Tensor& t) {
  bool ok = flat_batches(t, 1) && (t.size(-1) <= 1 || t.stride(-1) == 1);
  return ok ? t : at::empty(t.sizes(), t.options());
}

// A new column-major buffer of t's shape (for an out= that is a conjugate or negative view: the
// kernels write raw memory).
at::Tensor fresh(const at::Tensor& t) {
  return at::empty_strided(t.sizes(), at::native::batched_matrix_contiguous_strides(t.sizes(), true), t.options());
}

std::tuple<at::Tensor&, at::Tensor&, at::Tensor&> ldl_factor_ex_out(const at::Tensor& A, bool hermitian,
                                                                    bool check_errors, at::Tensor& LD,
                                                                    at::Tensor& pivots, at::Tensor& info) {
  const char* op = "torch.linalg.ldl_factor_ex";
  at::native::squareCheckInputs(A, op);
  at::native::checkFloatingOrComplex(A, op);
  check_ocl(A, op, "A");
  check_dtype(A, op, /*complex_ok=*/true);
  check_out(LD, A.scalar_type(), op);
  check_out(pivots, c10::kInt, op);
  check_out(info, c10::kInt, op);
  const int64_t n = A.size(-1);
  at::native::resize_output(LD, A.sizes());
  std::vector<int64_t> shape(A.sizes().begin(), A.sizes().end() - 1);
  at::native::resize_output(pivots, shape);
  shape.pop_back();
  at::native::resize_output(info, shape);
  c10::DeviceGuard guard(A.device());
  if (A.numel() == 0) {  // as the CPU: only info is written
    info.zero_();
    return {LD, pivots, info};
  }
  // The kernel factors in place (reading A's lower triangle, zeroing the upper one, as the CPU's
  // tril before sytrf).
  at::Tensor work = LD.is_conj() || LD.is_neg() ? fresh(LD) : work_for(LD, A);
  copy_into(work, A);
  at::Tensor piv = int_work(pivots);
  at::Tensor inf = info.is_contiguous() ? info : at::empty(info.sizes(), info.options());
  BufferRef ib = buffer_of(inf);
  const int device = A.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::ldl_factor(context(device), q, ltype_of(A, op), batch_count(A), n, matrix_ref(work),
                                         hermitian, int_ref(piv), dlprim::IntVecRef{ib.mem, ib.offset / 4, 1}));
  note_enqueued(q);
  write_back(LD, work);
  write_back(pivots, piv);
  write_back(info, inf);
  if (check_errors) at::_linalg_check_errors(info, op, A.dim() == 2);
  return {LD, pivots, info};
}

at::Tensor& ldl_solve_out(const at::Tensor& LD, const at::Tensor& pivots, const at::Tensor& B, bool hermitian,
                          at::Tensor& out) {
  const char* op = "torch.linalg.ldl_solve";
  at::native::squareCheckInputs(LD, op);
  at::native::checkFloatingOrComplex(LD, op);
  at::native::linearSolveCheckInputs(B, LD, op);
  TORCH_CHECK(B.dim() >= 2, op, ": Expected B to have at least 2 dimensions, but it has ", B.dim(),
              " dimensions instead");
  auto piv_shape = LD.sizes().slice(0, LD.dim() - 1);
  TORCH_CHECK(piv_shape.equals(pivots.sizes()), op,
              ": Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ",
              pivots.sizes(), " instead");
  TORCH_CHECK(at::isIntegralType(pivots.scalar_type(), /*includeBool=*/false), op,
              ": Expected pivots to be integers. Got ", pivots.scalar_type());
  TORCH_CHECK(LD.scalar_type() == B.scalar_type(), op, ": LD dtype", LD.scalar_type(), " does not match b dtype ",
              B.scalar_type());
  check_ocl(LD, op, "LD");
  check_ocl(pivots, op, "pivots");
  check_ocl(B, op, "B");
  check_dtype(LD, op, /*complex_ok=*/true);
  check_out(out, B.scalar_type(), op);
  auto bshape = std::get<0>(at::native::_linalg_broadcast_batch_dims(B, LD));
  at::native::resize_output(out, bshape);
  if (LD.numel() == 0 || pivots.numel() == 0) return out;  // as the CPU: out is left as resized
  c10::DeviceGuard guard(LD.device());
  const int64_t n = LD.size(-1), nrhs = B.size(-1);
  // LD and the pivots broadcast to B's batch: expanded batches are stride 0, still one stride apart.
  std::vector<int64_t> ld_shape(bshape.begin(), bshape.end() - 2);
  std::vector<int64_t> p_shape = ld_shape;
  ld_shape.insert(ld_shape.end(), {n, n});
  p_shape.push_back(n);
  at::Tensor ld = flat(LD.expand(ld_shape));
  at::Tensor piv = pivots.to(c10::kInt).expand(p_shape);
  if (!flat_batches(piv, 1) || (n > 1 && piv.stride(-1) != 1)) piv = piv.contiguous();
  at::Tensor work = out.is_conj() || out.is_neg() ? fresh(out) : work_for(out, ld);
  copy_into(work, B.expand(bshape));
  const int device = LD.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::ldl_solve(context(device), q, ltype_of(LD, op), batch_count(work), n, nrhs,
                                        matrix_ref(ld), int_ref(piv), matrix_ref(work), hermitian));
  note_enqueued(q);
  write_back(out, work);
  return out;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_ldl_factor_ex.out", TORCH_FN(ldl_factor_ex_out));
  m.impl("linalg_ldl_solve.out", TORCH_FN(ldl_solve_out));
}

} // namespace pytorch_ocl
