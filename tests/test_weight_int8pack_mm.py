"""aten::_weight_int8pack_mm (int8 weight-only quantized linear: x [M, K] @ int8 W [N, K].T * scales [N]) on
ocl against the CPU: float32 / float16 (float32 accumulation, one rounding after the scale, as the CPU's; the
order of the sum differs) and bfloat16 (the CPU kernel crashes on this machine: against a float64 reference),
odd sizes, a row-strided x, zero sizes, and the CPU's argument checks."""
import pytest
import torch

MM = torch.ops.aten._weight_int8pack_mm


def operands(m, k, n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
    scales = (torch.rand(n, generator=g) * 0.02 + 0.001).to(dtype)
    return x, w, scales


def reference(x, w, scales):
    return ((x.double() @ w.double().t()) * scales.double()).to(x.dtype)


TOL = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.float16: dict(rtol=2e-3, atol=2e-3),
       torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("m,k,n", [(1, 64, 48), (5, 70, 9), (33, 129, 65)])
def test_matches_cpu(dtype, m, k, n):
    x, w, scales = operands(m, k, n, dtype)
    out = MM(x.to("ocl"), w.to("ocl"), scales.to("ocl"))
    assert out.dtype == dtype and out.shape == (m, n)
    # torch 2.13's CPU kernel segfaults for bfloat16 here: compare that dtype with a float64 reference
    expected = MM(x, w, scales) if dtype != torch.bfloat16 else reference(x, w, scales)
    torch.testing.assert_close(out.cpu(), expected, **TOL[dtype])


def test_layouts_and_zero_sizes():
    x, w, scales = operands(6, 40, 7, torch.float32, seed=1)
    wide = torch.randn(6, 50)
    wide[:, :40] = x
    strided = wide.to("ocl")[:, :40]  # rows 50 apart: only the last dim must be contiguous
    torch.testing.assert_close(MM(strided, w.to("ocl"), scales.to("ocl")).cpu(), MM(x, w, scales))
    for xs, ws, ss in ((x[:0], w, scales), (x[:, :0], w[:, :0], scales), (x, w[:0], scales[:0])):
        out = MM(xs.to("ocl"), ws.to("ocl"), ss.to("ocl"))
        assert torch.equal(out.cpu(), MM(xs, ws, ss))


def test_checks():
    x, w, scales = operands(4, 16, 8, torch.float32)
    x, w, scales = x.to("ocl"), w.to("ocl"), scales.to("ocl")
    cases = [
        ((x.double(), w, scales.double()), "expect A to be either 32-bit or 16-bit float tensor"),
        ((x.t().contiguous().t(), w, scales), "A must be contiguous on the last dimension"),
        ((x, w.short(), scales), "expect B to be int8 tensor"),
        ((x, w.t().contiguous().t(), scales), "expect B to be contiguous"),
        ((x, w[:, :8], scales), r"expect B.size\(1\) == 16"),
        ((x, w[:, :8].contiguous(), scales), r"expect B.size\(1\) == 16"),
        ((x, w, scales[:3]), "expect scales to be 1d tensor with size 8"),
        ((x, w, scales.half()), "expected scalar type Float but found Half"),
    ]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            MM(*args)
        with pytest.raises(RuntimeError, match=message):
            MM(*[a.cpu() for a in args])
