// gru.cl's host side; the group shape, K-slice choice and launch are rnn_step_launch.h's (shared with lstm.cpp).
#include "rnn_step_launch.h"

#include <dlprim/gru.h>

namespace dlprim {

namespace {

using namespace detail;

constexpr int kGates = 3;  // r, z, n
constexpr size_t kFwdVectors = rnn_fwd_vectors(kGates);
constexpr const char* kPrefix = "rnn_step_common";  // the K-split machinery gru.cl builds on

} // namespace

bool gru_step_supported(const Context& ctx) {
  return rnn_step_fits(ctx, kRnnBwdVectors);  // one slice of the largest footprint: the float64 backward
}

void gru_step_forward(const Context& ctx, cl_command_queue q, DType t, const GruStepForward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "gru", t, "gru_step_fwd", kPrefix);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  rnn_add_opt(args, a.bias, a.w);
  for (const Buffer* b : {&a.xg, &a.h, &a.y, &a.ws}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = rnn_k_slices(ctx, t, a.hidden, kRnnTileFwd, kFwdVectors, "gru_ksplit|fwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kFwdVectors * rnn_vector_bytes(t));
  rnn_step_launch(q, k.kernel, a.batch, a.hidden, ks, "gru_step_fwd");
}

void gru_step_backward(const Context& ctx, cl_command_queue q, DType t, const GruStepBackward& a) {
  if (a.batch == 0 || a.hidden == 0) return;
  TypedKernel k = typed_kernel(ctx, "gru", t, "gru_step_bwd", kPrefix);
  std::lock_guard<std::mutex> lock(*k.mutex);
  KernelArgs args(k.kernel);
  args.add(a.w.mem).add<cl_ulong>(a.w.offset);
  rnn_add_opt(args, a.dhg_next, a.w);
  rnn_add_opt(args, a.dh_add, a.w).add<cl_ulong>(a.dh_add_ld);
  for (const Buffer* b : {&a.ws, &a.h_prev}) args.add(b->mem).add<cl_ulong>(b->offset);
  rnn_add_opt(args, a.dh_in, a.w);
  for (const Buffer* b : {&a.dhg, &a.dxg, &a.dh}) args.add(b->mem).add<cl_ulong>(b->offset);
  const size_t ks = rnn_k_slices(ctx, t, kGates * a.hidden, kRnnTileBwd, kRnnBwdVectors, "gru_ksplit|bwd");
  args.add<cl_int>(a.batch).add<cl_int>(a.hidden).add_local(ks * kRnnBwdVectors * rnn_vector_bytes(t));
  rnn_step_launch(q, k.kernel, a.batch, a.hidden, ks, "gru_step_bwd");
}

} // namespace dlprim
