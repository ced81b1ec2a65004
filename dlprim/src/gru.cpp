// gru.cl's host side; the group shape, K-slice choice and launch are rnn_step_launch.h's (shared with lstm.cpp).
#include "rnn_step_launch.h"

#include <dlprim/gru.h>

namespace dlprim {

namespace {

using namespace detail;

// A slice's local vectors (DL_ACC4): forward (12 W_hh rows + 32 h rows) x (GRU_TKF / 4 + 1), backward (4 units
// + 32 dhg_next rows) x (GRU_TKB / 4 + 1). K tiles: GRU_TKF 32 (K = H), GRU_TKB 64 (K = 3H).
constexpr size_t kFwdVectors = 44 * 9, kBwdVectors = 36 * 17, kTileFwd = 32, kTileBwd = 64;

} // namespace

bool gru_step_supported(const Context& ctx) {
  return rnn_step_fits(ctx, kBwdVectors);  // one slice of the largest footprint: the float64 backward
}

void gru_step_forward(const Context& ctx, cl_command_queue q, DType t, const GruStepForward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "gru", t, "gru_step_fwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  rnn_add_opt(args, a.bias, a.w);
  for (const Buffer* b : {&a.xg, &a.h, &a.y, &a.ws}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = rnn_k_slices(ctx, t, a.hidden, kTileFwd, kFwdVectors, "gru_ksplit|fwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kFwdVectors * rnn_vector_bytes(t));
  rnn_step_launch(q, k.kernel, a.batch, a.hidden, ks, "gru_step_fwd");
}

void gru_step_backward(const Context& ctx, cl_command_queue q, DType t, const GruStepBackward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "gru", t, "gru_step_bwd");
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  rnn_add_opt(args, a.dhg_next, a.w);
  rnn_add_opt(args, a.dh_add, a.w).add<cl_ulong>(a.dh_add_ld);
  for (const Buffer* b : {&a.ws, &a.h_prev}) args.add(b->mem).add<cl_ulong>(b->offset);
  rnn_add_opt(args, a.dh_in, a.w);
  for (const Buffer* b : {&a.dhg, &a.dxg, &a.dh}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = rnn_k_slices(ctx, t, 3 * a.hidden, kTileBwd, kBwdVectors, "gru_ksplit|bwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kBwdVectors * rnn_vector_bytes(t));
  rnn_step_launch(q, k.kernel, a.batch, a.hidden, ks, "gru_step_bwd");
}

} // namespace dlprim
