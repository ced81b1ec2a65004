// Upsampling (nearest, nearest-exact, linear, cubic) over contiguous planes of (D, H, W);
// 1-D/2-D callers set the leading sizes to 1. Forward and gather-style backward.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

// The antialiased modes work over (H, W) only.
enum class UpsampleMode { Nearest = 0, NearestExact = 1, Linear = 2, Cubic = 3, AntialiasLinear = 4, AntialiasCubic = 5 };

struct UpsampleGeometry {
  int in[3], out[3];       // D, H, W
  double scale[3];         // input/output ratio per axis as PyTorch computes it (see upsample.cl)
  UpsampleMode mode;
  bool align_corners;
};

void upsample_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const UpsampleGeometry& g,
                      Buffer x, Buffer y);
void upsample_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const UpsampleGeometry& g,
                       Buffer grad_y, Buffer grad_x);

} // namespace dlprim
