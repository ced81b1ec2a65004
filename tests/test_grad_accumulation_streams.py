"""Gradient accumulation on ocl across streams (issue 14): backward on the forward's stream, forward on one stream
and backward on another, branches on two streams joined; each compared with the same computation on the CPU. The
other accumulation cases are in test_grad_accumulation.py, whose helpers and tolerances these tests share."""
import pytest
import torch

from test_grad_accumulation import KS, OCL, close


# --------------------------------------------------------------------------------------------------
# Streams: backward on the forward's stream; forward on one stream + backward on another; branches
# on two streams joined.
# --------------------------------------------------------------------------------------------------

def test_backward_runs_on_the_forward_stream():
    x = torch.randn(8, 8, device=OCL, requires_grad=True)
    s = torch.ocl.Stream()
    s.wait_stream(torch.ocl.current_stream())
    seen = []
    with torch.ocl.stream(s):
        h = x @ x
        h.register_hook(lambda g: seen.append(torch.ocl.current_stream()))
        (h * x + h).sum().backward()
    # As for cuda: the engine runs each node on the stream its forward ran on.
    assert seen == [s]
    torch.ocl.current_stream().wait_stream(s)
    xc = x.detach().cpu().requires_grad_()
    hc = xc @ xc
    (hc * xc + hc).sum().backward()
    close(x.grad, xc.grad, what="x")


@pytest.mark.parametrize("k", KS)
def test_forward_on_one_stream_backward_on_another(k):
    gen = torch.Generator().manual_seed(140 + k)
    # Big enough that the last backward matmuls are still running when the host would read the
    # gradients without the waits below (checked: dropping them makes this test fail on PoCL).
    xc = torch.randn(192, 256, generator=gen).requires_grad_()
    wc = torch.randn(256, 256, generator=gen).div_(16).requires_grad_()
    go = torch.randn(192, 256, generator=gen)

    def fwd(x, w):
        h = x @ w
        return sum(torch.tanh(h * (i + 1)) * x for i in range(k)) + h

    ref_out = fwd(xc, wc)
    ref_out.backward(go)

    xo, wo = xc.detach().to(OCL).requires_grad_(), wc.detach().to(OCL).requires_grad_()
    s1, s2 = torch.ocl.Stream(), torch.ocl.Stream()
    s1.wait_stream(torch.ocl.current_stream())
    with torch.ocl.stream(s1):
        out = fwd(xo, wo)
    s2.wait_stream(s1)
    with torch.ocl.stream(s2):
        g = go.to(OCL)
        out.backward(g)
    # Backward nodes ran on s1 (their forward stream); the engine syncs s2 with them before returning.
    torch.ocl.current_stream().wait_stream(s2)
    gx, gw = xo.grad.cpu(), wo.grad.cpu()  # read at once: without the wait this reads unfinished kernels
    close(gx, xc.grad, what="x", fetched=True)
    close(gw, wc.grad, what="w", fetched=True)
    close(out, ref_out, what="out")


# x's AccumulateGrad node is created on s1 (its first consumer) and gets gradients from s1, s2 and the
# default stream: the mismatch torch warns about is the point of the test (the engine syncs them).
@pytest.mark.filterwarnings("ignore:The AccumulateGrad node's stream does not match")
@pytest.mark.parametrize("k", [2, 3])
def test_branches_on_two_streams_joined(k):
    gen = torch.Generator().manual_seed(150 + k)
    # Sizes as in test_forward_on_one_stream_backward_on_another: large enough for a missing wait to show.
    xc = torch.randn(192, 256, generator=gen).requires_grad_()
    w1c = torch.randn(256, 256, generator=gen).div_(16).requires_grad_()
    w2c = torch.randn(256, 256, generator=gen).div_(16).requires_grad_()

    def branch1(x, w):
        h = x
        for _ in range(k):
            h = torch.tanh(h @ w) + x  # x consumed k times on this branch too
        return h

    def branch2(x, w):
        return torch.sigmoid(x @ w.t()) * x

    ((branch1(xc, w1c) + branch2(xc, w2c)) * xc).sum().backward()

    xo, w1o, w2o = (t.detach().to(OCL).requires_grad_() for t in (xc, w1c, w2c))
    main = torch.ocl.current_stream()
    s1, s2 = torch.ocl.Stream(), torch.ocl.Stream()
    s1.wait_stream(main)
    s2.wait_stream(main)
    with torch.ocl.stream(s1):
        a = branch1(xo, w1o)
    with torch.ocl.stream(s2):
        b = branch2(xo, w2o)
    main.wait_stream(s1)
    main.wait_stream(s2)
    a.record_stream(main)
    b.record_stream(main)
    out = (a + b) * xo
    # x's gradient has contributions computed on s1, s2 and main; the engine joins them.
    out.sum().backward()
    close(xo.grad, xc.grad, what="x")
    close(w1o.grad, w1c.grad, what="w1")
    close(w2o.grad, w2c.grad, what="w2")
