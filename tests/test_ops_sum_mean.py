"""Native sum and mean on ocl (all elements, dims, keepdim, dtype=, non-contiguous, large, few outputs of many
inputs, zero-size, half types, errors), checked against the same computation on the CPU. The rest of the basic
arithmetic is in test_ops_basic.py, whose helpers these tests share."""
import pytest
import torch

from test_ops_basic import DTYPE_IDS, DTYPES, check, dev, make


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sum_all(dtype):
    a = make((13, 17), dtype)
    check(dev(a).sum(), a.sum(), rtol=1e-5, atol=1e-4)
    check(torch.sum(dev(a)), torch.sum(a), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sum_dims_keepdim(dtype):
    a = make((4, 5, 6), dtype, 1)
    d = dev(a)
    for dim in (0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2), (-3, -1), [1]):
        for keepdim in (False, True):
            check(d.sum(dim=dim, keepdim=keepdim), a.sum(dim=dim, keepdim=keepdim), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sum_dtype_argument(dtype):
    a = make((6, 7), dtype, 2)
    for out_dtype in (torch.float64, torch.int64, torch.float32):
        check(dev(a).sum(dtype=out_dtype), a.sum(dtype=out_dtype), rtol=1e-5, atol=1e-4)
        check(dev(a).sum(1, dtype=out_dtype), a.sum(1, dtype=out_dtype), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sum_non_contiguous(dtype):
    a = make((12, 10, 4), dtype, 3)
    d = dev(a)
    views = [
        (d.transpose(0, 1), a.transpose(0, 1)),
        (d[::2, 1::3], a[::2, 1::3]),
        (d.permute(2, 0, 1), a.permute(2, 0, 1)),
        (d[:, :, 1], a[:, :, 1]),
    ]
    for dv, cv in views:
        check(dv.sum(), cv.sum(), rtol=1e-5, atol=1e-4)
        check(dv.sum(0), cv.sum(0), rtol=1e-5, atol=1e-4)
        check(dv.sum(-1, keepdim=True), cv.sum(-1, keepdim=True), rtol=1e-5, atol=1e-4)
        check(dv.sum((0, -1)), cv.sum((0, -1)), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32],
                         ids=["float32", "float64", "int64", "int32"])
def test_sum_large(dtype):
    g = torch.Generator().manual_seed(4)
    if dtype.is_floating_point:
        a = torch.rand(1 << 20, generator=g, dtype=torch.float64).to(dtype)
    else:
        a = torch.randint(-1000, 1000, (1 << 20,), generator=g).to(dtype)
    d = dev(a)
    check(d.sum(), a.sum(), rtol=1e-5, atol=1e-3)
    check(d.view(1024, 1024).sum(0), a.view(1024, 1024).sum(0), rtol=1e-5, atol=1e-3)
    check(d.view(1024, 1024).sum(1), a.view(1024, 1024).sum(1), rtol=1e-5, atol=1e-3)
    check(d.view(8, 1 << 17).sum(1), a.view(8, 1 << 17).sum(1), rtol=1e-5, atol=1e-3)
    check(d.view(1 << 17, 8).t().sum(1), a.view(1 << 17, 8).t().sum(1), rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize("shape,dim", [((3, 300001), 1), ((300001, 3), 0), ((5, 7, 40001), (0, 2)),
                                       ((100000, 5), 0), ((7, 3, 33333), (1, 2))])
def test_sum_mean_few_outputs_many_inputs(shape, dim):
    # few outputs with long reductions: the reduction is split into chunks and merged
    a = torch.rand(shape, generator=torch.Generator().manual_seed(6))
    check(dev(a).sum(dim), a.sum(dim), rtol=1e-4, atol=1e-2)
    check(dev(a).mean(dim), a.mean(dim), rtol=1e-4, atol=1e-5)
    ai = torch.randint(-5, 5, shape, generator=torch.Generator().manual_seed(7), dtype=torch.int32)
    check(dev(ai).sum(dim), ai.sum(dim))


def test_sum_large_bool():
    a = torch.rand(1 << 20, generator=torch.Generator().manual_seed(5)) > 0.3
    check(dev(a).sum(), a.sum())


def test_sum_out_and_zero_size():
    a = make((5, 6), torch.float32)
    out = torch.empty(6, device="ocl")
    torch.sum(dev(a), 0, out=out)
    check(out, a.sum(0))
    out_nc = torch.zeros(6, 2, device="ocl")[:, 0]
    torch.sum(dev(a), 0, out=out_nc)
    check(out_nc, a.sum(0))
    z = torch.empty(0, 4)
    check(dev(z).sum(), z.sum())
    check(dev(z).sum(0), z.sum(0))
    check(dev(z).sum(1), z.sum(1))
    assert dev(z).sum(1).shape == (0,)


def test_sum_half_types():
    for dtype in (torch.float16, torch.bfloat16):
        a = make((33, 20), dtype)
        check(dev(a).sum(), a.sum(), rtol=1e-2, atol=1e-1)
        check(dev(a).sum(1), a.sum(1), rtol=1e-2, atol=1e-1)
        check(dev(a).sum(dtype=torch.float32), a.sum(dtype=torch.float32), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_mean(dtype):
    a = make((6, 5, 4), dtype)
    d = dev(a)
    check(d.mean(), a.mean())
    for dim in (0, 1, (0, 2), -1):
        for keepdim in (False, True):
            check(d.mean(dim, keepdim=keepdim), a.mean(dim, keepdim=keepdim))
    check(d.transpose(0, 2).mean(1), a.transpose(0, 2).mean(1))
    big = torch.rand(1 << 20, dtype=dtype, generator=torch.Generator().manual_seed(1))
    check(dev(big).mean(), big.mean(), rtol=1e-5, atol=1e-6)


def test_mean_int_with_dtype_and_errors():
    a = make((4, 5), torch.int64)
    check(dev(a).mean(dtype=torch.float32), a.mean(dtype=torch.float32))
    check(dev(a).mean(1, dtype=torch.float64), a.mean(1, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="mean"):
        dev(a).mean()
    z = torch.empty(0, 3)
    check(dev(z).mean(0), z.mean(0))
    check(dev(z).mean(), z.mean())
