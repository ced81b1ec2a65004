"""Fake quantization with qparams in tensors, on ocl against the CPU bit for bit:
torch.fake_quantize_per_channel_affine (aten::fake_quantize_per_channel_affine_cachemask: int32, float and
half zero points, axis 0 / 1 / last, every float dtype, ties, NaN / inf / out-of-range values, strided inputs
and qparams, zero-size, the gradient) and the per-tensor form with device qparams
(aten::_fake_quantize_per_tensor_affine_cachemask_tensor_qparams, what torch.ao's FakeQuantize calls:
fake_quant_enabled off, zero points of other dtypes), and the CPU's argument checks."""
import pytest
import torch

from test_fake_quantize import DTYPES, values

PER_CHANNEL = torch.ops.aten.fake_quantize_per_channel_affine_cachemask
TENSOR_QPARAMS = torch.ops.aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams
SCALES = [0.1, 0.05, 0.3, 0.5]
ZERO_POINTS = {torch.int32: [0, 3, -2, 0], torch.float32: [0.3, -1.7, 2.5, 0.0], torch.float16: [0.25, -1.5, 2.0, 7.0]}
EXTREMES = [float("inf"), -float("inf"), 1e30, -1e30, 5e9]  # x86's int64 conversion: all give quant_min


def channel_values(dtype, axis, dim=3):
    """x with 4 channels at `axis` (each channel all of values() plus the extremes), dim dims."""
    v = torch.cat([values(torch.float64), torch.tensor(EXTREMES, dtype=torch.float64)])
    v = v[: (v.numel() // 8) * 8]
    x = v.repeat(4).reshape(4, 2, -1) if dim == 3 else v.repeat(4).reshape(4, -1)
    return x.movedim(0, axis).to(dtype)


def same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
    torch.testing.assert_close(a.cpu(), b, rtol=0, atol=0, equal_nan=True)  # NaN only where the input passes through


def run_both(fn, *args):
    expected = fn(*args)
    actual = fn(*[a.to("ocl") if isinstance(a, torch.Tensor) else a for a in args])
    for a, e in zip(actual, expected):
        same(a, e)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("zp_dtype", list(ZERO_POINTS), ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_per_channel_matches_cpu_bit_for_bit(dtype, zp_dtype, axis):
    x = channel_values(dtype, axis)
    scale = torch.tensor(SCALES)
    zp = torch.tensor(ZERO_POINTS[zp_dtype], dtype=zp_dtype)
    for qmin, qmax in ((-128, 127), (-2, 253), (-8, 7)):  # the int zero points inside each range (else the CPU raises)
        run_both(PER_CHANNEL, x, scale, zp, axis, qmin, qmax)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("zp_dtype", [torch.float32, torch.float16], ids=["zp_float32", "zp_float16"])
def test_per_channel_float_zero_point_near_ties(dtype, zp_dtype):
    """zero point + x / scale next to k + 1/2: the CPU fuses the product and a float32 zero point into one fma."""
    scale, zp = torch.tensor(SCALES), torch.tensor(ZERO_POINTS[zp_dtype], dtype=zp_dtype)
    inv = (1 / scale).double()
    k = torch.arange(-40, 40, dtype=torch.float64)[:, None]
    tie = ((k + 0.5 - zp.double()) / inv).float()
    x = torch.cat([tie, tie.nextafter(tie + 1), tie.nextafter(tie - 1)]).to(dtype)
    run_both(PER_CHANNEL, x, scale, zp, 1, -128, 127)


def test_per_channel_layouts_and_gradient():
    g = torch.Generator().manual_seed(1)
    base = torch.randn(6, 8, 5, generator=g) * 10
    scale = torch.rand(16, generator=g) * 0.3 + 0.05
    zp = torch.randint(-3, 4, (16,), generator=g, dtype=torch.int32)
    # a transposed input, a sliced one, strided qparams, a 2-D input with its channels last
    run_both(PER_CHANNEL, base.transpose(0, 2), scale[:5], zp[:5], 0, -10, 10)
    run_both(PER_CHANNEL, base[:, 1:7:2], scale[::2][:6], zp[::2][:6], 0, -10, 10)
    run_both(PER_CHANNEL, base[0].t(), scale[1:9], zp[1:9], 1, -10, 10)
    run_both(PER_CHANNEL, base[:0], scale[:8], zp[:8], 1, -10, 10)  # zero-size
    run_both(PER_CHANNEL, base[:, 0, 0], scale[:6], zp[:6], 0, -10, 10)  # 1-D
    x = base.clone().requires_grad_()
    d = base.to("ocl").requires_grad_()
    gy = torch.randn(base.shape, generator=g)
    torch.fake_quantize_per_channel_affine(x, scale[:8], zp[:8], 1, -10, 10).backward(gy)
    torch.fake_quantize_per_channel_affine(d, scale[:8].to("ocl"), zp[:8].to("ocl"), 1, -10, 10).backward(gy.to("ocl"))
    assert torch.equal(d.grad.cpu(), x.grad) and (x.grad == 0).any() and (x.grad != 0).any()


def test_per_channel_checks():
    x = torch.randn(3, 4, device="ocl")
    s, z = torch.full((4,), 0.1, device="ocl"), torch.zeros(4, dtype=torch.int32, device="ocl")
    cases = [
        ((x, s.double(), z, 1, -128, 127), "Scale must be Float or BFloat16, found Double"),
        ((x, s, z.long(), 1, -128, 127), "Zero-point must be Int32, Float or Half, found Long"),
        ((x, s[None], z, 1, -128, 127), "scale should be a 1-D tensor"),
        ((x, s, z[None], 1, -128, 127), "zero point should be a 1-D tensor"),
        ((x, s, z[:3], 1, -128, 127), "scale and zero-point need to have the same dimensions"),
        ((x, s, z, 0, -128, 127), "dimensions of scale and zero-point are not consistent with input tensor"),
        ((x, s, z, 1, 10, -10), "`quant_min` should be less than or"),
        ((x, s, z, -1, -128, 127), "`axis` must be between 0 and number of dimensions of input"),
        ((x.long(), s, z, 1, -128, 127), "not implemented for 'Long'"),
    ]
    for args, message in cases:
        with pytest.raises(RuntimeError, match=message):
            PER_CHANNEL(*args)
        with pytest.raises(RuntimeError, match=message):
            PER_CHANNEL(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).replace("torch.", ""))
def test_tensor_qparams_matches_cpu_bit_for_bit(dtype):
    x = torch.cat([values(torch.float64), torch.tensor(EXTREMES, dtype=torch.float64)]).to(dtype)
    for scale, zp, qmin, qmax in ((0.1, 0, -128, 127), (0.05, 3, 0, 255), (0.3, -2, -8, 7), (0.5, 0, -128, 127)):
        s, z = torch.tensor([scale]), torch.tensor([zp], dtype=torch.int32)
        run_both(TENSOR_QPARAMS, x, s, z, torch.ones(1, dtype=torch.long), qmin, qmax)
        # what torch.fake_quantize_per_tensor_affine(x, scale_tensor, zp_tensor, ...) calls
        same(torch.fake_quantize_per_tensor_affine(x.to("ocl"), s.to("ocl"), z.to("ocl"), qmin, qmax),
             torch.fake_quantize_per_tensor_affine(x, s, z, qmin, qmax))
    # disabled: the input and an all-true mask; qparams of other dtypes and shapes (.item() on the CPU)
    run_both(TENSOR_QPARAMS, x, torch.tensor([0.1]), torch.tensor([1]), torch.zeros(1, dtype=torch.uint8), -10, 10)
    run_both(TENSOR_QPARAMS, x, torch.tensor(0.3, dtype=torch.float64), torch.tensor(2.7), torch.tensor([True]), -10, 10)
    run_both(TENSOR_QPARAMS, x, torch.tensor([[0.3]]), torch.tensor(-2.7), torch.tensor(0.5), -10, 10)


def test_tensor_qparams_layouts_gradient_and_checks():
    g = torch.Generator().manual_seed(2)
    base = torch.randn(6, 40, generator=g) * 10
    s, z, on = torch.tensor([0.2]), torch.tensor([1], dtype=torch.int32), torch.ones(1, dtype=torch.long)
    for x in (base.t(), base[:, 3:33:2], base[:0], base[2, 5]):
        run_both(TENSOR_QPARAMS, x, s, z, on, -10, 10)
    x = base.clone().requires_grad_()
    d = base.to("ocl").requires_grad_()
    gy = torch.randn(base.shape, generator=g)
    torch.fake_quantize_per_tensor_affine(x, s, z, -10, 10).backward(gy)
    torch.fake_quantize_per_tensor_affine(d, s.to("ocl"), z.to("ocl"), -10, 10).backward(gy.to("ocl"))
    assert torch.equal(d.grad.cpu(), x.grad) and (x.grad == 0).any() and (x.grad != 0).any()
    d = base.to("ocl")
    with pytest.raises(RuntimeError, match="`quant_min` should be less than or"):
        TENSOR_QPARAMS(d, s.to("ocl"), z.to("ocl"), on.to("ocl"), 10, -10)
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        TENSOR_QPARAMS(d, s.repeat(2).to("ocl"), z.to("ocl"), on.to("ocl"), -10, 10)


def test_fake_quantize_module_qat_step():
    """torch.ao's FakeQuantize (observer + tensor-qparams fake quantization) in a forward/backward."""
    from torch.ao.quantization import FakeQuantize

    g = torch.Generator().manual_seed(3)
    x = torch.randn(8, 16, generator=g) * 3
    results = []
    for dev in ("cpu", "ocl"):
        fq = FakeQuantize().to(dev)
        xd = x.detach().to(dev).requires_grad_()
        y = fq(xd)
        y.backward(torch.ones_like(y))
        results.append((y.detach().cpu(), xd.grad.cpu(), fq.scale.cpu(), fq.zero_point.cpu()))
    for a, e in zip(results[1], results[0]):
        assert torch.equal(a, e)
