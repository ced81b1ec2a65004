#include "rnn_step_launch.h"

#include <dlprim/autotune.h>
#include <dlprim/env.h>

#include <cstdlib>

namespace dlprim {
namespace detail {

size_t rnn_vector_bytes(DType t) { return 4 * dtype_size(compute_dtype(t)); }

bool rnn_step_fits(const Context& ctx, size_t vectors) {
  return ctx.info().max_work_group_size >= kRnnLanes * kRnnUnits && ctx.info().local_mem_size >= vectors * 32;
}

size_t rnn_k_slices(const Context& ctx, DType t, int K, size_t tile, size_t vectors, const std::string& label) {
  const DeviceInfo& d = ctx.info();
  const size_t tiles = (size_t(K) + tile - 1) / tile;
  int fitting = 0;  // powers of two 1, 2, 4, 8 that fit
  for (size_t ks = 1; ks <= 8; ks *= 2) {
    if (ks > 1 && (ks > tiles || kRnnLanes * kRnnUnits * ks > d.max_work_group_size ||
                   ks * vectors * rnn_vector_bytes(t) > d.local_mem_size))
      break;
    ++fitting;
  }
  const long n = env_int("PYTORCH_OCL_RNN_KSPLIT", 1, 1 << 20, 0);
  int pick = fitting - 1;
  if (n) {
    pick = 0;
    while (pick + 1 < fitting && (2L << pick) <= n) ++pick;
  } else if (const int v = tune_variant(label + "|" + std::to_string(K), fitting); v >= 0) {
    pick = v;
  } else if (!d.is_gpu) {
    pick = 0;
  }
  return size_t(1) << pick;
}

void rnn_step_launch(cl_command_queue q, cl_kernel k, int batch, int hidden, size_t ks, const char* label) {
  const size_t global[2] = {(size_t(batch) + kRnnRows - 1) / kRnnRows * kRnnLanes * kRnnUnits * ks,
                            (size_t(hidden) + kRnnUnits - 1) / kRnnUnits};
  const size_t local[2] = {kRnnLanes * kRnnUnits * ks, 1};
  launch_nd(q, k, 2, global, local, label);
}

KernelArgs& rnn_add_opt(KernelArgs& args, const Buffer& b, const Buffer& stand_in) {
  const bool has = b.mem != nullptr;
  return args.add(has ? b.mem : stand_in.mem).add<cl_ulong>(has ? b.offset : 0).add<cl_int>(has ? 1 : 0);
}

} // namespace detail
} // namespace dlprim
