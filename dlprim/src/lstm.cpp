#include <dlprim/autotune.h>
#include <dlprim/env.h>
#include <dlprim/lstm.h>

#include <cstdlib>
#include <string>

namespace dlprim {

namespace {

// lstm.cl's group: KS K-slices of 16 batch lanes (two rows each) x 4 hidden units, in one dimension.
constexpr size_t kLanes = 16, kRows = 32, kUnits = 4;
// A slice's local vectors (DL_ACC4): forward (16 W_hh rows + 32 h rows) x (LSTM_TKF / 4 + 1), backward (4 units
// + 32 dg_next rows) x (LSTM_TKB / 4 + 1). K tiles: LSTM_TKF 32 (K = H), LSTM_TKB 64 (K = 4H).
constexpr size_t kFwdVectors = 48 * 9, kBwdVectors = 36 * 17, kTileFwd = 32, kTileBwd = 64;

size_t vector_bytes(DType t) { return 4 * dtype_size(compute_dtype(t)); }

// K-slices per group. One group per 32 rows x 4 units leaves a GPU's compute units with two warps each for a
// 512-unit layer, every K tile's latency exposed; slices split K within the group (more warps, shorter loops).
// GPUs take the most that fit (local memory, group size, no slice without a tile; at most 8); CPU devices one
// (their items run K loops alone well). PYTORCH_OCL_LSTM_KSPLIT=n asks n (the largest fitting power of two at
// most n); PYTORCH_OCL_TUNE=random draws among the fitting ones (tests train with each).
size_t k_slices(const Context& ctx, DType t, int K, size_t tile, size_t vectors, const char* label) {
  const DeviceInfo& d = ctx.info();
  const size_t tiles = (size_t(K) + tile - 1) / tile;
  int fitting = 0;  // powers of two 1, 2, 4, 8 that fit
  for (size_t ks = 1; ks <= 8; ks *= 2) {
    if (ks > 1 && (ks > tiles || kLanes * kUnits * ks > d.max_work_group_size ||
                   ks * vectors * vector_bytes(t) > d.local_mem_size))
      break;
    ++fitting;
  }
  const char* want = env_value("PYTORCH_OCL_LSTM_KSPLIT");
  int pick = fitting - 1;
  if (want && *want) {
    const long n = std::strtol(want, nullptr, 10);
    pick = 0;
    while (pick + 1 < fitting && (2L << pick) <= n) ++pick;
  } else if (const int v = tune_variant(std::string("lstm_ksplit|") + label + "|" + std::to_string(K), fitting); v >= 0) {
    pick = v;
  } else if (!d.is_gpu) {
    pick = 0;
  }
  return size_t(1) << pick;
}

void launch(cl_command_queue q, cl_kernel k, int batch, int hidden, size_t ks, const char* label) {
  const size_t global[2] = {(size_t(batch) + kRows - 1) / kRows * kLanes * kUnits * ks, (size_t(hidden) + kUnits - 1) / kUnits};
  const size_t local[2] = {kLanes * kUnits * ks, 1};
  launch_nd(q, k, 2, global, local, label);
}

// An absent operand: a valid buffer that the kernel never reads (its flag is 0).
KernelArgs& add_opt(KernelArgs& args, const Buffer& b, const Buffer& stand_in) {
  const bool has = b.mem != nullptr;
  return args.add(has ? b.mem : stand_in.mem).add<cl_ulong>(has ? b.offset : 0).add<cl_int>(has ? 1 : 0);
}

} // namespace

bool lstm_step_supported(const Context& ctx) {
  // One slice of the largest footprint: the float64 backward.
  return ctx.info().max_work_group_size >= kLanes * kUnits && ctx.info().local_mem_size >= kBwdVectors * 32;
}

void lstm_step_forward(const Context& ctx, cl_command_queue q, DType t, const LstmStepForward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "lstm", t, "lstm_step_fwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  for (const Buffer* b : {&a.w, &a.gates, &a.h, &a.c, &a.y, &a.cy}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = k_slices(ctx, t, a.hidden, kTileFwd, kFwdVectors, "fwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kFwdVectors * vector_bytes(t));
  launch(q, k.kernel, a.batch, a.hidden, ks, "lstm_step_fwd");
}

void lstm_step_backward(const Context& ctx, cl_command_queue q, DType t, const LstmStepBackward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "lstm", t, "lstm_step_bwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  add_opt(args, a.dg_next, a.w);
  add_opt(args, a.dh_add, a.w).add<cl_ulong>(a.dh_add_ld);
  for (const Buffer* b : {&a.gates, &a.cy, &a.cx}) args.add(b->mem).add<cl_ulong>(b->offset);
  add_opt(args, a.dc_in, a.w);
  for (const Buffer* b : {&a.dg, &a.dc}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = k_slices(ctx, t, 4 * a.hidden, kTileBwd, kBwdVectors, "bwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kBwdVectors * vector_bytes(t));
  launch(q, k.kernel, a.batch, a.hidden, ks, "lstm_step_bwd");
}

} // namespace dlprim
