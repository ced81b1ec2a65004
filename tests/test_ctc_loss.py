"""ctc_loss (CtcLoss.cpp) against the CPU: the OpInfo samples (float64 exactly as the harness
compares; float32 forward equal and gradients against float64 references: the CPU's own float32
gradient is ~1e-4 off the float64 one over 50 frames, beyond assert_close's float32 default),
concatenated and padded targets, repeated labels, empty targets, short inputs, impossible
alignments with and without zero_infinity, a non-zero blank, tensor lengths, and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"


@pytest.mark.parametrize("op", opinfos_named(["nn.functional.ctc_loss"]), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float64], max_samples=12)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
    for i, s in enumerate(op.sample_inputs("cpu", torch.float32)):
        if i >= 4:
            break
        x = s.input.detach()
        args = [a.to(DEV) if isinstance(a, torch.Tensor) else a for a in s.args]
        xd, x64 = x.to(DEV).requires_grad_(), x.double().requires_grad_()
        o, r = op(xd, *args, **s.kwargs), op(x64, *s.args, **s.kwargs)
        torch.testing.assert_close(o.cpu(), op(x, *s.args, **s.kwargs))
        g = torch.randn_like(r)
        o.backward(g.float().to(DEV))
        r.backward(g)
        torch.testing.assert_close(xd.grad.cpu().double(), x64.grad, rtol=1e-4, atol=3e-4)


def compare(lp, targets, il, tl, **kw):
    a, b = lp.clone().requires_grad_(), lp.to(DEV).requires_grad_()
    dev = lambda v: v.to(DEV) if isinstance(v, torch.Tensor) else v
    r = F.ctc_loss(a, targets, il, tl, reduction="none", **kw)
    o = F.ctc_loss(b, dev(targets), dev(il), dev(tl), reduction="none", **kw)
    torch.testing.assert_close(o.cpu(), r.detach())
    g = torch.rand_like(r)
    r.backward(g)
    o.backward(g.to(DEV))
    torch.testing.assert_close(b.grad.cpu(), a.grad, equal_nan=True)


def test_ctc_cases():
    torch.manual_seed(0)
    T, B, C = 9, 4, 5
    lp = torch.randn(T, B, C, dtype=torch.float64).log_softmax(2)
    padded = torch.tensor([[1, 1, 2], [3, 0, 0], [2, 4, 4], [1, 2, 3]])  # repeats need a blank between
    il, tl = [9, 7, 9, 4], [3, 1, 3, 0]  # a short input, an empty target
    compare(lp, padded, il, tl)
    compare(lp, torch.cat([padded[b, :n] for b, n in enumerate(tl)]), il, tl)  # concatenated targets
    compare(lp, padded, torch.tensor(il), torch.tensor(tl))  # tensor lengths
    compare(lp, padded % 4 + 1, il, tl, blank=0)
    compare(lp, torch.where(padded == 2, 0, padded), il, tl, blank=2)
    imp_il = [2, 9, 9, 1]  # targets longer than their inputs: infinite loss
    compare(lp, padded, imp_il, [3, 1, 3, 1], zero_infinity=True)
    r = F.ctc_loss(lp.float(), padded, imp_il, [3, 1, 3, 1], reduction="none")
    o = F.ctc_loss(lp.float().to(DEV), padded.to(DEV), imp_il, [3, 1, 3, 1], reduction="none")
    torch.testing.assert_close(o.cpu(), r)


def test_ctc_errors():
    lp = torch.randn(5, 2, 4).log_softmax(2)
    tg = torch.tensor([[1, 2], [3, 1]])
    cases = [(tg, [5, 6], [2, 2], 0), (tg, [5, 5], [2, 2], 4), (tg, [5], [2, 2], 0), (tg, [5, 5], [3, 2], 0)]
    for t, il, tl, blank in cases:
        with pytest.raises(RuntimeError) as cpu:
            F.ctc_loss(lp, t, il, tl, blank=blank)
        with pytest.raises(RuntimeError) as dev:
            F.ctc_loss(lp.to(DEV), t.to(DEV), il, tl, blank=blank)
        assert str(cpu.value).split(" (while")[0] == str(dev.value).split(" (while")[0]
