// Helpers shared by the sparse COO and CSR files: the row-major linear index of COO coordinates and
// its inverse, and the COO constructor both files build results with. All of them are compositions
// of our dense device ops (add_, div, remainder), so nothing here reads tensor data on the host.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/Layout.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/OptionalArrayRef.h>

#include <optional>

namespace pytorch_ocl {

// indices: (sparse_dim, nnz) int64 on the device; sparse_sizes: the first sparse_dim sizes.
// Returns the (nnz,) row-major linear index of each coordinate.
at::Tensor sparse_linear_index(const at::Tensor& indices, c10::IntArrayRef sparse_sizes);

// The inverse: (n,) linear indices -> (sparse_dim, n) coordinates.
at::Tensor sparse_unflatten_index(const at::Tensor& linear, c10::IntArrayRef sparse_sizes);

// A COO tensor on the device of `values` from indices and values (no bounds check: callers built
// the indices themselves), marked coalesced or not.
at::Tensor make_coo(const at::Tensor& indices, const at::Tensor& values, c10::IntArrayRef sizes, bool coalesced);

// addmm with one sparse operand given as its (rows, cols, values) triplets (int64 rows/cols; COO
// and CSR both reduce to this): out = beta * self + alpha * (S @ mat2) when sparse_left (mat1 is S),
// else beta * self + alpha * (mat1 @ S). Shapes and dtypes are checked here; `op` names the op.
at::Tensor& sparse_triplets_addmm_out(const at::Tensor& self, const at::Tensor& mat1, const at::Tensor& mat2,
                                      const c10::Scalar& beta, const c10::Scalar& alpha, const at::Tensor& rows,
                                      const at::Tensor& cols, const at::Tensor& values, bool sparse_left,
                                      at::Tensor& out, const char* op);

// The two overloads of ATen's sparse conversions (at::native::sparse_coo_to_sparse,
// sparse_compressed_to_sparse), picked for registration: (self, sparse_dim) and (self, layout, blocksize, dense_dim).
using ToSparseDim = at::Tensor (*)(const at::Tensor&, int64_t);
using ToSparseLayout = at::Tensor (*)(const at::Tensor&, std::optional<c10::Layout>, at::OptionalIntArrayRef,
                                      std::optional<int64_t>);

// The product of sizes (the number of rows a dense tensor has when its sparse dims are flattened).
int64_t sparse_numel(c10::IntArrayRef sizes);

} // namespace pytorch_ocl
