"""linalg_cross / cross and renorm on ocl against the CPU: forward and backward, every layout
of the vector dim (transposed, sliced, broadcast, zero-size), the dtypes the CPU supports, and
the CPU's errors. (The pointwise table's tests also run both rows through its generic forms.)"""
import pytest
import torch

import pytorch_ocl  # noqa: F401
from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl"
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def rand(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)
    return torch.randint(-9, 10, shape, generator=g).to(dtype)


def same(fn, *cpu, grad=False, atol=None, rtol=None):
    """fn on the CPU tensors and on ocl copies (same strides); forward and input gradients."""
    def to_dev(t):
        if 0 in t.stride():  # broadcast views: expand the device copy the same way
            base = t[tuple(slice(0, 1) if s == 0 else slice(None) for s in t.stride())]
            return to_dev(base.clone(memory_format=torch.contiguous_format)).expand(t.shape)
        d = torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=DEV)
        d.copy_(t)
        return d
    cpu = [t.detach().requires_grad_(grad) for t in cpu]
    dev = [to_dev(t.detach()).requires_grad_(grad) for t in cpu]
    expected, actual = fn(*cpu), fn(*dev)
    assert actual.device.type == "ocl" and actual.dtype == expected.dtype
    torch.testing.assert_close(actual.cpu(), expected.detach(), atol=atol, rtol=rtol)
    if grad:
        g = rand(*expected.shape, dtype=expected.dtype, seed=7)
        gc = torch.autograd.grad(expected, cpu, g)
        gd = torch.autograd.grad(actual, dev, g.to(DEV))
        for a, e in zip(gd, gc):
            torch.testing.assert_close(a.cpu(), e, atol=atol, rtol=rtol)


def raises_like_cpu(fn, *cpu):
    with pytest.raises(Exception) as cpu_err:
        fn(*cpu)
    with pytest.raises(type(cpu_err.value)) as dev_err:
        fn(*[t.to(DEV) for t in cpu])
    assert "PYTORCH_OCL_STRICT" not in str(dev_err.value)


# ------------------------------------------------------------------ cross
@pytest.mark.parametrize("dtype", FLOATS + [torch.int64, torch.int32, torch.int8, torch.uint8])
def test_cross_dtypes(dtype):
    a, b = rand(5, 3, 4, dtype=dtype), rand(5, 3, 4, dtype=dtype, seed=1)
    same(lambda x, y: torch.linalg.cross(x, y, dim=1), a, b)
    same(lambda x, y: torch.cross(x, y, dim=-2), a, b)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "broadcast", "broadcast_both", "scalar_batch",
                                    "zero_size", "large"])
def test_cross_layouts_and_grad(layout):
    if layout == "contiguous":
        a, b, dim = rand(4, 3), rand(4, 3, seed=1), -1
    elif layout == "transposed":  # the vector dim is the strided one
        a, b, dim = rand(3, 6).t(), rand(6, 3, seed=1), 1
    elif layout == "sliced":  # unaligned offsets and strides
        a, b, dim = rand(5, 8)[1:, 2:5], rand(8, 4, seed=1)[::2, 1:], 1
    elif layout == "broadcast":
        a, b, dim = rand(2, 1, 3), rand(2, 5, 3, seed=1), 2
    elif layout == "broadcast_both":
        a, b, dim = rand(1, 4, 3), rand(6, 1, 3, seed=1), -1
    elif layout == "scalar_batch":
        a, b, dim = rand(3), rand(3, seed=1), 0
    elif layout == "zero_size":
        a, b, dim = rand(0, 3), rand(0, 3, seed=1), 1
    else:
        a, b, dim = rand(3, 1500), rand(3, 1500, seed=1), 0
    same(lambda x, y: torch.linalg.cross(x, y, dim=dim), a, b, grad=True)


def test_cross_out_and_inplace_alias():
    a, b = rand(4, 3), rand(4, 3, seed=1)
    da, db = a.to(DEV), b.to(DEV)
    out = torch.empty(3, 4, device=DEV).t()  # a non-contiguous out
    torch.linalg.cross(da, db, out=out)
    torch.testing.assert_close(out.cpu(), torch.linalg.cross(a, b))
    empty = torch.empty(0, device=DEV)
    torch.linalg.cross(da, db, out=empty)  # an unsized out is resized
    torch.testing.assert_close(empty.cpu(), torch.linalg.cross(a, b))
    torch.linalg.cross(da, db, out=da)  # out aliasing an input
    torch.testing.assert_close(da.cpu(), torch.linalg.cross(a, b))


def test_cross_default_dim_takes_first_dim_of_size_3():
    a, b = rand(2, 3, 3), rand(2, 3, 3, seed=1)
    with pytest.warns(UserWarning):
        same(lambda x, y: torch.cross(x, y), a, b)


def test_cross_errors_match_cpu():
    raises_like_cpu(lambda x, y: torch.cross(x, y), rand(2, 4), rand(2, 4))  # no dim of size 3
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y), rand(2, 4), rand(2, 4))
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y), rand(2, 3), rand(5, 2, 3))  # ranks differ
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y), rand(2, 3), rand(4, 3))  # not broadcastable
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y), rand(2, 3), rand(2, 3, dtype=torch.float64))
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y), rand(2, 3) > 0, rand(2, 3) > 0)  # bool
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y, dim=3), rand(2, 3), rand(2, 3))
    raises_like_cpu(lambda x, y: torch.linalg.cross(x, y, out=torch.empty(2, 3, dtype=torch.float64, device=x.device)),
                    rand(2, 3), rand(2, 3))


# ------------------------------------------------------------------ renorm
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 0.5), (float("inf"), -1, 0.3), (3.5, 2, 100.0),
                                           (0.5, 1, 2.0), (2, 0, 0.0)])
def test_renorm_forward(dtype, p, dim, maxnorm):
    x = rand(5, 4, 3, dtype=dtype)
    same(lambda t: torch.renorm(t, p, dim, maxnorm), x)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded", "zero_size", "zero_slices", "large"])
def test_renorm_layouts_and_grad(layout):
    dtype = torch.float64  # the gradient goes through norms: compare it in double
    if layout == "transposed":
        x = rand(6, 5, dtype=dtype).t()
    elif layout == "sliced":
        x = rand(7, 9, 4, dtype=dtype)[1:, ::2, 1:]
    elif layout == "expanded":
        x = rand(1, 5, dtype=dtype).expand(4, 5)
    elif layout == "zero_size":
        x = rand(0, 5, dtype=dtype)
    elif layout == "zero_slices":
        x = rand(4, 0, dtype=dtype)
    else:
        x = rand(3, 3000, dtype=dtype)
    for p, dim, maxnorm in ((2, 0, 0.7), (1, 1, 1.5), (3, -1, 0.2)):
        if layout != "expanded":
            same(lambda t: torch.renorm(t, p, dim, maxnorm), x, grad=True)
        else:
            same(lambda t: torch.renorm(t, p, dim, maxnorm), x)


def test_renorm_inplace_and_out():
    x = rand(4, 6)
    d = x.to(DEV).t()  # in-place on a non-contiguous tensor
    d.renorm_(2, 0, 0.5)
    torch.testing.assert_close(d.cpu(), x.t().renorm(2, 0, 0.5))
    out = torch.empty(0, device=DEV)
    torch.renorm(x.to(DEV), 1, 1, 0.4, out=out)
    torch.testing.assert_close(out.cpu(), x.renorm(1, 1, 0.4))


def test_renorm_errors_match_cpu():
    x = rand(4, 3)
    raises_like_cpu(lambda t: torch.renorm(t, 0, 0, 1.0), x)  # non-positive p
    raises_like_cpu(lambda t: torch.renorm(t, -1, 0, 1.0), x)
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, -1.0), x)  # negative maxnorm
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, 1.0), rand(5))  # one dim
    raises_like_cpu(lambda t: torch.renorm(t, 2, 2, 1.0), x)  # dim out of range
    raises_like_cpu(lambda t: torch.renorm(t, 2, 0, 1.0), rand(4, 3, dtype=torch.int64))  # integer input


@pytest.mark.parametrize("op", opinfos_named(["linalg.cross", "cross", "renorm"]), ids=lambda op: op.name)
def test_opinfo_samples(op):
    """PyTorch's own samples (forward in every CPU dtype, float32 gradients)."""
    dtypes = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.uint8]
    passed, failures = run_opinfo(op, dtypes, max_samples=12)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
