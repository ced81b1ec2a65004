#include "core/Generator.h"

#include "core/Device.h"

#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/Exception.h>

#include <cstring>
#include <deque>
#include <mutex>

namespace pytorch_ocl {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

OclGenerator::OclGenerator(c10::DeviceIndex device)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(c10::default_rng_seed_val) {}

void OclGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}
void OclGenerator::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t OclGenerator::get_offset() const { return offset_; }
uint64_t OclGenerator::current_seed() const { return seed_; }

uint64_t OclGenerator::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom(true);
  set_current_seed(s);
  return s;
}

void OclGenerator::set_state(const c10::TensorImpl& new_state) {
  TORCH_CHECK_TYPE(new_state.dtype() == caffe2::TypeMeta::Make<uint8_t>(),
                   "ocl generator: RNG state must be a torch.ByteTensor");
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(kStateBytes),
              "ocl generator: RNG state must have ", kStateBytes, " bytes, got ", new_state.numel());
  TORCH_CHECK(new_state.device().is_cpu(), "ocl generator: RNG state must be a CPU tensor");
  uint64_t v[2];
  std::memcpy(v, new_state.data(), kStateBytes);
  seed_ = v[0];
  offset_ = v[1];
}

c10::intrusive_ptr<c10::TensorImpl> OclGenerator::get_state() const {
  at::Tensor t = at::empty({static_cast<int64_t>(kStateBytes)}, at::TensorOptions().dtype(at::kByte));
  uint64_t v[2] = {seed_, offset_};
  std::memcpy(t.data_ptr(), v, kStateBytes);
  return t.getIntrusivePtr();
}

std::pair<uint64_t, uint64_t> OclGenerator::philox_seed_and_offset(uint64_t increment) {
  uint64_t off = offset_;
  offset_ += increment;
  return {seed_, off};
}

OclGenerator* OclGenerator::clone_impl() const {
  auto* g = new OclGenerator(device().index());
  g->seed_ = seed_;
  g->offset_ = offset_;
  return g;
}

const at::Generator& default_generator(int device) {
  static std::mutex m;
  static std::deque<at::Generator> gens;  // deque: references stay valid as it grows
  if (device < 0) device = current_device();
  check_device_index(device);
  std::lock_guard<std::mutex> lock(m);
  while (static_cast<int>(gens.size()) <= device)
    gens.push_back(at::make_generator<OclGenerator>(static_cast<c10::DeviceIndex>(gens.size())));
  return gens[device];
}

at::Generator new_generator(int device) {
  if (device < 0) device = current_device();
  check_device_index(device);
  return at::make_generator<OclGenerator>(static_cast<c10::DeviceIndex>(device));
}

OclGenerator* generator_for(const std::optional<at::Generator>& gen, int device) {
  const at::Generator& g = (gen.has_value() && gen->defined()) ? *gen : default_generator(device);
  TORCH_CHECK(g.device().type() == c10::DeviceType::PrivateUse1,
              "expected an ocl generator, got a generator for ", g.device());
  return at::check_generator<OclGenerator>(g);
}

} // namespace pytorch_ocl
