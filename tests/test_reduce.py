"""Hand-written checks of reductions, scans and softmax against the CPU.

Covers what OpInfo samples do not stress: sizes that force the chunked two-pass path
(2^20+ elements, few outputs), every dim subset of a non-contiguous 4-D tensor, keepdim,
dtype=, float16/bfloat16 accuracy against a float64 reference, empty tensors, NaN/inf,
first-index tie-breaking, out= and aliasing. The GPU work mappings (tiles with local-memory
merges, column order, chunking) are exercised on a CPU device through a subprocess with
PYTORCH_OCL_GPU_MAPPING=1.
"""
import itertools
import math

import pytest
import torch
from torch.testing import assert_close

from conftest import run_python

DEV = "ocl:0"
NAN, INF = float("nan"), float("inf")


def dev(t):
    return t.to(DEV)


def check(actual, expected, **kw):
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check(a, e, **kw)
        return
    assert actual.device.type == "ocl"
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert_close(actual.cpu(), expected, equal_nan=True, **kw)


def has_fp64():
    return torch.ocl.get_device_properties(0).fp64


def noncontig_4d(dtype=torch.float32, seed=0, zeros=False):
    """A [3, 4, 5, 6] view of a larger permuted, step-sliced tensor (with many zeros if asked)."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(6, 12, 5, 8, generator=g).to(dtype) if dtype.is_floating_point else \
        torch.randint(-5, 6, (6, 12, 5, 8), generator=g).to(dtype)
    if zeros:
        base = base * torch.randint(0, 2, base.shape, generator=g).to(base.dtype)
    cpu = base.permute(2, 1, 0, 3)[:, ::3, ::2, 1:7].permute(2, 1, 0, 3)
    d = dev(base).permute(2, 1, 0, 3)[:, ::3, ::2, 1:7].permute(2, 1, 0, 3)
    assert cpu.shape == (3, 4, 5, 6) and not d.is_contiguous()
    return cpu, d


ALL_DIM_SETS = [None] + [c for r in range(1, 5) for c in itertools.combinations(range(4), r)]

# name -> fn(x, dims, keepdim); dims is None (all) or a tuple
MULTI_DIM_OPS = {
    "sum": lambda x, d, k: x.sum(d, keepdim=k) if d is not None else x.sum(),
    "mean": lambda x, d, k: x.mean(d, keepdim=k) if d is not None else x.mean(),
    "nansum": lambda x, d, k: x.nansum(d, keepdim=k) if d is not None else x.nansum(),
    "amax": lambda x, d, k: x.amax(d if d is not None else (), keepdim=k),
    "amin": lambda x, d, k: x.amin(d if d is not None else (), keepdim=k),
    "var": lambda x, d, k: x.var(d, keepdim=k),
    "std_c0": lambda x, d, k: x.std(d, correction=0, keepdim=k),
    "var_mean": lambda x, d, k: torch.var_mean(x, d, keepdim=k, correction=2),
    "logsumexp": lambda x, d, k: x.logsumexp(d if d is not None else tuple(range(x.dim())), keepdim=k),
    "norm2": lambda x, d, k: torch.linalg.vector_norm(x, 2, d, keepdim=k),
    "norm1": lambda x, d, k: torch.linalg.vector_norm(x, 1, d, keepdim=k),
    "norm0": lambda x, d, k: torch.linalg.vector_norm(x, 0, d, keepdim=k),
    "norm_inf": lambda x, d, k: torch.linalg.vector_norm(x, INF, d, keepdim=k),
    "norm_neg_inf": lambda x, d, k: torch.linalg.vector_norm(x, -INF, d, keepdim=k),
    "norm_3.5": lambda x, d, k: torch.linalg.vector_norm(x, 3.5, d, keepdim=k),
    "any": lambda x, d, k: x.any(d, keepdim=k) if d is not None else x.any(),
    "all": lambda x, d, k: x.all(d, keepdim=k) if d is not None else x.all(),
    "count_nonzero": lambda x, d, k: torch.count_nonzero(x, d),
}
# Inputs with zeros for the logical ops (built on the CPU: comparisons are not part of this work).
SPARSE_OPS = ("any", "all", "count_nonzero")


@pytest.mark.parametrize("name", sorted(MULTI_DIM_OPS))
def test_all_dim_subsets_noncontiguous(name):
    fn = MULTI_DIM_OPS[name]
    cpu, d = noncontig_4d(zeros=name in SPARSE_OPS)
    for dims, keepdim in itertools.product(ALL_DIM_SETS, (False, True)):
        if name == "count_nonzero" and keepdim:
            continue
        check(fn(d, dims, keepdim), fn(cpu, dims, keepdim), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["prod", "argmax", "argmin", "max", "min", "cumsum", "cumprod", "cummax",
                                  "cummin", "logcumsumexp", "softmax", "log_softmax"])
def test_single_dim_ops_noncontiguous(name):
    cpu, d = noncontig_4d()
    fn = {
        "prod": lambda x, i: x.prod(i),
        "argmax": lambda x, i: x.argmax(i),
        "argmin": lambda x, i: x.argmin(i, keepdim=True),
        "max": lambda x, i: tuple(x.max(i)),
        "min": lambda x, i: tuple(x.min(i, keepdim=True)),
        "cumsum": lambda x, i: x.cumsum(i),
        "cumprod": lambda x, i: x.cumprod(i),
        "cummax": lambda x, i: tuple(x.cummax(i)),
        "cummin": lambda x, i: tuple(x.cummin(i)),
        "logcumsumexp": lambda x, i: x.logcumsumexp(i),
        "softmax": lambda x, i: x.softmax(i),
        "log_softmax": lambda x, i: x.log_softmax(i),
    }[name]
    for i in range(-4, 4):
        check(fn(d, i), fn(cpu, i), rtol=1e-5, atol=1e-5)


def test_any_all_bool_and_uint8():
    g = torch.Generator().manual_seed(1)
    x = torch.rand(7, 9, 11, generator=g) > 0.8
    for dims in [None, 0, 2, (0, 1), (1, 2), ()]:
        for t in (x, x.to(torch.uint8), x.float() * 0.5):
            for f in (torch.any, torch.all):
                e = f(t) if dims is None else f(t, dims)
                check(f(dev(t)) if dims is None else f(dev(t), dims), e)


# ---------------------------------------------------------------- large sizes / two-pass


@pytest.mark.parametrize("shape,dim", [
    (((1 << 21) + 17,), None),
    ((3, (1 << 20) + 5), 1),
    (((1 << 20) + 3, 3), 0),
    ((4099, 513), 0),
    ((513, 4099), 1),
    ((64, 128, 130), (0, 2)),
])
def test_large_two_pass(shape, dim):
    """Float results against a float64 reference (the CPU's float32 p-norm is itself off by ~3e-4 here)."""
    g = torch.Generator().manual_seed(2)
    x = torch.randn(*shape, generator=g)
    d, x64 = dev(x), x.double()
    dims = dim if dim is not None else tuple(range(x.dim()))
    for f in (lambda t: t.sum(dims), lambda t: t.mean(dims), lambda t: t.var(dims), lambda t: t.logsumexp(dims),
              lambda t: torch.linalg.vector_norm(t, 3, dims), lambda t: torch.linalg.vector_norm(t, 2, dims)):
        check(f(d), f(x64).float(), rtol=2e-5, atol=1e-4)
    check(d.amax(dims), x.amax(dims))
    if dim is None or isinstance(dim, int):
        check(d.argmax(dim), x.argmax(dim))
        check(d.argmin(dim), x.argmin(dim))
    if isinstance(dim, int):
        check(tuple(d.max(dim)), tuple(x.max(dim)))


def test_large_transposed_and_sliced():
    g = torch.Generator().manual_seed(3)
    x = torch.randn(1500, 1100, generator=g)
    d = dev(x)
    for f in (lambda t: t.t().sum(0), lambda t: t.t().sum(1), lambda t: t.t().sum(),
              lambda t: t[::2, 1::3].sum(0), lambda t: t[::2, 1::3].sum(1), lambda t: t[:, 7:].mean(),
              lambda t: t.t().argmax(), lambda t: t.t()[::3].argmin(1), lambda t: t.expand(2, 1500, 1100).sum(0)):
        check(f(d), f(x), rtol=1e-4, atol=1e-3)


def test_large_int_and_bool():
    g = torch.Generator().manual_seed(4)
    x = torch.randint(-100, 100, (1 << 20,), generator=g, dtype=torch.int32)
    check(dev(x).sum(), x.sum())
    check(dev(x).amax(), x.amax())
    check(dev(x).argmin(), x.argmin())
    b = x > 0
    check(dev(b).sum(), b.sum())
    check(dev(b).any(), b.any())
    check(dev(b).all(), b.all())
    check(torch.count_nonzero(dev(x)), torch.count_nonzero(x))
    check(dev(x.view(1024, 1024)).cumsum(1), x.view(1024, 1024).cumsum(1))


# ---------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_sum_accuracy_against_float64(dtype):
    """Accumulation is in float32: the error is the rounding of the result, not of each add."""
    g = torch.Generator().manual_seed(5)
    # All positive (errors cannot cancel); the sum (~16K) stays within float16's range.
    x = ((torch.rand(1 << 20, generator=g) + 0.5) / 64).to(dtype)
    ref = x.double().sum()
    got = dev(x).sum().cpu().double()
    eps = torch.finfo(dtype).eps
    assert abs(got - ref) / ref < 2 * eps, (got, ref)
    got32 = dev(x).sum(dtype=torch.float32).cpu().double()
    assert abs(got32 - ref) / ref < 1e-5, (got32, ref)
    m = dev(x.view(1024, 1024)).mean(0).cpu().double()
    assert_close(m, x.view(1024, 1024).double().mean(0), rtol=2 * eps, atol=0)
    v = dev(x.view(256, 4096)).var(1).cpu().double()
    assert_close(v, x.view(256, 4096).double().var(1), rtol=4 * eps, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_float_dtypes(dtype):
    if dtype == torch.float64 and not has_fp64():
        pytest.skip("no fp64")
    cpu, d = noncontig_4d(dtype)
    tol = dict(rtol=1e-2, atol=1e-2) if dtype != torch.float64 else {}
    for f in (lambda t: t.sum(1), lambda t: t.mean((0, 3)), lambda t: t.amax(2), lambda t: tuple(t.max(3)),
              lambda t: t.argmin(0), lambda t: t.var(1), lambda t: t.logsumexp(2), lambda t: t.prod(3),
              lambda t: torch.linalg.vector_norm(t, 2, (1, 2)), lambda t: t.cumsum(1), lambda t: t.softmax(3),
              lambda t: t.log_softmax(0), lambda t: tuple(t.cummax(2)), lambda t: t.logcumsumexp(3),
              lambda t: t.sum(0, dtype=torch.float32), lambda t: torch.aminmax(t, dim=1)):
        e = f(cpu)
        check(f(d), e, **tol)


def test_half_to_float_softmax():
    x = torch.randn(8, 33).half()
    for op in (torch.ops.aten._softmax, torch.ops.aten._log_softmax):
        got = op(dev(x), 1, True)
        assert got.dtype == torch.float32
        assert_close(got.cpu(), op(x.float(), 1, False), rtol=1e-5, atol=1e-5)


INTEGER_OPS = [lambda t: t.sum(1), lambda t: t.sum((0, 2), dtype=torch.float32), lambda t: t.prod(3),
               lambda t: t.amax(2), lambda t: t.amin((1, 3)), lambda t: tuple(t.max(3)), lambda t: t.argmax(0),
               lambda t: t.any(1), lambda t: t.all(2), lambda t: torch.count_nonzero(t, 1), lambda t: t.cumsum(2),
               lambda t: t.cumprod(3), lambda t: tuple(t.cummin(1)), lambda t: t.nansum(0), lambda t: t.logsumexp(1),
               lambda t: tuple(torch.aminmax(t))]
# int16 shares everything with the other signed integers (int64 accumulation, the same host-side
# dtype rules) except its load/store plumbing, so it runs one op per kind of plumbing: reduce.cl
# into an int64 accumulator, into a float accumulator, with an int16 output (values + indices),
# and scan.cl with an int16 output. Each (op, dtype) is a separate cold program build, and int16
# is the one integer dtype test_reduce_opinfo.py does not build anyway.
INT16_OPS = [lambda t: t.sum(1), lambda t: t.sum((0, 2), dtype=torch.float32), lambda t: tuple(t.max(3)),
             lambda t: tuple(t.cummin(1))]


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool])
def test_integer_dtypes(dtype):
    cpu, d = noncontig_4d(dtype)
    ops = INT16_OPS if dtype == torch.int16 else INTEGER_OPS
    for f in ops:
        try:
            expected = f(cpu)
        except RuntimeError:  # e.g. no argmax of bool on the CPU: ocl must refuse too
            with pytest.raises(RuntimeError):
                f(d)
            continue
        check(f(d), expected, rtol=1e-5, atol=1e-5)


def test_mean_rejects_integers():
    with pytest.raises(RuntimeError, match="mean"):
        dev(torch.arange(4)).mean()
    with pytest.raises(RuntimeError, match="floating point"):
        torch.linalg.vector_norm(dev(torch.arange(4)))


# ---------------------------------------------------------------- edge cases


def test_empty():
    e = torch.zeros(0, 3)
    d = dev(e)
    for f in (lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.mean(0), lambda t: t.prod(0), lambda t: t.any(0),
              lambda t: t.all(0), lambda t: t.var(0), lambda t: t.logsumexp(0), lambda t: t.nansum(),
              lambda t: torch.linalg.vector_norm(t, 2, 0), lambda t: t.amax(1), lambda t: tuple(t.max(1)),
              lambda t: t.argmax(1), lambda t: t.cumsum(0), lambda t: t.softmax(0), lambda t: t.mean(),
              lambda t: torch.count_nonzero(t), lambda t: tuple(torch.var_mean(t, 0))):
        check(f(d), f(e))
    for f, exc in ((lambda t: t.amax(0), IndexError), (lambda t: t.max(), RuntimeError),
                   (lambda t: t.argmax(), IndexError), (lambda t: t.max(0), IndexError),
                   (lambda t: torch.linalg.vector_norm(t, INF), RuntimeError)):
        with pytest.raises(exc):
            f(d)


def test_scalar_tensors():
    s = torch.tensor(2.5)
    d = dev(s)
    for f in (lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.mean(-1, keepdim=True), lambda t: t.amax(),
              lambda t: t.argmax(), lambda t: tuple(t.max(0)), lambda t: t.cumsum(0), lambda t: t.softmax(0),
              lambda t: t.logsumexp(0), lambda t: t.var(correction=0), lambda t: tuple(t.cummax(0)),
              lambda t: t.prod()):
        check(f(d), f(s))


def test_nan_and_inf():
    x = torch.tensor([[1.0, NAN, 3.0, NAN, -2.0], [INF, 2.0, INF, -INF, 0.0], [-INF, -INF, -INF, -INF, -INF],
                      [5.0, 5.0, -1.0, 5.0, 2.0]])
    d = dev(x)
    for f in (lambda t: t.amax(1), lambda t: t.amin(1), lambda t: tuple(t.max(1)), lambda t: tuple(t.min(1)),
              lambda t: t.argmax(1), lambda t: t.argmin(1), lambda t: t.argmax(), lambda t: t.max(),
              lambda t: t.nansum(1), lambda t: t.sum(1), lambda t: t.logsumexp(1), lambda t: tuple(t.cummax(1)),
              lambda t: tuple(t.cummin(1)), lambda t: t.logcumsumexp(1), lambda t: t.softmax(1),
              lambda t: t.log_softmax(1), lambda t: torch.linalg.vector_norm(t, INF, 1),
              lambda t: torch.linalg.vector_norm(t, -INF, 1), lambda t: t.any(1), lambda t: tuple(torch.aminmax(t, dim=1)),
              lambda t: t.var(1), lambda t: t.cumsum(1)):
        check(f(d), f(x))


def test_ties_take_first_index():
    x = torch.tensor([[3.0, 7.0, 7.0, 1.0, 7.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    big = torch.zeros(1 << 20)
    big[[5, 700000, 1000000]] = 4.0
    for t in (x, x.t().contiguous().t(), big):
        d = dev(t)
        for f in (lambda v: v.argmax(-1), lambda v: v.argmin(-1), lambda v: tuple(v.max(-1)),
                  lambda v: tuple(v.min(-1)), lambda v: v.argmax()):
            check(f(d), f(t))


def test_out_and_aliasing():
    x = torch.randn(6, 7)
    d = dev(x)
    out = dev(torch.empty(0))
    torch.sum(d, 1, out=out)
    check(out, x.sum(1))
    out_nc = dev(torch.empty(7, 2))[:, 0]
    torch.amax(d, 0, out=out_nc)
    check(out_nc, x.amax(0))
    vals, idx = dev(torch.empty(3)), dev(torch.empty(3, dtype=torch.long))
    torch.max(d, 0, out=(vals, idx))
    check((vals, idx), tuple(x.max(0)))
    # out aliasing the input: the result is computed before it is written
    a = d.clone()
    torch.sum(a, 0, keepdim=True, out=a[:1])
    e = x.clone()
    e[:1] = x.sum(0, keepdim=True)  # (the CPU kernel reads rows it has already overwritten)
    check(a, e)
    c = d.clone()
    torch.cumsum(c, 1, out=c)
    check(c, x.cumsum(1))
    s = d.clone()
    torch.ops.aten._softmax.out(s, 0, False, out=s)
    check(s, x.softmax(0))
    with pytest.raises(RuntimeError, match="dtype"):
        torch.sum(d, 0, dtype=torch.float64, out=dev(torch.empty(7)))


def test_many_dims():
    """More than 8 unmergeable dims take the permute + copy path."""
    x = torch.randn([2] * 10).permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
    d = dev(x.contiguous()).permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
    base = dev(torch.randn([2] * 10))
    ref = base.cpu().permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
    dd = base.permute(9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
    for dims in ((0, 2, 4, 6, 8), (1, 3, 5, 7, 9), (0,), (9,)):
        check(dd.sum(dims), ref.sum(dims), rtol=1e-5, atol=1e-5)
        check(dd.amax(dims, keepdim=True), ref.amax(dims, keepdim=True))
    check(dd.argmax(), ref.argmax())
    check(dd.cumsum(3), ref.cumsum(3), rtol=1e-5, atol=1e-5)
    check(dd.softmax(5), ref.softmax(5), rtol=1e-5, atol=1e-5)
    del x, d


# ---------------------------------------------------------------- autograd


def test_hash_tensor():
    # The xor of the elements' 64-bit forms (float64 / int64 bits), compared bit for bit with the CPU: every
    # dtype op_db lists, float specials (signed zeros, subnormals, inf, NaN), dims / keepdim, strided input,
    # op_db's samples, the CPU's errors.
    from torch.testing._internal.common_methods_invocations import op_db
    g = torch.Generator().manual_seed(3)
    specials = torch.tensor([0.0, -0.0, 1e-40, -3e-39, 1e-45, float("inf"), -float("inf"), float("nan"), 1.5, -2.25])
    for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
               torch.int8, torch.uint8, torch.bool):
        if dt.is_floating_point:
            x = torch.randn(6, 7, 5, generator=g).to(dt)
        else:
            x = torch.randint(-100 if dt != torch.uint8 else 0, 100, (6, 7, 5), generator=g).to(dt)
        cases = [(x, ()), (x, (1,)), (x, (0, 2)), (x.transpose(0, 2), (1,)), (x[:, ::2], (0,))]
        if dt.is_floating_point:
            cases.append((specials.to(dt), ()))
        for t, dim in cases:
            for keepdim in (False, True):
                ref = torch.hash_tensor(t, dim, keepdim=keepdim)
                got = torch.hash_tensor(t.to("ocl"), dim, keepdim=keepdim).cpu()
                assert got.dtype == torch.uint64 and torch.equal(got, ref), (dt, dim, keepdim, got, ref)
    info = next(o for o in op_db if o.name == "hash_tensor")
    for dt in (torch.float32, torch.int64, torch.bool):
        for sample in info.sample_inputs("cpu", dt):
            ref = info(sample.input, *sample.args, **sample.kwargs)
            got = info(sample.input.to("ocl"), *sample.args, **sample.kwargs).cpu()
            assert torch.equal(got, ref), (dt, sample)
    d = torch.zeros(0, 3, device="ocl")
    assert torch.hash_tensor(d, [1]).shape == (0,)
    for f, err in ((lambda: torch.hash_tensor(d), "Expected reduction dim to be specified"),
                   (lambda: torch.hash_tensor(d, [0]), "Expected reduction dim 0 to have non-zero size"),
                   (lambda: torch.hash_tensor(torch.ones(3, device="ocl"), mode=1), "Unknown hash_tensor mode: 1")):
        with pytest.raises((RuntimeError, IndexError), match=err):
            f()


def test_softmax_long_rows():
    # Rows longer than 4 x 256 take the long-row loops four elements per step (a language model's vocabulary):
    # row lengths not a multiple of 4 x 256 (tails), rows along a strided dim, forward, backward, in place.
    for n in (4099, 2 * 1024 + 3):
        x = torch.randn(3, n) * 4
        for t in (x, x.t().contiguous().t()):
            d = t.to("ocl")
            for f in (lambda u: u.softmax(1), lambda u: u.log_softmax(1)):
                ref = t.clone().requires_grad_()
                dev = d.clone().requires_grad_()
                g = torch.randn(3, n)
                f(ref).backward(g)
                f(dev).backward(g.to("ocl"))
                assert_close(f(d).cpu(), f(t), rtol=1e-5, atol=1e-6)
                assert_close(dev.grad.cpu(), ref.grad, rtol=1e-5, atol=1e-5)
        s = x.to("ocl")
        torch.ops.aten._softmax.out(s, 1, False, out=s)
        assert_close(s.cpu(), x.softmax(1), rtol=1e-5, atol=1e-6)


def test_backward_through_reductions_and_softmax():
    g = torch.Generator().manual_seed(6)
    x = torch.randn(5, 6, 7, generator=g)
    fns = [lambda t: t.sum((0, 2)), lambda t: t.mean(1), lambda t: t.var(1, correction=0),
           lambda t: t.softmax(1), lambda t: t.log_softmax(0), lambda t: t.softmax(2).log_softmax(2),
           lambda t: torch.var_mean(t, 2)[0]]
    for f in fns:
        xc = x.clone().requires_grad_()
        xd = dev(x).requires_grad_()
        yc, yd = f(xc), f(xd)
        gy = torch.randn(yc.shape, generator=g)
        (gc,) = torch.autograd.grad(yc, xc, gy)
        (gd,) = torch.autograd.grad(yd, xd, dev(gy))
        check(gd, gc, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- GPU mappings on this device

GPU_MAPPING_SCRIPT = r"""
import itertools, torch, pytorch_ocl
from torch.testing import assert_close
torch.manual_seed(0)
def chk(a, e, **kw):
    if isinstance(e, tuple):
        for x, y in zip(a, e): chk(x, y, **kw)
        return
    assert_close(a.cpu(), e, equal_nan=True, **kw)
for shape in SHAPES:
    x = torch.randn(*shape)
    if len(shape) == 3:
        x.view(-1)[::97] = float('nan')
    d = x.to('ocl')
    for dim in list(range(len(shape))) + [None]:
        dims = dim if dim is not None else tuple(range(len(shape)))
        chk(d.sum(dims), x.sum(dims), rtol=1e-4, atol=1e-2)
        chk(d.nansum(dims), x.nansum(dims), rtol=1e-4, atol=1e-2)
        chk(d.amax(dims), x.amax(dims))
        chk(d.var(dims), x.var(dims), rtol=1e-4, atol=1e-4)
        chk(d.logsumexp(dims), x.logsumexp(dims), rtol=1e-5, atol=1e-5)
        chk(d.argmax(dim), x.argmax(dim))
        chk(d.argmin(dim), x.argmin(dim))
        if dim is not None:
            chk(tuple(d.max(dim)), tuple(x.max(dim)))
            chk(d.cumsum(dim), x.cumsum(dim), rtol=1e-4, atol=1e-3)
            chk(tuple(d.cummax(dim)), tuple(x.cummax(dim)))
            chk(d.logcumsumexp(dim), x.logcumsumexp(dim), rtol=1e-4, atol=1e-4)
            chk(d.softmax(dim), x.softmax(dim), rtol=1e-5, atol=1e-6)
            chk(d.log_softmax(dim), x.log_softmax(dim), rtol=1e-5, atol=1e-5)
            y = x.softmax(dim); gy = torch.randn(x.shape)
            chk(torch.ops.aten._softmax_backward_data(gy.to('ocl'), y.to('ocl'), dim, torch.float32),
                torch.ops.aten._softmax_backward_data(gy, y, dim, torch.float32), rtol=1e-5, atol=1e-5)
for dt, ops in DTYPES:
    x = (torch.randn(1000, 77) * 10).to(dt)
    d = x.to('ocl')
    for dim in (0, 1):
        if 'sum' in ops:
            chk(d.sum(dim), x.sum(dim), rtol=1e-2, atol=1e-1)
        if 'amax' in ops:
            chk(d.amax(dim), x.amax(dim))
        if 'argmax' in ops:
            chk(d.argmax(dim), x.argmax(dim))
        chk(d.cumsum(dim), x.cumsum(dim), rtol=1e-2, atol=1)
    if 'sum' in ops:
        chk(d[:, 1:].sum(1), x[:, 1:].sum(1), rtol=1e-2, atol=1e-1)
    if 'amax' in ops:
        chk(d[:, 1:].amax(1), x[:, 1:].amax(1))
print("GPU-MAPPING-OK")
"""


GPU_MAPPING_CASES = [(f"[{s!r}]", "()") for s in
                     [((1 << 18) + 3,), (3, 70001), (70001, 3), (513, 1029), (37, 5, 300), (2, 1)]]
# Each (op, dtype) is a separate cold build of the GPU-mapped reduce.cl (~4 s on PoCL). The ops
# themselves run in float32 above; per dtype what is new is the load/store plumbing and the
# accumulator type (float for 16-bit floats, int64 for integers), so each dtype runs the ops that
# add one of those: float16 sum/argmax (float accumulator from 16-bit loads, float16 output),
# uint8 sum/amax/argmax (int64 accumulator, uint8 output), bfloat16 and int32 amax (their own
# loads and stores). float16 and uint8 sum/argmax are built by test_gpu_fast_paths_on_this_device
# too. cumsum (scan.cl, built by test_float_dtypes / test_integer_dtypes too) runs for every dtype.
GPU_MAPPING_CASES.append(("[]", "((torch.float16, ('sum', 'argmax')), (torch.bfloat16, ('amax',)), "
                                "(torch.int32, ('amax',)), (torch.uint8, ('sum', 'amax', 'argmax')))"))


# One subprocess per shape, so that parallel test workers share the work.
@pytest.mark.parametrize("shapes,dtypes", GPU_MAPPING_CASES, ids=[c[0] if c[0] != "[]" else "dtypes"
                                                                 for c in GPU_MAPPING_CASES])
def test_gpu_mappings_on_this_device(shapes, dtypes):
    code = GPU_MAPPING_SCRIPT.replace("SHAPES", shapes).replace("DTYPES", dtypes)
    proc = run_python(code, env={"PYTORCH_OCL_GPU_MAPPING": "1"}, timeout=600)
    assert "GPU-MAPPING-OK" in proc.stdout


# The GPU-only kernels (column reduction with vector loads across columns, register-held
# softmax rows, 2-D broadcast elementwise) run on this device under PYTORCH_OCL_GPU_MAPPING=1.
GPU_FAST_PATHS_SCRIPT = r"""
import torch, pytorch_ocl
from torch.testing import assert_close
torch.manual_seed(0)
def chk(a, e, **kw):
    if isinstance(e, (tuple, list)):
        for x, y in zip(a, e): chk(x, y, **kw)
        return
    assert_close(a.cpu(), e, equal_nan=True, **kw)
# Column reductions: aligned (vector) and unaligned/odd widths, chunked, outer kept dims.
base = torch.randn(3001, 261)
cols = [base[:, :260], base[:500, 1:], base[:300, :33], torch.randn(6, 50, 72)]
ties = torch.randint(0, 3, (1000, 64)).float()
ties[::7, 5] = float('nan')
for x in cols + [ties]:
    d = x.to('ocl')
    chk(d.sum(-2), x.sum(-2), rtol=1e-4, atol=1e-3)
    chk(d.argmax(-2), x.argmax(-2))
    chk(tuple(d.min(-2)), tuple(x.min(-2)))
    chk(d.logsumexp(-2), x.logsumexp(-2), rtol=1e-5, atol=1e-5)
for dt in (torch.float16, torch.float64, torch.uint8):
    x = (torch.randn(999, 136) * 10).to(dt)
    d = x.to('ocl')
    chk(d.sum(0), x.sum(0), rtol=1e-2, atol=1e-1)
    chk(d.argmax(0), x.argmax(0))
# Softmax rows: float4 rows (one or several rows per group), odd lengths, views, 16-bit.
sm = [torch.randn(16, 4096), torch.randn(300, 64), torch.randn(33, 1029), torch.randn(40, 260)[:, 1:]]
special = torch.randn(4, 64)
special[0, 3] = float('inf'); special[1, :] = float('-inf'); special[2, 9] = float('nan'); special[3, 1:] = float('-inf')
for x in sm + [special]:
    d = x.to('ocl')
    chk(d.softmax(1), x.softmax(1), rtol=1e-5, atol=1e-6)
    chk(d.log_softmax(1), x.log_softmax(1), rtol=1e-5, atol=1e-5)
    gy = torch.randn(x.shape)
    for name in ('_softmax_backward_data', '_log_softmax_backward_data'):
        f = getattr(torch.ops.aten, name)
        y = x.softmax(1) if name == '_softmax_backward_data' else x.log_softmax(1)
        chk(f(gy.to('ocl'), y.to('ocl'), 1, torch.float32), f(gy, y, 1, torch.float32), rtol=1e-5, atol=1e-5)
x = torch.randn(20, 1024).half()
chk(x.to('ocl').softmax(1), x.float().softmax(1).half(), rtol=1e-2, atol=1e-3)
# Elementwise rows kernel: row / column / scalar-tensor broadcasts, views, 16-bit, 3 inputs.
a, r, c = torch.randn(37, 1024), torch.randn(1024), torch.randn(37, 1)
for ad, e in [(lambda t: t(a) + t(r), a + r), (lambda t: t(a) * t(c), a * c),
              (lambda t: t(a)[:, 4:20] - t(r)[:16], a[:, 4:20] - r[:16]),
              (lambda t: t(r) + t(torch.tensor(2.5)), r + 2.5),
              (lambda t: torch.where(t(c) > 0, t(a), t(r)), torch.where(c > 0, a, r)),
              (lambda t: t(a).half() + t(r).half(), a.half() + r.half())]:
    chk(ad(lambda v: v.to('ocl')), e, rtol=1e-3, atol=1e-3)
out = torch.zeros(37, 1028).to('ocl')
torch.add(a.to('ocl'), r.to('ocl'), out=out[:, 4:])
chk(out[:, 4:], a + r)
chk(out[:, :4], torch.zeros(37, 4))
print("GPU-FAST-PATHS-OK")
"""


def test_gpu_fast_paths_on_this_device():
    proc = run_python(GPU_FAST_PATHS_SCRIPT, env={"PYTORCH_OCL_GPU_MAPPING": "1"}, timeout=600)
    assert "GPU-FAST-PATHS-OK" in proc.stdout


@pytest.mark.parametrize("cols", [7, 300, 5000])
def test_softmax_long_rows_special_values(cols):
    # The row kernel reduces four elements per step: NaN, +-inf and all -inf rows placed at every position of
    # such a step must give the CPU's results.
    g = torch.Generator().manual_seed(cols)
    x = torch.randn(10, cols, generator=g) * 5
    x[1, cols // 2] = float("nan")
    x[2, :] = float("-inf")
    x[2, -1] = float("nan")  # NaN after only -inf
    x[3, 1] = float("inf")
    x[4, :] = float("-inf")
    x[5, : cols - 1] = float("-inf")  # one finite entry, last
    x[6, ::3] = float("-inf")
    x[7, 0] = 80.0  # a large max first, then smaller ones
    x[8, -1] = 80.0  # found last: everything before is rescaled
    d = x.to("ocl")
    for fn in (lambda t: t.softmax(1), lambda t: t.log_softmax(1)):
        torch.testing.assert_close(fn(d).cpu(), fn(x), rtol=1e-5, atol=1e-5, equal_nan=True)
