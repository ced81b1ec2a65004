// Device sort: bitonic sort of (key, value) pairs, usable for sort/argsort/topk-style ops and
// random permutations (random keys, index values).
#pragma once
#include <dlprim/context.h>

#include <cstdint>

namespace dlprim {

// Sorts `n_segments` consecutive segments of `segment_len` pairs in place: keys are ulong, values
// long; order by key (ascending or descending), ties by value ascending (so index values make the
// sort stable). `segment_len` must be a power of two: pad a segment with keys that sort last.
// Offsets are in elements.
void sort_pairs(const Context& ctx, cl_command_queue q, cl_mem keys, uint64_t keys_offset, cl_mem values,
                uint64_t values_offset, uint64_t n_segments, uint64_t segment_len, bool descending);

// kthvalue's selection: for each of `n_rows` consecutive rows of `n` pairs, reorders the row in
// place with the CPU's quickselect so that element k (0-based) is the k-th smallest key (ties
// placed as the CPU places them). One work-item a row.
void select_kth(const Context& ctx, cl_command_queue q, cl_mem keys, uint64_t keys_offset, cl_mem values,
                uint64_t values_offset, uint64_t n_rows, uint64_t n, uint64_t k);

// The smallest power of two >= n (1 for n <= 1).
uint64_t next_pow2(uint64_t n);

} // namespace dlprim
