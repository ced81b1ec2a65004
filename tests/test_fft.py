"""torch.fft on ocl (VkFFT plans behind _fft_c2c/_fft_r2c/_fft_c2r) against the CPU.

op_db samples of every fft.* OpInfo (forward and input gradients, float32 and complex64), then
hand-written cases: odd, prime (Bluestein) and length-1 sizes, batches, dims=(-2,-1), more than
three transformed dims, non-contiguous and conjugated inputs, zero-size inputs, every norm mode,
float64, stft/istft, the .out forms, plan caching and errors.

FFT results carry errors of the order eps * |x| * log n in every element, so comparisons use an
absolute tolerance scaled by the largest expected magnitude. A cold run compiles ~60 VkFFT plans
(about 1 s each on PoCL, kept in the on-disk program cache afterwards).
"""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

FFT_OPS = [o for o in op_db if o.name.startswith("fft.")]
MAX_SAMPLES = 8
FP64 = torch.ocl.get_device_properties(0).fp64


def close(got, expected, tol=1e-4):
    got = got.cpu() if isinstance(got, torch.Tensor) else got
    scale = max(1.0, expected.detach().abs().max().item()) if expected.numel() else 1.0
    torch.testing.assert_close(got, expected.detach(), rtol=tol, atol=tol * scale)


def _ocl(x):
    return x.detach().to("ocl").requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x


def check(fn, x, *args, grad=True, tol=1e-4, **kwargs):
    """fn(x, ...) on ocl equals the CPU, and so do the input gradients for a random upstream gradient."""
    xc = x.detach().clone().requires_grad_(grad and (x.is_floating_point() or x.is_complex()))
    xo = _ocl(xc)
    ref = fn(xc, *args, **kwargs)
    out = fn(xo, *args, **kwargs)
    assert out.device.type == "ocl" and out.dtype == ref.dtype and out.shape == ref.shape
    close(out, ref, tol)
    if xc.requires_grad and ref.requires_grad:
        g = torch.randn_like(ref)
        (gc,) = torch.autograd.grad(ref, xc, g)
        (go,) = torch.autograd.grad(out, xo, g.to("ocl"))
        close(go, gc, tol)


@pytest.mark.parametrize("op", FFT_OPS, ids=lambda o: o.name)
def test_opinfo_samples(op):
    dtypes = [torch.float32, torch.complex64]
    ran = 0
    for dtype in dtypes:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        for i, s in enumerate(op.sample_inputs("cpu", dtype, requires_grad=op.supports_autograd)):
            if i >= MAX_SAMPLES:
                break
            check(lambda x: op(x, *s.args, **s.kwargs), s.input, grad=op.supports_autograd)
            ran += 1
    assert ran


@pytest.mark.parametrize("n", [1, 2, 7, 9, 17, 24])
@pytest.mark.parametrize("fn", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_lengths(fn, n):
    f = getattr(torch.fft, fn)
    real_in = fn in ("rfft", "ihfft")
    x = torch.randn(3, n if real_in or fn in ("fft", "ifft") else n // 2 + 1,
                    dtype=torch.float32 if real_in else torch.complex64)
    kw = {} if real_in or fn in ("fft", "ifft") else {"n": n}
    check(lambda t: f(t, **kw), x)


@pytest.mark.parametrize("norm", [None, "backward", "forward", "ortho"])
def test_norm_modes(norm):
    c = torch.randn(4, 6, dtype=torch.complex64)
    r = torch.randn(4, 6)
    check(lambda t: torch.fft.fft(t, norm=norm), c)
    check(lambda t: torch.fft.ifft(t, norm=norm), c)
    check(lambda t: torch.fft.rfft(t, norm=norm), r)
    check(lambda t: torch.fft.irfft(t, n=10, norm=norm), c)
    check(lambda t: torch.fft.hfft(t, norm=norm), c)


def test_multi_dim_and_batches():
    c = torch.randn(2, 3, 6, 10, dtype=torch.complex64)
    r = torch.randn(2, 3, 6, 10)
    check(lambda t: torch.fft.fft2(t), c)
    check(lambda t: torch.fft.fft2(t, dim=(0, 2)), c)  # batch dims between transformed ones
    check(lambda t: torch.fft.fftn(t), c)              # four dims: two VkFFT passes
    check(lambda t: torch.fft.ifftn(t, dim=(-1, 0, 2)), c)
    check(lambda t: torch.fft.rfft2(t), r)
    check(lambda t: torch.fft.rfftn(t), r)
    check(lambda t: torch.fft.rfftn(t, dim=(1, 3)), r)
    check(lambda t: torch.fft.irfft2(t), c)
    check(lambda t: torch.fft.irfftn(t, s=(3, 6, 17)), c)
    check(lambda t: torch.fft.fft(t, n=12, dim=2), c)  # zero padding
    check(lambda t: torch.fft.rfft(t, n=4), r)         # trimming


def test_non_contiguous_and_conjugated():
    c = torch.randn(6, 10, dtype=torch.complex64)
    r = torch.randn(6, 10)
    check(lambda t: torch.fft.fft(t.t()), c)
    check(lambda t: torch.fft.fft(t[:, ::3]), c)
    check(lambda t: torch.fft.rfft(t.t()[1:]), r)
    check(lambda t: torch.fft.irfft(t[::2, :6]), c)
    check(lambda t: torch.fft.fft2(t.conj()), c)
    check(lambda t: torch.fft.irfft(t.conj()), c)
    check(lambda t: torch.fft.fft(t.expand(4, 6, 10), dim=1), c, grad=False)


def test_zero_size():
    for shape, fn in [((0, 5), torch.fft.fft), ((0, 3, 4), torch.fft.fft2), ((0, 8), torch.fft.rfft),
                      ((0, 5), torch.fft.irfft)]:
        x = torch.randn(shape, dtype=torch.float32 if fn is torch.fft.rfft else torch.complex64)
        out = fn(x.to("ocl"))
        expected = torch.empty(fn(torch.randn(tuple(max(s, 1) for s in shape), dtype=x.dtype)).shape)
        assert out.device.type == "ocl" and out.numel() == 0
        assert out.shape[len(shape) - 1:] == expected.shape[len(shape) - 1:]


@pytest.mark.skipif(not FP64, reason="device without fp64")
def test_float64():
    check(lambda t: torch.fft.fft(t), torch.randn(3, 17, dtype=torch.complex128), tol=1e-10)
    check(lambda t: torch.fft.rfft2(t), torch.randn(4, 6, dtype=torch.float64), tol=1e-10)
    check(lambda t: torch.fft.irfft(t, n=9), torch.randn(2, 5, dtype=torch.complex128), tol=1e-10)


def test_stft_istft():
    x = torch.randn(2, 200)
    w = torch.hann_window(64)
    check(lambda t: torch.stft(t, 64, hop_length=16, window=w.to(t.device), return_complex=True), x)
    check(lambda t: torch.stft(t, 32, hop_length=8, return_complex=True, center=False), x)
    spec = torch.stft(x, 64, hop_length=16, window=w, return_complex=True)
    check(lambda t: torch.istft(t, 64, hop_length=16, window=w.to(t.device), length=200), spec)


def test_out_forms():
    c = torch.randn(4, 6, dtype=torch.complex64)
    out = torch.empty(0, dtype=torch.complex64, device="ocl")
    torch.fft.fft(c.to("ocl"), out=out)
    close(out, torch.fft.fft(c))
    r_out = torch.empty(0, device="ocl")
    torch.fft.irfft(c.to("ocl"), out=r_out)
    close(r_out, torch.fft.irfft(c))
    c_out = torch.empty(0, dtype=torch.complex64, device="ocl")
    torch.fft.rfft(c.real.to("ocl"), out=c_out)
    close(c_out, torch.fft.rfft(c.real))


def test_plans_are_cached():
    from pytorch_ocl import _C
    x = torch.randn(5, 12, dtype=torch.complex64, device="ocl")
    torch.fft.fft(x)
    n = _C._fft_plan_cache_size()
    for _ in range(3):
        torch.fft.fft(x)
    torch.fft.fft(torch.randn(5, 12, dtype=torch.complex64, device="ocl")[:, :])
    assert _C._fft_plan_cache_size() == n
    s = torch.ocl.Stream()
    with torch.ocl.stream(s):
        y = torch.fft.fft(x)  # another queue: its own plan (VkFFT's scratch is per plan)
    s.synchronize()
    assert _C._fft_plan_cache_size() == n + 1
    close(y, torch.fft.fft(x.cpu()))
    _C._fft_plan_cache_clear()
    assert _C._fft_plan_cache_size() == 0
    close(torch.fft.fft(x), torch.fft.fft(x.cpu()))  # rebuilt (from the on-disk cache)


def test_plan_building_keeps_the_locale():
    import locale
    from pytorch_ocl import _C
    before = locale.setlocale(locale.LC_ALL)
    _C._fft_plan_cache_clear()
    torch.fft.fft(torch.randn(3, 11, dtype=torch.complex64, device="ocl")).cpu()
    assert locale.setlocale(locale.LC_ALL) == before


def test_errors():
    from opinfo_compare import raises_like_cpu
    raises_like_cpu(lambda t: torch.fft.fft(t, dim=2), torch.randn(3, 4, dtype=torch.complex64))
    raises_like_cpu(lambda t: torch.fft.rfft(t), torch.randn(3, 4, dtype=torch.complex64))
    raises_like_cpu(lambda t: torch.fft.irfft(t, n=0), torch.randn(3, 4, dtype=torch.complex64))
    raises_like_cpu(lambda t: torch.fft.rfft(t), torch.randn(8, dtype=torch.float16))
