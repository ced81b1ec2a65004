// In-place random fills and the tensor-parameter normal/bernoulli forms. Argument checks come
// from ATen's DistributionTemplates (the CPU's own checks and messages); the kernels are rows of
// dlprim's distribution table, drawn from the per-device Philox generator (generator= honoured).
#include "aten/RandomLaunch.h"
#include "core/Generator.h"
#include "core/TensorUtils.h"

#include <ATen/native/DistributionTemplates.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <limits>

namespace pytorch_ocl {

namespace {

using dlprim::Distribution;
namespace tmpl = at::native::templates;

// The CPU raises NotImplementedError for dtypes its kernel does not dispatch on.
void check_dtype(const at::TensorBase& self, bool integers, bool boolean, const char* op) {
  c10::ScalarType t = self.scalar_type();
  bool ok = c10::isFloatingType(t) || (integers && c10::isIntegralType(t, false)) || (boolean && t == c10::kBool);
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", op, "\" not implemented for '", c10::toString(t), "'");
}

void fill(Distribution dist, const at::TensorBase& self, dlprim::RandomParams p, std::optional<at::Generator> gen,
          const char* op) {
  launch_random(dist, {at::Tensor(self)}, nullptr, p, gen, op);
}

dlprim::RandomParams params(double a, double b = 0) {
  dlprim::RandomParams p;
  p.a = a;
  p.b = b;
  return p;
}

template <typename RNG>
struct UniformKernel {
  void operator()(at::TensorIteratorBase& iter, double from, double to, std::optional<at::Generator> gen) {
    fill(Distribution::Uniform, iter.tensor_base(0), params(from, to), gen, "uniform_");
  }
};

template <typename RNG>
struct NormalKernel {
  void operator()(const at::TensorBase& self, double mean, double std, std::optional<at::Generator> gen) {
    check_dtype(self, false, false, "normal_kernel_ocl");
    fill(Distribution::Normal, self, params(mean, std), gen, "normal_");
  }
};

template <typename RNG>
struct ExponentialKernel {
  void operator()(at::TensorIteratorBase& iter, double lambda, std::optional<at::Generator> gen) {
    check_dtype(iter.tensor_base(0), false, false, "exponential_ocl");
    fill(Distribution::Exponential, iter.tensor_base(0), params(lambda), gen, "exponential_");
  }
};

template <typename RNG>
struct GeometricKernel {
  void operator()(at::TensorIteratorBase& iter, double p, std::optional<at::Generator> gen) {
    check_dtype(iter.tensor_base(0), true, false, "geometric_ocl");
    fill(Distribution::Geometric, iter.tensor_base(0), params(p), gen, "geometric_");
  }
};

template <typename RNG>
struct LogNormalKernel {
  void operator()(at::TensorIteratorBase& iter, double mean, double std, std::optional<at::Generator> gen) {
    check_dtype(iter.tensor_base(0), false, false, "log_normal_ocl");
    fill(Distribution::LogNormal, iter.tensor_base(0), params(mean, std), gen, "log_normal_");
  }
};

template <typename RNG>
struct CauchyKernel {
  void operator()(at::TensorIteratorBase& iter, double median, double sigma, std::optional<at::Generator> gen) {
    fill(Distribution::Cauchy, iter.tensor_base(0), params(median, sigma), gen, "cauchy_");
  }
};

template <typename RNG>
struct BernoulliKernel {
  void operator()(const at::TensorBase& self, double p, std::optional<at::Generator> gen) {
    check_dtype(self, true, true, "bernoulli_scalar_ocl");
    fill(Distribution::Bernoulli, self, params(p), gen, "bernoulli_");
  }
  void operator()(const at::TensorBase& self, const at::TensorBase& p_, std::optional<at::Generator> gen) {
    check_dtype(self, true, true, "bernoulli_tensor_ocl");
    TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(p_.scalar_type()), "\"bernoulli_tensor_ocl_p_\" not implemented for '",
                                c10::toString(p_.scalar_type()), "'");
    at::Tensor p = at::Tensor(p_).to(self.device());
    launch_random(Distribution::BernoulliTensor, {at::Tensor(self)}, &p, dlprim::RandomParams(), gen, "bernoulli_");
  }
};

dlprim::RandomParams range_params(uint64_t range, int64_t base) {
  dlprim::RandomParams p;
  p.base = base;
  p.range = range;
  return p;
}

template <typename RNG>
struct RandomFromToKernel {
  void operator()(at::TensorIteratorBase& iter, uint64_t range, int64_t base, std::optional<at::Generator> gen) {
    fill(Distribution::IntegerRange, iter.tensor_base(0), range_params(range, base), gen, "random_");
  }
  // The whole int64 range.
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    fill(Distribution::IntegerRange, iter.tensor_base(0), range_params(0, 0), gen, "random_");
  }
};

// random_() without bounds: [0, max] for integers, [0, 2^mantissa digits] for floating types;
// like the CPU, not for the unsigned types wider than 8 bits (random_(from, to) is).
template <typename RNG>
struct RandomKernel {
  void operator()(at::TensorIteratorBase& iter, std::optional<at::Generator> gen) {
    c10::ScalarType t = iter.dtype(0);
    uint64_t range = 0;
    switch (t) {
      case c10::kBool: range = 2; break;
      case c10::kHalf: range = (uint64_t(1) << 11) + 1; break;
      case c10::kBFloat16: range = (uint64_t(1) << 8) + 1; break;
      case c10::kFloat: range = (uint64_t(1) << 24) + 1; break;
      case c10::kDouble: range = (uint64_t(1) << 53) + 1; break;
      case c10::kByte: range = uint64_t(1) << 8; break;
      case c10::kChar: range = uint64_t(1) << 7; break;
      case c10::kShort: range = uint64_t(1) << 15; break;
      case c10::kInt: range = uint64_t(1) << 31; break;
      case c10::kLong: range = uint64_t(1) << 63; break;
      default: TORCH_CHECK_NOT_IMPLEMENTED(false, "\"random_ocl\" not implemented for '", c10::toString(t), "'");
    }
    fill(Distribution::IntegerRange, iter.tensor_base(0), range_params(range, 0), gen, "random_");
  }
};

at::Tensor& uniform_(at::Tensor& self, double from, double to, std::optional<at::Generator> gen) {
  return tmpl::uniform_impl_<UniformKernel, OclGenerator>(self, from, to, gen);
}
at::Tensor& normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return tmpl::normal_impl_<NormalKernel, OclGenerator>(self, mean, std, gen);
}
at::Tensor& exponential_(at::Tensor& self, double lambda, std::optional<at::Generator> gen) {
  return tmpl::exponential_impl_<ExponentialKernel, OclGenerator>(self, lambda, gen);
}
at::Tensor& geometric_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return tmpl::geometric_impl_<GeometricKernel, OclGenerator>(self, p, gen);
}
at::Tensor& log_normal_(at::Tensor& self, double mean, double std, std::optional<at::Generator> gen) {
  return tmpl::log_normal_impl_<LogNormalKernel, OclGenerator>(self, mean, std, gen);
}
at::Tensor& cauchy_(at::Tensor& self, double median, double sigma, std::optional<at::Generator> gen) {
  return tmpl::cauchy_impl_<CauchyKernel, OclGenerator>(self, median, sigma, gen);
}
at::Tensor& bernoulli_scalar_(at::Tensor& self, double p, std::optional<at::Generator> gen) {
  return tmpl::bernoulli_impl_<BernoulliKernel, OclGenerator>(self, p, gen);
}
at::Tensor& bernoulli_tensor_(at::Tensor& self, const at::Tensor& p, std::optional<at::Generator> gen) {
  return tmpl::bernoulli_impl_<BernoulliKernel, OclGenerator>(self, p, gen);
}
at::Tensor& bernoulli_out(const at::Tensor& self, std::optional<at::Generator> gen, at::Tensor& out) {
  return tmpl::bernoulli_out_impl<BernoulliKernel, OclGenerator>(out, self, gen);
}
at::Tensor& random_(at::Tensor& self, std::optional<at::Generator> gen) {
  return tmpl::random_impl<RandomKernel, OclGenerator>(self, gen);
}
at::Tensor& random_from_(at::Tensor& self, int64_t from, std::optional<int64_t> to, std::optional<at::Generator> gen) {
  return tmpl::random_from_to_impl<RandomFromToKernel, OclGenerator>(self, from, to, gen);
}
at::Tensor& random_to_(at::Tensor& self, int64_t to, std::optional<at::Generator> gen) {
  return random_from_(self, 0, to, gen);
}

// normal() with tensor mean and/or std: standard normals scaled and shifted on the device.
at::Tensor& normal_tf_out(const at::Tensor& mean, double std, std::optional<at::Generator> gen, at::Tensor& out) {
  return tmpl::normal_out_impl<NormalKernel, OclGenerator>(out, mean, std, gen);
}
at::Tensor& normal_ft_out(double mean, const at::Tensor& std, std::optional<at::Generator> gen, at::Tensor& out) {
  return tmpl::normal_out_impl<NormalKernel, OclGenerator>(out, mean, std, gen);
}
at::Tensor& normal_tt_out(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen,
                          at::Tensor& out) {
  return tmpl::normal_out_impl<NormalKernel, OclGenerator>(out, mean, std, gen);
}
at::Tensor normal_tf(const at::Tensor& mean, double std, std::optional<at::Generator> gen) {
  return tmpl::normal_impl<NormalKernel, OclGenerator>(mean, std, gen);
}
at::Tensor normal_ft(double mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return tmpl::normal_impl<NormalKernel, OclGenerator>(mean, std, gen);
}
at::Tensor normal_tt(const at::Tensor& mean, const at::Tensor& std, std::optional<at::Generator> gen) {
  return tmpl::normal_impl<NormalKernel, OclGenerator>(mean, std, gen);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("uniform_", TORCH_FN(uniform_));
  m.impl("normal_", TORCH_FN(normal_));
  m.impl("exponential_", TORCH_FN(exponential_));
  m.impl("geometric_", TORCH_FN(geometric_));
  m.impl("log_normal_", TORCH_FN(log_normal_));
  m.impl("cauchy_", TORCH_FN(cauchy_));
  m.impl("bernoulli_.float", TORCH_FN(bernoulli_scalar_));
  m.impl("bernoulli_.Tensor", TORCH_FN(bernoulli_tensor_));
  m.impl("bernoulli.out", TORCH_FN(bernoulli_out));
  m.impl("random_", TORCH_FN(random_));
  m.impl("random_.from", TORCH_FN(random_from_));
  m.impl("random_.to", TORCH_FN(random_to_));
  m.impl("normal.Tensor_float_out", TORCH_FN(normal_tf_out));
  m.impl("normal.float_Tensor_out", TORCH_FN(normal_ft_out));
  m.impl("normal.Tensor_Tensor_out", TORCH_FN(normal_tt_out));
  m.impl("normal.Tensor_float", TORCH_FN(normal_tf));
  m.impl("normal.float_Tensor", TORCH_FN(normal_ft));
  m.impl("normal.Tensor_Tensor", TORCH_FN(normal_tt));
}

} // namespace pytorch_ocl
