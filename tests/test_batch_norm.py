"""Batch norm (training with running statistics, evaluation, no affine) against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close


@pytest.mark.parametrize("shape", [(4, 3, 5, 7), (8, 6), (2, 5, 9), (3, 4, 2, 3, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_cpu(shape, affine, training):
    torch.manual_seed(0)
    C = shape[1]
    x = torch.randn(shape) * 3 + 1
    w, b = (torch.randn(C), torch.randn(C)) if affine else (None, None)
    rm, rv = torch.randn(C), torch.rand(C) + 0.5
    rm_o, rv_o = rm.to("ocl"), rv.to("ocl")
    xo = x.to("ocl").requires_grad_()
    xc = x.clone().requires_grad_()
    params_o = [t.to("ocl").requires_grad_() if t is not None else None for t in (w, b)]
    params_c = [t.clone().requires_grad_() if t is not None else None for t in (w, b)]
    yo = F.batch_norm(xo, rm_o, rv_o, *params_o, training=training, momentum=0.2, eps=1e-4)
    yc = F.batch_norm(xc, rm, rv, *params_c, training=training, momentum=0.2, eps=1e-4)
    assert_close(yo.detach().cpu(), yc.detach(), rtol=1e-4, atol=1e-4)
    assert_close(rm_o.cpu(), rm)
    assert_close(rv_o.cpu(), rv)
    g = torch.randn(shape)
    yo.backward(g.to("ocl"))
    yc.backward(g)
    assert_close(xo.grad.cpu(), xc.grad, rtol=1e-4, atol=1e-4)
    for po, pc in zip(params_o, params_c):
        if po is not None:
            assert_close(po.grad.cpu(), pc.grad, rtol=1e-4, atol=1e-4)


def test_batch_norm_module_train_eval_and_num_batches():
    torch.manual_seed(1)
    m_c = torch.nn.BatchNorm2d(4)
    m_o = torch.nn.BatchNorm2d(4).to("ocl")
    for _ in range(3):
        x = torch.randn(5, 4, 6, 6)
        assert_close(m_o(x.to("ocl")).cpu(), m_c(x), rtol=1e-4, atol=1e-4)
    assert m_o.num_batches_tracked.item() == 3
    m_c.eval(), m_o.eval()
    x = torch.randn(2, 4, 6, 6)
    assert_close(m_o(x.to("ocl")).cpu(), m_c(x), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.bfloat16])
def test_batch_norm_dtypes(dtype):
    x = torch.randn(4, 3, 5, 5).to(dtype)
    rm, rv = torch.zeros(3), torch.ones(3)
    y = F.batch_norm(x.to("ocl"), rm.to("ocl"), rv.to("ocl"), training=True)
    ref = F.batch_norm(x.float(), rm.clone(), rv.clone(), training=True)
    tol = {} if dtype == torch.float64 else dict(rtol=2e-2, atol=2e-2)
    assert y.dtype == dtype
    assert_close(y.cpu().float(), ref, **tol)


def test_batch_norm_single_value_per_channel_is_an_error():
    with pytest.raises(ValueError):
        F.batch_norm(torch.randn(1, 3, device="ocl"), None, None, training=True)


HARD_DATA = r"""
def hard_data(shape):
    # A large mean, and each channel's very first value an outlier: one-read statistics that shift by
    # a sample or subtract large sums lose the other values' low bits here.
    x = torch.randn(shape).add(1000)
    x.view(shape[0], shape[1], -1)[0, :, 0] = 1e5
    return x
"""

SPLIT_SCRIPT = r"""
import torch, torch.nn.functional as F
torch.manual_seed(0)
""" + HARD_DATA + r"""
# Few channels over many positions: under the GPU mapping the per-channel sums run in slices over
# images and positions (uneven last slices, position chunks ending mid-image), merged in a second
# kernel; small planes put several images in one work-group (7x7), one-value planes one per item.
cases = [(shape, dt, lambda s: torch.randn(s).mul(3).add(5))
         for shape in [(32, 3, 64, 64), (4, 2, 100, 101), (3, 1, 9000), (256, 2, 7, 7), (1, 2, 300, 300),
                       (20000, 2)]
         for dt in (torch.float32, torch.float64, torch.float16)]
cases += [(shape, torch.float32, hard_data) for shape in [(32, 3, 64, 64), (256, 2, 7, 7), (1, 2, 300, 300)]]
for shape, dt, make in cases:
    x = make(shape).to(dt)
    w, b = torch.randn(shape[1]), torch.randn(shape[1])
    xr = x.double().clone().requires_grad_()
    wr, br = w.double().requires_grad_(), b.double().requires_grad_()
    rm, rv = torch.zeros(shape[1], dtype=torch.float64), torch.ones(shape[1], dtype=torch.float64)
    y = F.batch_norm(xr, rm, rv, wr, br, training=True, momentum=0.3)
    g = torch.randn_like(y)
    y.backward(g)
    xd = x.to("ocl").requires_grad_()
    rmd, rvd = torch.zeros(shape[1], dtype=dt, device="ocl"), torch.ones(shape[1], dtype=dt, device="ocl")
    # Weights in the compute type take the weight gradient from the reduction's launch; float16
    # ones the separate product.
    wd, bd = w.to("ocl", dt).requires_grad_(), b.to("ocl", dt).requires_grad_()
    yd = F.batch_norm(xd, rmd, rvd, wd, bd, training=True, momentum=0.3)
    yd.backward(g.to("ocl", dt))
    tol = {torch.float64: 1e-12, torch.float32: 2e-5, torch.float16: 2e-2}[dt]
    for name, got, ref in (("y", yd, y), ("dx", xd.grad, xr.grad), ("running_mean", rmd, rm), ("running_var", rvd, rv),
                           ("dw", wd.grad, wr.grad), ("db", bd.grad, br.grad)):
        err = ((got.cpu().double() - ref.detach()).abs().max() / ref.detach().abs().max()).item()
        assert err <= tol, (shape, dt, name, err)
print("ok")
"""


def test_batch_norm_hard_data_one_group_per_channel():
    """The statistics of data with a large mean and an outlier first value, unsliced (CPU mapping), vs float64."""
    ns = {"torch": torch}
    exec(HARD_DATA, ns)
    for shape in [(4, 3, 50, 50), (64, 2, 7, 7), (3000, 2)]:
        x = ns["hard_data"](shape)
        rm, rv = torch.zeros(shape[1], dtype=torch.float64), torch.ones(shape[1], dtype=torch.float64)
        ref = F.batch_norm(x.double(), rm, rv, training=True, momentum=1.0)
        rmd, rvd = torch.zeros(shape[1], device="ocl"), torch.ones(shape[1], device="ocl")
        y = F.batch_norm(x.to("ocl"), rmd, rvd, training=True, momentum=1.0)
        for got, want in ((y, ref), (rmd, rm), (rvd, rv)):
            err = ((got.cpu().double() - want).abs().max() / want.abs().max()).item()
            assert err <= 2e-5, (shape, err)


def test_batch_norm_split_channel_sums():
    """The sliced per-channel statistics and gradient sums (GPU mapping) against float64."""
    from conftest import run_python

    assert "ok" in run_python(SPLIT_SCRIPT, env={"PYTORCH_OCL_GPU_MAPPING": "1"}).stdout
