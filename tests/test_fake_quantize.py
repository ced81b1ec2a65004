"""torch.fake_quantize_per_tensor_affine on ocl (aten::fake_quantize_per_tensor_affine_cachemask, the kernel of
quantization-aware training) against the CPU, bit for bit: each float dtype, values at and next to the rounding
ties (half to even), out-of-range values (clamped, mask false), NaN, non-contiguous / zero-size / 0-dim inputs,
the gradient (the mask times the incoming gradient), and the CPU's argument checks."""
import pytest
import torch

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
QPARAMS = [(0.1, 0, -128, 127), (0.05, 3, 0, 255), (0.3, -2, -8, 7), (0.5, 0, -128, 127)]
FQ = torch.ops.aten.fake_quantize_per_tensor_affine_cachemask


def values(dtype):
    g = torch.Generator().manual_seed(0)
    ties = (torch.arange(-300, 300, dtype=torch.float64) + 0.5) * 0.1
    exact = torch.arange(-100, 100, dtype=torch.float64) * 0.25  # exact halves at scale 0.5: round half to even
    x = torch.cat([torch.randn(500, generator=g, dtype=torch.float64) * 20, ties, ties + 1e-9, ties - 1e-9, exact,
                   torch.tensor([0.0, -0.0, 1e6, -1e6, float("nan")], dtype=torch.float64)])
    return x.to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("qparams", QPARAMS, ids=lambda q: "_".join(map(str, q)))
def test_matches_cpu_bit_for_bit(dtype, qparams):
    x = values(dtype)
    out, mask = FQ(x, *qparams)
    dout, dmask = FQ(x.to("ocl"), *qparams)
    assert dout.dtype == dtype and dmask.dtype == torch.bool
    assert torch.equal(dout.cpu(), out) and torch.equal(dmask.cpu(), mask)


def test_layouts_and_gradient():
    g = torch.Generator().manual_seed(1)
    base = torch.randn(6, 40, generator=g) * 10
    for x in (base.t(), base[:, 3:33:2], base[:0], base[2, 5]):
        d = x.to("ocl")
        torch.testing.assert_close(torch.fake_quantize_per_tensor_affine(d, 0.2, 1, -10, 10).cpu(),
                                   torch.fake_quantize_per_tensor_affine(x, 0.2, 1, -10, 10), rtol=0, atol=0)
    x = base.clone().requires_grad_()
    d = base.to("ocl").requires_grad_()
    gy = torch.randn(base.shape, generator=g)
    torch.fake_quantize_per_tensor_affine(x, 0.2, 1, -10, 10).backward(gy)
    torch.fake_quantize_per_tensor_affine(d, 0.2, 1, -10, 10).backward(gy.to("ocl"))
    assert torch.equal(d.grad.cpu(), x.grad) and (x.grad == 0).any() and (x.grad != 0).any()


def test_checks():
    x = torch.randn(5, device="ocl")
    with pytest.raises(RuntimeError, match="quant_min` should be less than or equal to `quant_max"):
        torch.fake_quantize_per_tensor_affine(x, 0.1, 0, 10, -10)
    with pytest.raises(RuntimeError, match="zero_point` must be between"):
        torch.fake_quantize_per_tensor_affine(x, 0.1, 50, -10, 10)
    with pytest.raises(RuntimeError, match="not implemented for 'Long'"):
        FQ(torch.ones(3, dtype=torch.long, device="ocl"), 0.1, 0, -10, 10)
