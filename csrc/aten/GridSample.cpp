// grid_sampler_2d / grid_sampler_3d and their backward (F.grid_sample, F.affine_grid users) on
// dlprim's grid_sample kernels, with ATen's own argument checks (GridSamplerUtils.h) so errors read
// as on the CPU. Floating dtypes; the input gradient is an atomic scatter as on CUDA (so it raises
// torch's nondeterminism alert), accumulated in float32 for float16/bfloat16 and rounded once.
#include "core/Errors.h"
#include "core/TensorUtils.h"

#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/GridSamplerUtils.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/DeviceGuard.h>
#include <dlprim/grid_sample.h>
#include <torch/library.h>

namespace pytorch_ocl {

namespace {

dlprim::GridOperand operand(const at::Tensor& t, bool is_grid = false) {
  dlprim::GridOperand o;
  BufferRef b = buffer_of(t);
  o.mem = b.mem;
  o.offset = b.offset / t.itemsize();
  // 4-D tensors (2-D sampling) get a unit depth: (N, C, 1, H, W) / grid (N, 1, H, W, 2).
  bool four = t.dim() == 4;
  int unit = is_grid ? 1 : 2;
  for (int i = 0, d = 0; i < 5; ++i) {
    if (four && i == unit) {
      o.s[i] = 0;
      continue;
    }
    o.s[i] = t.stride(d++);
  }
  return o;
}

dlprim::GridSampleShape shape_of(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int64_t pad,
                                 bool align, const char* op) {
  TORCH_CHECK(mode >= 0 && mode <= 2, op, ": unknown interpolation mode ", mode);
  TORCH_CHECK(pad >= 0 && pad <= 2, op, ": unknown padding mode ", pad);
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), op, ": expected input and grid to have the same dtype, "
              "but got input ", input.scalar_type(), " and grid ", grid.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(input.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(input.scalar_type()), "' on ocl");
  for (int64_t i = 0; i < input.dim(); ++i)
    TORCH_CHECK(input.size(i) < (int64_t(1) << 31) && grid.size(i) < (int64_t(1) << 31), op,
                ": sizes beyond 2^31 are not supported");
  dlprim::GridSampleShape g;
  bool three = input.dim() == 5;
  g.dims = three ? 3 : 2;
  g.N = input.size(0);
  g.C = input.size(1);
  g.D = three ? input.size(2) : 1;
  g.H = input.size(-2);
  g.W = input.size(-1);
  g.OD = three ? grid.size(1) : 1;
  g.OH = grid.size(-3);
  g.OW = grid.size(-2);
  g.mode = static_cast<int>(mode);
  g.pad = static_cast<int>(pad);
  g.align_corners = align;
  return g;
}

at::Tensor forward(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int64_t pad, bool align,
                   const char* op) {
  check_ocl(input, op, "input");
  check_ocl(grid, op, "grid");
  dlprim::GridSampleShape g = shape_of(input, grid, mode, pad, align, op);
  std::vector<int64_t> out_shape{g.N, g.C};
  for (int64_t i = 1; i < grid.dim() - 1; ++i) out_shape.push_back(grid.size(i));
  at::Tensor out = at::empty(out_shape, input.options());
  if (out.numel() == 0) return out;
  c10::DeviceGuard guard(input.device());
  int device = input.device().index();
  cl_command_queue q = current_queue(device);
  OCL_DLPRIM_CALL(op, dlprim::grid_sample_forward(context(device), q, to_dlprim(input.scalar_type(), op), g,
                                                  operand(input), operand(grid, true), operand(out)));
  note_enqueued(q);
  return out;
}

std::tuple<at::Tensor, at::Tensor> backward(const at::Tensor& grad_output, const at::Tensor& input,
                                            const at::Tensor& grid, int64_t mode, int64_t pad, bool align,
                                            std::array<bool, 2> output_mask, const char* op) {
  check_ocl(grad_output, op, "grad_output");
  check_ocl(input, op, "input");
  check_ocl(grid, op, "grid");
  dlprim::GridSampleShape g = shape_of(input, grid, mode, pad, align, op);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), op, ": grad_output has dtype ",
              grad_output.scalar_type(), ", expected ", input.scalar_type());
  // A mismatched grad_output would be read out of bounds.
  std::vector<int64_t> expected{input.size(0), input.size(1)};
  for (int64_t i = 1; i < grid.dim() - 1; ++i) expected.push_back(grid.size(i));
  TORCH_CHECK_VALUE(grad_output.sizes() == at::IntArrayRef(expected), "grid_sampler(): expected grad_output to have "
                    "sizes ", at::IntArrayRef(expected), " but got grad_output with sizes ", grad_output.sizes());
  bool want_input = output_mask[0];
  if (want_input) at::globalContext().alertNotDeterministic(op);
  c10::ScalarType t = input.scalar_type();
  bool narrow = t == c10::kHalf || t == c10::kBFloat16;
  at::Tensor acc = want_input ? at::zeros(input.sizes(), input.options().dtype(narrow ? c10::kFloat : t)) : at::Tensor();
  at::Tensor grad_grid = at::empty(grid.sizes(), grid.options());
  if (grid.numel() > 0) {
    c10::DeviceGuard guard(input.device());
    int device = input.device().index();
    dlprim::Context& ctx = context(device);
    dlprim::DType dt = to_dlprim(t, op);
    TORCH_CHECK(!want_input || dlprim::grid_sample_backward_supported(ctx, dt), op,
                ": the float64 input gradient needs 64-bit atomics (cl_khr_int64_base_atomics), which this device "
                "lacks");
    dlprim::Buffer accb, ggb;
    if (acc.defined() && acc.numel()) {
      BufferRef b = buffer_of(acc);
      accb = {b.mem, b.offset / acc.itemsize()};
    }
    BufferRef gb = buffer_of(grad_grid);
    ggb = {gb.mem, gb.offset / grad_grid.itemsize()};
    cl_command_queue q = current_queue(device);
    OCL_DLPRIM_CALL(op, dlprim::grid_sample_backward(ctx, q, dt, g, want_input && acc.numel() > 0, true,
                                                     operand(grad_output), operand(input), operand(grid, true), accb, ggb));
    note_enqueued(q);
  }
  at::Tensor grad_input = acc.defined() && narrow ? acc.to(t) : acc;
  return {grad_input, grad_grid};
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int64_t pad, bool align) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_2d(input, grid);
  return forward(input, grid, mode, pad, align, "grid_sampler_2d");
}

at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t mode, int64_t pad, bool align) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_3d(input, grid, mode);
  return forward(input, grid, mode, pad, align, "grid_sampler_3d");
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t mode, int64_t pad,
                                                            bool align, std::array<bool, 2> output_mask) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_2d(input, grid);
  return backward(grad_output, input, grid, mode, pad, align, output_mask, "grid_sampler_2d_backward");
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_3d_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t mode, int64_t pad,
                                                            bool align, std::array<bool, 2> output_mask) {
  at::native::check_grid_sampler_common(input, grid);
  at::native::check_grid_sampler_3d(input, grid, mode);
  return backward(grad_output, input, grid, mode, pad, align, output_mask, "grid_sampler_3d_backward");
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", TORCH_FN(grid_sampler_2d));
  m.impl("grid_sampler_2d_backward", TORCH_FN(grid_sampler_2d_backward));
  m.impl("grid_sampler_3d", TORCH_FN(grid_sampler_3d));
  m.impl("grid_sampler_3d_backward", TORCH_FN(grid_sampler_3d_backward));
}

} // namespace pytorch_ocl
