#include "aten/RandomLaunch.h"

#include "aten/RowMajor.h"
#include "core/Errors.h"
#include "core/Graph.h"
#include "core/Generator.h"
#include "core/TensorUtils.h"
#include "core/Trace.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>

#include <mutex>

namespace pytorch_ocl {

std::pair<uint64_t, uint64_t> next_philox(const std::optional<at::Generator>& gen, int device, uint64_t increment) {
  OclGenerator* g = generator_for(gen, device);
  std::pair<uint64_t, uint64_t> so;
  {
    std::lock_guard<std::mutex> lock(g->mutex_);
    so = g->philox_seed_and_offset(increment);
  }
  if (dlprim::capture::any_active()) {
    cl_command_queue q = current_queue(device);
    if (dlprim::capture::capturing(q)) {
      // Graph capture: every replay draws a fresh (seed, offset) from the generator, as eager calls would.
      std::optional<at::Generator> keep = gen;  // keeps a user generator alive for the graph's replays
      dlprim::capture::note_philox(q, so.first, so.second, [keep, device, increment] {
        OclGenerator* gg = generator_for(keep, device);
        std::lock_guard<std::mutex> lock(gg->mutex_);
        return gg->philox_seed_and_offset(increment);
      });
    }
  }
  return so;
}

void launch_random(dlprim::Distribution dist, const std::vector<at::Tensor>& outputs, const at::Tensor* input,
                   const dlprim::RandomParams& params, const std::optional<at::Generator>& gen, const char* op,
                   const at::Tensor* input2) {
  const at::Tensor& self = outputs.at(0);
  for (const at::Tensor& t : outputs) check_ocl(t, op, "self");
  if (self.numel() == 0) return;
  int device = self.device().index();
  c10::DeviceGuard guard(self.device());
  auto broadcast = [&](const at::Tensor* t) {
    if (!t) return at::Tensor();
    check_ocl(*t, op, "input");
    TORCH_CHECK(t->device() == self.device(), op, ": input is on ", t->device(), " but self is on ", self.device());
    return t->expand(self.sizes());
  };
  at::Tensor in = broadcast(input), in2 = broadcast(input2);
  std::vector<at::TensorBase> tensors(outputs.begin(), outputs.end());
  if (input) tensors.push_back(in);
  if (input2) tensors.push_back(in2);
  dlprim::RowMajorShape shape;
  std::vector<dlprim::StridedOperand> ops;
  std::vector<at::Tensor> targets = outputs;
  if (!describe_row_major(self.sizes(), tensors, 0, shape, ops, op)) {
    // More than 8 dims that cannot be merged: generate into dense tensors, then copy.
    tensors.clear();
    for (at::Tensor& t : targets) {
      t = at::empty(self.sizes(), t.options());
      tensors.push_back(t);
    }
    if (input) tensors.push_back(in.contiguous());
    if (input2) tensors.push_back(in2.contiguous());
    TORCH_CHECK(describe_row_major(self.sizes(), tensors, 0, shape, ops, op), op, ": cannot describe shape ",
                self.sizes());
  }
  auto seed_offset = next_philox(gen, device);
  OCL_TRACE(op, " ", self.scalar_type(), self.sizes(), " seed=", seed_offset.first, " offset=", seed_offset.second);
  std::vector<dlprim::StridedOperand> outs(ops.begin(), ops.begin() + outputs.size());
  const dlprim::StridedOperand* in_op = input ? &ops[outputs.size()] : nullptr;
  const dlprim::StridedOperand* in2_op = input2 ? &ops.back() : nullptr;
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::random_generate(context(device), q, dist, shape, outs, in_op, seed_offset.first,
                                              seed_offset.second, params, in2_op));
  note_enqueued(q);
  for (size_t k = 0; k < outputs.size(); ++k)
    if (!targets[k].is_same(outputs[k])) outputs[k].copy_(targets[k]);
}

} // namespace pytorch_ocl
