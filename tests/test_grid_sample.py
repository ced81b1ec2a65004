"""grid_sample (grid_sampler_2d / grid_sampler_3d and their backward, GridSample.cpp +
kernels/grid_sample.cl) against float64 CPU references: every interpolation x padding x
align_corners combination, forward and both gradients, grids reaching outside the image,
non-contiguous operands, the 16-bit dtypes and float64, zero-size inputs, the CPU's errors, and
the OpInfo samples.

The grid gradient sums products over channels and corners, amplified by W/2 (the unnormalising
factor): the CPU's own float32 result differs from the float64 truth by ~1e-6 of the gradient's
magnitude on the large OpInfo samples, beyond assert_close's float32 default, so everything here is
compared with float64 and a tolerance of the dtype's rounding times that magnitude."""
import itertools

import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named

DEV = "ocl:0"
TOL = {torch.float32: 2e-5, torch.float64: 1e-10, torch.float16: 4e-3, torch.bfloat16: 3e-2}


def close(got, ref, dtype):
    tol = TOL[dtype] * (ref.abs().max().item() + 1)
    torch.testing.assert_close(got.detach().cpu().double(), ref.detach().double(), rtol=TOL[dtype], atol=tol)


def run(x, grid, dtype=torch.float32, layout=None, **kw):
    """grid_sample on ocl (dtype) vs float64 on the CPU from the dtype-rounded operands, forward and the
    gradients of input and grid. layout 'strided': both operands are non-contiguous views."""
    x, grid = x.to(dtype), grid.to(dtype)
    xr, gr = x.double().clone().requires_grad_(), grid.double().clone().requires_grad_()
    y = F.grid_sample(xr, gr, **kw)
    gy = torch.randn_like(y).to(dtype)
    y.backward(gy.double())
    xd, gd = x.to(DEV), grid.to(DEV)
    if layout == "strided":
        xd = xd.transpose(-1, -2).contiguous().transpose(-1, -2)
        gd = gd.movedim(-1, 0).contiguous().movedim(0, -1)
        assert not xd.is_contiguous() and not gd.is_contiguous()
    xd.requires_grad_()
    gd.requires_grad_()
    yd = F.grid_sample(xd, gd, **kw)
    assert yd.dtype == dtype and yd.shape == y.shape
    yd.backward(gy.to(DEV))
    close(yd, y, dtype)
    close(xd.grad, xr.grad, dtype)
    if kw.get("mode") != "nearest":  # the CPU's nearest grid gradient is zero: so is ours
        close(gd.grad, gr.grad, dtype)
    else:
        assert not gd.grad.cpu().any()


MODES2 = list(itertools.product(["bilinear", "nearest", "bicubic"], ["zeros", "border", "reflection"], [False, True]))


@pytest.mark.parametrize("mode,pad,align", MODES2, ids=lambda v: str(v))
def test_grid_sample_2d(mode, pad, align):
    torch.manual_seed(0)
    x, grid = torch.randn(2, 3, 5, 7), torch.rand(2, 4, 6, 2) * 2.6 - 1.3
    run(x, grid, mode=mode, padding_mode=pad, align_corners=align, layout="strided" if align else None)


@pytest.mark.parametrize("mode,pad,align", [m for m in MODES2 if m[0] != "bicubic"], ids=lambda v: str(v))
def test_grid_sample_3d(mode, pad, align):
    torch.manual_seed(1)
    x, grid = torch.randn(2, 3, 4, 5, 6), torch.rand(2, 3, 2, 4, 3) * 2.6 - 1.3
    run(x, grid, mode=mode, padding_mode=pad, align_corners=align, layout=None if align else "strided")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_dtypes(dtype, dims):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device without fp64")
    torch.manual_seed(2)
    x = torch.randn(2, 3, *([4] * dims))
    grid = torch.rand(2, *([3] * dims), dims) * 2.2 - 1.1
    run(x, grid, dtype=dtype, mode="bilinear", padding_mode="border", align_corners=False)
    run(x, grid, dtype=dtype, mode="nearest", padding_mode="zeros", align_corners=True)


def test_grid_sample_zero_size_and_errors():
    x = torch.randn(2, 3, 4, 5, device=DEV)
    assert F.grid_sample(x, torch.zeros(2, 0, 3, 2, device=DEV), align_corners=False).shape == (2, 3, 0, 3)
    assert F.grid_sample(torch.randn(0, 3, 4, 5, device=DEV), torch.zeros(0, 2, 3, 2, device=DEV),
                         align_corners=False).shape == (0, 3, 2, 3)
    cases = [(torch.randn(2, 3, 4, 5), torch.zeros(3, 2, 2, 2)),  # batch mismatch
             (torch.randn(2, 3, 4, 5), torch.zeros(2, 2, 2, 3)),  # coordinate count
             (torch.randn(2, 3, 4, 5, 6), torch.zeros(2, 1, 2, 2, 3))]  # bicubic in 3-D
    for xc, gc in cases:
        fn = lambda a, g: F.grid_sample(a, g, mode="bicubic" if a.dim() == 5 else "bilinear", align_corners=False)
        with pytest.raises(RuntimeError) as cpu:
            fn(xc, gc)
        with pytest.raises(RuntimeError) as dev:
            fn(xc.to(DEV), gc.to(DEV))
        assert str(cpu.value) == str(dev.value)
    with pytest.raises(ValueError, match="grad_output"):
        torch.ops.aten.grid_sampler_2d_backward(torch.zeros(2, 3, 2, 2, device=DEV), x, torch.zeros(2, 3, 3, 2,
                                                device=DEV), 0, 0, False, [True, True])


@pytest.mark.parametrize("op", opinfos_named(["grid_sampler_2d", "grid_sampler_3d", "nn.functional.grid_sample"]),
                         ids=lambda o: o.name)
def test_grid_sample_opinfo(op):
    count = 0
    for s in op.sample_inputs("cpu", torch.float32):
        if s.input.numel() > 20000:  # the large 3-D samples take seconds on the CPU alone
            continue
        extra = list(s.args[1:])
        ref_in = [s.input.double().requires_grad_(), s.args[0].double().requires_grad_()]
        dev_in = [s.input.to(DEV).requires_grad_(), s.args[0].to(DEV).requires_grad_()]
        r = op(*ref_in, *extra, **s.kwargs)
        o = op(*dev_in, *extra, **s.kwargs)
        close(o, r, torch.float32)
        g = torch.randn_like(r)
        for a, b in zip(torch.autograd.grad(o, dev_in, g.float().to(DEV)), torch.autograd.grad(r, ref_in, g)):
            close(a, b, torch.float32)
        count += 1
    assert count > 0
