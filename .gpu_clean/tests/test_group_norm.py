"""Group norm, instance norm and local response norm against the CPU (forward + gradients)."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close
from layer_check import check, tol

CL = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731


def check_params(module, x, dtype=torch.float32, layout=None):
    """Module forward + gradients of the input and of every parameter."""
    torch.manual_seed(0)
    mc = module.to(dtype)
    mc.zero_grad(set_to_none=True)
    mo = copy.deepcopy(mc).to("ocl")
    xc = x.detach().to(dtype).clone().requires_grad_()
    xo = xc.detach().to("ocl").requires_grad_()
    yc = mc(layout(xc) if layout else xc)
    yo = mo(layout(xo) if layout else xo)
    assert_close(yo.detach().cpu(), yc.detach(), **tol(dtype))
    g = torch.randn(yc.shape).to(dtype)
    yc.backward(g)
    yo.backward(g.to("ocl"))
    assert_close(xo.grad.cpu(), xc.grad, **tol(dtype))
    for pc, po in zip(mc.parameters(), mo.parameters()):
        assert_close(po.grad.cpu(), pc.grad, **tol(dtype))


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 4), 3), ((1, 4, 7), 2), ((3, 12), 2), ((2, 6, 3, 2, 2), 6),
                                          ((1, 5, 3, 3), 1)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(shape, groups, affine):
    m = torch.nn.GroupNorm(groups, shape[1], affine=affine)
    if affine:
        with torch.no_grad():
            m.weight.normal_()
            m.bias.normal_()
    check_params(m, torch.randn(shape) * 3 + 1, dtype=torch.float64)
    check_params(m, torch.randn(shape))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_group_norm_low_precision(dtype):
    check(lambda t: F.group_norm(t.float(), 2).to(t.dtype), torch.randn(2, 4, 3, 3), dtype=dtype)


def test_group_norm_layouts():
    m = torch.nn.GroupNorm(2, 4)
    check_params(m, torch.randn(2, 4, 5, 6), layout=CL)
    check_params(m, torch.randn(2, 4, 5, 6), layout=lambda t: t.transpose(-1, -2))


def test_group_norm_functional_weight_only():
    w = torch.randn(6)
    check(lambda t, w: F.group_norm(t, 3, weight=w), torch.randn(2, 6, 4), extra=(w,))


@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True)])
def test_instance_norm(affine, track):
    m = torch.nn.InstanceNorm2d(3, affine=affine, track_running_stats=track)
    check_params(m, torch.randn(2, 3, 5, 4))
    if track:
        m.eval()
        check_params(m, torch.randn(2, 3, 5, 4))


@pytest.mark.parametrize("shape", [(2, 6, 5, 4), (1, 5, 7), (2, 4, 3, 3, 3)])
def test_local_response_norm(shape):
    check(lambda t: F.local_response_norm(t, 3), torch.randn(shape), dtype=torch.float64)


def test_group_norm_errors():
    with pytest.raises(RuntimeError):
        F.group_norm(torch.randn(2, 5, 3, device="ocl"), 2)
