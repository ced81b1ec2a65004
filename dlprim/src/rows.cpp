#include <dlprim/env.h>
#include <dlprim/rows.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace dlprim {

uint64_t RowsShape::n_rows() const {
  uint64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= static_cast<uint64_t>(sizes[d]);
  return n;
}

bool describe_rows(const std::vector<int64_t>& sizes, const std::vector<std::vector<int64_t>>& strides, int dim,
                   RowsShape& s) {
  s = RowsShape();
  int nt = static_cast<int>(strides.size());
  s.length = sizes[dim];
  for (int t = 0; t < nt; ++t) s.step[t] = strides[t][dim];
  for (int d = 0; d < static_cast<int>(sizes.size()); ++d) {
    if (d == dim || sizes[d] == 1) continue;
    if (s.rank > 0) {
      bool merge = true;
      for (int t = 0; t < nt; ++t) merge = merge && s.strides[t][s.rank - 1] == strides[t][d] * sizes[d];
      if (merge) {
        s.sizes[s.rank - 1] *= sizes[d];
        for (int t = 0; t < nt; ++t) s.strides[t][s.rank - 1] = strides[t][d];
        continue;
      }
    }
    if (s.rank == kMaxDims) return false;
    s.sizes[s.rank] = sizes[d];
    for (int t = 0; t < nt; ++t) s.strides[t][s.rank] = strides[t][d];
    ++s.rank;
  }
  return true;
}

bool cpu_mapping(const Context& ctx) {
  static const bool force_gpu = [] {
    const char* v = env_value("PYTORCH_OCL_GPU_MAPPING");
    return v && std::strcmp(v, "0") != 0 && *v;
  }();
  return ctx.info().is_cpu && !force_gpu;
}

namespace {
uint32_t pow2_ceil(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return static_cast<uint32_t>(p);
}
uint32_t pow2_floor(uint64_t v) {
  uint64_t p = 1;
  while (p * 2 <= v) p <<= 1;
  return static_cast<uint32_t>(p);
}
} // namespace

RowsTiling rows_tiling(const Context& ctx, const RowsShape& s, uint32_t max_group) {
  RowsTiling t;
  uint32_t L = pow2_floor(std::max<uint64_t>(1, std::min<uint64_t>(ctx.work_group_size(256), max_group)));
  uint64_t rows = std::max<uint64_t>(1, s.n_rows());
  int64_t row_min = s.rank > 0 ? std::llabs(s.strides[0][s.rank - 1]) : INT64_MAX;
  t.col_order = s.rank > 0 && rows > 1 && row_min < std::llabs(s.step[0]);
  if (cpu_mapping(ctx)) {
    // Work-items run one after another: one per row, reading it sequentially.
    t.TR = 1;
    t.TO = std::min(L, pow2_ceil(rows));
    return t;
  }
  if (t.col_order) {
    t.TO = std::min({L, 64u, pow2_ceil(rows)});
    t.TR = std::min(L / t.TO, pow2_ceil((static_cast<uint64_t>(s.length) + 3) / 4));
    t.TO = std::min(L / t.TR, pow2_ceil(rows));
  } else {
    t.TR = std::min(L, pow2_ceil((static_cast<uint64_t>(s.length) + 3) / 4));
    t.TO = std::min(L / t.TR, pow2_ceil(rows));
  }
  return t;
}

} // namespace dlprim
