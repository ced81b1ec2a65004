// Reflection and replication padding over contiguous planes of (D, H, W); 1-D/2-D callers
// set the leading sizes to 1 and their padding to 0. Forward and gather-style backward.
#pragma once
#include <dlprim/typed_kernels.h>

namespace dlprim {

enum class PadMode { Reflect = 0, Replicate = 1 };

struct PadGeometry {
  int in[3], out[3];
  int before[3];  // elements padded before each axis (negative crops)
  PadMode mode;
};

void pad_forward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PadGeometry& g, Buffer x,
                 Buffer y);
void pad_backward(const Context& ctx, cl_command_queue q, DType t, uint64_t planes, const PadGeometry& g,
                  Buffer grad_y, Buffer grad_x);

} // namespace dlprim
