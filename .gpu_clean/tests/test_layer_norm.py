"""layer_norm forward and backward against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
LOW = (torch.float16, torch.bfloat16)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,normalized", [((6, 7, 33), (33,)), ((4, 5, 6), (5, 6)), ((3, 1000), (1000,)),
                                              ((0, 8), (8,)), ((5,), (5,))])
def test_layer_norm_matches_cpu(dtype, affine, shape, normalized):
    torch.manual_seed(0)
    x = torch.randn(shape).to(dtype)
    w = torch.randn(normalized).to(dtype) if affine else None
    b = torch.randn(normalized).to(dtype) if affine else None
    leaves_o = [t.to("ocl").requires_grad_() for t in (x, w, b) if t is not None]
    leaves_c = [t.clone().double().requires_grad_() for t in (x, w, b) if t is not None]
    yo = F.layer_norm(leaves_o[0], normalized, *leaves_o[1:])
    yc = F.layer_norm(leaves_c[0], normalized, *leaves_c[1:])
    g = torch.randn(shape, dtype=torch.float64)
    yo.backward(g.to(dtype).to("ocl"))
    yc.backward(g.to(dtype).double())
    tol = dict(rtol=2e-2, atol=5e-2) if dtype in LOW else dict(rtol=1e-4, atol=1e-4)
    assert yo.dtype == dtype
    assert_close(yo.detach().cpu().double(), yc.detach(), **tol)
    for a, c in zip(leaves_o, leaves_c):
        assert_close(a.grad.cpu().double(), c.grad, **tol)


def test_layer_norm_non_contiguous_input():
    x = torch.randn(16, 12).t()
    w, b = torch.randn(16), torch.randn(16)
    assert_close(F.layer_norm(x.to("ocl"), (16,), w.to("ocl"), b.to("ocl")).cpu(), F.layer_norm(x, (16,), w, b),
                 rtol=1e-5, atol=1e-5)


def test_layer_norm_shape_mismatch_is_an_error():
    with pytest.raises(RuntimeError):
        F.layer_norm(torch.randn(4, 5, device="ocl"), (6,))
