"""cdist / pdist (Distance.cpp) and multi_margin_loss / multilabel_margin_loss (MarginLoss.cpp):
the OpInfo samples (float32 with gradients, float64), every p of the distances with batch
broadcasting and non-contiguous operands, the losses' weights / p / reductions and 16-bit dtypes,
and the CPU's errors."""
import math

import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"
NAMES = ["cdist", "nn.functional.pdist", "nn.functional.multi_margin_loss", "nn.functional.multilabel_margin_loss"]


@pytest.mark.parametrize("op", opinfos_named(NAMES), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=12)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0


def grads_match(fn, *inputs, rtol=1e-5, atol=1e-5):
    cpu = [t.detach().clone().requires_grad_() for t in inputs]
    dev = [t.detach().to(DEV).requires_grad_() for t in inputs]
    r, o = fn(*cpu), fn(*dev)
    torch.testing.assert_close(o.cpu(), r.detach(), rtol=rtol, atol=atol)
    g = torch.randn_like(r)
    for a, b in zip(torch.autograd.grad(o, dev, g.to(DEV)), torch.autograd.grad(r, cpu, g)):
        torch.testing.assert_close(a.cpu(), b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf])
def test_cdist_p(p):
    torch.manual_seed(0)
    x1, x2 = torch.randn(2, 1, 5, 4), torch.randn(3, 6, 4)  # batch dims broadcast
    x2[0, 1] = x1[0, 0, 2]  # a zero distance: its gradient is defined as 0
    grads_match(lambda a, b: torch.cdist(a, b, p=p), x1, x2)
    # non-contiguous operands; p=2 with many points takes torch's matmul path
    grads_match(lambda a, b: torch.cdist(a.transpose(-1, -2), b[:, ::2], p=p), torch.randn(4, 7), torch.randn(10, 7))
    grads_match(lambda a: F.pdist(a, p=p), torch.randn(6, 3))


def test_cdist_mm_path_and_empty():
    torch.manual_seed(1)
    grads_match(lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"), torch.randn(30, 5),
                torch.randn(40, 5), atol=1e-4)
    assert torch.cdist(torch.randn(0, 3, device=DEV), torch.randn(4, 3, device=DEV)).shape == (0, 4)
    assert torch.cdist(torch.randn(2, 0, device=DEV), torch.randn(4, 0, device=DEV)).abs().sum().item() == 0
    assert F.pdist(torch.randn(1, 3, device=DEV)).shape == (0,)


def test_distance_errors():
    for fn, args in ((torch.cdist, (torch.randn(3, 4), torch.randn(3, 5))), (torch.cdist, (torch.randn(3), torch.randn(3, 3))),
                     (lambda a, b: torch.cdist(a, b, p=-1), (torch.randn(2, 2), torch.randn(2, 2))),
                     (F.pdist, (torch.randn(2, 3, 4),))):
        with pytest.raises(RuntimeError) as cpu:
            fn(*args)
        with pytest.raises(RuntimeError) as dev:
            fn(*[a.to(DEV) for a in args])
        # The wording follows torch 2.13's CPU kernels (CI); other versions word some checks differently.
        if torch.__version__.startswith("2.13"):
            assert str(cpu.value) == str(dev.value)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("p,weighted", [(1, False), (2, True)])
def test_multi_margin(reduction, p, weighted):
    torch.manual_seed(2)
    x, y, w = torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2]), torch.rand(4)
    kw = dict(p=p, margin=0.7, weight=w.to(DEV) if weighted else None, reduction=reduction)
    kc = dict(kw, weight=w if weighted else None)
    xc, xd = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    r, o = F.multi_margin_loss(xc, y, **kc), F.multi_margin_loss(xd, y.to(DEV), **kw)
    torch.testing.assert_close(o.cpu(), r.detach())
    g = torch.randn_like(r)
    r.backward(g)
    o.backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), xc.grad)
    grads_match(lambda t: F.multi_margin_loss(t.t(), torch.tensor([2, 0, 1], device=t.device)),
                torch.randn(3, 3))  # non-contiguous
    grads_match(lambda t: F.multi_margin_loss(t, torch.tensor(1, device=t.device), reduction=reduction),
                torch.randn(4))  # unbatched


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_multilabel_margin(reduction):
    torch.manual_seed(3)
    y = torch.tensor([[3, 0, -1, 1], [1, 2, 3, 0], [-1, 2, 0, 0], [2, 2, -1, 3]])  # early stop, all labels, none, repeats
    fn = lambda t: F.multilabel_margin_loss(t, y.to(t.device), reduction=reduction)
    grads_match(fn, torch.randn(4, 4))
    grads_match(fn, torch.randn(4, 4).t())
    grads_match(lambda t: F.multilabel_margin_loss(t, torch.tensor([2, -1, 0], device=t.device), reduction=reduction),
                torch.randn(3))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_margin_16bit(dtype):
    torch.manual_seed(4)
    x = torch.randn(6, 5)
    y, yl = torch.randint(0, 5, (6,)), torch.randint(-1, 5, (6, 5))
    for fn, t in ((F.multi_margin_loss, y), (F.multilabel_margin_loss, yl)):
        xd = x.to(dtype).to(DEV).requires_grad_()
        xr = x.to(dtype).double().requires_grad_()
        o, r = fn(xd, t.to(DEV)), fn(xr, t)
        assert o.dtype == dtype
        o.backward()
        r.backward()
        tol = dict(rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(o.cpu().double(), r.detach(), **tol)
        torch.testing.assert_close(xd.grad.cpu().double(), xr.grad, **tol)


def test_margin_errors():
    x = torch.randn(3, 4)
    cases = [(F.multi_margin_loss, (x, torch.tensor([0, 4, 1]))), (F.multi_margin_loss, (x, torch.tensor([0, 1]))),
             (F.multi_margin_loss, (x, torch.tensor([0, 1, 1]), 1, 1.0, torch.ones(3))),
             (F.multilabel_margin_loss, (x, torch.tensor([[0, 5, 1, -1]] * 3))),
             (F.multilabel_margin_loss, (x, torch.tensor([[0, 1, -1]] * 3)))]
    for fn, args in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(*args)
        with pytest.raises(RuntimeError) as dev:
            fn(*[a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args])
        # The wording follows torch 2.13's CPU kernels (CI); other versions word some checks differently.
        if torch.__version__.startswith("2.13"):
            assert str(cpu.value) == str(dev.value)
        else:
            assert "target" in str(dev.value) or "weight" in str(dev.value), str(dev.value)
