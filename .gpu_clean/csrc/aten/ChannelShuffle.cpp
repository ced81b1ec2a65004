// channel_shuffle: PyTorch has only CPU/quantized kernels for it (native_channel_shuffle,
// used by F.channel_shuffle, is composite). A view that regroups the channels plus one copy.
#include "core/TensorUtils.h"

#include <ATen/core/Tensor.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

at::Tensor channel_shuffle(const at::Tensor& self, int64_t groups) {
  check_ocl(self, "channel_shuffle", "self");
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input to have at least 3 dimensions, but got input with sizes ",
              self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive. Value of groups:", groups);
  int64_t c = self.size(1);
  TORCH_CHECK(c % groups == 0, "Number of channels must be divisible by groups. Got ", c, " channels and ", groups,
              " groups.");
  if (self.numel() == 0) return self.clone();
  at::Tensor grouped = self.contiguous().reshape({self.size(0), groups, c / groups, -1});
  return grouped.transpose(1, 2).contiguous().view(self.sizes()).contiguous(self.suggest_memory_format());
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("channel_shuffle", TORCH_FN(channel_shuffle)); }

} // namespace pytorch_ocl
