"""fractional_max_pool2d / 3d (FractionalPool.cpp) with explicit random samples, so the windows
are the CPU's: outputs, indices and gradients in float32 / float64 / 16-bit, batched and unbatched,
non-contiguous input, the CPU's errors; the op_db samples (which draw their own samples) for shapes
and dtypes; and trace (MatrixTrace.cpp) against the CPU."""
import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"


def check(fn, x, samples, dtype=torch.float32, **kw):
    x, samples = x.to(dtype), samples.to(dtype)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    (rv, ri), (ov, oi) = fn(xc, _random_samples=samples, return_indices=True, **kw), \
        fn(xd, _random_samples=samples.to(DEV), return_indices=True, **kw)
    assert torch.equal(oi.cpu(), ri)
    torch.testing.assert_close(ov.cpu(), rv.detach())
    g = torch.randn_like(rv)
    rv.backward(g)
    ov.backward(g.to(DEV))
    # 16-bit: overlapping windows' gradients are summed in float32 here, in the dtype on the CPU
    tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else {}
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_fractional_max_pool2d(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 11, 9)
    check(F.fractional_max_pool2d, x, torch.rand(2, 3, 2), dtype, kernel_size=(3, 2), output_size=(5, 4))
    check(F.fractional_max_pool2d, x[0], torch.rand(1, 3, 2), dtype, kernel_size=2, output_size=(6, 1))  # unbatched
    check(F.fractional_max_pool2d, x.transpose(2, 3), torch.rand(2, 3, 2), dtype, kernel_size=3, output_ratio=(0.5, 0.5))
    xt = torch.randint(0, 3, (1, 2, 8, 8)).float()  # ties: the first maximum of each window
    check(F.fractional_max_pool2d, xt, torch.rand(1, 2, 2), dtype, kernel_size=3, output_size=4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_fractional_max_pool3d(dtype):
    torch.manual_seed(1)
    x = torch.randn(2, 2, 7, 6, 8)
    check(F.fractional_max_pool3d, x, torch.rand(2, 2, 3), dtype, kernel_size=(2, 3, 2), output_size=(4, 3, 5))
    check(F.fractional_max_pool3d, x[1], torch.rand(1, 2, 3), dtype, kernel_size=2, output_size=(1, 4, 6))


def test_fractional_errors():
    x = torch.randn(1, 1, 5, 5)
    x3 = torch.randn(1, 1, 5, 5, 5)
    cases = [(torch.ops.aten.fractional_max_pool2d, x, [4, 2], [3, 2], 2),
             (torch.ops.aten.fractional_max_pool2d, x, [2, 2], [5, 2], 2),
             (torch.ops.aten.fractional_max_pool3d, x3, [2, 2, 2], [4, 4, 4], 3)]
    for fn, t, kernel, out, nd in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(t, kernel, out, torch.rand(1, 1, nd))
        with pytest.raises(RuntimeError) as dev:
            fn(t.to(DEV), kernel, out, torch.rand(1, 1, nd, device=DEV))
        assert str(cpu.value) == str(dev.value)


@pytest.mark.parametrize("op", opinfos_named(["nn.functional.fractional_max_pool2d",
                                              "nn.functional.fractional_max_pool3d"]), ids=lambda o: o.name)
def test_fractional_opinfo_shapes(op):
    # The samples draw their windows with torch.rand: only shapes, dtypes and the backward run.
    passed, failures = run_opinfo(op, [torch.float32, torch.float16], compare=False, max_samples=6)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0


@pytest.mark.parametrize("op", opinfos_named(["trace"]), ids=lambda o: o.name)
def test_trace_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32,
                                       torch.uint8], max_samples=10)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
    x = torch.randn(5, 7)
    torch.testing.assert_close(torch.trace(x.to(DEV).t()).cpu(), torch.trace(x.t()))
    assert torch.trace(torch.zeros(0, 3, device=DEV)).item() == 0
    for bad in (torch.randn(2, 3, 4), torch.ones(3, 3, dtype=torch.bool)):
        with pytest.raises((RuntimeError, NotImplementedError)) as cpu:
            torch.trace(bad)
        with pytest.raises(type(cpu.value)) as dev:
            torch.trace(bad.to(DEV))
        assert str(cpu.value).split(" on ocl")[0] == str(dev.value).split(" on ocl")[0]
