// Random fills on the device from the per-device Philox generator (generator= honoured).
#include "core/Errors.h"
#include "core/Generator.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/random.h>
#include <torch/library.h>

#include <mutex>

namespace pytorch_ocl {

namespace {

void fill(at::Tensor& self, dlprim::Distribution dist, double a, double b, const std::optional<at::Generator>& gen,
          const char* op) {
  check_ocl(self, op, "self");
  TORCH_CHECK_TYPE(c10::isFloatingType(self.scalar_type()), op, "_ expects a floating point tensor, got ",
                   self.scalar_type());
  if (self.numel() == 0) return;
  int device = self.device().index();
  c10::DeviceGuard guard(self.device());
  dlprim::DType dtype = to_dlprim(self.scalar_type(), op);
  at::Tensor target = self.is_contiguous() ? self : at::empty(self.sizes(), self.options());
  OclGenerator* g = generator_for(gen, device);
  std::pair<uint64_t, uint64_t> seed_offset;
  {
    std::lock_guard<std::mutex> lock(g->mutex_);
    seed_offset = g->philox_seed_and_offset(dlprim::random_offset_increment(self.numel()));
  }
  OCL_TRACE(op, " ", self.scalar_type(), self.sizes(), " seed=", seed_offset.first, " offset=", seed_offset.second);
  BufferRef buf = buffer_of(target);
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::fill_random(context(device), q, dist, dtype, buf.mem, buf.offset / target.itemsize(),
                                          target.numel(), seed_offset.first, seed_offset.second, a, b));
  note_enqueued(q);
  if (!target.is_same(self)) self.copy_(target);
}

at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  TORCH_CHECK(std >= 0.0, "normal expects std >= 0.0, but found std ", std);
  fill(self, dlprim::Distribution::Normal, mean, std, gen, "normal");
  return self;
}

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  TORCH_CHECK(from <= to, "uniform_ expects to return a [from, to) range, but found from=", from, " > to=", to);
  fill(self, dlprim::Distribution::Uniform, from, to, gen, "uniform");
  return self;
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("uniform_", TORCH_FN(uniform_));
}

} // namespace pytorch_ocl
