"""histogram / histogramdd (Histogram.cpp) against the CPU: the OpInfo samples (float32, float64)
and edge values (the rightmost edge, values outside the range, NaN), weights, density,
non-contiguous and empty input, explicit bin tensors, and the CPU's errors."""
import pytest
import torch

from opinfo_compare import map_tensors, opinfos_named, run_opinfo, tensor_leaves

DEV = "ocl:0"


@pytest.mark.parametrize("op", opinfos_named(["histogram", "histogramdd"]), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64, torch.int64], max_samples=20)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0


def same(fn, *args, **kw):
    r = fn(*args, **kw)
    o = fn(*map_tensors(list(args), lambda t: t.to(DEV)), **map_tensors(kw, lambda t: t.to(DEV)))
    outs, refs = tensor_leaves(o), tensor_leaves(r)
    assert len(outs) == len(refs)
    for a, b in zip(outs, refs):
        torch.testing.assert_close(a.cpu(), b)


def test_histogram_edges_weights_density():
    x = torch.tensor([0.0, 1.0, 2.5, 3.0, -1.0, 4.0, float("nan"), 3.0, 2.0])
    same(torch.histogram, x, 3, range=(0.0, 3.0))  # 3.0 joins the last bin; -1, 4 and NaN drop
    same(torch.histogram, x, torch.tensor([0.0, 0.5, 2.0, 3.0]), weight=torch.rand(9))
    same(torch.histogram, x[:6], 4, density=True)
    torch.manual_seed(0)
    y = torch.randn(6, 40, dtype=torch.float64)
    same(torch.histogram, y.t()[::3], 7, weight=torch.rand(40, 6, dtype=torch.float64)[::3])  # non-contiguous
    same(torch.histogram, torch.empty(0), 5)
    same(torch.histogram, torch.full((4,), 2.0), 4)  # equal min and max: widened by 0.5


def test_histogramdd():
    torch.manual_seed(1)
    pts = torch.randn(50, 3)
    same(torch.histogramdd, pts, [3, 4, 2])
    same(torch.histogramdd, pts, [2, 2, 2], range=[-1.0, 1.0, -2.0, 0.0, 0.0, 3.0], weight=torch.rand(50),
         density=True)
    same(torch.histogramdd, pts.reshape(5, 10, 3), [torch.tensor([-1.0, 0.0, 1.0]), torch.tensor([-3.0, 3.0]),
                                                   torch.tensor([-2.0, -1.0, 0.0, 2.0])])


def test_histogram_errors():
    x = torch.randn(10)
    cases = [lambda t: torch.histogram(t, 0), lambda t: torch.histogram(t, 3, range=(1.0, 0.0)),
             lambda t: torch.histogramdd(t.reshape(5, 2), [2, 2], range=[0.0, 1.0]),
             lambda t: torch.histogram(t, 3, weight=torch.ones(3, device=t.device))]
    for fn in cases:
        with pytest.raises(RuntimeError) as cpu:
            fn(x)
        with pytest.raises(RuntimeError) as dev:
            fn(x.to(DEV))
        assert str(cpu.value) == str(dev.value)
    with pytest.raises(NotImplementedError):
        torch.histogram(torch.ones(3, dtype=torch.float16, device=DEV), 2)
