// The indexing family in "keys" form (see kernels/index.cl): rows with a key each (an element
// offset into the indexed tensor, -1 for skipped rows) and an inner shape shared by the
// indexed ("big") and the other ("dense") operand. Offsets and strides are in elements.
#pragma once
#include <dlprim/context.h>
#include <dlprim/strided.h>

#include <cstdint>

namespace dlprim {

struct DevPtr {
  cl_mem mem = nullptr;
  uint64_t offset = 0;  // in elements of the pointed-to type
};

// The operands of a data kernel: `rows` rows of `inner` elements. dense element (r, e) is at
// dense.offset + r * dense_row_stride + dense.strides . coords(e); big element at
// big.offset + keys[r] + big.strides . coords(e). Keys are long.
struct KeyedLaunch {
  uint64_t rows = 0;
  RowMajorShape inner;
  StridedOperand dense, big;
  int64_t dense_row_stride = 0;
  DevPtr keys;
};

// keys[r] (+= when accumulate) pos . coords(r) + wrap(idx(r)) * stride, for r over `shape`;
// idx's dtype is its operand's. An index outside [-size, size) (wrap) or [0, size) sets the int at `flag` to 1 and
// the key to -1; so does (without touching the flag) an index equal to `skip` when has_skip.
void index_keys(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, DevPtr keys, bool accumulate,
                const StridedOperand& idx, const std::array<int64_t, kMaxDims>& pos_strides, bool wrap,
                int64_t size, int64_t stride, bool has_skip, int64_t skip, DevPtr flag);

// dense = big[keys] (gather) or big[keys] = dense (scatter, one write wins on duplicates).
// The operands' dtype only matters through its size: the data is moved as bits.
void index_gather(const Context& ctx, cl_command_queue q, const KeyedLaunch& l);
// index_select in one launch: as index_gather with key(r) = idx[r * idx_stride] * stride (a long
// index checked against [0, size), flagged at `flag` as index_keys does); l.keys unset.
void index_gather_idx(const Context& ctx, cl_command_queue q, const KeyedLaunch& l, DevPtr idx, int64_t idx_stride,
                      int64_t size, int64_t stride, DevPtr flag);
void index_scatter(const Context& ctx, cl_command_queue q, const KeyedLaunch& l);

enum class IndexReduce { Sum = 0, Prod = 1, Mean = 2, Amax = 3, Amin = 4 };

// big[keys] (reduce)= dense without atomics: `sorted_keys` are the keys sorted ascending (ties
// in row order, skipped rows last as -1), `sorted_rows` the row each came from. Each run of
// equal keys is folded in row order by one work-item per inner element (deterministic).
// alpha scales the summands of Sum.
// Float sums over many rows also take `parts`, a buffer of index_reduce_parts(l, mode) elements of big's dtype
// (0: none wanted): runs longer than kIndexReduceChunk rows are then folded as partial sums of kIndexReduceChunk
// rows each (in row order, then added in row order: deterministic, but not the sequential loop's rounding).
constexpr uint64_t kIndexReduceChunk = 64;
uint64_t index_reduce_parts(const KeyedLaunch& l, IndexReduce mode);
void index_reduce(const Context& ctx, cl_command_queue q, const KeyedLaunch& l, DevPtr sorted_rows,
                  IndexReduce mode, bool include_self, double alpha, DevPtr parts = {});

// For elements i (row-major over shape) where the inclusive running count cs steps up, writes
// their coordinates to coords ((count, rank) long, when want_coords) or their key
// key_strides . coords(i) to keys.
void index_select_positions(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, DevPtr cs,
                            bool want_coords, DevPtr coords, DevPtr keys,
                            const std::array<int64_t, kMaxDims>& key_strides);

// repeat_interleave: out[cs[i] - repeats[i] .. min(cs[i], total)) = i for i < n.
void index_repeat(const Context& ctx, cl_command_queue q, DType repeats_type, uint64_t n, DevPtr repeats, DevPtr cs,
                  DevPtr out, int64_t total);

// out[i] (long) = insertion point of values[i] in its row of `m` sorted boundaries (row
// i / per_row, or 0 when one_row); sorter (when has_sorter) gives the sorted order of a row.
void index_searchsorted(const Context& ctx, cl_command_queue q, DType t, uint64_t n, uint64_t per_row, bool one_row,
                        DevPtr values, DevPtr bounds, int64_t m, bool has_sorter, DevPtr sorter, bool right,
                        DevPtr out);

// out[i] (bool, as uchar) = (elements[i] is one of the m test elements) != invert, for n
// contiguous elements of dtype t; test is contiguous, ascending when `sorted` (binary search),
// otherwise scanned linearly.
void index_isin(const Context& ctx, cl_command_queue q, DType t, uint64_t n, DevPtr elements, DevPtr test, int64_t m,
                bool sorted, bool invert, DevPtr out);

// histc's counting pass: counts[bin] (uint, zeroed by the caller) += 1 for the elements
// [start, start + n) of x (row-major over shape, n < 2^31) in [lo, hi], binned by the CPU's
// linear formula over `bins` bins in x's arithmetic (round16: 0 none, 1 half, 2 bfloat16).
void index_histc(const Context& ctx, cl_command_queue q, const RowMajorShape& shape, const StridedOperand& x,
                 uint64_t start, uint64_t n, double lo, double hi, int64_t bins, int round16, DevPtr counts);

} // namespace dlprim
