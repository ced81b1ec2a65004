"""nll_loss (the second half of cross_entropy) forward and backward against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close


def check(x, target, **kw):
    xo = x.to("ocl").requires_grad_()
    xc = x.clone().requires_grad_()
    lo = F.nll_loss(xo, target.to("ocl"), **{k: (v.to("ocl") if torch.is_tensor(v) else v) for k, v in kw.items()})
    lc = F.nll_loss(xc, target, **kw)
    assert_close(lo.detach().cpu(), lc.detach(), rtol=1e-5, atol=1e-5)
    g = torch.randn_like(lc)
    lo.backward(g.to("ocl"))
    lc.backward(g)
    assert_close(xo.grad.cpu(), xc.grad, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [-100, 2])
def test_nll_loss_2d_input(reduction, weighted, ignore):
    torch.manual_seed(0)
    x = torch.randn(17, 5).log_softmax(1)
    t = torch.randint(0, 5, (17,))
    kw = dict(reduction=reduction, ignore_index=ignore)
    if weighted:
        kw["weight"] = torch.rand(5) + 0.1
    check(x, t, **kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_spatial(reduction):
    torch.manual_seed(1)
    x = torch.randn(3, 4, 5, 6).log_softmax(1)
    t = torch.randint(0, 4, (3, 5, 6))
    t[0, 0, 0] = -100
    check(x, t, reduction=reduction, weight=torch.rand(4) + 0.5)


def test_nll_loss_single_sample_and_float64():
    x = torch.randn(6, dtype=torch.float64).log_softmax(0)
    check(x, torch.tensor(3), reduction="sum")
    check(torch.randn(4, 6, dtype=torch.float64), torch.tensor([0, 5, 2, 2]))


def test_nll_loss_all_ignored_mean_is_nan():
    x = torch.randn(3, 4)
    t = torch.full((3,), -100)
    assert torch.isnan(F.nll_loss(x.to("ocl"), t.to("ocl")).cpu()) and torch.isnan(F.nll_loss(x, t))


def test_nll_loss_bad_target_dtype():
    with pytest.raises((TypeError, RuntimeError)):
        F.nll_loss(torch.randn(3, 4, device="ocl"), torch.zeros(3, device="ocl"))
