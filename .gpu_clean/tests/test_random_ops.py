"""Random ops on ocl beyond rand/randn (tests/test_rng.py): bernoulli, random_, exponential_,
geometric_, log_normal_, cauchy_, normal with tensor parameters, multinomial, randperm,
native_dropout. Reproducibility (torch.manual_seed and generator=), layout independence,
distribution sanity with fixed seeds and generous tolerances, and an OpInfo yardstick."""
import math

import pytest
import torch
from opinfo_compare import opinfos_named, run_opinfo
from torch.testing import assert_close

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
N = 100_000


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def same(a, b):
    assert_close(a.cpu(), b.cpu(), rtol=0, atol=0, equal_nan=True)


PROBS = torch.rand(5, 30, generator=torch.Generator().manual_seed(0))
# Each entry draws from the default generator or `gen`; every one must be reproducible.
DRAWS = {
    "bernoulli_float": lambda g: torch.empty(1000, device="ocl").bernoulli_(0.3, generator=g),
    "bernoulli_tensor": lambda g: torch.bernoulli(torch.linspace(0, 1, 1000, device="ocl"), generator=g),
    "random_": lambda g: torch.empty(1000, dtype=torch.int64, device="ocl").random_(generator=g),
    "random_from_to": lambda g: torch.empty(1000, dtype=torch.int32, device="ocl").random_(-7, 9, generator=g),
    "random_to": lambda g: torch.empty(1000, device="ocl").random_(100, generator=g),
    "randint": lambda g: torch.randint(3, 50, (1000,), device="ocl", generator=g),
    "exponential_": lambda g: torch.empty(1000, device="ocl").exponential_(2.0, generator=g),
    "geometric_": lambda g: torch.empty(1000, device="ocl").geometric_(0.2, generator=g),
    "log_normal_": lambda g: torch.empty(1000, device="ocl").log_normal_(0.5, 0.3, generator=g),
    "cauchy_": lambda g: torch.empty(1000, device="ocl").cauchy_(1.0, 2.0, generator=g),
    "normal_tensor_mean": lambda g: torch.normal(torch.arange(1000.0, device="ocl"), 2.0, generator=g),
    "multinomial_repl": lambda g: torch.multinomial(PROBS.to("ocl"), 50, True, generator=g),
    "multinomial_norepl": lambda g: torch.multinomial(PROBS.to("ocl"), 20, False, generator=g),
    "randperm": lambda g: torch.randperm(1000, device="ocl", generator=g),
    "randn_f64": lambda g: torch.randn(1000, device="ocl", dtype=torch.float64, generator=g),
}


@pytest.mark.parametrize("name", list(DRAWS))
def test_reproducible_with_manual_seed_and_generator(name):
    draw = DRAWS[name]
    torch.manual_seed(123)
    a1, a2 = draw(None), draw(None)
    torch.manual_seed(123)
    same(draw(None), a1)
    same(draw(None), a2)
    assert not torch.equal(a1.cpu(), a2.cpu()), "consecutive draws must differ"
    # an explicit generator gives its own reproducible stream and leaves the default alone
    g = torch.Generator(device="ocl").manual_seed(5)
    state = torch.ocl.get_rng_state()
    b = draw(g)
    assert torch.equal(torch.ocl.get_rng_state(), state)
    g.manual_seed(5)
    same(draw(g), b)
    g.manual_seed(6)
    assert not torch.equal(draw(g).cpu(), b.cpu())


def test_values_do_not_depend_on_memory_layout():
    # element (i, j) gets the same number whether the tensor is contiguous or transposed
    for fill in [lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.bernoulli_(0.5),
                 lambda t: t.exponential_(), lambda t: t.random_(0, 1000)]:
        torch.manual_seed(9)
        a = fill(torch.empty(6, 8, device="ocl"))
        torch.manual_seed(9)
        b = fill(torch.empty(8, 6, device="ocl").t())
        assert not b.is_contiguous()
        same(b, a)


def test_noncontiguous_and_many_dims_are_filled_in_place():
    base = torch.zeros(10, 12, device="ocl")
    view = base[::2, 1::3]
    view.uniform_(1, 2)
    bc = base.cpu()
    mask = torch.zeros(10, 12, dtype=torch.bool)
    mask[::2, 1::3] = True
    assert (bc[mask] >= 1).all() and (bc[mask] < 2).all()
    assert (bc[~mask] == 0).all()
    # 10 dims that cannot be merged go through a dense temporary
    t = torch.zeros([2] * 10, device="ocl").permute(*reversed(range(10)))
    t.exponential_()
    assert (t.cpu() > 0).all()


# ------------------------------------------------------------------------------------ bernoulli


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=ids(FLOATS + INTS + [torch.bool]))
def test_bernoulli_scalar_p(dtype):
    torch.manual_seed(1)
    for p in (0.0, 0.3, 1.0):
        x = torch.empty(N, dtype=dtype, device="ocl").bernoulli_(p).cpu()
        assert x.dtype == dtype
        vals = set(x.double().unique().tolist())
        assert vals <= {0.0, 1.0}
        assert abs(x.double().mean().item() - p) < 0.01


@pytest.mark.parametrize("pdtype", [torch.float32, torch.float64, torch.float16], ids=["f32", "f64", "f16"])
def test_bernoulli_tensor_p(pdtype):
    torch.manual_seed(2)
    probs = torch.tensor([0.0, 0.25, 0.75, 1.0], dtype=pdtype)
    p = probs.to("ocl").expand(N // 4, 4)  # a broadcast (stride 0) p
    x = torch.bernoulli(p).cpu()
    assert x.dtype == pdtype and x.shape == (N // 4, 4)
    assert_close(x.double().mean(0), probs.double(), rtol=0, atol=0.015)
    # in-place on other dtypes, p transposed
    pt = torch.rand(300, 40, device="ocl").t()
    for dtype in (torch.bool, torch.int32, torch.float16):
        y = torch.empty(40, 300, dtype=dtype, device="ocl").bernoulli_(pt).cpu()
        assert set(y.double().unique().tolist()) <= {0.0, 1.0}
    z = torch.empty(40, 300, device="ocl").bernoulli_(pt).cpu()
    assert abs(z.mean().item() - pt.cpu().mean().item()) < 0.02
    out = torch.empty(0, device="ocl")
    torch.bernoulli(torch.full((10,), 0.5, device="ocl"), out=out)
    assert out.shape == (10,)


def test_bernoulli_errors():
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        torch.empty(3, device="ocl").bernoulli_(1.5)
    with pytest.raises(RuntimeError):
        torch.empty(3, device="ocl").expand(2, 3).bernoulli_(0.5)  # internal overlap


# -------------------------------------------------------------------------------------- random_


@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=ids(FLOATS + INTS + [torch.bool]))
def test_random_ranges(dtype):
    torch.manual_seed(3)
    info = torch.finfo(dtype) if dtype.is_floating_point else None
    # random_(): [0, 2^digits] for floats, [0, max] for integers, {0, 1} for bool
    x = torch.empty(N, dtype=dtype, device="ocl").random_().cpu().double()
    if dtype == torch.bool:
        hi = 1
    elif info is not None:
        hi = 2 ** {torch.float32: 24, torch.float64: 53, torch.float16: 11, torch.bfloat16: 8}[dtype]
    else:
        hi = torch.iinfo(dtype).max
    assert x.min().item() >= 0 and x.max().item() <= hi
    assert x.max().item() > hi * 0.9  # the whole range is covered
    assert (x == x.round()).all()
    # random_(from, to): every value of a small range, about equally often
    lo, up = (0, 2) if dtype == torch.bool else ((0, 7) if dtype == torch.uint8 else (-3, 4))
    y = torch.empty(N, dtype=dtype, device="ocl").random_(lo, up).cpu().long()
    counts = torch.bincount(y - lo, minlength=up - lo).double()
    assert counts.numel() == up - lo and (counts > 0).all()
    expected = N / (up - lo)
    assert ((counts - expected).abs() < 6 * math.sqrt(expected)).all(), counts
    # random_(to)
    z = torch.empty(N, dtype=dtype, device="ocl").random_(2 if dtype == torch.bool else 5).cpu().long()
    assert z.min().item() >= 0 and z.max().item() < (2 if dtype == torch.bool else 5)


def test_random_wide_ranges():
    torch.manual_seed(4)
    # ranges of 2^32 or more draw 64 random bits
    x = torch.empty(N, dtype=torch.int64, device="ocl").random_(-(2**40), 2**40).cpu()
    assert x.min().item() >= -(2**40) and x.max().item() < 2**40
    assert x.min().item() < -(2**39) and x.max().item() > 2**39
    # from = int64 min, no upper bound: the full 64-bit range
    f = torch.empty(N, dtype=torch.int64, device="ocl").random_(-(2**63), None).cpu()
    assert (f < 0).double().mean().item() == pytest.approx(0.5, abs=0.01)
    assert f.min().item() < -(2**62) and f.max().item() > 2**62
    # randint with int64 bounds near the limits
    r = torch.randint(2**62, 2**62 + 10, (1000,), device="ocl").cpu()
    assert r.min().item() >= 2**62 and r.max().item() < 2**62 + 10


def test_random_errors():
    with pytest.raises(RuntimeError, match="from"):
        torch.empty(3, dtype=torch.uint8, device="ocl").random_(-1, 5)
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to'"):
        torch.empty(3, device="ocl").random_(5, 5)


# ----------------------------------------------------------------- continuous distributions


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_exponential(dtype):
    torch.manual_seed(5)
    lam = 2.5
    x = torch.empty(N, dtype=dtype, device="ocl").exponential_(lam).cpu().double()
    assert (x >= 0).all() and torch.isfinite(x).all()
    assert x.mean().item() == pytest.approx(1 / lam, rel=0.02)
    assert x.var().item() == pytest.approx(1 / lam**2, rel=0.05)
    assert (x > 1 / lam).double().mean().item() == pytest.approx(math.exp(-1), abs=0.01)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32, torch.int64, torch.uint8],
                         ids=ids(FLOATS + [torch.int32, torch.int64, torch.uint8]))
def test_geometric(dtype):
    torch.manual_seed(6)
    for p in (0.2, 0.9):
        x = torch.empty(N, dtype=dtype, device="ocl").geometric_(p).cpu().double()
        assert x.min().item() >= 1 and (x == x.round()).all()
        assert x.mean().item() == pytest.approx(1 / p, rel=0.03)
        assert (x == 1).double().mean().item() == pytest.approx(p, abs=0.01)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_log_normal(dtype):
    torch.manual_seed(7)
    x = torch.empty(N, dtype=dtype, device="ocl").log_normal_(0.5, 0.4).cpu().double()
    assert (x > 0).all()
    lx = x.log()
    tol = 0.02 if dtype in (torch.float16, torch.bfloat16) else 0.01
    assert lx.mean().item() == pytest.approx(0.5, abs=tol)
    assert lx.std().item() == pytest.approx(0.4, abs=tol)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_cauchy(dtype):
    torch.manual_seed(8)
    x = torch.empty(N, dtype=dtype, device="ocl").cauchy_(1.5, 2.0).cpu().double()
    q = torch.quantile(x[torch.isfinite(x)], torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64))
    assert q[1].item() == pytest.approx(1.5, abs=0.05)
    assert (q[2] - q[0]).item() == pytest.approx(4.0, rel=0.05)  # IQR = 2 * scale


def test_continuous_distribution_errors():
    t = torch.empty(3, device="ocl")
    with pytest.raises(RuntimeError, match="lambda > 0"):
        t.exponential_(0)
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in"):
        t.geometric_(1.5)
    with pytest.raises(RuntimeError, match="std > 0"):
        t.log_normal_(0, -1)
    with pytest.raises(RuntimeError, match="sigma > 0"):
        t.cauchy_(0, 0)
    with pytest.raises(NotImplementedError):
        torch.empty(3, dtype=torch.int32, device="ocl").exponential_()
    with pytest.raises(RuntimeError):
        torch.empty(3, dtype=torch.int32, device="ocl").cauchy_()


def _missing_op(exc):
    """Tensor-std normal checks std.min() >= 0, which needs reductions implemented elsewhere."""
    return isinstance(exc, NotImplementedError) and "is not implemented for the ocl device" in str(exc)


def test_normal_tensor_parameters():
    torch.manual_seed(10)
    mean = torch.linspace(-5, 5, 11, device="ocl").repeat(N // 10)
    x = torch.normal(mean, 2.0).cpu().view(-1, 11)
    assert_close(x.mean(0), torch.linspace(-5, 5, 11), rtol=0, atol=0.1)
    assert_close(x.std(0), torch.full((11,), 2.0), rtol=0, atol=0.1)
    out = torch.empty(mean.shape, device="ocl")
    torch.normal(mean, 1.0, out=out)
    assert out.shape == mean.shape
    std = torch.linspace(0.5, 3, 6, device="ocl").repeat(N // 6)
    try:
        y = torch.normal(1.0, std).cpu().view(-1, 6)
        z = torch.normal(torch.zeros_like(std), std).cpu().view(-1, 6)
    except NotImplementedError as e:
        if _missing_op(e):
            pytest.skip(f"needs an op from another family: {str(e).splitlines()[0]}")
        raise
    assert_close(y.std(0), torch.linspace(0.5, 3, 6), rtol=0.05, atol=0)
    assert_close(z.mean(0), torch.zeros(6), rtol=0, atol=0.1)


# ---------------------------------------------------------------------------------- multinomial


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_multinomial_with_replacement(dtype):
    torch.manual_seed(11)
    probs = torch.tensor([[0.1, 0.0, 0.3, 0.6], [5.0, 5.0, 0.0, 10.0]], dtype=dtype)  # unnormalised rows
    s = torch.multinomial(probs.to("ocl"), 20000, replacement=True).cpu()
    assert s.shape == (2, 20000) and s.dtype == torch.int64
    for r in range(2):
        freq = torch.bincount(s[r], minlength=4).double() / 20000
        expected = probs[r].double() / probs[r].double().sum()
        assert_close(freq, expected, rtol=0, atol=0.015)
        assert freq[expected == 0].sum().item() == 0  # zero-probability categories never appear
    one = torch.multinomial(torch.tensor([0.0, 1.0, 0.0], dtype=dtype, device="ocl"), 100, True).cpu()
    assert (one == 1).all()


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_multinomial_without_replacement(dtype):
    torch.manual_seed(12)
    probs = torch.tensor([0.5, 0.3, 0.15, 0.05, 0.0], dtype=dtype)
    rows = probs.to("ocl").expand(4000, 5)  # broadcast rows
    s = torch.multinomial(rows, 4, replacement=False).cpu()
    assert s.shape == (4000, 4)
    for row in s[:200]:
        assert len(set(row.tolist())) == 4  # no repeats within a row
    assert (s != 4).all()  # the zero-probability category is not needed, so never drawn
    first = torch.bincount(s[:, 0], minlength=5).double() / 4000
    assert_close(first, probs.double(), rtol=0, atol=0.03)
    # all categories: a permutation per row
    perm = torch.multinomial(torch.rand(50, 7, device="ocl", dtype=dtype), 7).cpu()
    assert (perm.sort(1).values == torch.arange(7)).all()


def test_multinomial_layouts_and_sizes():
    torch.manual_seed(13)
    p = torch.rand(30, 6, device="ocl").t()  # non-contiguous rows
    s = torch.multinomial(p, 10, True)
    assert s.shape == (6, 10) and s.cpu().max().item() < 30
    # many categories: each work-item scans a chunk
    big = torch.rand(3, 5000, device="ocl")
    big[:, 1234] = 1e6
    assert (torch.multinomial(big, 1).cpu() == 1234).all()
    assert (torch.multinomial(big, 5, True).cpu() == 1234).float().mean().item() > 0.9
    out = torch.empty(2, 3, dtype=torch.int64, device="ocl").t()
    torch.multinomial(torch.ones(3, 4, device="ocl"), 2, out=out)
    assert out.shape == (3, 2)


def test_multinomial_errors():
    d = "ocl"
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        torch.multinomial(torch.zeros(4, device=d), 2, True)
    with pytest.raises(RuntimeError, match="sum of probabilities"):
        torch.multinomial(torch.zeros(2, 4, device=d), 1)
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor([0.5, -0.1, 0.6], device=d), 1)
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor([0.5, float("inf")], device=d), 1, True)
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor([0.5, float("nan")], device=d), 1)
    with pytest.raises(RuntimeError, match="without replacement"):
        torch.multinomial(torch.ones(3, device=d), 4)
    with pytest.raises(RuntimeError, match="1 or 2 dim"):
        torch.multinomial(torch.ones(2, 2, 2, device=d), 1)


# ------------------------------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 256, 1000, 5000, 70000])
def test_randperm_is_permutation(n):
    torch.manual_seed(14)
    p = torch.randperm(n, device="ocl")
    assert p.dtype == torch.int64 and p.device.type == "ocl"
    assert torch.equal(p.cpu().sort().values, torch.arange(n))


@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float16, torch.float64, torch.int16],
                         ids=["int32", "float32", "float16", "float64", "int16"])
def test_randperm_dtypes(dtype):
    p = torch.randperm(2000, dtype=dtype, device="ocl").cpu()
    assert p.dtype == dtype
    assert torch.equal(p.long().sort().values, torch.arange(2000))
    with pytest.raises(RuntimeError):
        torch.randperm(3000, dtype=torch.float16, device="ocl")
    with pytest.raises(RuntimeError):
        torch.randperm(-1, device="ocl")


def test_randperm_uniform():
    torch.manual_seed(15)
    counts = torch.zeros(4, 4)
    draws = 4000
    for _ in range(draws // 100):
        ps = torch.stack([torch.randperm(4, device="ocl") for _ in range(100)]).cpu()
        for pos in range(4):
            counts[pos] += torch.bincount(ps[:, pos], minlength=4)
    assert_close(counts / draws, torch.full((4, 4), 0.25), rtol=0, atol=0.04)
    # a large permutation is not close to the identity or its reverse
    p = torch.randperm(10000, device="ocl").cpu().double()
    assert abs(torch.corrcoef(torch.stack([p, torch.arange(10000.0, dtype=torch.float64)]))[0, 1].item()) < 0.05


def test_randperm_out_noncontiguous():
    out = torch.zeros(2, 50, dtype=torch.int64, device="ocl")[:, 0]
    torch.randperm(2, out=out)
    assert sorted(out.cpu().tolist()) == [0, 1]


# -------------------------------------------------------------------------------------- dropout


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_native_dropout(dtype):
    torch.manual_seed(16)
    x = (torch.randn(200, 500) + 3).to(dtype)
    for p in (0.0, 0.2, 0.5, 1.0):
        out, mask = torch.ops.aten.native_dropout(x.to("ocl"), p, True)
        out, mask = out.cpu(), mask.cpu()
        assert mask.dtype == torch.bool and out.dtype == dtype
        keep = mask.double().mean().item()
        assert keep == pytest.approx(1 - p, abs=0.01)
        scale = 0.0 if p == 1 else 1 / (1 - p)
        assert_close(out, (x * mask * scale).to(dtype), rtol=0, atol=0)
    out, mask = torch.ops.aten.native_dropout(x.to("ocl"), 0.5, False)
    assert mask.cpu().all()
    assert_close(out.cpu(), x, rtol=0, atol=0)


def test_dropout_module_backward_and_layouts():
    torch.manual_seed(17)
    x = torch.randn(64, 40)
    xo = x.to("ocl").t().requires_grad_()  # non-contiguous input
    y = torch.nn.functional.dropout(xo, 0.3, training=True)
    g = torch.randn(40, 64)
    y.backward(g.to("ocl"))
    mask = (y.detach().cpu() != 0)
    assert_close(y.detach().cpu(), x.t() * mask / 0.7, rtol=1e-6, atol=1e-6)
    assert_close(xo.grad.cpu(), g * mask / 0.7, rtol=1e-6, atol=1e-6)
    # nn.Dropout in eval mode is the identity
    m = torch.nn.Dropout(0.5).eval()
    assert_close(m(x.to("ocl")).cpu(), x)
    # native_dropout_backward on its own, half precision
    gh = torch.randn(10, dtype=torch.float16)
    mk = torch.rand(10) > 0.5
    assert_close(torch.ops.aten.native_dropout_backward(gh.to("ocl"), mk.to("ocl"), 2.0).cpu(),
                 torch.ops.aten.native_dropout_backward(gh, mk, 2.0))
    # NaN inputs stay NaN where dropped, as on the CPU (x * mask * scale)
    nan = torch.full((100,), float("nan"), device="ocl")
    assert torch.isnan(torch.ops.aten.native_dropout(nan, 0.5, True)[0].cpu()).all()
    # reproducible under manual_seed
    torch.manual_seed(3)
    a = torch.nn.functional.dropout(torch.ones(1000, device="ocl"), 0.5)
    torch.manual_seed(3)
    same(torch.nn.functional.dropout(torch.ones(1000, device="ocl"), 0.5), a)


# ----------------------------------------------------------------------------- OpInfo yardstick

RANDOM_OPINFOS = ["bernoulli", "multinomial", "normal", "uniform", "exponential", "geometric", "log_normal",
                  "cauchy", "randint", "randint_like", "randn", "randn_like", "rand_like", "nn.functional.dropout",
                  "native_dropout_backward"]
OPINFO_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                 torch.uint8, torch.bool]


@pytest.mark.parametrize("name", RANDOM_OPINFOS)
def test_opinfo_yardstick(name):
    ops = opinfos_named([name])
    if not ops:
        pytest.skip(f"no OpInfo named {name} in this torch")
    # random values cannot be compared with the CPU: shapes, dtypes and the device are;
    # native_dropout_backward is deterministic and compared in full
    deterministic = name == "native_dropout_backward"
    passed, failures, blocked = 0, [], []
    for op in ops:
        # normal() with a tensor std checks std.min() >= 0: reductions of another op family
        p, f = run_opinfo(op, OPINFO_DTYPES, compare=deterministic, check_grad=deterministic,
                          foreign={"min", "ge"}, blocked=blocked)
        passed += p
        failures += f
    assert not failures, f"{len(failures)} of {passed + len(failures)} samples failed:\n" + "\n".join(failures[:20])
