"""Factories and data-moving shape ops on ocl vs the CPU: arange, linspace, logspace, full, eye,
tril/triu, cat/stack, flip, roll, repeat, unfold, diag/diagonal/diag_embed; forward, backward,
non-contiguous inputs and outputs, every dtype each op supports; an OpInfo yardstick at the end."""
import pytest
import torch
from opinfo_compare import opinfos_named, run_opinfo
from torch.testing import assert_close

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL = FLOATS + INTS + [torch.bool]


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g) * 3).to(dtype)
    lo = 0 if dtype == torch.uint8 else -50
    return torch.randint(lo, 50, shape, generator=g).to(dtype)


def dev(t):
    return t.to("ocl")


def check(ocl_result, cpu_result, exact=True, **kw):
    assert ocl_result.device.type == "ocl"
    if exact:
        kw.setdefault("rtol", 0)
        kw.setdefault("atol", 0)
    assert_close(ocl_result.cpu(), cpu_result, equal_nan=True, **kw)


# ----------------------------------------------------------------------------------- arange


ARANGE_CASES = [(0, 10, 1), (-5, 17, 3), (10, -3, -2), (0, 1, 0.1), (-1.5, 2.25, 0.25), (3, 4, 1), (2, 2, 1)]


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=ids(FLOATS + INTS))
def test_arange(dtype):
    for start, end, step in ARANGE_CASES:
        if not dtype.is_floating_point and any(isinstance(v, float) for v in (start, end, step)):
            continue
        if dtype == torch.uint8 and min(start, end) < 0:
            continue
        exact = dtype in (torch.float32, torch.float64) or not dtype.is_floating_point
        check(torch.arange(start, end, step, dtype=dtype, device="ocl"),
              torch.arange(start, end, step, dtype=dtype), exact=exact)
    check(torch.arange(7, device="ocl"), torch.arange(7))
    check(torch.arange(2.5, device="ocl"), torch.arange(2.5))


def test_arange_large_int64_and_out():
    big = 2**40
    check(torch.arange(big, big + 10, 3, device="ocl"), torch.arange(big, big + 10, 3))
    # out= with a strided view: values land at the view's positions
    buf = torch.zeros(20, device="ocl")
    torch.arange(0, 10, out=buf[::2])
    ref = torch.zeros(20)
    torch.arange(0, 10, out=ref[::2])
    check(buf, ref)
    # a wrongly sized out warns and is resized, like on the CPU
    out = torch.empty(3, device="ocl")
    with pytest.warns(UserWarning, match="resized"):
        torch.arange(0, 5, out=out)
    check(out, torch.arange(0, 5, dtype=torch.float32))


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        torch.arange(0, 5, 0, device="ocl")
    with pytest.raises(RuntimeError, match="inconsistent with step sign"):
        torch.arange(0, 5, -1, device="ocl")
    with pytest.raises(NotImplementedError):
        torch.arange(0, 5, dtype=torch.bool, device="ocl")


# ------------------------------------------------------------------------ linspace / logspace


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=ids(FLOATS + INTS))
def test_linspace(dtype):
    loose = False  # float16/bfloat16 round each step as the CPU does
    for start, end, steps in [(-2, 3, 11), (0, 1, 2), (5, 5, 4), (3, -7, 100), (0, 255, 1), (0, 10, 0), (-3.5, 7.25, 33)]:
        if dtype == torch.uint8 and min(start, end) < 0:
            continue
        check(torch.linspace(start, end, steps, dtype=dtype, device="ocl"),
              torch.linspace(start, end, steps, dtype=dtype), exact=not loose,
              **({"rtol": 1e-2, "atol": 2e-2} if loose else {}))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64], ids=ids(FLOATS + [torch.int32, torch.int64]))
def test_logspace(dtype):
    loose = dtype in (torch.float16, torch.bfloat16)
    for start, end, steps, base in [(-2, 3, 6, 10.0), (0, 1, 5, 2.0), (1, 3, 1, 10.0), (0, 4, 9, 3.0), (0, 0, 0, 10.0)]:
        tol = {"rtol": 1e-2, "atol": 1e-2} if loose else {"rtol": 1e-6, "atol": 0}
        if not dtype.is_floating_point:
            tol = {"rtol": 0, "atol": 1}  # pow may round differently just below an integer
        check(torch.logspace(start, end, steps, base, dtype=dtype, device="ocl"),
              torch.logspace(start, end, steps, base, dtype=dtype), exact=False, **tol)


def test_linspace_noncontiguous_out_and_tensor_bounds():
    buf = torch.zeros(3, 10, device="ocl")
    torch.linspace(0, 1, 3, out=buf[:, 4])
    ref = torch.zeros(3, 10)
    torch.linspace(0, 1, 3, out=ref[:, 4])
    check(buf, ref)
    check(torch.linspace(torch.tensor(1.0), torch.tensor(4.0), 7, device="ocl"), torch.linspace(1.0, 4.0, 7))


# ------------------------------------------------------------------------------ full / eye


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_full_and_eye(dtype):
    value = True if dtype == torch.bool else 3
    check(torch.full((3, 5), value, dtype=dtype, device="ocl"), torch.full((3, 5), value, dtype=dtype))
    check(torch.full((), value, dtype=dtype, device="ocl"), torch.full((), value, dtype=dtype))
    for n, m in [(4, None), (3, 5), (5, 2), (0, 3), (1, 1)]:
        args = (n,) if m is None else (n, m)
        check(torch.eye(*args, dtype=dtype, device="ocl"), torch.eye(*args, dtype=dtype))


def test_eye_out_noncontiguous():
    out = torch.full((5, 4), 7.0, device="ocl").t()
    torch.eye(4, 5, out=out)
    check(out, torch.eye(4, 5))
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0"):
        torch.eye(-1, device="ocl")


# --------------------------------------------------------------------------------- tril / triu


TRI_SHAPES = [(4, 5), (5, 4), (3, 4, 5), (2, 1, 3, 4), (0, 3), (2, 0, 3), (1, 1)]


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_triu(op, dtype):
    f = getattr(torch, op)
    for shape in TRI_SHAPES:
        x = make(shape, dtype)
        for k in (-2, -1, 0, 1, 3):
            check(f(dev(x), k), f(x, k))
    x = make((6, 7, 5), dtype, 1)
    for v in [x.transpose(1, 2), x[:, ::2], x[::2, 1:], x.permute(2, 0, 1)]:
        check(f(dev(v), 1), f(v, 1))


@pytest.mark.parametrize("op", ["tril", "triu"])
def test_tril_triu_inplace_out_and_grad(op):
    x = make((5, 6), torch.float32)
    d = dev(x)
    getattr(d, op + "_")(-1)
    check(d, getattr(torch, op)(x, -1))
    out = torch.empty(0, device="ocl")
    getattr(torch, op)(dev(x), 2, out=out)
    check(out, getattr(torch, op)(x, 2))
    # In place on column-major and permuted outputs (work-items follow the output's memory order).
    for base, view in [((7, 5), lambda t: t.t()), ((3, 4, 6), lambda t: t.permute(2, 0, 1))]:
        c = make(base, torch.float32, 4)
        dv = view(dev(c))
        getattr(dv, op + "_")(1)
        check(dv, getattr(torch, op)(view(c), 1))
    check(torch.eye(4, 6, out=dev(torch.empty(6, 4)).t()), torch.eye(4, 6))
    # many unmergeable batch dims
    y = make((2, 1, 2, 3, 2, 2, 2, 2, 2, 3, 4), torch.float32).transpose(0, 3)
    check(getattr(torch, op)(dev(y)), getattr(torch, op)(y))
    a = x.clone().requires_grad_()
    b = dev(x).requires_grad_()
    g = make((5, 6), torch.float32, 3)
    getattr(torch, op)(a, 1).backward(g)
    getattr(torch, op)(b, 1).backward(dev(g))
    check(b.grad, a.grad)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        getattr(torch, op)(torch.zeros(3, device="ocl"))


# --------------------------------------------------------------------------------- cat / stack


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_cat_stack(dtype):
    a, b, c = make((3, 4), dtype, 1), make((3, 2), dtype, 2), make((3, 1), dtype, 3)
    check(torch.cat([dev(a), dev(b), dev(c)], 1), torch.cat([a, b, c], 1))
    check(torch.cat([dev(a), dev(a.t().contiguous().t())], 0), torch.cat([a, a], 0))
    check(torch.cat([dev(a)[:, ::2], dev(b)], -1), torch.cat([a[:, ::2], b], -1))
    check(torch.stack([dev(a), dev(a).clone()], 0), torch.stack([a, a], 0))
    check(torch.stack([dev(a), dev(a)], 2), torch.stack([a, a], 2))
    check(torch.stack([dev(a[0, 0]), dev(a[1, 1])]), torch.stack([a[0, 0], a[1, 1]]))


def test_cat_special_cases():
    a, b = make((2, 3), torch.float32), make((4, 3), torch.float32, 1)
    # legacy empty tensors (shape [0]) are skipped
    check(torch.cat([dev(a), torch.empty(0, device="ocl"), dev(b)]), torch.cat([a, torch.empty(0), b]))
    check(torch.cat([torch.empty(0, device="ocl"), torch.empty(0, device="ocl")]), torch.empty(0))
    # zero-size along the cat dim
    check(torch.cat([dev(a), dev(a[:0])]), a)
    # type promotion
    i = make((2, 3), torch.int32, 2)
    check(torch.cat([dev(a), dev(i)]), torch.cat([a, i]))
    check(torch.cat([dev(i), dev(i.bool())]), torch.cat([i, i.bool()]))
    # out=, including a non-contiguous out of the right size
    out = torch.empty(0, device="ocl")
    torch.cat([dev(a), dev(b)], out=out)
    check(out, torch.cat([a, b]))
    out = torch.zeros(3, 6, device="ocl").t()
    torch.cat([dev(a), dev(b)], out=out)
    check(out, torch.cat([a, b]))
    # channels_last inputs keep their layout
    x = make((2, 3, 4, 5), torch.float32).contiguous(memory_format=torch.channels_last)
    r = torch.cat([dev(x), dev(x)], 1)
    assert r.is_contiguous(memory_format=torch.channels_last)
    check(r, torch.cat([x, x], 1))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match"):
        torch.cat([dev(a), dev(b)], 1)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.cat([dev(a)], out=torch.empty(0, dtype=torch.int64, device="ocl"))


def test_cat_stack_grad():
    a, b = make((3, 4), torch.float32, 1), make((2, 4), torch.float32, 2)
    ca, cb = a.clone().requires_grad_(), b.clone().requires_grad_()
    oa, ob = dev(a).requires_grad_(), dev(b).requires_grad_()
    g = make((5, 4), torch.float32, 3)
    torch.cat([ca, cb]).backward(g)
    torch.cat([oa, ob]).backward(dev(g))
    check(oa.grad, ca.grad)
    check(ob.grad, cb.grad)
    ca.grad = oa.grad = None
    g2 = make((3, 2, 4), torch.float32, 4)
    torch.stack([ca, ca * 2], 1).backward(g2)
    torch.stack([oa, oa * 2], 1).backward(dev(g2))
    check(oa.grad, ca.grad)


# ------------------------------------------------------------------------------------ flip / roll


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_flip(dtype):
    x = make((3, 4, 5), dtype)
    for dims in [(0,), (1,), (2,), (0, 1), (0, 2), (0, 1, 2), (-1,), ()]:
        check(dev(x).flip(dims), x.flip(dims))
        check(dev(x).transpose(0, 2).flip(dims), x.transpose(0, 2).flip(dims))
        check(dev(x)[:, ::2].flip(dims), x[:, ::2].flip(dims))
    check(torch.fliplr(dev(x)), torch.fliplr(x))
    check(torch.flipud(dev(x)), torch.flipud(x))
    check(dev(x[0, 0, 0]).flip(()), x[0, 0, 0].flip(()))
    check(dev(x[:0]).flip(0), x[:0].flip(0))


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_roll(dtype):
    x = make((4, 5, 3), dtype)
    for shifts, dims in [(1, 0), (-2, 1), (7, 2), ((1, 2), (0, 1)), ((-1, 3, 5), (0, 1, 2)), (3, None), (-13, None), (0, 1)]:
        check(dev(x).roll(shifts, dims), x.roll(shifts, dims))
        check(dev(x).transpose(0, 1).roll(shifts, dims), x.transpose(0, 1).roll(shifts, dims))
    check(dev(x[:, :0]).roll(2, 0), x[:, :0].roll(2, 0))


def test_flip_roll_repeat_grad():
    x = make((3, 4), torch.float32)
    for fn in [lambda t: t.flip(0, 1), lambda t: t.roll((1, -2), (0, 1)), lambda t: t.roll(5),
               lambda t: t.repeat(2, 3), lambda t: t.repeat(2, 1, 2), lambda t: t.tile(2)]:
        a, b = x.clone().requires_grad_(), dev(x).requires_grad_()
        ra, rb = fn(a), fn(b)
        check(rb, ra)
        g = make(ra.shape, torch.float32, 5)
        ra.backward(g)
        rb.backward(dev(g))
        check(b.grad, a.grad, exact=False)


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_repeat(dtype):
    x = make((2, 3), dtype)
    for reps in [(1, 1), (2, 3), (3, 1, 2), (0, 2)]:
        check(dev(x).repeat(*reps), x.repeat(*reps))
        check(dev(x).t().repeat(*reps), x.t().repeat(*reps))


# --------------------------------------------------------------------------------------- unfold


@pytest.mark.parametrize("size,step", [(3, 1), (2, 2), (2, 3), (4, 2), (1, 1), (5, 5)])
def test_unfold_forward_backward(size, step):
    x = make((3, 9, 2), torch.float32)
    for dim in (1, -1, 0):
        if x.size(dim) < size:
            continue
        a, b = x.clone().requires_grad_(), dev(x).requires_grad_()
        ra, rb = a.unfold(dim, size, step), b.unfold(dim, size, step)
        check(rb, ra)
        g = make(ra.shape, torch.float32, 7)
        ra.backward(g)
        rb.backward(dev(g))
        check(b.grad, a.grad, exact=False)


def test_unfold_scalar_and_dtypes():
    s = torch.tensor(2.5, requires_grad=True)
    so = torch.tensor(2.5, device="ocl", requires_grad=True)
    s.unfold(0, 1, 1).sum().backward()
    so.unfold(0, 1, 1).sum().backward()
    check(so.grad, s.grad)
    for dtype in ALL:
        x = make((10,), dtype)
        check(dev(x).unfold(0, 3, 2).contiguous(), x.unfold(0, 3, 2).contiguous())


# ---------------------------------------------------------------------------- diag and friends


@pytest.mark.parametrize("dtype", ALL, ids=ids(ALL))
def test_diag_family(dtype):
    m, v = make((4, 5), dtype), make((4,), dtype, 1)
    for k in (-2, 0, 1):
        check(torch.diag(dev(m), k), torch.diag(m, k))
        check(torch.diag(dev(v), k), torch.diag(v, k))
        check(torch.diagonal(dev(m), k).clone(), torch.diagonal(m, k).clone())
        check(torch.diagonal_copy(dev(m), k), torch.diagonal_copy(m, k))
        check(torch.diag_embed(dev(m), k), torch.diag_embed(m, k))
        check(torch.diagflat(dev(v), k), torch.diagflat(v, k))
    check(torch.diag(dev(m).t()), torch.diag(m.t()))
    b = make((2, 3, 4), dtype, 2)
    check(torch.diagonal(dev(b), 0, 0, 2).contiguous(), torch.diagonal(b, 0, 0, 2).contiguous())
    check(torch.diag_embed(dev(b), 1, 0, 2), torch.diag_embed(b, 1, 0, 2))


def test_diag_grad():
    m, v = make((4, 5), torch.float32), make((4,), torch.float32, 1)
    for x, fn in [(m, lambda t: torch.diag(t, 1)), (v, lambda t: torch.diag(t, -1)),
                  (m, lambda t: torch.diag_embed(t)), (m, lambda t: torch.diagonal(t, -1))]:
        a, b = x.clone().requires_grad_(), dev(x).requires_grad_()
        ra, rb = fn(a), fn(b)
        g = make(ra.shape, torch.float32, 9)
        ra.backward(g)
        rb.backward(dev(g))
        check(b.grad, a.grad)


# --------------------------------------------------------------------------- OpInfo yardstick


OPINFO_NAMES = ["arange", "linspace", "logspace", "full", "eye", "tril", "triu", "cat", "stack", "hstack",
                "vstack", "dstack", "column_stack", "flip", "fliplr", "flipud", "roll", "repeat", "tile", "unfold",
                "unfold_copy", "diag", "diagonal", "diag_embed", "diagonal_copy", "diagflat", "block_diag"]
OPINFO_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                 torch.int16, torch.int8, torch.uint8, torch.bool]


@pytest.mark.parametrize("name", OPINFO_NAMES)
def test_opinfo_yardstick(name):
    ops = opinfos_named([name])
    if not ops:
        pytest.skip(f"no OpInfo named {name} in this torch")
    total_pass, all_failures = 0, []
    for op in ops:
        p, f = run_opinfo(op, OPINFO_DTYPES)
        total_pass += p
        all_failures += f
    assert not all_failures, f"{len(all_failures)} of {total_pass + len(all_failures)} samples failed:\n" + \
        "\n".join(all_failures[:20])
