"""Learnable fake quantization (LSQ: torch._fake_quantize_learnable_per_tensor_affine and
_per_channel_affine, what torch.ao's _LearnableFakeQuantize calls) on ocl against the CPU: the forward bit for
bit, the gradients of x bit for bit and of scale / zero point (sums over the elements, in another order on ocl)
to float tolerance; out-of-range values on both sides, ties, axis 0 / 1 / last, bfloat16 per channel, strided
and zero-size inputs, the CPU's checks."""
import pytest
import torch

from test_fake_quantize import values

LEARN_TENSOR = torch._fake_quantize_learnable_per_tensor_affine
LEARN_CHANNEL = torch._fake_quantize_learnable_per_channel_affine
aten = torch.ops.aten


def run_learnable(fn, x, qparams, args, grad_factor, gy):
    """fn(x, *qparams, *args, grad_factor) forward + backward on both devices; returns (cpu, ocl) results."""
    out = []
    for dev in ("cpu", "ocl"):
        leaves = [t.detach().to(dev).requires_grad_() for t in (x, *qparams)]
        y = fn(*leaves, *args, grad_factor)
        y.backward(gy.to(dev))
        out.append([y.detach().cpu()] + [t.grad.cpu() for t in leaves])
    return out


def compare(cpu, ocl):
    assert ocl[0].dtype == cpu[0].dtype and torch.equal(ocl[0], cpu[0]), "forward"
    assert torch.equal(ocl[1], cpu[1]), "dX"
    for a, e in zip(ocl[2:], cpu[2:]):
        assert a.shape == e.shape
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("qparams", [(0.1, 0.0, -128, 127), (0.05, 3.4, 0, 255), (0.3, -2.5, -8, 7), (0.5, 0.5, -128, 127)],
                         ids=lambda q: "_".join(map(str, q)))
def test_per_tensor(qparams):
    scale, zp, qmin, qmax = qparams
    x = values(torch.float32)
    gy = torch.randn(x.shape, generator=torch.Generator().manual_seed(0))
    for grad_factor in (1.0, 0.37):
        cpu, ocl = run_learnable(LEARN_TENSOR, x, (torch.tensor([scale]), torch.tensor([zp])), (qmin, qmax),
                                 grad_factor, gy)
        compare(cpu, ocl)
        assert (cpu[1] == 0).any() and (cpu[1] != 0).any()  # values on both sides of the range


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_per_channel(axis, dtype):
    g = torch.Generator().manual_seed(axis)
    shape = [3, 4, 5]
    shape[axis] = 6
    x = (torch.randn(shape, generator=g) * 40).to(dtype)
    # float qparams: the CPU's forward fails an internal assert for bfloat16 ones (its kernel reads them as float)
    scale = torch.rand(6, generator=g) * 0.5 + 0.1
    zp = torch.randn(6, generator=g) * 3
    gy = torch.randn(shape, generator=g).to(dtype)
    cpu, ocl = run_learnable(LEARN_CHANNEL, x, (scale, zp), (axis, -16, 15), 0.5, gy)
    compare(cpu, ocl)


def test_layouts_and_sizes():
    g = torch.Generator().manual_seed(5)
    base = torch.randn(7, 9, generator=g) * 20
    s, z = torch.tensor([0.4]), torch.tensor([1.3])
    for x in (base.t(), base[1:6:2, ::3], base[:0], base[3]):
        compare(*run_learnable(LEARN_TENSOR, x, (s, z), (-10, 10), 1.0, torch.randn(x.shape, generator=g)))
    sc, zc = torch.rand(9, generator=g) + 0.2, torch.randn(9, generator=g)
    sc5, zc5 = sc[:5], zc[:5]
    # (not a 1-D x: the CPU's backward sums its qparam gradients to 0-dim, which autograd then rejects)
    for x, axis in ((base.t(), 0), (base[:, :9], 1), (base[1:, ::2], 1)):
        qp = (sc, zc) if x.shape[axis] == 9 else (sc5, zc5)
        compare(*run_learnable(LEARN_CHANNEL, x, qp, (axis, -10, 10), 1.0, torch.randn(x.shape, generator=g)))
    # zero elements: the backward returns its inputs (the CPU's)
    dX, ds, dz = aten._fake_quantize_learnable_per_tensor_affine_backward(
        base[:0].to("ocl"), base[:0].to("ocl"), s.to("ocl"), z.to("ocl"), -10, 10, 1.0)
    assert dX.shape == (0, 9) and ds.cpu().tolist() == s.tolist() and dz.cpu().tolist() == z.tolist()


def test_checks():
    x = torch.randn(4, 3, device="ocl")
    s, z = torch.tensor([0.1], device="ocl"), torch.tensor([0.0], device="ocl")
    backward = aten._fake_quantize_learnable_per_tensor_affine_backward
    with pytest.raises(RuntimeError, match="quantization range should include 0"):
        backward(x, x, s, z, 1, 10, 1.0)
    with pytest.raises(RuntimeError, match="ScalarType::Float"):
        backward(x.double(), x.double(), s, z, -10, 10, 1.0)
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or"):
        LEARN_TENSOR(x, s, z, 10, -10, 1.0)
    sc, zc = torch.full((3,), 0.1, device="ocl"), torch.zeros(3, device="ocl")
    channel_backward = aten._fake_quantize_learnable_per_channel_affine_backward
    with pytest.raises(RuntimeError, match="Expecting `quant_min` <= 0 and `quant_max` >= 0"):
        channel_backward(x, x, sc, zc, 1, 1, 10, 1.0)
    with pytest.raises(RuntimeError, match="dimensions of scale and zero-point are not consistent"):
        channel_backward(x, x, sc, zc, 0, -10, 10, 1.0)
    with pytest.raises(RuntimeError, match="scale and zero-point need to have the same dimensions"):
        channel_backward(x, x, sc, zc[:2], 1, -10, 10, 1.0)


def test_learnable_fake_quantize_module_steps():
    """torch.ao's _LearnableFakeQuantize (observer, then the learnable ops) per tensor and per channel, two steps."""
    from torch.ao.quantization._learnable_fake_quantize import _LearnableFakeQuantize
    from torch.ao.quantization.observer import MovingAverageMinMaxObserver, MovingAveragePerChannelMinMaxObserver

    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(6)) * 3
    configs = [dict(observer=MovingAverageMinMaxObserver, quant_min=0, quant_max=255),
               dict(observer=MovingAveragePerChannelMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8,
                    qscheme=torch.per_channel_symmetric, channel_len=16, ch_axis=1)]
    for config in configs:
        results = []
        for dev in ("cpu", "ocl"):
            module = _LearnableFakeQuantize(**config).to(dev)
            xd = x.detach().to(dev).requires_grad_()
            for _ in range(2):
                y = module(xd)
                y.sum().backward()
            results.append([y.detach().cpu(), xd.grad.cpu(), module.scale.grad.cpu(), module.zero_point.grad.cpu()])
        compare(*results)
