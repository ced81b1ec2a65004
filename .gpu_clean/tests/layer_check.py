"""Shared check for the layer-op tests: run fn on the device and on the CPU from the same
input, compare the outputs and the input gradients (from the same random output gradient)."""
import torch
from torch.testing import assert_close

LOW = (torch.float16, torch.bfloat16)


def tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype in LOW else {}


def check(fn, x, dtype=torch.float32, grad=True, layout=None, extra=()):
    """x: CPU float tensor (or a callable turning a device-side tensor into a view, see layout).
    layout: optional function applied to both inputs after moving (non-contiguous / channels_last).
    extra: more CPU tensors passed to fn after x, without gradient."""
    torch.manual_seed(0)
    xc = x.detach().to(dtype).clone()
    xo = xc.detach().to("ocl")
    if grad:
        xc.requires_grad_()
        xo.requires_grad_()
    lc = layout(xc) if layout else xc
    lo = layout(xo) if layout else xo
    yc = fn(lc, *extra) if dtype not in LOW else fn(lc.float(), *extra).to(dtype)
    yo = fn(lo, *[e.to("ocl") for e in extra])
    assert yo.device.type == "ocl"
    assert_close(yo.detach().cpu(), yc.detach(), **tol(dtype))
    if grad:
        gy = torch.randn(yc.shape).to(dtype)
        yc.backward(gy)
        yo.backward(gy.to("ocl"))
        assert_close(xo.grad.cpu(), xc.grad, **tol(dtype))
    return yo, yc
