// Shared plumbing of the indexing ops (Index.cpp, IndexScatter.cpp, IndexMasked.cpp): every op
// is "rows with keys" (element offsets into an indexed tensor `big`, built from index tensors)
// plus a dense tensor of shape (row dims..., inner dims...) that is gathered from, scattered or
// reduced into big. See dlprim/index.h.
//
// Bounds: the key kernel flags out-of-range indices on the device and gives their rows the key
// -1, which every data kernel skips. The flag is a slot of core/DeferredChecks.h: looked at where
// the host next waits for the device (item(), .cpu(), synchronize), which raises an IndexError
// naming the op and the bad index, as CUDA's device-side assert does at its next sync.
// PYTORCH_OCL_INDEX_CHECK=sync reads it at the op (tensors untouched on error); =0 never.
// index_select with a long index skips the keys: one kernel reads the index, checks and gathers.
#pragma once
#include <ATen/core/Tensor.h>
#include <dlprim/index.h>

#include "core/DeferredChecks.h"

#include <optional>
#include <vector>

namespace pytorch_ocl {

class KeyBuilder {
public:
  // Keys for the rows of `row_sizes` on `device`; `for_sort` pads the key tensor to a power of
  // two with -1 (the layout index_reduce_rows sorts).
  // `no_keys`: no key tensor (index_gather_direct's kernel reads the index itself).
  KeyBuilder(c10::Device device, c10::IntArrayRef row_sizes, const char* op, bool for_sort = false,
             bool no_keys = false);
  ~KeyBuilder();
  KeyBuilder(const KeyBuilder&) = delete;
  KeyBuilder& operator=(const KeyBuilder&) = delete;
  // keys += pos . coords + idx * stride, idx (int or long) broadcast to the row shape, checked
  // against [0, size) or, with `wrap` (ops that take negative indices), [-size, size) and
  // wrapped; `dim` names it in errors; pos (one stride per row dim) may be empty.
  // Rows whose index equals *skip get key -1 for good.
  void add(const at::Tensor& idx, int64_t size, int64_t stride, int64_t dim, bool wrap, c10::IntArrayRef pos = {},
           std::optional<int64_t> skip = std::nullopt);
  // Registers the bound check (raised now with PYTORCH_OCL_INDEX_CHECK=sync, else at the next
  // wait); returns the (possibly padded) long key tensor.
  const at::Tensor& finish();
  int64_t rows() const { return rows_; }
  // For a kernel that checks `idx` itself against [0, size) and sets flag(): only named in errors.
  void note(const at::Tensor& idx, int64_t size, int64_t dim) { added_.push_back({idx, size, dim, false, idx._version()}); }
  dlprim::DevPtr flag() const { return flag_ptr_; }

private:
  struct Added {
    at::Tensor idx;
    int64_t size, dim;
    bool wrap;
    int64_t version;  // of idx when added: a later in-place change voids the message's index
  };
  const char* op_;
  std::vector<int64_t> row_sizes_;
  int64_t rows_;
  at::Tensor keys_, flag_;  // flag_: only inside a graph capture
  DeviceFlag slot_;
  dlprim::DevPtr flag_ptr_{};
  int device_ = 0;
  cl_command_queue queue_ = nullptr;
  bool capturing_ = false, committed_ = false;
  std::vector<Added> added_;
  bool first_ = true;
};

// dense (shape: row dims + the sizes of big's dims `inner_dims`, in that order) = big[keys]
// (keyed_gather) / big[keys] = dense (keyed_scatter). keys holds at least `rows` keys.
void keyed_gather(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys, int64_t rows,
                  const at::Tensor& dense, const char* op);
void keyed_scatter(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys,
                   int64_t rows, const at::Tensor& dense, const char* op);
// big[keys] (mode)= dense, deterministic; `keys` from a KeyBuilder made with for_sort (sorted
// here, in place).
void keyed_reduce(const at::Tensor& big, const std::vector<int64_t>& inner_dims, const at::Tensor& keys, int64_t rows,
                  const at::Tensor& dense, dlprim::IndexReduce mode, bool include_self, double alpha, const char* op, bool chunked = false);

// index_select in one launch: dense (shape: index + big's other dims, as keyed_gather's) =
// big.index_select(dim, idx), idx a 1-D long tensor on big's device; bounds as KeyBuilder's.
void index_gather_direct(const at::Tensor& big, int64_t dim, const at::Tensor& idx, const at::Tensor& dense,
                         const char* op);

// The dims of `t` other than `dim`, in order.
std::vector<int64_t> dims_except(int64_t ndim, int64_t dim);

// `s` as a 0-dim tensor of `like`'s dtype on its device (a fill, no host copy).
at::Tensor device_scalar(const c10::Scalar& s, const at::Tensor& like);

// Parses a scatter_reduce / index_reduce reduction name.
dlprim::IndexReduce parse_reduce(c10::string_view reduce, const char* op);

// Element offsets of the true elements of `mask` (any strides, row-major order) under
// `key_strides`, as a long tensor of their count (one host read); `coords` instead gives the
// (count, ndim) coordinates (nonzero).
at::Tensor mask_positions(const at::Tensor& mask, c10::IntArrayRef key_strides, bool coords, const char* op);

} // namespace pytorch_ocl
