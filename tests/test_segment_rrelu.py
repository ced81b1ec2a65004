"""segment_reduce (SegmentReduce.cpp) and rrelu_with_noise (Rrelu.cpp) against the CPU: the
segment OpInfo samples (float32 with gradients, float64, 16-bit), every reduction with and
without `initial`, empty segments, zeros and ties in the gradients, offsets, axis > 0 and the
CPU's errors; rrelu's slopes within [lower, upper] and reproducible from the generator, its
evaluation form, gradient and in-place form."""
import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"
REDS = ["sum", "mean", "max", "min", "prod"]


@pytest.mark.parametrize("op", opinfos_named(["_segment_reduce"]), ids=lambda o: o.variant_test_name)
def test_segment_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=40)
    assert not failures, "\n".join(failures[:5])
    reduced = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=5e-2)}
    p16, f16 = run_opinfo(op, [torch.float16, torch.bfloat16], max_samples=10, tol=reduced)
    assert not f16, "\n".join(f16[:5])
    assert passed > 0 and p16 > 0


def check(data, reduce, **kw):
    dc, dd = data.clone().requires_grad_(), data.to(DEV).requires_grad_()
    kd = {k: (v.to(DEV) if isinstance(v, torch.Tensor) else v) for k, v in kw.items()}
    r, o = torch.segment_reduce(dc, reduce, **kw), torch.segment_reduce(dd, reduce, **kd)
    torch.testing.assert_close(o.cpu(), r.detach(), equal_nan=True)
    g = torch.randn_like(r)
    r.backward(g)
    o.backward(g.to(DEV))
    torch.testing.assert_close(dd.grad.cpu(), dc.grad, equal_nan=True)


@pytest.mark.parametrize("reduce", REDS)
def test_segment_reductions(reduce):
    data = torch.tensor([3.0, 3, 1, 0, 0, 2, 5, -1, 0, 4])  # ties, one and two zeros per segment
    lengths = torch.tensor([2, 0, 1, 3, 1, 3])  # an empty segment
    for initial in (None, 2.5):
        check(data, reduce, lengths=lengths, initial=initial)
        check(data, reduce, offsets=torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)]), initial=initial)
    torch.manual_seed(0)
    x = torch.randn(3, 7, 2)
    check(x, reduce, lengths=torch.tensor([[3, 4], [0, 7], [5, 2]]), axis=1)  # axis 1: lengths per leading index
    check(x.transpose(0, 2), reduce, lengths=torch.tensor([1, 1]), axis=0)  # non-contiguous data


def test_segment_errors():
    x = torch.randn(6)
    for kw in (dict(lengths=torch.tensor([2, 1, 2])), dict(lengths=torch.tensor([2, -1, 5]))):
        with pytest.raises(RuntimeError) as cpu:
            torch.segment_reduce(x, "max", **kw)
        with pytest.raises(RuntimeError) as dev:
            torch.segment_reduce(x.to(DEV), "max", **{k: v.to(DEV) for k, v in kw.items()})
        assert str(cpu.value) == str(dev.value)


def test_rrelu_training_and_generator():
    x = torch.randn(4, 300, device=DEV)
    g = torch.Generator(device=DEV)
    g.manual_seed(3)
    noise = torch.empty_like(x)
    y = torch.ops.aten.rrelu_with_noise(x, noise, 0.1, 0.3, True, g)
    neg = x <= 0
    slope = (y / x)[neg & (x != 0)]
    assert bool((slope >= 0.1 - 1e-6).all() and (slope <= 0.3 + 1e-6).all()) and slope.std().item() > 0.02
    assert torch.equal(y[~neg].cpu(), x[~neg].cpu()) and bool((noise[~neg] == 1).all())
    torch.testing.assert_close((x * noise).cpu(), y.cpu())
    g.manual_seed(3)
    noise2 = torch.empty_like(x)
    assert torch.equal(torch.ops.aten.rrelu_with_noise(x, noise2, 0.1, 0.3, True, g).cpu(), y.cpu())
    # gradient: the recorded slopes
    xr = x.clone().requires_grad_()
    torch.manual_seed(5)
    out = F.rrelu(xr, 0.1, 0.3, training=True)
    out.backward(torch.ones_like(out))
    torch.testing.assert_close(xr.grad.cpu(), torch.where(x > 0, 1.0, out / x).cpu(), rtol=1e-5, atol=1e-6)
    # in-place
    xi = x.clone()
    F.rrelu(xi, 0.1, 0.3, training=True, inplace=True)
    assert bool(((xi == x) | (x <= 0)).all())


def test_rrelu_eval_matches_cpu():
    x = torch.randn(5, 6)
    for lo, hi in ((0.125, 1 / 3), (0.2, 0.2)):
        torch.testing.assert_close(F.rrelu(x.to(DEV), lo, hi).cpu(), F.rrelu(x, lo, hi))
    with pytest.raises(RuntimeError, match="Lower bound"):
        torch.ops.aten.rrelu_with_noise(x.to(DEV), torch.empty(5, 6, device=DEV), 0.5, 0.1, True)
