// Shared plumbing of the linalg wrappers (LinalgFactor.cpp, LinalgSolve.cpp): torch tensors of
// batched matrices as dlprim::MatrixRef, work buffers for outputs the kernels cannot write in
// place, and the dlprim calls with the op's name in their errors. float32 and float64; the LU,
// Cholesky, triangular-solve, QR and Jacobi kernels also complex64 and complex128 (`complex_ok`).
// Conjugate and negative views are resolved before a kernel sees them (it reads raw memory).
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/linalg.h>

namespace pytorch_ocl::linalg {

// Raises naming `op` unless t is float32/float64, or complex64/complex128 when `complex_ok`.
void check_dtype(const at::Tensor& t, const char* op, bool complex_ok = false);

// The kernels' element type: complex64/128 as their real part's dtype, flagged complex.
dlprim::LinalgType ltype_of(const at::Tensor& t, const char* op);

// Product of the batch dims (all but the last `matrix_dims`).
int64_t batch_count(const at::Tensor& t, int64_t matrix_dims = 2);

// True when the matrices of t (batch dims then two matrix dims) sit one stride apart.
bool flat_batches(const at::Tensor& t, int64_t matrix_dims = 2);

// t itself when its batches are flat (and it is no conjugate or negative view), else a batched
// column-major copy.
at::Tensor flat(const at::Tensor& t);

// A buffer the kernels can write in place with out's values (out itself when its batches are
// flat and it does not overlap `avoid`; else a new column-major tensor): finish with
// `write_back(out, work)`.
at::Tensor work_for(const at::Tensor& out, const at::Tensor& avoid = at::Tensor());
void write_back(const at::Tensor& out, const at::Tensor& work);
// dst.copy_(src), skipped when they are the same elements (copy_ of a buffer onto itself fails in
// OpenCL: CL_MEM_COPY_OVERLAP).
void copy_into(const at::Tensor& dst, const at::Tensor& src);

// For flat-batched tensors (asserted).
dlprim::MatrixRef matrix_ref(const at::Tensor& t);
dlprim::IntVecRef int_ref(const at::Tensor& t);  // int32 (..., k) with unit stride along k
// A contiguous batch of vectors (..., k): batch stride k (row/col strides 1, unused).
dlprim::MatrixRef vec_ref(const at::Tensor& t);

// Matrices larger than this (PYTORCH_OCL_LINALG_BLOCK, default 64) are factored and solved by
// blocks: the kernels below on block-sized pieces, the trailing updates as matmuls.
int64_t block_size();

// The kernels on flat tensors (a and x: floating matrices; pivots/info: int32), blocked above
// block_size().
void cholesky_lower(const at::Tensor& a, bool upper, const at::Tensor& info, const char* op);
void lu_factor(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op);
// x <- op(A)^-1 x with op(A) = A, or A^T (transpose), conjugated too when conj (A^H with
// transpose); lower/unit describe A itself.
void trsm(const at::Tensor& a, const at::Tensor& x, bool lower, bool transpose, bool unit, const char* op,
          bool conj = false);
void laswp(const at::Tensor& x, const at::Tensor& pivots, bool reverse, const char* op);

// One kernel launch each, whatever the size (one work-group per matrix).
void cholesky_kernel(const at::Tensor& a, bool upper, const at::Tensor& info, const char* op);
// place: where a leaf of the recursive LU panel sits (dlprim::LuLeafPlace: absolute pivots, and its row
// swaps over the rest of its panel); the default a matrix of its own.
void lu_kernel(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op,
               const dlprim::LuLeafPlace& place = {});
void trsm_kernel(const at::Tensor& a, const at::Tensor& x, bool lower, bool transpose, bool unit, const char* op,
                 bool conj = false);
// False when PYTORCH_OCL_LINALG_ON_CHIP=0: the blocked factorizations keep their diagonal blocks and
// leaves in global memory (the any-size kernels), as where they do not fit on chip. (=1 also puts LU
// leaves in registers on CPU devices, where unset leaves them to the global-memory kernel.)
bool on_chip();
// The recursive LU panel's leaves in registers (dlprim::lu_leaf): the most rows a leaf of w columns
// may have there (0: none, or PYTORCH_OCL_LINALG_ON_CHIP=0), and the kernel, as lu_kernel.
int64_t lu_leaf_max_rows(const at::Tensor& a, int64_t w);
void lu_leaf_kernel(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, const char* op,
                    const dlprim::LuLeafPlace& place = {});
// Blocked getrf's step after the panel of columns [k0, k1) of a (flat; pivots: the whole matrix's,
// absolute, written for the panel): its interchanges over every other column and U12 = L11^-1 A12 in
// one launch (dlprim::lu_swap_solve).
void lu_swap_solve_kernel(const at::Tensor& a, const at::Tensor& pivots, int64_t k0, int64_t k1, const char* op);
// Whether a leaf of a's dtype can solve its panel split's U12 (rows x cols) after itself (LuLeafPlace).
bool lu_leaf_solve_fits(const at::Tensor& a, int64_t rows, int64_t cols);
// out (flat, ..., k, k) <- the T of compact WY from s = V^H V (flat) and tau (..., k) in one kernel
// (dlprim::wy_factor); false (nothing done) where it does not fit on chip or PYTORCH_OCL_LINALG_ON_CHIP=0.
// With y (flat, ..., k, c): out (flat, y's shape) <- T y, or T^H y when adjoint, in that one launch; used
// where wy_product_on_chip (GPUs; CPU devices with PYTORCH_OCL_LINALG_ON_CHIP=1).
bool wy_product_on_chip(const at::Tensor& s);
bool wy_factor_kernel(const at::Tensor& s, const at::Tensor& tau, const at::Tensor& out, const char* op,
                      const at::Tensor& y = at::Tensor(), bool adjoint = false);
// blocked_cholesky's diagonal block on chip (dlprim::cholesky_block): a's n x n matrices factored
// in place, inv (when defined, flat) <- inv(L); info (contiguous int32, the batch's) set to base + k
// where still 0 by a block failing at its column k. Only when cholesky_block_fits(a, n) (GPUs, or
// PYTORCH_OCL_LINALG_ON_CHIP=1; the kernel fits the block).
bool cholesky_block_fits(const at::Tensor& a, int64_t n);
void cholesky_block_kernel(const at::Tensor& a, const at::Tensor& inv, const at::Tensor& info, int64_t base,
                           const char* op);

// The blocked forms (LinalgBlocked.cpp): lower Cholesky of a (a view: pass a.mT() for upper:
// the lower factor of A^T is U^T, complex too), getrf, and x <- A^-1 x for triangular A (lower or
// upper as given, a view; conj: conj(A)).
void blocked_cholesky(const at::Tensor& a, const at::Tensor& info, int64_t nb, const char* op);
void blocked_lu(const at::Tensor& a, const at::Tensor& pivots, const at::Tensor& info, int64_t nb, const char* op);
void blocked_trsm(const at::Tensor& a, const at::Tensor& x, bool lower, bool unit, int64_t nb, const char* op,
                  bool conj = false);
// Blocked Householder QR: geqrf in place of a (tau contiguous), and out (m x qc) = the first qc
// columns of the product of v's reflectors (orgqr), both by nb-column panels.
void blocked_geqrf(const at::Tensor& a, const at::Tensor& tau, int64_t nb, const char* op);
void blocked_orgqr(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& out, int64_t nb, const char* op);
// int64 (batch..., m) permutation of the pivots (see dlprim::pivots_to_permutation).
at::Tensor permutation(const at::Tensor& pivots, int64_t m, const char* op);

// LU solve on flat x (n x nrhs, batch of LU's): x <- A^-1 x or A^-H x (adjoint).
void lu_solve_in_place(const at::Tensor& LU, const at::Tensor& pivots, const at::Tensor& x, bool adjoint,
                       const char* op);

// Householder QR in place of flat `work`, tau contiguous (..., min(m, n)); blocked above block_size().
// geqrf_kernel: one launch (one work-group per matrix) whatever the size; tau's elements one apart
// and its batches one stride apart (a slice of a contiguous tau will do); v (optional): as geqrf_leaf_kernel's.
void geqrf_kernel(const at::Tensor& work, const at::Tensor& tau, const char* op, const at::Tensor& v = at::Tensor(),
                  int64_t v_top = 0);
// The recursive QR panel's leaves in registers (dlprim::geqrf_leaf): the most rows a leaf of w
// columns may have there (0: none, or PYTORCH_OCL_LINALG_ON_CHIP=0; unset: GPUs only), and the
// kernel, tau as geqrf_kernel's; v (optional, a's shape, flat batches): the leaf's reflectors as a
// unit lower trapezoidal matrix, and zeros in the v_top rows of v's matrix above it.
int64_t geqrf_leaf_max_rows(const at::Tensor& a, int64_t w);
void geqrf_leaf_kernel(const at::Tensor& a, const at::Tensor& tau, const at::Tensor& v, const char* op,
                       int64_t v_top = 0);
void geqrf_in_place(const at::Tensor& work, const at::Tensor& tau, const char* op);
// out (flat, ..., m, qc) = the first qc columns of the product of v's reflectors (tau contiguous);
// blocked above block_size() reflectors.
// v (flat, a's shape) <- the unit lower trapezoidal V of the reflectors in a (flat) in one launch.
void unit_lower_kernel(const at::Tensor& a, const at::Tensor& v, const char* op);
void orgqr_into(const at::Tensor& v, const at::Tensor& tau, const at::Tensor& out, const char* op);

// Real symmetric eigh above eigh_crossover() (PYTORCH_OCL_EIGH_CROSSOVER, default 32; Jacobi at
// and below it): tridiagonal reduction, implicit QL, Q from orgqr (LinalgEighTridiag.cpp). sym: the
// full symmetric float32/float64 matrices (destroyed), n >= 2; w: contiguous (..., n) eigenvalues
// ascending; *vectors (flat) the eigenvectors as columns when given.
int64_t eigh_crossover();
void eigh_tridiag(const at::Tensor& sym, const at::Tensor& w, const at::Tensor* vectors, const char* op);

} // namespace pytorch_ocl::linalg
