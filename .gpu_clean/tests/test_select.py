"""kthvalue, median, nanmedian (with and without dim) on ocl vs the CPU: values and indices equal,
ties and NaNs included (kthvalue runs the CPU's quickselect, median a stable sort that orders
ties as the CPU's comparator does); non-contiguous and zero-size inputs, keepdim, out=, gradients
and the CPU's errors."""
import pytest
import torch
from opinfo_compare import opinfos_named, raises_like_cpu, run_opinfo

DEV = "ocl"
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
          torch.int8, torch.uint8]


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def make(shape, dtype, seed=0, nans=True):
    g = torch.Generator().manual_seed(seed)
    if not dtype.is_floating_point:
        lo = 0 if dtype == torch.uint8 else -5
        return torch.randint(lo, 5, shape, generator=g).to(dtype)  # few values: many ties
    x = (torch.randn(shape, generator=g) * 3).round().to(dtype)  # rounded: many ties
    if nans and x.numel() >= 8:
        flat = x.view(-1)
        flat[0], flat[3], flat[4], flat[6] = float("nan"), -0.0, float("inf"), float("nan")
    return x


def equal(actual, expected):
    if isinstance(expected, torch.Tensor):
        assert actual.device.type == "ocl" and actual.dtype == expected.dtype and actual.shape == expected.shape
        torch.testing.assert_close(actual.cpu(), expected, equal_nan=True, rtol=0, atol=0)
        return
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        equal(a, e)


def same(fn, x):
    # The reference runs on a contiguous copy: the CPU's median.dim reads wrong elements of an
    # expanded (stride-0) input (torch 2.13); the answer does not depend on the layout.
    equal(fn(x.to(DEV)), fn(x.contiguous()))


SHAPES = [(37,), (5, 37), (4, 3, 9), (1,), (2, 300), (6, 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
def test_kthvalue_matches_cpu(dtype):
    for shape in SHAPES:
        x = make(shape, dtype)
        for dim in range(-1, len(shape)):
            n = shape[dim]
            for k in sorted({1, 2, (n + 1) // 2, n}):
                if k <= n:
                    same(lambda t: tuple(torch.kthvalue(t, k, dim)), x)
                    same(lambda t: tuple(torch.kthvalue(t, k, dim, keepdim=True)), x)


@pytest.mark.parametrize("dtype", DTYPES, ids=ids(DTYPES))
@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_matches_cpu(dtype, op):
    fn = getattr(torch, op)
    for shape in SHAPES:
        x = make(shape, dtype)
        same(fn, x)
        for dim in range(-1, len(shape)):
            same(lambda t: tuple(fn(t, dim)), x)
            same(lambda t: tuple(fn(t, dim, keepdim=True)), x)


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_nan_rows(op):
    fn = getattr(torch, op)
    nan = float("nan")
    x = torch.tensor([[1.0, nan, 2.0, nan, 0.5], [nan] * 5, [3.0, 1.0, 2.0, 0.0, 1.0], [nan, 4.0, nan, nan, nan]])
    same(lambda t: tuple(fn(t, 1)), x)
    same(fn, x)
    for n in range(1, 40):  # all-NaN rows: the CPU's nth_element picks a position that depends on n
        same(lambda t: tuple(fn(t, 1)), torch.full((2, n), nan))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "scalar", "zero_other_dim"])
def test_layouts(layout):
    x = make((8, 12), torch.float32)
    if layout == "transposed":
        x = x.t()
    elif layout == "sliced":
        x = x[1::2, 3:]
    elif layout == "expanded":
        x = x[:1].expand(5, 12)
    elif layout == "scalar":
        x = torch.tensor(2.5)
    else:
        x = torch.empty(0, 4)
    dims = [0, -1] if x.dim() else [0]
    for dim in dims:
        if x.dim() and x.size(dim) == 0:
            continue
        same(lambda t: tuple(torch.kthvalue(t, 1, dim)), x)
        same(lambda t: tuple(torch.median(t, dim)), x)
        same(lambda t: tuple(torch.nanmedian(t, dim, keepdim=True)), x)
    if x.numel():
        same(torch.median, x)


def test_device_views_and_out():
    x = make((9, 10), torch.float32, nans=False)
    d = x.to(DEV)
    for c, v in ((x.t(), d.t()), (x[::2, 1:], d[::2, 1:]), (x[:1].expand(5, 10).contiguous(), d[:1].expand(5, 10))):
        equal(tuple(torch.kthvalue(v, 3, 1)), tuple(torch.kthvalue(c, 3, 1)))
        equal(tuple(torch.median(v, 0)), tuple(torch.median(c, 0)))
    values, indices = torch.empty(0, device=DEV), torch.empty(0, dtype=torch.long, device=DEV)
    torch.kthvalue(d, 4, 0, out=(values, indices))
    equal((values, indices), tuple(torch.kthvalue(x, 4, 0)))
    values, indices = torch.empty(1, 10, device=DEV).t().t(), torch.empty(1, 10, dtype=torch.long, device=DEV)
    torch.median(d, 0, keepdim=True, out=(values, indices))
    equal((values, indices), tuple(torch.median(x, 0, keepdim=True)))


def test_empty_inputs():
    same(torch.median, torch.empty(0))
    same(torch.nanmedian, torch.empty(0, 3))
    same(torch.median, torch.empty(0, dtype=torch.int64))  # NaN converted to int64, as on the CPU


def test_gradients():
    x = torch.randn(6, 7, dtype=torch.float64)
    for fn in (lambda t: torch.kthvalue(t, 3, 1).values, lambda t: torch.median(t, 0).values,
               lambda t: torch.nanmedian(t, 1, keepdim=True).values, torch.median, torch.nanmedian,
               lambda t: torch.kthvalue(t.t(), 2, 0).values):
        c = x.clone().requires_grad_()
        d = x.to(DEV).requires_grad_()
        g = torch.randn(fn(c).shape, dtype=torch.float64)
        (gc,) = torch.autograd.grad(fn(c), c, g)
        (gd,) = torch.autograd.grad(fn(d), d, g.to(DEV))
        torch.testing.assert_close(gd.cpu(), gc)
    # median() of a row with ties spreads the gradient evenly over the tied elements
    t = torch.tensor([1.0, 2.0, 2.0, 3.0, 2.0], dtype=torch.float64)
    c, d = t.clone().requires_grad_(), t.to(DEV).requires_grad_()
    torch.median(c).backward()
    torch.median(d).backward()
    torch.testing.assert_close(d.grad.cpu(), c.grad)


def test_errors_match_cpu():
    x = torch.randn(4, 3)
    raises_like_cpu(lambda t: torch.kthvalue(t, 5, 0), x)  # k out of range
    raises_like_cpu(lambda t: torch.kthvalue(t, 0, 0), x)
    raises_like_cpu(lambda t: torch.kthvalue(t, 1, 2), x)  # dim out of range
    raises_like_cpu(lambda t: torch.kthvalue(t, 1, 0), torch.empty(0, 3))  # empty reduced dim (IndexError)
    raises_like_cpu(lambda t: torch.median(t, 0), torch.empty(0, 3))
    raises_like_cpu(lambda t: torch.nanmedian(t, 0), torch.empty(0, 3))
    raises_like_cpu(lambda t: torch.kthvalue(t, 1), torch.ones(3, dtype=torch.bool))  # bool: not implemented
    raises_like_cpu(lambda t: torch.median(t, 0), torch.ones(3, dtype=torch.bool))
    raises_like_cpu(torch.median, torch.ones(3, dtype=torch.bool))
    raises_like_cpu(lambda t: torch.kthvalue(t, 1, 0, out=(torch.empty(0, dtype=torch.float64, device=t.device),
                                                           torch.empty(0, dtype=torch.long, device=t.device))), x)
    raises_like_cpu(lambda t: torch.median(t, 0, out=(torch.empty(0, device=t.device),
                                                       torch.empty(0, dtype=torch.int32, device=t.device))), x)


@pytest.mark.parametrize("op", opinfos_named(["kthvalue", "median", "nanmedian"]), ids=lambda op: op.name)
def test_opinfo_samples(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64, torch.float16, torch.int64, torch.uint8],
                                  max_samples=20)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
