// The compiled form of the pointwise op table (PointwiseOps.h) and the helpers every wrapper
// uses: dtype checks, launching a row over a TensorIterator, recording registrations.
#pragma once
#include "aten/Launch.h"
#include "aten/PointwiseOps.h"

#include <ATen/TensorIterator.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <cstdint>
#include <string>
#include <vector>

namespace pytorch_ocl {

// Input dtype sets of the table's `dtypes` column (bit i = c10::ScalarType i).
constexpr uint64_t dt_bit(c10::ScalarType t) { return uint64_t(1) << static_cast<int>(t); }
constexpr uint64_t DT_BOOL = dt_bit(c10::kBool);
constexpr uint64_t DT_INT = dt_bit(c10::kByte) | dt_bit(c10::kChar) | dt_bit(c10::kShort) | dt_bit(c10::kInt) |
                            dt_bit(c10::kLong);
constexpr uint64_t DT_FLT = dt_bit(c10::kHalf) | dt_bit(c10::kBFloat16) | dt_bit(c10::kFloat) | dt_bit(c10::kDouble);
constexpr uint64_t DT_INTB = DT_INT | DT_BOOL;
constexpr uint64_t DT_NUM = DT_INT | DT_FLT;
constexpr uint64_t DT_ALL = DT_NUM | DT_BOOL;
// Float and double kernels only (integers and bool promote to float): half/bfloat16 raise.
constexpr uint64_t DT_NOHALF = DT_INTB | dt_bit(c10::kFloat) | dt_bit(c10::kDouble);

enum PwId : int {
#define OCL_PW_ENUM(kind, id, aten, dtypes, prelude, versions, body) PW_##id,
  OCL_POINTWISE_OPS(OCL_PW_ENUM)
#undef OCL_PW_ENUM
  PW_COUNT
};

struct PwRow {
  dlprim::ElementwiseOp op;
  const char* kind;
  const char* aten;
  uint64_t dtypes;
  int since;  // torch version as major * 100 + minor; 0 = any
  const char* prelude;  // the prelude column: which kernel files hold the row's numerics
};

const PwRow& pw_row(PwId id);
// The row named `id` (the table's id column), or nullptr.
const PwRow* pw_find(const std::string& id);
// The dlprim kernel files a row's body needs, in order (the generator puts them after "common" and the type
// macros): torch.compile's kernels call the same numerics (pytorch_ocl/inductor/special.py).
std::vector<std::string> pw_prelude_files(const PwRow& row);

// Raises torch's "not implemented for 'T'" error when `t` is not in the row's dtype set.
void pw_check_dtype(PwId id, c10::ScalarType t);

// Launches row `id` over `iter` (outputs first) computing in `compute` (default: the
// iterator's common dtype).
void pw_launch(PwId id, at::TensorIteratorBase& iter, const std::vector<dlprim::Scalar>& params = {});
void pw_launch(PwId id, at::TensorIteratorBase& iter, c10::ScalarType compute,
               const std::vector<dlprim::Scalar>& params);

// Whether row `id` applies to the torch this was built against.
bool pw_enabled(PwId id);

// m.impl(overload, fn) for row `id`, remembered for pytorch_ocl._C._pointwise_ops().
void pw_note_registration(PwId id, const char* overload);
template <class Fn>
void pw_impl(torch::Library& m, PwId id, const char* overload, Fn&& fn) {
  if (!pw_enabled(id)) return;
  m.impl(overload, std::forward<Fn>(fn));
  pw_note_registration(id, overload);
}

// What a runner returns: the tensor its iterator allocated, or an undefined tensor when the
// caller passed `out` (which it already holds). Copying a tensor that Python owns takes the GIL
// to adjust the Python object's count: about a tenth of the host time of a small op.
inline at::Tensor pw_result(const at::Tensor& out, const at::TensorIteratorBase& iter) {
  return out.defined() ? at::Tensor() : iter.output();
}

// Torch's own functional and in-place forms of a structured op (e.g. add.Tensor, add_.Tensor
// for add.out) build the op's TensorIterator in meta() and then dispatch to .out, which builds
// it again: a second dispatch and a second build per call, about a fifth of the host time of
// x.add_(1). So every row also registers those forms, from one runner
//   at::Tensor run(const at::Tensor& out, const at::Tensor& self, Rest... rest)
// that returns the result (out, or the tensor it allocated when out is undefined).
template <class Run, Run run>
struct PwForms;
template <class... Rest, at::Tensor (*run)(const at::Tensor&, const at::Tensor&, Rest...)>
struct PwForms<at::Tensor (*)(const at::Tensor&, const at::Tensor&, Rest...), run> {
  static at::Tensor& out(const at::Tensor& self, Rest... rest, at::Tensor& out) {
    run(out, self, rest...);
    return out;
  }
  static at::Tensor functional(const at::Tensor& self, Rest... rest) { return run(at::Tensor(), self, rest...); }
  static at::Tensor& inplace(at::Tensor& self, Rest... rest) {
    run(self, self, rest...);
    return self;
  }
};

// The functional ("add.Tensor") or in-place ("add_.Tensor") overload of `out_overload`
// ("add.out"), or "" when torch has none that runs through .out (only forms whose kernel is the
// generated CompositeExplicitAutogradNonFunctional one qualify: a backend kernel on a
// CompositeImplicitAutograd op would hide its autograd formula).
std::string pw_structured_form(const char* out_overload, bool inplace);

// Registers `out_overload` and its structured functional and in-place forms for row `id`.
template <class Forms>
void pw_impl_forms(torch::Library& m, PwId id, const char* out_overload) {
  pw_impl(m, id, out_overload, TORCH_FN(Forms::out));
  std::string functional = pw_structured_form(out_overload, false);
  if (!functional.empty()) pw_impl(m, id, functional.c_str(), TORCH_FN(Forms::functional));
  std::string inplace = pw_structured_form(out_overload, true);
  if (!inplace.empty()) pw_impl(m, id, inplace.c_str(), TORCH_FN(Forms::inplace));
}
#define OCL_PW_FORMS(run) PwForms<decltype(&run), &run>

inline dlprim::Scalar pw_scalar(double v) { return dlprim::Scalar::floating(v); }

} // namespace pytorch_ocl
