// What the fused recurrent step kernels (kernels/lstm.cl, kernels/gru.cl, each built after kernels/rnn_step_common.cl;
// lstm.cpp, gru.cpp) share on the host: their group shape, tiles and local memory, the K-slice choice and the launch.
#pragma once
#include <dlprim/context.h>
#include <dlprim/dtype.h>
#include <dlprim/typed_kernels.h>

#include <string>

namespace dlprim {
namespace detail {

// A group: KS K-slices of 16 batch lanes (two rows each) x 4 hidden units, in one dimension.
constexpr size_t kRnnLanes = 16, kRnnRows = 32, kRnnUnits = 4;

// K tiles (rnn_step_common.cl's RNN_TKF, K = H, and RNN_TKB, K = gates x H) and a slice's local vectors
// (DL_ACC4): forward (gates x 4 W_hh rows + 32 h rows) x (RNN_TKF / 4 + 1), backward (4 units + 32 gate-gradient
// rows) x (RNN_TKB / 4 + 1).
constexpr size_t kRnnTileFwd = 32, kRnnTileBwd = 64;
constexpr size_t rnn_fwd_vectors(size_t gates) { return (gates * kRnnUnits + kRnnRows) * (kRnnTileFwd / 4 + 1); }
constexpr size_t kRnnBwdVectors = (kRnnUnits + kRnnRows) * (kRnnTileBwd / 4 + 1);

// Bytes of one local vector (DL_ACC4) of the kernels.
size_t rnn_vector_bytes(DType t);

// Whether a device runs a step kernel needing `vectors` local vectors per slice at one slice (float64 sized).
bool rnn_step_fits(const Context& ctx, size_t vectors);

// K-slices per group for a step whose reduction runs over K in tiles of `tile`, a slice using `vectors` local
// vectors. One group per 32 rows x 4 units leaves a GPU's compute units with two warps each for a 512-unit
// layer, every K tile's latency exposed; slices split K within the group (more warps, shorter loops). GPUs
// take the most that fit (local memory, group size, no slice without a tile; at most 8); CPU devices one
// (their items run K loops alone well). PYTORCH_OCL_RNN_KSPLIT=n asks n (the largest fitting power of two at
// most n); PYTORCH_OCL_TUNE=random draws among the fitting ones under tune label `label` + "|" + K (tests train
// with each).
size_t rnn_k_slices(const Context& ctx, DType t, int K, size_t tile, size_t vectors, const std::string& label);

// Global (ceil(batch / 32) * 64 ks, ceil(hidden / 4)), local (64 ks, 1).
void rnn_step_launch(cl_command_queue q, cl_kernel k, int batch, int hidden, size_t ks, const char* label);

// An optional operand as (buffer, offset, flag): absent (mem null), a valid buffer that the kernel never reads
// (its flag is 0).
KernelArgs& rnn_add_opt(KernelArgs& args, const Buffer& b, const Buffer& stand_in);

} // namespace detail
} // namespace dlprim
