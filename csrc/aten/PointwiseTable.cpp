// Builds the pointwise op table (one dlprim::ElementwiseOp per row of PointwiseOps.h) and the
// helpers the wrappers share.
#include "aten/PointwiseTable.h"
#include "aten/PointwiseRegistry.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <dlprim/embedded.h>
#include <torch/version.h>

#include <mutex>
#include <utility>
#include <vector>

namespace pytorch_ocl {

namespace {

// Arity (inputs, params, outputs) of each kind; custom rows spell theirs out.
#define OCL_PW_ARITY_unary 1, 0, 1
#define OCL_PW_ARITY_unary_float 1, 0, 1
#define OCL_PW_ARITY_unary_bool 1, 0, 1
#define OCL_PW_ARITY_binary 2, 0, 1
#define OCL_PW_ARITY_binary_float 2, 0, 1
#define OCL_PW_ARITY_binary_alpha 2, 1, 1
#define OCL_PW_ARITY_comparison 2, 0, 1
#define OCL_PW_ARITY_logical 2, 0, 1
#define OCL_PW_ARITY_act0 1, 0, 1
#define OCL_PW_ARITY_act1 1, 1, 1
#define OCL_PW_ARITY_act2 1, 2, 1
#define OCL_PW_ARITY_act3 1, 3, 1
#define OCL_PW_ARITY_bw0 2, 0, 1
#define OCL_PW_ARITY_bw1 2, 1, 1
#define OCL_PW_ARITY_bw2 2, 2, 1
#define OCL_PW_ARITY_custom(i, p, o) i, p, o

#define OCL_PW_KIND_unary "unary"
#define OCL_PW_KIND_unary_float "unary_float"
#define OCL_PW_KIND_unary_bool "unary_bool"
#define OCL_PW_KIND_binary "binary"
#define OCL_PW_KIND_binary_float "binary_float"
#define OCL_PW_KIND_binary_alpha "binary_alpha"
#define OCL_PW_KIND_comparison "comparison"
#define OCL_PW_KIND_logical "logical"
#define OCL_PW_KIND_act0 "act0"
#define OCL_PW_KIND_act1 "act1"
#define OCL_PW_KIND_act2 "act2"
#define OCL_PW_KIND_act3 "act3"
#define OCL_PW_KIND_bw0 "bw0"
#define OCL_PW_KIND_bw1 "bw1"
#define OCL_PW_KIND_bw2 "bw2"
#define OCL_PW_KIND_custom(i, p, o) "custom"

#define OCL_PW_ANY 0
#define OCL_PW_SINCE(major, minor) ((major) * 100 + (minor))

// The kernel files of each prelude: pointwise.cl, then the prelude's own.
std::vector<std::string> prelude_files(const std::string& which) {
  static const std::vector<std::pair<std::string, std::vector<const char*>>> preludes = {
      {"basic", {}},
      {"special", {"special"}},
      {"bessel", {"special_coeffs", "special_bessel"}},
      {"normal", {"special_coeffs", "special_normal"}},
      {"gamma", {"special_gamma"}},
      {"poly", {"special_poly"}},
      {"quant", {"fake_quant"}},
  };
  for (const auto& p : preludes)
    if (p.first == which) {
      std::vector<std::string> files{"pointwise"};
      files.insert(files.end(), p.second.begin(), p.second.end());
      return files;
    }
  TORCH_INTERNAL_ASSERT(false, "pointwise table: unknown prelude ", which);
}

std::string prelude_text(const char* which) {
  std::string s;
  for (const auto& file : prelude_files(which)) s += dlprim::kernel_source(file);
  return s;
}

struct Arity {
  int inputs, params, outputs;
};

PwRow make_row(const char* id, const char* kind, const char* aten, uint64_t dtypes, const char* prelude,
               int since, Arity a, const char* body) {
  return PwRow{dlprim::ElementwiseOp{id, body, prelude_text(prelude), a.outputs, a.inputs, a.params}, kind, aten,
               dtypes, since, prelude};
}

const std::vector<PwRow>& table() {
  static const std::vector<PwRow> rows = {
#define OCL_PW_ROW(kind, id, aten, dtypes, prelude, versions, body)                                         \
  make_row(#id, OCL_PW_KIND_##kind, aten, dtypes, #prelude, OCL_PW_##versions, Arity{OCL_PW_ARITY_##kind}, \
           body),
      OCL_POINTWISE_OPS(OCL_PW_ROW)
#undef OCL_PW_ROW
  };
  return rows;
}

std::mutex registry_mutex;
std::vector<std::vector<std::string>>& registrations() {
  static std::vector<std::vector<std::string>> r(PW_COUNT);
  return r;
}

} // namespace

const PwRow& pw_row(PwId id) { return table()[id]; }

const PwRow* pw_find(const std::string& id) {
  for (const PwRow& row : table())
    if (row.op.name == id) return &row;
  return nullptr;
}

std::vector<std::string> pw_prelude_files(const PwRow& row) { return prelude_files(row.prelude); }

bool pw_enabled(PwId id) {
  return TORCH_VERSION_MAJOR * 100 + TORCH_VERSION_MINOR >= pw_row(id).since;
}

void pw_check_dtype(PwId id, c10::ScalarType t) {
  const PwRow& row = pw_row(id);
  TORCH_CHECK_NOT_IMPLEMENTED(static_cast<int>(t) < 64 && (row.dtypes & dt_bit(t)), "\"", row.op.name,
                              "_ocl\" not implemented for '", c10::toString(t), "'");
}

void pw_launch(PwId id, at::TensorIteratorBase& iter, c10::ScalarType compute,
               const std::vector<dlprim::Scalar>& params) {
  launch_elementwise(pw_row(id).op, iter, compute, params);
}

void pw_launch(PwId id, at::TensorIteratorBase& iter, const std::vector<dlprim::Scalar>& params) {
  pw_launch(id, iter, iter.common_dtype(), params);
}

std::string pw_structured_form(const char* out_overload, bool inplace) {
  std::string full(out_overload);
  size_t dot = full.find('.');
  std::string name = full.substr(0, dot), overload = dot == std::string::npos ? "" : full.substr(dot + 1);
  std::vector<std::string> candidates;
  if (overload == "out")
    candidates = {"", "Tensor"};
  else if (overload == "grad_input")
    candidates = {""};
  else if (overload == "OutTensor")
    candidates = {"Tensor"};
  else if (overload.size() > 4 && overload.compare(overload.size() - 4, 4, "_out") == 0)
    candidates = {overload.substr(0, overload.size() - 4)};
  if (inplace) name += "_";
  for (const std::string& c : candidates) {
    auto op = c10::Dispatcher::singleton().findSchema(c10::OperatorName("aten::" + name, c));
    if (op && op->hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutogradNonFunctional) &&
        !op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd))
      return c.empty() ? name : name + "." + c;
  }
  return "";
}

void pw_note_registration(PwId id, const char* overload) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  registrations()[id].push_back(overload);
}

std::vector<PointwiseRowInfo> pointwise_op_table() {
  std::vector<PointwiseRowInfo> out;
  std::lock_guard<std::mutex> lock(registry_mutex);
  for (int i = 0; i < PW_COUNT; ++i) {
    const PwRow& row = pw_row(static_cast<PwId>(i));
    std::vector<std::string> dtypes;
    for (int t = 0; t < 64; ++t)
      if (row.dtypes & (uint64_t(1) << t)) dtypes.push_back(c10::toString(static_cast<c10::ScalarType>(t)));
    out.emplace_back(row.op.name, row.kind, row.aten, dtypes, registrations()[i]);
  }
  return out;
}

} // namespace pytorch_ocl
