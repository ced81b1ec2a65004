// Mask block flags of the fused attention (kernels/attention_mask_blocks.cl): the flag grid's layout and the
// launch that fills it. The attention kernels read the flags (attention_common.cl) to skip key / query tiles
// whose mask is all -inf and the mask loads of tiles whose mask is all 0.
#include <dlprim/attention.h>
#include <dlprim/capture.h>
#include <dlprim/embedded.h>
#include <dlprim/int_math.h>
#include <dlprim/program_cache.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <tuple>

namespace dlprim {

namespace {

struct Grid {
  int64_t fb = 1, fh = 1, rows = 1, cols = 1, fq = 1, fk = 1;
};

// A dimension the mask broadcasts (stride 0) gets one block row / column, computed from its first element.
Grid grid_of(const AttnShape& s, const AttnTensor& M) {
  Grid g;
  g.fb = M.sb == 0 ? 1 : s.B;
  g.fh = M.sh == 0 ? 1 : s.Hq;
  g.rows = M.sl == 0 ? std::min<int64_t>(s.L, 1) : s.L;
  g.cols = M.sd == 0 ? std::min<int64_t>(s.S, 1) : s.S;
  g.fq = ceil_div(g.rows, kAttnMaskBlock);
  g.fk = ceil_div(g.cols, kAttnMaskBlock);
  return g;
}

bool blocks_disabled() {
  const char* v = std::getenv("PYTORCH_OCL_ATTN_MASK_BLOCKS");
  return v && std::strcmp(v, "0") == 0;
}

struct Entry {
  std::mutex m;
  cl_kernel k = nullptr;
};

} // namespace

AttnTensor attention_mask_block_grid(const AttnShape& s, const AttnTensor& M, uint64_t& bytes) {
  const Grid g = grid_of(s, M);
  AttnTensor f;
  f.sd = g.fk > 1 ? 1 : 0;
  f.sl = g.fq > 1 ? g.fk : 0;
  f.sh = g.fh > 1 ? g.fq * g.fk : 0;
  f.sb = g.fb > 1 ? g.fh * g.fq * g.fk : 0;
  bytes = static_cast<uint64_t>(g.fb * g.fh * g.fq * g.fk);
  return f;
}

void attention_mask_blocks(const Context& ctx, cl_command_queue q, const AttnShape& s, DType dtype,
                           const AttnTensor& M, const AttnTensor& F) {
  const Grid g = grid_of(s, M);
  const uint64_t n = static_cast<uint64_t>(g.fb * g.fh * g.fq * g.fk);
  if (n == 0) return;
  if (blocks_disabled()) {
    const cl_uchar mixed = 2;
    enqueue_fill_buffer(q, F.mem, &mixed, 1, F.offset, n);
    return;
  }
  if (g.fb * g.fh > 65535LL * 65535LL || g.fq * kAttnMaskBlock > INT32_MAX || g.fk * kAttnMaskBlock > INT32_MAX)
    throw Error("attention: mask too large for its block flags");
  static std::mutex map_mutex;
  static std::map<std::tuple<cl_context, int>, Entry> cache;
  Entry* e;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    e = &cache[std::make_tuple(ctx.context(), static_cast<int>(dtype))];
  }
  std::lock_guard<std::mutex> lock(e->m);
  if (!e->k) {
    const DType compute = compute_dtype(dtype);
    std::ostringstream src;
    if (compute == DType::F64) src << "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    src << kernel_source("common") << "#define T " << compute_cl_type(compute) << "\n#define T4 "
        << compute_cl_type(compute) << "4\n#define ST " << storage_cl_type(dtype) << "\n#define LOAD(p, i) ("
        << convert_expr(dtype, compute, load_expr(dtype, "(p)", "(i)"))
        << ")\n#define HAS_MASK 0\n#define ATTN_VEC 0\n#define ATTN_NATIVE_EXP 0\n"
        << kernel_source("attention_common") << kernel_source("attention_mask_blocks");
    e->k = create_kernel(ctx.program(src.str()), "attn_mask_blocks");
  }
  KernelArgs args(e->k);
  args.add<cl_int>(static_cast<cl_int>(g.fh)).add<cl_int>(static_cast<cl_int>(g.rows));
  args.add<cl_int>(static_cast<cl_int>(g.cols));
  args.add(M.mem).add<cl_ulong>(M.offset);
  struct Strides {
    cl_long b, h, l, d;
  } ms{M.sb, M.sh, M.sl, M.sd};
  args.add(ms);
  args.add(F.mem).add<cl_ulong>(F.offset);
  size_t global[3] = {static_cast<size_t>(g.fk * kAttnMaskBlock), static_cast<size_t>(g.fq * kAttnMaskBlock),
                      static_cast<size_t>(g.fb * g.fh)};
  size_t local[3] = {static_cast<size_t>(kAttnMaskBlock), static_cast<size_t>(kAttnMaskBlock), 1};
  launch_nd(q, e->k, 3, global, local, "attention_mask_blocks");
}

} // namespace dlprim
