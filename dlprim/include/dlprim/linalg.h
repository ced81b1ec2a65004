// Dense linear algebra on batches of matrices: Cholesky, LU with partial pivoting, triangular
// solves and getrf's row interchanges (kernels/linalg.cl), Householder QR (linalg_qr.cl),
// Bunch-Kaufman LDL^T (linalg_ldl.cl), Jacobi eigh and SVD (linalg_jacobi.cl). One work-group per
// matrix, one launch per call whatever the
// matrix size; float32 and float64 (where the device has fp64) and their complex types
// (LinalgType). Blocking for large matrices is the caller's (csrc/aten/LinalgBlocked.cpp: these
// kernels on panels, matmuls between).
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>

#include <cstdint>

namespace dlprim {

// `batch` matrices at mem + offset + b * batch_stride, element (i, j) at i * row_stride +
// j * col_stride (all in elements): transposed and column-major matrices are just strides.
struct MatrixRef {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
  int64_t batch_stride = 0, row_stride = 0, col_stride = 0;
  MatrixRef transposed() const { return {mem, offset, batch_stride, col_stride, row_stride}; }
};

// The element type of a call: real `real`, or complex (float2 / double2) with parts of `real`
// when `complex`. Converts from a DType so real callers pass the dtype as before. The complex
// kernels are the real ones with their products, quotients, conjugates and pivot magnitudes
// spelled as macros (kernels/linalg.cl), and the complex offsets and strides are in complex
// elements as torch's are.
struct LinalgType {
  DType real = DType::F32;
  bool complex = false;
  LinalgType(DType t, bool c = false) : real(t), complex(c) {}  // NOLINT: implicit on purpose
};

// int32 vectors (pivots, info): element b's vector at mem + offset + b * batch_stride.
struct IntVecRef {
  cl_mem mem = nullptr;
  uint64_t offset = 0;
  int64_t batch_stride = 0;
};

// In place: the lower triangle of each n x n matrix becomes its Cholesky factor L (only the lower
// triangle is read; the strict upper one is zeroed); info[b] = potrf's info (k > 0: the leading
// minor of order k is not positive definite; complex: the Hermitian L L^H, the diagonal's real
// part read as potrf does). info is a contiguous int32 vector of `batch`.
void cholesky(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
              const IntVecRef& info);

// T (n x n upper) of H_1 ... H_n = I - V T V^H from s = V^H V and tau (batch stride only; unit
// element stride) in one kernel (kernels/linalg_block.cl); where wy_factor_fits(n) (local memory). With y (n x ncols):
// out (n x ncols) <- T y, or T^H y when adjoint, instead (the WY update's small product in the same launch).
bool wy_factor_fits(const Context& ctx, LinalgType t, int64_t n);
void wy_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& s,
               const MatrixRef& tau, const MatrixRef& out, const MatrixRef* y = nullptr, int64_t ncols = 0,
               bool adjoint = false);

// The diagonal block of blocked potrf on chip (kernels/linalg_block.cl): each n x n block of a
// factored in local memory as cholesky() does, and when inv is given inv(L) into it (lower, zeros
// above). info is the whole matrix's: set to base + k where still 0 if the block fails at its
// column k, else untouched. Only for n where cholesky_block_fits: the block in local memory and
// ceil(n / 4)^2 work-items in one group (n <= 64 on CPU devices, 128 on GPUs); throws otherwise.
bool cholesky_block_fits(const Context& ctx, LinalgType t, int64_t n);
// pair: two columns a barrier (the default), else one.
void cholesky_block(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n,
                    const MatrixRef& a, const MatrixRef* inv, const IntVecRef& info, int64_t base, bool pair = true);

// Where a factored matrix sits as a leaf of the recursive LU panel (csrc/aten/LinalgBlocked.cpp): the
// pivots are written + piv_base (the leaf's first row in the whole matrix: getrf's final pivots), and
// every row interchange is also applied to the swap_left columns left of the leaf and the swap_right
// columns right of it (the rest of its panel, same rows), so the panel needs no laswp or pivot-offset
// launches between its leaves. merge_info: info[b] (zeroed by the caller before the first leaf) is set
// to piv_base + k (the whole matrix's 1-based column) only where still 0 and this leaf fails at its
// column k, so the leaves, run in column order, leave the first failure there and blocked getrf needs
// no per-leaf slots and merge; else info[b] = the leaf's own k or 0. solve_rows > 0: after the leaf, the
// U12 = L11^-1 A12 of the panel split ending at it (L11 the unit lower solve_rows square ending at the
// leaf's last row and column, A12 the solve_rows x solve_cols block right of the leaf on its rows), so the
// split needs no triangular-solve launch; only where lu_leaf_solve_fits. The default: a matrix of its own.
struct LuLeafPlace {
  int64_t piv_base = 0, swap_left = 0, swap_right = 0;
  bool merge_info = false;
  int64_t solve_rows = 0, solve_cols = 0;
};
bool lu_leaf_solve_fits(const Context& ctx, LinalgType t, int64_t rows, int64_t cols);

// getrf of each m x w leaf of the recursive LU panel with the leaf in registers (linalg_lu_leaf.cl):
// pivots, info and factors as lu_factor's. Only for w <= 16 and m <= lu_leaf_max_rows (0: none).
int64_t lu_leaf_max_rows(const Context& ctx, LinalgType t, int64_t w);
void lu_leaf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t w,
             const MatrixRef& a, const IntVecRef& pivots, const IntVecRef& info, const LuLeafPlace& place = {});

// In place: getrf of each m x n matrix (unit lower L and U packed), 1-based pivots (min(m, n)
// of them) and info[b] (k > 0: U[k-1][k-1] is exactly zero). The pivot is the first row of
// largest |re| + |im| (LAPACK's i?amax: |x| for real, cabs1 for complex).
void lu_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
               const MatrixRef& a, const IntVecRef& pivots, const IntVecRef& info, const LuLeafPlace& place = {});

// One step of blocked getrf after its panel (columns [k0, k1) of the m x n matrices a, factored with
// absolute 1-based pivots[k0..k1)): the panel's row interchanges applied to every column outside it
// (rows k0..m-1), and U12 = L11^-1 A12 solved in place for the columns right of it (L11: the panel's
// unit lower k1 - k0 square), in one launch (kernels/linalg_block.cl, linalg_lu_swap_solve): a
// work-item per column, that column's swaps and solve in its own program order (its k1 - k0 elements
// in local memory: throws for blocks too large for that, thousands of columns).
void lu_swap_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
                   const MatrixRef& a, const IntVecRef& pivots, int64_t k0, int64_t k1);

// In place of x (n x nrhs): x <- A^-1 x for triangular A (lower or upper; unit: ones on the
// diagonal, not read); conj: A's elements are read conjugated (with a transposed A: A^H, the
// adjoint solves of complex LU and Cholesky). A and x must not overlap.
void triangular_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
                      const MatrixRef& a, const MatrixRef& x, bool lower, bool unit, bool conj = false);

// triangular_solve with A and X in local memory (kernels/linalg_block.cl), the same results; only
// where triangular_solve_local_fits (n, nrhs <= 64 and the device's local memory).
bool triangular_solve_local_fits(const Context& ctx, LinalgType t, int64_t n, int64_t nrhs);
void triangular_solve_local(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n,
                            int64_t nrhs, const MatrixRef& a, const MatrixRef& x, bool lower, bool unit,
                            bool conj = false);

// In place of x (n x nrhs): getrf's k row interchanges in order (reverse false: x <- P^T x) or
// backwards (x <- P x). Interchanges naming a row outside [0, n) are skipped.
void apply_pivots(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
                  const MatrixRef& x, const IntVecRef& pivots, int64_t k, bool reverse);

// perm (int64, batch x m contiguous at perm_mem + perm_offset): the row order getrf's k
// interchanges make of 0..m-1 (row i of P^T A is row perm[i] of A).
void pivots_to_permutation(const Context& ctx, cl_command_queue q, uint64_t batch, int64_t m, int64_t k,
                           const IntVecRef& pivots, cl_mem perm_mem, uint64_t perm_offset);

// Householder QR in place (LAPACK's geqrf conventions, complex too: H = I - tau v v^H, R's
// diagonal real): R on and above the diagonal, reflectors below; tau: min(m, n) values per matrix at tau.mem + tau.offset + b * tau.batch_stride.
// v (optional): the reflectors also as geqrf_leaf's v (unit lower trapezoidal, zeros in v_top rows above).
void geqrf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n, const MatrixRef& a,
           const MatrixRef& tau, const MatrixRef* v = nullptr, int64_t v_top = 0);

// geqrf of each m x w leaf of the recursive QR panel with the leaf in registers
// (linalg_qr_leaf.cl): R, reflectors and tau as geqrf's. Only for w <= 16 and m <=
// geqrf_leaf_max_rows (0: none). v (optional, m x w like a): the reflectors as a unit lower
// trapezoidal matrix (zeros above the diagonal, ones on it), and zeros in the v_top rows of v's
// matrix above it (the panel's rows above the leaf: the panel's V needs no zero fill of its own).
int64_t geqrf_leaf_max_rows(const Context& ctx, LinalgType t, int64_t w);
void geqrf_leaf(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t w,
                const MatrixRef& a, const MatrixRef& tau, const MatrixRef* v = nullptr, int64_t v_top = 0);

// v (m x k) <- the unit lower trapezoidal V of the reflectors in a (m x k, geqrf's layout): below the
// diagonal a's, 1 on it, 0 above, in one launch (a work-item an element).
void unit_lower(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t k,
                const MatrixRef& a, const MatrixRef& v);

// out (m x qc, qc <= m) = the first qc columns of the product of the k reflectors in v (m x k,
// geqrf's layout) and tau: orgqr / linalg.householder_product, and Q of linalg.qr.
void householder_product(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t qc,
                         int64_t k, const MatrixRef& v, const MatrixRef& tau, const MatrixRef& out);

// Symmetric (complex: Hermitian) eigenproblem by cyclic Jacobi (kernels/linalg_jacobi.cl): a holds
// the full symmetric n x n matrices (destroyed; complex: a real diagonal); eigenvalues ascending
// into w (real: n per matrix, w.batch_stride apart, in real elements);
// eigenvectors as the columns of *vectors when given. Scratch: v (n * n per matrix, contiguous,
// v.batch_stride apart), rot (n + 1 per matrix).
void eigh_jacobi(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
                 const MatrixRef& v, const MatrixRef& rot, const MatrixRef& w, const MatrixRef* vectors);

// One-sided Jacobi SVD of m x n matrices (m >= n) in a (destroyed): singular values descending
// into s (real: n per matrix), normalized left vectors into u's first n columns (zero columns for zero
// singular values), right vectors as the columns of `vectors` (n x n). Scratch as eigh_jacobi.
void svd_jacobi(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t m, int64_t n,
                const MatrixRef& a, const MatrixRef& v, const MatrixRef& rot, const MatrixRef& s, const MatrixRef& u,
                const MatrixRef& vectors);

// Bunch-Kaufman LDL^T (herm and complex: LDL^H) of n x n matrices in place of a (only the lower
// triangle read; the strict upper one zeroed), as LAPACK's ?sytf2 / ?hetf2 with the lower triangle
// (kernels/linalg_ldl.cl): L and D packed, LAPACK's 1-based pivots (negative for 2x2 blocks), info
// (int32, contiguous) k > 0 for the first exactly zero column k.
void ldl_factor(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, const MatrixRef& a,
                bool herm, const IntVecRef& pivots, const IntVecRef& info);

// In place of x (n x nrhs): x <- A^-1 x with A given by ldl_factor's ld and pivots (?sytrs / ?hetrs).
// ld and x must not overlap.
void ldl_solve(const Context& ctx, cl_command_queue q, LinalgType t, uint64_t batch, int64_t n, int64_t nrhs,
               const MatrixRef& ld, const IntVecRef& pivots, const MatrixRef& x, bool herm);

// General (non-symmetric) eigenproblem of complex n x n matrices (kernels/linalg_eig.cl; t is the
// real part's dtype): a (destroyed) reduced to Hessenberg and Schur form by shifted QR; the
// eigenvalues into w (n per matrix); with `vectors`, the eigenvectors as its columns (unit 2-norm,
// largest component real, as zgeev). Scratch z and x: n * n contiguous per matrix (without vectors: z
// unused, x n per matrix). info (int32,
// contiguous, zeroed by the caller): i > 0 where QR did not converge (eigenvalues i.. are found).
void eig(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& a,
         const MatrixRef& w, const MatrixRef& z, const MatrixRef& x, const MatrixRef* vectors, const IntVecRef& info);

} // namespace dlprim

namespace dlprim {

// The large-n symmetric eigenproblem, real float32/float64 (kernels/linalg_tridiag.cl; the blocked
// driver is csrc/aten/LinalgEighTridiag.cpp). All arrays contiguous per matrix, batch_stride apart
// (MatrixRef's row/col strides unused except for `vectors`). a: n x n full symmetric, row-major;
// vw: 2 nb x n (V^T over W^T of the current panel, zero where not yet made); d, e: n; tau: n - 1;
// p: n + 2 nb. Column i (the panel's column j) made: tridiag_column (reflector), tridiag_rowdot
// (A22 v and the panel's dot products), tridiag_w (W's column).
void tridiag_column(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
                    int64_t j, const MatrixRef& a, const MatrixRef& vw, const MatrixRef& d, const MatrixRef& e,
                    const MatrixRef& tau);
void tridiag_rowdot(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
                    int64_t j, const MatrixRef& a, const MatrixRef& vw, const MatrixRef& p);
void tridiag_w(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, int64_t nb, int64_t i,
               int64_t j, const MatrixRef& vw, const MatrixRef& p, const MatrixRef& tau);
// Work-groups per matrix of tridiag_ql for `rows` rows of eigenvectors (0: eigenvalues only) and
// its group size: the scratch is groups * batch * 4n elements of t and groups * batch * n int32.
size_t tridiag_ql_groups(const Context& ctx, DType t, int64_t rows, size_t* group);
// Implicit QL on the tridiagonal (d, e[0..n-2]): eigenvalues ascending into w; with vectors, the
// rotations applied to z (n x n per matrix, any strides: Q of the reduction)
// and the eigenvectors of A written as the columns of *vectors. info (int32 per matrix, at info_offset
// elements): how many eigenvalues did not converge within max_sweeps sweeps (0: all did).
void tridiag_ql(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& d,
                const MatrixRef& e, cl_mem scratch, uint64_t scratch_offset, cl_mem iscratch, uint64_t iscratch_offset,
                const MatrixRef& w, const MatrixRef* z, const MatrixRef* vectors, cl_mem info, uint64_t info_offset,
                int64_t max_sweeps);

// Eigenvalues only: the n eigenvalues of the tridiagonal (d, e[0..n-2]) ascending into w, one
// work-item each by bisection with Sturm counts.
void tridiag_bisect(const Context& ctx, cl_command_queue q, DType t, uint64_t batch, int64_t n, const MatrixRef& d,
                    const MatrixRef& e, const MatrixRef& w);

} // namespace dlprim
