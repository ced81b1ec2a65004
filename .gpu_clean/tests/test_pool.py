"""2-D pooling forward and backward against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, 2, 0, 1, False), (3, 2, 1, 1, False), (3, 2, 1, 1, True), (3, 1, 1, 2, False), ((2, 3), (1, 2), (1, 0), 1, True),
    (5, 3, 2, (2, 1), True),
]


def grads(fn, x, g):
    xo = x.to("ocl").requires_grad_()
    xc = x.clone().requires_grad_()
    yo, yc = fn(xo), fn(xc)
    gy = g(yc)
    yo.backward(gy.to("ocl"))
    yc.backward(gy)
    return yo, yc, xo.grad, xc.grad


@pytest.mark.parametrize("k,s,p,d,ceil", MAX_CASES)
@pytest.mark.parametrize("shape", [(2, 3, 11, 13), (3, 9, 8)])
def test_max_pool2d(k, s, p, d, ceil, shape):
    torch.manual_seed(0)
    x = torch.randn(shape)
    fn = lambda t: F.max_pool2d(t, k, s, p, d, ceil_mode=ceil)  # noqa: E731
    yo, yc, go, gc = grads(fn, x, torch.randn_like)
    assert_close(yo.detach().cpu(), yc.detach())
    assert_close(go.cpu(), gc)
    idx_o = F.max_pool2d(x.to("ocl"), k, s, p, d, ceil_mode=ceil, return_indices=True)[1]
    assert torch.equal(idx_o.cpu(), F.max_pool2d(x, k, s, p, d, ceil_mode=ceil, return_indices=True)[1])


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [(2, 2, 0, False, True, None), (3, 2, 1, True, False, None),
                                                 (3, 2, 1, False, True, None), ((3, 2), (2, 1), (1, 1), True, True, 5),
                                                 (4, 3, 2, True, False, None)])
def test_avg_pool2d(k, s, p, ceil, cip, div):
    torch.manual_seed(1)
    x = torch.randn(2, 3, 13, 10)
    fn = lambda t: F.avg_pool2d(t, k, s, p, ceil_mode=ceil, count_include_pad=cip, divisor_override=div)  # noqa: E731
    yo, yc, go, gc = grads(fn, x, torch.randn_like)
    assert_close(yo.detach().cpu(), yc.detach())
    assert_close(go.cpu(), gc)


@pytest.mark.parametrize("out", [(1, 1), (3, 3), (5, 7), (7, 7), (20, 9)])
def test_adaptive_avg_pool2d(out):
    torch.manual_seed(2)
    x = torch.randn(2, 4, 13, 11)
    yo, yc, go, gc = grads(lambda t: F.adaptive_avg_pool2d(t, out), x, torch.randn_like)
    assert_close(yo.detach().cpu(), yc.detach())
    assert_close(go.cpu(), gc)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_pool_dtypes(dtype):
    x = torch.randn(2, 3, 9, 9).to(dtype)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype != torch.float64 else {}
    assert_close(F.max_pool2d(x.to("ocl"), 3, 2, 1).cpu(), F.max_pool2d(x.float(), 3, 2, 1).to(dtype), **tol)
    assert_close(F.avg_pool2d(x.to("ocl"), 3, 2, 1).cpu(), F.avg_pool2d(x.float(), 3, 2, 1).to(dtype), **tol)
    assert_close(F.adaptive_avg_pool2d(x.to("ocl"), 4).cpu(), F.adaptive_avg_pool2d(x.float(), 4).to(dtype), **tol)


def test_channels_last_and_non_contiguous_inputs():
    x = torch.randn(2, 5, 12, 12)
    xl = x.to(memory_format=torch.channels_last)
    assert_close(F.max_pool2d(xl.to("ocl"), 2).cpu(), F.max_pool2d(x, 2))
    xt = x.transpose(2, 3)
    assert_close(F.avg_pool2d(xt.to("ocl"), 3, 2).cpu(), F.avg_pool2d(xt, 3, 2))


def test_nan_propagates_through_max_pool():
    x = torch.zeros(1, 1, 4, 4)
    x[0, 0, 1, 1] = float("nan")
    assert_close(F.max_pool2d(x.to("ocl"), 2).cpu(), F.max_pool2d(x, 2), equal_nan=True)


def test_invalid_pooling_is_an_error():
    with pytest.raises(RuntimeError):
        F.max_pool2d(torch.randn(1, 1, 2, 2, device="ocl"), 3, padding=2)


# ---- 3-D, 1-D, adaptive max, unpooling (shared (D, H, W) kernels) ----
from layer_check import check  # noqa: E402


@pytest.mark.parametrize("k,s,p,d,ceil", [(2, 2, 0, 1, False), (3, 2, 1, 1, True), ((1, 3, 2), (1, 2, 1), (0, 1, 1), (1, 1, 2), False)])
def test_max_pool3d(k, s, p, d, ceil):
    x = torch.randn(2, 3, 5, 7, 6)
    check(lambda t: F.max_pool3d(t, k, s, p, d, ceil_mode=ceil), x)
    check(lambda t: F.max_pool3d(t, k, s, p, d, ceil_mode=ceil), x[0], dtype=torch.float64)
    assert torch.equal(F.max_pool3d(x.to("ocl"), k, s, p, d, ceil, return_indices=True)[1].cpu(),
                       F.max_pool3d(x, k, s, p, d, ceil, return_indices=True)[1])


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [(2, 2, 0, False, True, None), (3, 2, 1, True, False, None),
                                                 ((3, 2, 2), (2, 1, 2), (1, 1, 0), True, True, 5)])
def test_avg_pool3d(k, s, p, ceil, cip, div):
    x = torch.randn(2, 2, 6, 5, 7)
    check(lambda t: F.avg_pool3d(t, k, s, p, ceil, cip, div), x, dtype=torch.float64)
    check(lambda t: F.avg_pool3d(t, k, s, p, ceil, cip, div), x[1], layout=lambda t: t.transpose(-1, -3))


@pytest.mark.parametrize("out", [(1, 1, 1), (2, 3, 4), (6, 1, 9)])
def test_adaptive_3d(out):
    x = torch.randn(2, 3, 5, 4, 7)
    check(lambda t: F.adaptive_avg_pool3d(t, out), x, dtype=torch.float64)
    check(lambda t: F.adaptive_max_pool3d(t, out), x, dtype=torch.float64)


@pytest.mark.parametrize("out", [(1, 1), (3, 3), (5, 7), (20, 9), (None, 4)])
def test_adaptive_max_pool2d(out):
    x = torch.randn(2, 4, 13, 11)
    check(lambda t: F.adaptive_max_pool2d(t, out), x)
    check(lambda t: F.adaptive_max_pool2d(t, out), x, dtype=torch.float64, layout=lambda t: t.transpose(-1, -2))
    o = (13 if out[0] is None else out[0], out[1])
    assert torch.equal(F.adaptive_max_pool2d(x.to("ocl"), o, True)[1].cpu(), F.adaptive_max_pool2d(x, o, True)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_pool_1d(dtype):
    x = torch.randn(3, 4, 17)
    check(lambda t: F.max_pool1d(t, 3, 2, 1, ceil_mode=True), x, dtype=dtype)
    check(lambda t: F.max_pool1d(t, 2, dilation=3), x, dtype=dtype)
    check(lambda t: F.avg_pool1d(t, 4, 3, 2, ceil_mode=True, count_include_pad=False), x, dtype=dtype)
    check(lambda t: F.adaptive_avg_pool1d(t, 5), x, dtype=dtype)
    check(lambda t: F.adaptive_max_pool1d(t, 6), x, dtype=dtype)


def test_pool_channels_last_batch1():
    x = torch.randn(1, 5, 9, 8)
    cl = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731
    check(lambda t: F.adaptive_max_pool2d(t, 4), x, layout=cl)
    check(lambda t: F.avg_pool2d(t, 3, 2, 1), x, layout=cl)
    check(lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True), x, layout=cl)
    x3 = torch.randn(1, 3, 4, 5, 6)
    cl3 = lambda t: t.contiguous(memory_format=torch.channels_last_3d)  # noqa: E731
    check(lambda t: F.max_pool3d(t, 2), x3, layout=cl3)
    check(lambda t: F.avg_pool3d(t, 2), x3, layout=cl3)


@pytest.mark.parametrize("k", [2, 3])
def test_max_unpool(k):
    if k == 2:
        x = torch.randn(2, 3, 8, 6)
        y, idx = F.max_pool2d(x, 2, return_indices=True)
        un = lambda t, i: F.max_unpool2d(t, i, 2, output_size=(9, 7))  # noqa: E731
    else:
        x = torch.randn(1, 2, 4, 6, 4)
        y, idx = F.max_pool3d(x, 2, return_indices=True)
        un = lambda t, i: F.max_unpool3d(t, i, 2)  # noqa: E731
    # The gradient of max_unpool is a gather (gather.out comes with the loss ops' branch).
    grad = torch._C._dispatch_has_kernel_for_dispatch_key("aten::gather.out", "PrivateUse1")
    check(un, y, extra=(idx,), grad=grad)
    check(un, y, dtype=torch.float64, extra=(idx,), grad=grad)
    with pytest.raises(RuntimeError):
        un(y.to("ocl"), (idx + 1000).to("ocl"))


def test_local_response_and_pool_errors():
    with pytest.raises(RuntimeError):
        F.max_pool3d(torch.randn(1, 1, 2, 2, 2, device="ocl"), 3)
    with pytest.raises(RuntimeError):
        F.adaptive_max_pool2d(torch.randn(1, 0, 3, 3, device="ocl"), 2)
