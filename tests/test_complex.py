"""Complex tensors on ocl against the CPU: transfers, views, conjugate/negative views, the complex
forms of the pointwise ops (ComplexPointwise.cpp), sum/mean, and gradients through them, in
complex64 (and complex128 where the device has fp64), contiguous, strided, broadcast, scalar
and zero-size operands."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401

FP64 = torch.ocl.get_device_properties(0).fp64
DTYPES = [torch.complex64] + ([torch.complex128] if FP64 else [])


def close(got, expected):
    torch.testing.assert_close(got.cpu(), expected.detach(), equal_nan=True)


def crandn(*shape, dtype=torch.complex64):
    return torch.randn(*shape, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_transfers_and_views(dtype):
    x = crandn(3, 4, dtype=dtype)
    xo = x.to("ocl")
    close(xo, x)
    close(xo.t().contiguous(), x.t().contiguous())
    close(torch.view_as_real(xo), torch.view_as_real(x))
    close(torch.view_as_complex(torch.view_as_real(xo)), x)
    close(xo.real, x.real)
    close(xo.imag, x.imag)
    close(xo.conj(), x.conj())                     # a conjugate view copied to the host
    close(xo.conj().resolve_conj(), x.conj().resolve_conj())
    close(torch.conj_physical(xo), torch.conj_physical(x))
    close(xo.conj().imag, x.conj().imag)           # a negative view
    close(xo.conj().clone(), x.conj())             # device copy of a conjugate view
    y = torch.empty_like(xo)
    y.copy_(xo.conj())
    close(y, x.conj())
    close(x.conj().to("ocl"), x.conj())            # host conjugate view to the device
    other = torch.complex128 if dtype == torch.complex64 and FP64 else dtype
    close(xo.to(other), x.to(other))
    r = torch.randn(3, 4)
    close(r.to("ocl").to(dtype), r.to(dtype))      # real -> complex on the device
    z = torch.zeros(0, 3, dtype=dtype, device="ocl")
    assert z.cpu().shape == (0, 3)
    f = torch.full((2, 3), 1 - 2j, dtype=dtype, device="ocl")
    close(f, torch.full((2, 3), 1 - 2j, dtype=dtype))
    assert xo[1, 2].item() == x[1, 2].item()


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(dtype):
    x = crandn(4, 5, dtype=dtype)
    x[0, 0] = 0
    for fn in (torch.abs, torch.angle, torch.neg, torch.sgn, torch.reciprocal, torch.conj_physical):
        close(fn(x.to("ocl")), fn(x))
        close(fn(x.to("ocl").t()), fn(x.t()))
    r = torch.tensor([-1.5, 0.0, 2.0, float("nan")])
    close(torch.angle(r.to("ocl")), torch.angle(r))
    y = x.to("ocl")
    y.neg_()
    close(y, -x)


@pytest.mark.parametrize("dtype", DTYPES)
def test_binary(dtype):
    a, b = crandn(3, 4, dtype=dtype), crandn(3, 4, dtype=dtype)
    row, real = crandn(4, dtype=dtype), torch.randn(3, 1)
    ao, bo = a.to("ocl"), b.to("ocl")
    for fn in (torch.add, torch.sub, torch.mul, torch.div):
        close(fn(ao, bo), fn(a, b))
        close(fn(ao.t(), bo.t()), fn(a.t(), b.t()))
        close(fn(ao, row.to("ocl")), fn(a, row))            # broadcast
        close(fn(ao, real.to("ocl")), fn(a, real))          # complex with real tensor
        close(fn(real.to("ocl"), ao), fn(real, a))
        close(fn(ao, 2.5), fn(a, 2.5))                       # real scalar
        close(fn(ao, 1 - 3j), fn(a, 1 - 3j))                 # complex scalar
        close(fn(ao, torch.tensor(2 + 1j)), fn(a, torch.tensor(2 + 1j)))  # 0-dim CPU tensor
        close(fn(ao[:0], bo[:0]), fn(a[:0], b[:0]))
    close(torch.add(ao, bo, alpha=2), torch.add(a, b, alpha=2))
    close(torch.sub(ao, bo, alpha=1j), torch.sub(a, b, alpha=1j))
    c = ao.clone()
    c.mul_(bo)
    c.add_(2)
    c.div_(bo.conj())
    close(c, (a * b + 2) / b.conj())
    close(torch.div(ao, torch.zeros_like(ao)), torch.div(a, torch.zeros_like(a)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_construct_and_reduce(dtype):
    rt = torch.float32 if dtype == torch.complex64 else torch.float64
    re, im = torch.randn(3, 4, dtype=rt), torch.randn(4, dtype=rt)
    close(torch.complex(re.to("ocl"), im.to("ocl")), torch.complex(re, im))
    close(torch.polar(re.abs().to("ocl"), im.to("ocl")), torch.polar(re.abs(), im))
    x = crandn(3, 4, 5, dtype=dtype)
    xo = x.to("ocl")
    close(xo.sum(), x.sum())
    close(xo.sum(1), x.sum(1))
    close(xo.sum((0, 2), keepdim=True), x.sum((0, 2), keepdim=True))
    close(xo.mean(), x.mean())
    close(xo.mean(-1), x.mean(-1))
    close(xo.conj().sum(0), x.conj().sum(0))
    assert torch.equal(xo, x.to("ocl")) and not torch.equal(xo, xo.conj())
    close(xo == xo.conj(), x == x.conj())
    close(xo != 0, x != 0)


def test_gradients():
    x = crandn(4, 6)
    w = torch.randn(6)
    c = crandn(6)

    def f(t):
        wt, ct = w.to(t.device), c.to(t.device)
        y = (t * ct + wt) / (t.conj() + 3)
        # (angle's complex backward needs a complex `where`, not native yet)
        return torch.cat([y.abs().sum(0), y.sum(0).real, torch.view_as_real(y * 2.0).sum((0, 2))])

    xc = x.clone().requires_grad_()
    xo = x.to("ocl").requires_grad_()
    f(xc).sum().backward()
    f(xo).sum().backward()
    close(xo.grad, xc.grad)
    re = torch.randn(5, requires_grad=True)
    im = torch.randn(5, requires_grad=True)
    reo, imo = re.detach().to("ocl").requires_grad_(), im.detach().to("ocl").requires_grad_()
    torch.complex(re, im).abs().sum().backward()
    torch.complex(reo, imo).abs().sum().backward()
    close(reo.grad, re.grad)
    close(imo.grad, im.grad)


def test_errors():
    from opinfo_compare import raises_like_cpu
    raises_like_cpu(lambda t: torch.complex(t, t.double()), torch.randn(3))
    raises_like_cpu(lambda t: torch.polar(t, t.int()), torch.randn(3))
    raises_like_cpu(lambda t: t.add(t, alpha=1j), torch.randn(3))
