// isin (generate()'s stop-token and special-token checks run it every step): one index-family
// kernel (dl_index_isin in kernels/index.cl) that scans the test elements linearly when they are
// few, or binary-searches them after a device sort when they are many. The tensor/scalar forms
// are what the CPU makes of them: eq/ne against the scalar, or a wrapped-number tensor.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/ScalarOps.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/isin.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/sort.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/index.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

// Above this many test elements a sort (a few launches) beats each element scanning them all.
constexpr int64_t kLinearScanMax = 64;

// The CPU's dtype rule (check_for_unsupported_isin_dtype), so both devices reject the same calls.
void check_isin_dtype(c10::ScalarType t) {
  TORCH_CHECK(t != c10::kBool && !c10::isComplexType(t), "Unsupported input type encountered for isin(): ", t);
}

dlprim::DevPtr ptr_of(const at::Tensor& t) {
  BufferRef b = buffer_of(t);
  return {b.mem, b.offset / t.itemsize()};
}

at::Tensor& isin_out(const at::Tensor& elements, const at::Tensor& test_elements, bool assume_unique, bool invert,
                     at::Tensor& out) {
  check_ocl(elements, "isin", "elements");
  check_ocl(test_elements, "isin", "test_elements");
  TORCH_CHECK(test_elements.device() == elements.device(), "isin: expected elements and test_elements on one device",
              " but got ", elements.device(), " and ", test_elements.device());
  check_isin_dtype(elements.scalar_type());
  check_isin_dtype(test_elements.scalar_type());
  TORCH_CHECK(out.scalar_type() == c10::kBool, "isin: expected out to have dtype Bool but got ", out.scalar_type());
  at::native::resize_output(out, elements.sizes());
  if (elements.numel() == 0) return out;
  if (test_elements.numel() == 0) return out.fill_(invert);
  c10::DeviceGuard guard(elements.device());
  // Test elements are not a TensorIterator operand, so promote by hand (as the CPU does).
  c10::ScalarType common = at::result_type(elements, test_elements);
  at::Tensor values = elements.to(common).contiguous();
  at::Tensor test = test_elements.to(common).reshape({-1});
  bool sorted = test.numel() > kLinearScanMax;
  // assume_unique changes nothing here: duplicates cost a search step at most.
  test = sorted ? std::get<0>(at::sort(test)) : test.contiguous();
  at::Tensor result = out.is_contiguous() ? out : at::empty(elements.sizes(), out.options());
  int device = elements.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL("isin", dlprim::index_isin(context(device), q, to_dlprim(common, "isin"),
                                             static_cast<uint64_t>(values.numel()), ptr_of(values), ptr_of(test),
                                             test.numel(), sorted, invert, ptr_of(result)));
  note_enqueued(q);
  if (!result.is_same(out)) out.copy_(result);
  return out;
}

at::Tensor& isin_tensor_scalar_out(const at::Tensor& elements, const c10::Scalar& test_element, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  check_ocl(elements, "isin", "elements");
  check_isin_dtype(elements.scalar_type());
  check_isin_dtype(test_element.type());
  TORCH_CHECK(out.scalar_type() == c10::kBool, "isin: expected out to have dtype Bool but got ", out.scalar_type());
  return invert ? at::ne_out(out, elements, test_element) : at::eq_out(out, elements, test_element);
}

at::Tensor& isin_scalar_tensor_out(const c10::Scalar& element, const at::Tensor& test_elements, bool assume_unique,
                                   bool invert, at::Tensor& out) {
  check_ocl(test_elements, "isin", "test_elements");
  check_isin_dtype(element.type());
  // A wrapped number on the device: it takes the test elements' dtype in promotion, as on the CPU.
  return isin_out(at::native::wrapped_scalar_tensor(element, test_elements.device()), test_elements, assume_unique,
                  invert, out);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("isin.Tensor_Tensor_out", TORCH_FN(isin_out));
  m.impl("isin.Tensor_Scalar_out", TORCH_FN(isin_tensor_scalar_out));
  m.impl("isin.Scalar_Tensor_out", TORCH_FN(isin_scalar_tensor_out));
}

} // namespace pytorch_ocl
