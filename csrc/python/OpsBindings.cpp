// pytorch_ocl._C entry points of the GEMM / convolution kernels: direct calls used by
// pytorch_ocl.ops, plus what tests and benchmarks ask about tuning decisions.
#include "aten/Conv.h"
#include "aten/GemmRunner.h"
#include "aten/PointwiseTable.h"
#include "core/Device.h"
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/ops/empty.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/autotune.h>
#include <dlprim/conv.h>
#include <dlprim/embedded.h>
#include <dlprim/fft.h>
#include <dlprim/gemm.h>
#include <pybind11/functional.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

namespace py = pybind11;

namespace pytorch_ocl {

// Attention.cpp: the mask block flags of an SDPA call (tests).
at::Tensor attention_mask_blocks_for_test(const at::Tensor& q, const at::Tensor& k, const at::Tensor& mask);

namespace {

// a [..., M, K] @ b [..., K, N] with equal (or one-sided absent) batch dims: one GEMM call.
at::Tensor ops_matmul(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() >= 2 && b.dim() >= 2, "pytorch_ocl.ops.matmul: operands must have at least 2 dims, got ",
              a.dim(), " and ", b.dim());
  TORCH_CHECK(a.size(-1) == b.size(-2), "pytorch_ocl.ops.matmul: shapes cannot be multiplied (", a.sizes(), " and ",
              b.sizes(), ")");
  check_ocl(a, "pytorch_ocl.ops.matmul", "a");
  check_ocl(b, "pytorch_ocl.ops.matmul", "b");
  TORCH_CHECK(a.scalar_type() == b.scalar_type(), "pytorch_ocl.ops.matmul: dtypes differ (", a.scalar_type(),
              " and ", b.scalar_type(), ")");
  auto batch_a = a.sizes().slice(0, a.dim() - 2), batch_b = b.sizes().slice(0, b.dim() - 2);
  std::vector<int64_t> batch(batch_a.begin(), batch_a.end());
  if (batch_a.empty()) batch.assign(batch_b.begin(), batch_b.end());
  TORCH_CHECK(batch_a.empty() || batch_b.empty() || batch_a.equals(batch_b),
              "pytorch_ocl.ops.matmul: batch dims must match (", batch_a, " vs ", batch_b, ")");
  int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1), Z = 1;
  for (int64_t d : batch) Z *= d;
  // Flatten the batch dims (a view for contiguous batches; reshape copies otherwise).
  at::Tensor a3 = batch_a.empty() ? a.unsqueeze(0).expand({Z, M, K}) : a.reshape({Z, M, K});
  at::Tensor b3 = batch_b.empty() ? b.unsqueeze(0).expand({Z, K, N}) : b.reshape({Z, K, N});
  std::vector<int64_t> out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  at::Tensor out = at::empty(out_shape, a.options());
  c10::DeviceGuard guard(a.device());
  GemmCall c;
  c.op = "pytorch_ocl.ops.matmul";
  c.a = a3;
  c.b = b3;
  c.out = out.view({Z, M, N});
  run_gemm(c);
  return out;
}

// The kernel `gemm` would run for this problem on `device` (tuning it first if needed).
std::string gemm_plan(int device, int64_t M, int64_t N, int64_t K, bool trans_a, bool trans_b, int64_t batch,
                      const std::string& dtype) {
  dlprim::Gemm g;
  dlprim::DType dt = dlprim::DType::F32;
  if (dtype == "float64") dt = dlprim::DType::F64;
  else if (dtype == "float16") dt = dlprim::DType::F16;
  else if (dtype == "bfloat16") dt = dlprim::DType::BF16;
  else TORCH_CHECK(dtype == "float32", "gemm_plan: unknown dtype ", dtype);
  g.dtype = dt;
  g.fp32_math = matmul_fp32_math();
  g.M = M;
  g.N = N;
  g.K = K;
  g.batch = batch;
  g.a = trans_a ? dlprim::GemmMatrix{nullptr, 0, 1, M, M * K, 0, 0} : dlprim::GemmMatrix{nullptr, 0, K, 1, M * K, 0, 0};
  g.b = trans_b ? dlprim::GemmMatrix{nullptr, 0, 1, K, K * N, 0, 0} : dlprim::GemmMatrix{nullptr, 0, N, 1, K * N, 0, 0};
  g.c = {nullptr, 0, N, 1, M * N, 0, 0};
  std::string out;
  OCL_DLPRIM_CALL("gemm_plan", out = dlprim::gemm_plan_description(context(device), g));
  return out;
}

dlprim::DType dtype_named(const std::string& dtype, const char* op) {
  if (dtype == "float64") return dlprim::DType::F64;
  if (dtype == "float16") return dlprim::DType::F16;
  if (dtype == "bfloat16") return dlprim::DType::BF16;
  TORCH_CHECK(dtype == "float32", op, ": unknown dtype ", dtype);
  return dlprim::DType::F32;
}

// The algorithm each pass of a conv2d layer runs on `device` (contiguous NCHW tensors; tuning
// it first if needed): {"forward": ..., "backward_data": ..., "backward_weight": ...}.
py::dict conv_algorithms(int device, std::vector<int64_t> input, std::vector<int64_t> weight, std::vector<int64_t> stride,
                         std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups,
                         const std::string& dtype) {
  TORCH_CHECK(input.size() == 4 && weight.size() == 4 && stride.size() == 2 && padding.size() == 2 &&
                  dilation.size() == 2, "conv_algorithms: expected 4-D shapes and pairs");
  dlprim::ConvShape s;
  s.fp32_math = conv_fp32_math();
  s.N = input[0];
  s.C = input[1];
  s.H = input[2];
  s.W = input[3];
  s.K = weight[0];
  s.KH = weight[2];
  s.KW = weight[3];
  s.sh = stride[0];
  s.sw = stride[1];
  s.ph = padding[0];
  s.pw = padding[1];
  s.dh = dilation[0];
  s.dw = dilation[1];
  s.groups = groups;
  s.OH = dlprim::conv_output_size(s.H, s.KH, s.sh, s.ph, s.dh);
  s.OW = dlprim::conv_output_size(s.W, s.KW, s.sw, s.pw, s.dw);
  TORCH_CHECK(s.OH > 0 && s.OW > 0 && s.C == weight[1] * groups, "conv_algorithms: invalid geometry");
  dlprim::DType dt = dtype_named(dtype, "conv_algorithms");
  dlprim::ConvTensor x{nullptr, 0, s.C * s.H * s.W, s.H * s.W, s.W, 1};
  dlprim::ConvTensor y{nullptr, 0, s.K * s.OH * s.OW, s.OH * s.OW, s.OW, 1};
  dlprim::Context& ctx = context(device);
  py::dict d;
  std::string f, bd, bw;
  OCL_DLPRIM_CALL("conv_algorithms", {
    f = dlprim::conv2d_algorithm(ctx, dlprim::ConvPass::Forward, s, dt, x, y);
    bd = dlprim::conv2d_algorithm(ctx, dlprim::ConvPass::BackwardData, s, dt, x, y);
    bw = dlprim::conv2d_algorithm(ctx, dlprim::ConvPass::BackwardWeight, s, dt, x, y);
  });
  d["forward"] = f;
  d["backward_data"] = bd;
  d["backward_weight"] = bw;
  return d;
}

} // namespace

void init_ops_bindings(py::module& m) {
  m.def("ops_matmul", &ops_matmul);
  m.def("ops_conv2d",
        [](const at::Tensor& x, const at::Tensor& w, const std::optional<at::Tensor>& b, std::vector<int64_t> stride,
           std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups) {
          return convolution(x, w, b, stride, padding, dilation, false, {0}, groups);
        });
  m.def("ops_conv2d_backward",
        [](const at::Tensor& gy, const at::Tensor& x, const at::Tensor& w, std::vector<int64_t> stride,
           std::vector<int64_t> padding, std::vector<int64_t> dilation, int64_t groups, std::array<bool, 3> mask) {
          return convolution_backward(gy, x, w, stride, padding, dilation, false, {0}, groups, mask);
        });
  m.def("gemm_plan", &gemm_plan, py::arg("device"), py::arg("M"), py::arg("N"), py::arg("K"),
        py::arg("trans_a") = false, py::arg("trans_b") = false, py::arg("batch") = 1, py::arg("dtype") = "float32");
  m.def("conv_algorithms", &conv_algorithms, py::arg("device"), py::arg("input"), py::arg("weight"),
        py::arg("stride"), py::arg("padding"), py::arg("dilation"), py::arg("groups"), py::arg("dtype") = "float32");
  m.def("_attention_mask_blocks", &attention_mask_blocks_for_test, py::arg("query"), py::arg("key"),
        py::arg("attn_mask"));
  m.def("autotune_decisions", &dlprim::autotune_decisions);
  m.def("autotune_stats", [] {
    auto s = dlprim::autotune_stats();
    py::dict d;
    d["timed"] = s.timed;
    d["loaded"] = s.loaded;
    d["deferred"] = s.deferred;
    d["deferred_tuned"] = s.deferred_tuned;
    return d;
  });
  m.def("autotune_reset_memory", &dlprim::autotune_reset_memory);
  // The project's tuner for launch choices made in Python (inductor/tuning.py): the decision in memory, else the
  // stored one, else the fastest by time_us(candidate) (microseconds), stored in the kernel cache.
  m.def("_autotune_select",
        [](int device, const std::string& family, const std::string& shape_class,
           const std::vector<std::string>& candidates, const std::string& fallback,
           const std::function<double(const std::string&)>& time_us) {
          check_device_index(device);
          return dlprim::autotune_select(context(device), family, shape_class, candidates, fallback, time_us);
        },
        py::arg("device"), py::arg("family"), py::arg("shape_class"), py::arg("candidates"), py::arg("fallback"),
        py::arg("time_us"));
  // The VkFFT plan cache (torch.backends.cuda.cufft_plan_cache's size / max_size / clear).
  m.def("_fft_plan_cache_size", &dlprim::fft_plan_cache_size);
  m.def("_fft_plan_cache_max_size", &dlprim::fft_plan_cache_max);
  m.def("_fft_plan_cache_set_max_size", &dlprim::fft_plan_cache_set_max);
  m.def("_fft_plan_cache_clear", &dlprim::fft_plan_cache_clear);
  // A pointwise table row for torch.compile's kernels (inductor/special.py): (kernel files of its numerics, body,
  // inputs, params), or None for an unknown id.
  m.def("_pointwise_row", [](const std::string& id) -> py::object {
    const PwRow* row = pw_find(id);
    if (!row) return py::none();
    return py::make_tuple(pw_prelude_files(*row), row->op.body, row->op.n_inputs, row->op.n_params);
  });
  m.def("_kernel_source", [](const std::string& name) { return dlprim::kernel_source(name); });
}

} // namespace pytorch_ocl
