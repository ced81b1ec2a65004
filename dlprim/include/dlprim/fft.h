// Batched FFTs of up to three dims through VkFFT (OpenCL backend), with a plan cache.
// The data layout is fixed and dense: the caller permutes and copies torch tensors into it.
#pragma once
#include <dlprim/context.h>

#include <cstdint>
#include <string>

namespace dlprim {

enum class FftKind { C2C, R2C, C2R };

// One transform: `batch` signals of sizes n[0..rank) (outermost first; n[rank-1] contiguous),
// every signal dense and the signals back to back. `n` are the sizes of the *real* signal for
// R2C/C2R; their complex side has n[rank-1] / 2 + 1 elements in the last dim.
//   C2C: complex, in place (in and out are the same buffer and offset)
//   R2C: real in -> complex out (onesided), forward only
//   C2R: complex in (overwritten) -> real out, inverse only
// Forward is exp(-2 pi i jk/n), inverse exp(+2 pi i jk/n), both unnormalized.
struct FftDesc {
  FftKind kind = FftKind::C2C;
  bool double_precision = false;
  bool inverse = false;
  int rank = 1;
  uint64_t n[3] = {1, 1, 1};
  uint64_t batch = 1;
};

// Enqueues the transform on `q` (no host wait). Offsets are in bytes. The plan (VkFFT's
// compiled kernels, twiddle tables, Bluestein chirps, and the scratch buffer VkFFT allocates for
// large sizes) is built on first use and cached per queue and descriptor: a plan's scratch
// buffer is then only ever used in the order of one queue. Its kernels come from the on-disk
// program cache when present. Throws Error naming VkFFT's error when VkFFT cannot do it.
void fft(const Context& ctx, cl_command_queue q, const FftDesc& d, cl_mem in, uint64_t in_offset, cl_mem out,
         uint64_t out_offset);

// Cached plans (all contexts); clearing drops them (their kernels stay valid for queued work).
size_t fft_plan_cache_size();
void fft_plan_cache_clear();
void fft_plan_cache_set_max(size_t n);
size_t fft_plan_cache_max();

} // namespace dlprim
