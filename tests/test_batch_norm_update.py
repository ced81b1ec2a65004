"""_batch_norm_with_update / batch_norm_backward (BatchNormUpdate.cpp, the pair torch.compile
emits) against the CPU: the OpInfo samples in float32 (with gradients) and float64, the running
statistics updated in place, and the backward's output mask. 16-bit inputs keep float32 saved
statistics, as native_batch_norm and CUDA do (the CPU returns them in the input dtype)."""
import pytest
import torch

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"


@pytest.mark.parametrize("op", opinfos_named(["_batch_norm_with_update"]), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=10)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0


def test_running_stats_and_backward():
    torch.manual_seed(0)
    x, w, b = torch.randn(4, 3, 5), torch.rand(3) + 0.5, torch.randn(3)
    rm, rv = torch.zeros(3), torch.ones(3)
    rmd, rvd = rm.to(DEV), rv.to(DEV)
    ref = torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)
    out = torch.ops.aten._batch_norm_with_update(x.to(DEV), w.to(DEV), b.to(DEV), rmd, rvd, 0.1, 1e-5)
    for o, r in zip(out[:3], ref[:3]):
        torch.testing.assert_close(o.cpu(), r)
    torch.testing.assert_close(rmd.cpu(), rm)
    torch.testing.assert_close(rvd.cpu(), rv)
    g = torch.randn(4, 3, 5)
    for mask in ([True, True, True], [True, False, False], [False, True, True]):
        r = torch.ops.aten.batch_norm_backward(g, x, w, rm, rv, ref[1], ref[2], True, 1e-5, mask, ref[3])
        o = torch.ops.aten.batch_norm_backward(g.to(DEV), x.to(DEV), w.to(DEV), rmd, rvd, out[1], out[2], True, 1e-5,
                                               mask, out[3])
        for a, c, m in zip(o, r, mask):
            if m:
                torch.testing.assert_close(a.cpu(), c, rtol=1e-5, atol=1e-5)
