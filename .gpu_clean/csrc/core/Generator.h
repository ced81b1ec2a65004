// Philox generator state per device: (seed, offset). Each random op takes the current
// offset and advances it, so a seed reproduces the same sequence of ops exactly.
#pragma once
#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <utility>

namespace pytorch_ocl {

struct OclGenerator final : public c10::GeneratorImpl {
  explicit OclGenerator(c10::DeviceIndex device);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  // (seed, offset) for one op; reserves `increment` offsets. Call with the generator's mutex held.
  std::pair<uint64_t, uint64_t> philox_seed_and_offset(uint64_t increment);

private:
  OclGenerator* clone_impl() const override;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

const at::Generator& default_generator(int device);
at::Generator new_generator(int device);
// The generator an op uses: `gen` when given, else the default of `device`.
OclGenerator* generator_for(const std::optional<at::Generator>& gen, int device);

} // namespace pytorch_ocl
