"""im2col / col2im (F.unfold / F.fold) on ocl vs the CPU: kernel sizes, dilation, padding,
stride, batched and unbatched inputs, non-contiguous inputs, zero-size batches, float dtypes,
forward and backward (each is the other's gradient), out=, and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F
from opinfo_compare import opinfos_named, raises_like_cpu, run_opinfo

DEV = "ocl"
CASES = [dict(kernel_size=3), dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 3)),
         dict(kernel_size=1, stride=2), dict(kernel_size=(3, 2), padding=1, dilation=2), dict(kernel_size=(7, 8))]
TOL = {torch.float16: dict(atol=2e-3, rtol=2e-3), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}


def rand(*shape, dtype=torch.float64, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def close(actual, expected, dtype):
    assert actual.device.type == "ocl" and actual.dtype == expected.dtype and actual.shape == expected.shape
    torch.testing.assert_close(actual.cpu(), expected, **TOL.get(dtype, {}))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16],
                         ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_unfold_fold_forward(dtype, case):
    kw = CASES[case]
    for shape in ((2, 3, 7, 8), (3, 7, 8)):
        x = rand(*shape, dtype=dtype)
        cols = F.unfold(x, **kw)
        close(F.unfold(x.to(DEV), **kw), cols, dtype)
        c = rand(*cols.shape, dtype=dtype, seed=1)
        close(F.fold(c.to(DEV), (7, 8), **kw), F.fold(c, (7, 8), **kw), dtype)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_gradients(case):
    kw = CASES[case]
    x = rand(2, 3, 7, 8)
    for fn, inp in ((lambda t: F.unfold(t, **kw), x), (lambda t: F.fold(t, (7, 8), **kw), F.unfold(x, **kw))):
        c = inp.clone().requires_grad_()
        d = inp.to(DEV).requires_grad_()
        out = fn(c)
        g = rand(*out.shape, seed=2)
        (gc,) = torch.autograd.grad(out, c, g)
        (gd,) = torch.autograd.grad(fn(d), d, g.to(DEV))
        close(gd, gc, torch.float64)


@pytest.mark.parametrize("layout", ["transposed", "channels_last", "sliced", "expanded"])
def test_non_contiguous_inputs(layout):
    x = rand(2, 3, 9, 10, dtype=torch.float32)
    d = x.to(DEV)
    if layout == "transposed":
        x, d = x.transpose(2, 3), d.transpose(2, 3)
    elif layout == "channels_last":
        d = d.contiguous(memory_format=torch.channels_last)
    elif layout == "sliced":
        x, d = x[:, 1:, ::2, 1:], d[:, 1:, ::2, 1:]
    else:
        x, d = x[:1].expand(3, 3, 9, 10), d[:1].expand(3, 3, 9, 10)
    kw = dict(kernel_size=(2, 3), padding=1, stride=(1, 2))
    close(F.unfold(d, **kw), F.unfold(x, **kw), torch.float32)
    cols = F.unfold(x, **kw)
    t, td = cols.transpose(1, 2).contiguous().transpose(1, 2), cols.to(DEV).transpose(1, 2).contiguous().transpose(1, 2)
    close(F.fold(td, x.shape[-2:], **kw), F.fold(t, x.shape[-2:], **kw), torch.float32)


def test_zero_size_and_out():
    kw = dict(kernel_size=2)
    x = rand(0, 3, 5, 5, dtype=torch.float32)
    close(F.unfold(x.to(DEV), **kw), F.unfold(x, **kw), torch.float32)
    c = rand(0, 12, 16, dtype=torch.float32)
    close(F.fold(c.to(DEV), (5, 5), **kw), F.fold(c, (5, 5), **kw), torch.float32)
    x = rand(2, 3, 5, 5, dtype=torch.float32)
    out = torch.empty(16, 12, 2, device=DEV).permute(2, 1, 0)  # non-contiguous out
    torch.ops.aten.im2col(x.to(DEV), [2, 2], [1, 1], [0, 0], [1, 1], out=out)
    close(out, F.unfold(x, **kw), torch.float32)
    c = F.unfold(x, **kw)
    out = torch.empty(0, device=DEV)
    torch.ops.aten.col2im(c.to(DEV), [5, 5], [2, 2], [1, 1], [0, 0], [1, 1], out=out)
    close(out, F.fold(c, (5, 5), **kw), torch.float32)


def test_errors_match_cpu():
    x = rand(2, 3, 5, 5, dtype=torch.float32)
    raises_like_cpu(lambda t: F.unfold(t, kernel_size=0), x)
    raises_like_cpu(lambda t: F.unfold(t, kernel_size=6), x)  # larger than the padded input
    raises_like_cpu(lambda t: F.unfold(t, kernel_size=2, stride=0), x)
    raises_like_cpu(lambda t: F.unfold(t, kernel_size=2, dilation=0), x)
    raises_like_cpu(lambda t: torch.ops.aten.im2col(t, [2, 2], [1, 1], [0, 0], [1, 1]), rand(5, 5))  # 2-D
    raises_like_cpu(lambda t: F.unfold(t, kernel_size=2), torch.ones(1, 2, 4, 4, dtype=torch.int64))
    c = F.unfold(x, kernel_size=2)
    raises_like_cpu(lambda t: F.fold(t, (5, 6), kernel_size=2), c)  # block count does not match
    raises_like_cpu(lambda t: F.fold(t, (5, 5), kernel_size=3), c)  # channels not divisible by 9
    raises_like_cpu(lambda t: F.fold(t, (5, 5), kernel_size=2, padding=-1), c)


@pytest.mark.parametrize("op", opinfos_named(["nn.functional.unfold", "nn.functional.fold"]), ids=lambda op: op.name)
def test_opinfo_samples(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=20)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
