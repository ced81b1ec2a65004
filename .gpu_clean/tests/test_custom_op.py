"""A user kernel registered as a torch custom op: autograd, torch.compile(aot_eager), profiler."""
import torch
from torch.testing import assert_close

import pytorch_ocl
from pytorch_ocl import Kernel, float32

SCALE = Kernel("""
__kernel void ocl_test_scale(__global float* y, ulong yo, __global const float* x, ulong xo, float a) {
    size_t i = get_global_id(0);
    y[yo + i] = a * x[xo + i];
}
""", "ocl_test_scale")


def _scale_fake(x, a):
    return torch.empty_like(x)


def _setup(ctx, inputs, output):
    ctx.a = inputs[1]


def _backward(ctx, grad):
    return scale(grad.contiguous(), ctx.a), None


@pytorch_ocl.library.custom_op("ocl_test::scale", fake=_scale_fake, backward=_backward, setup_context=_setup)
def scale(x: torch.Tensor, a: float) -> torch.Tensor:
    y = torch.empty_like(x)
    if x.numel():
        SCALE(y, x.contiguous(), float32(a), global_size=x.numel())
    return y


def test_forward_and_backward_match_cpu():
    x = torch.randn(37, 5)
    xo = x.to("ocl").requires_grad_()
    y = scale(xo, 1.5)
    (y * y).sum().backward()
    assert_close(y.detach().cpu(), 1.5 * x)
    assert_close(xo.grad.cpu(), 2 * 1.5 * 1.5 * x)


def test_inside_a_module_with_torch_compile_aot_eager():
    class M(torch.nn.Module):
        def forward(self, x):
            return scale(x, 2.0) + x

    x = torch.randn(64, device="ocl", requires_grad=True)
    compiled = torch.compile(M(), backend="aot_eager", fullgraph=True)
    y = compiled(x)
    y.sum().backward()
    assert_close(y.detach().cpu(), 3 * x.detach().cpu())
    assert_close(x.grad.cpu(), torch.full((64,), 3.0))


def test_appears_in_the_kernel_profiler_and_torch_profiler():
    x = torch.randn(128, device="ocl")
    scale(x, 1.0)
    with pytorch_ocl.profiler.profile() as prof:
        scale(x, 3.0)
    assert [r[0] for r in prof.records] == ["ocl_test_scale"]
    with torch.profiler.profile() as tprof:
        scale(x, 3.0)
    assert any("ocl_test::scale" in e.name for e in tprof.events())
