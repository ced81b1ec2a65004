"""_foreach_* ops on ocl vs the CPU, and the optimizers that use them: SGD, Adam and AdamW run a
few steps on ocl and on the CPU, with foreach=True (the default on ocl) and foreach=False."""
import pytest
import torch
from opinfo_compare import FOREACH_REDUCED_TOL, opinfos_named, run_opinfo
from torch.testing import assert_close

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def ids(dtypes):
    return [str(d).replace("torch.", "") for d in dtypes]


def tensors(dtype, seed=0, positive=False):
    """A list of tensors of different shapes, one non-contiguous, one 0-dim, one empty."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape):
        if dtype.is_floating_point:
            t = torch.randn(shape, generator=g)
            return (t.abs() + 0.5 if positive else t).to(dtype)
        return torch.randint(1 if positive else -9, 10, shape, generator=g).to(dtype)

    return [rnd(3, 4), rnd(5), rnd(6, 4).t(), rnd(), rnd(0, 3), rnd(2, 3, 2)[:, ::2]]


def dev(ts):
    return [t.to("ocl") if isinstance(t, torch.Tensor) else t for t in ts]


def check_lists(ocl_list, cpu_list, dtype=torch.float32):
    assert len(ocl_list) == len(cpu_list)
    tol = {"rtol": 1e-2, "atol": 1e-2} if dtype in (torch.float16, torch.bfloat16) else {}
    for o, c in zip(ocl_list, cpu_list):
        assert o.device.type == "ocl"
        assert_close(o.cpu(), c, equal_nan=True, **tol)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "clamp_min", "clamp_max"]


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=ids(FLOATS + [torch.int64]))
@pytest.mark.parametrize("name", BINARY)
def test_foreach_binary(name, dtype):
    a, b = tensors(dtype, 1), tensors(dtype, 2, positive=True)
    f, f_ = getattr(torch, "_foreach_" + name), getattr(torch, "_foreach_" + name + "_")
    scalar = 2 if dtype == torch.int64 else 1.5
    scalars = [scalar * (i + 1) for i in range(len(a))]
    for args in [(b,), (scalar,), (scalars,)]:
        ocl_args = tuple(dev(x) if isinstance(x, list) else x for x in args)
        check_lists(f(dev(a), *ocl_args), f(a, *args), dtype)
        if name == "div" and not dtype.is_floating_point:
            with pytest.raises(RuntimeError, match="can't be cast"):  # true division into integers
                f_(dev(a), *ocl_args)
            continue
        oa = dev(a)
        f_(oa, *ocl_args)
        ca = [t.clone() for t in a]
        f_(ca, *args)
        check_lists(oa, ca, dtype)
    if name in ("add", "sub"):
        alpha = 2 if dtype == torch.int64 else 0.5
        check_lists(f(dev(a), dev(b), alpha=alpha), f(a, b, alpha=alpha), dtype)
    if name in ("add", "mul", "div"):
        t = torch.tensor(3 if dtype == torch.int64 else 1.25, dtype=dtype)
        check_lists(f(dev(a), t.to("ocl")), f(a, t), dtype)
        check_lists(f(dev(a), t), f(a, t), dtype)  # a 0-dim CPU tensor


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=ids(FLOATS + [torch.int32]))
@pytest.mark.parametrize("name", ["neg", "sqrt", "rsqrt", "reciprocal", "exp", "log", "zero"])
def test_foreach_unary(name, dtype):
    a = tensors(dtype, 3, positive=name in ("sqrt", "rsqrt", "log", "reciprocal"))
    if name != "zero":
        check_lists(getattr(torch, "_foreach_" + name)(dev(a)), getattr(torch, "_foreach_" + name)(a), dtype)
    if dtype.is_floating_point or name in ("neg", "zero"):
        oa, ca = dev(a), [t.clone() for t in a]
        getattr(torch, "_foreach_" + name + "_")(oa)
        getattr(torch, "_foreach_" + name + "_")(ca)
        check_lists(oa, ca, dtype)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64], ids=ids(FLOATS + [torch.int64]))
@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_foreach_pointwise(name, dtype):
    if name == "addcdiv" and dtype == torch.int64:
        with pytest.raises(RuntimeError, match="Integer division"):
            torch._foreach_addcdiv(dev(tensors(dtype)), dev(tensors(dtype)), dev(tensors(dtype)))
        return
    a, b, c = tensors(dtype, 1), tensors(dtype, 2), tensors(dtype, 3, positive=True)
    f, f_ = getattr(torch, "_foreach_" + name), getattr(torch, "_foreach_" + name + "_")
    value = 2 if dtype == torch.int64 else 0.75
    values = [value * (i + 1) for i in range(len(a))]
    packed = torch.tensor(values, dtype=torch.float64 if dtype.is_floating_point else torch.int64)
    for extra in [(), (value,), (values,), (packed,)]:
        check_lists(f(dev(a), dev(b), dev(c), *extra), f(a, b, c, *extra), dtype)
        oa, ca = dev(a), [t.clone() for t in a]
        f_(oa, dev(b), dev(c), *extra)
        f_(ca, b, c, *extra)
        check_lists(oa, ca, dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_foreach_lerp_copy_norm(dtype):
    a, b, w = tensors(dtype, 1), tensors(dtype, 2), tensors(dtype, 3)
    for weight in [0.3, 0.8, [0.1 * i for i in range(len(a))], w]:
        wo = dev(weight) if isinstance(weight, list) and isinstance(weight[0], torch.Tensor) else weight
        check_lists(torch._foreach_lerp(dev(a), dev(b), wo), torch._foreach_lerp(a, b, weight), dtype)
        oa, ca = dev(a), [t.clone() for t in a]
        torch._foreach_lerp_(oa, dev(b), wo)
        torch._foreach_lerp_(ca, b, weight)
        check_lists(oa, ca, dtype)
    oa = dev(a)
    torch._foreach_copy_(oa, dev(b))
    check_lists(oa, b, dtype)
    nonempty = [t for t in a if t.numel()]
    for ord in (1, 2, float("inf")):
        check_lists(torch._foreach_norm(dev(nonempty), ord), torch._foreach_norm(nonempty, ord), dtype)
    if dtype == torch.float16:
        check_lists(torch._foreach_norm(dev(nonempty), 2, dtype=torch.float32),
                    torch._foreach_norm(nonempty, 2, dtype=torch.float32))
    nan = [torch.tensor([1.0, float("nan"), 2.0], dtype=dtype)]
    check_lists(torch._foreach_norm(dev(nan), float("inf")), torch._foreach_norm(nan, float("inf")))


def test_foreach_errors():
    a = dev(tensors(torch.float32))
    with pytest.raises(RuntimeError, match="same number of tensors"):
        torch._foreach_add(a, a[:2])
    with pytest.raises(RuntimeError, match="bool tensor is not supported"):
        torch._foreach_neg([torch.ones(2, dtype=torch.bool, device="ocl")])
    with pytest.raises(RuntimeError, match="Subtraction"):
        torch._foreach_sub([torch.ones(2, dtype=torch.bool, device="ocl")], True)
    with pytest.raises(RuntimeError, match="alpha"):
        torch._foreach_add([torch.ones(2, dtype=torch.int64, device="ocl")],
                           [torch.ones(2, dtype=torch.int64, device="ocl")], alpha=0.5)
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch._foreach_add_([torch.ones(2, dtype=torch.int64, device="ocl")], 1.5)
    with pytest.raises(RuntimeError, match="0 dim"):
        torch._foreach_mul(a, torch.ones(2, device="ocl"))
    with pytest.raises(NotImplementedError):
        torch._foreach_lerp([torch.ones(2, dtype=torch.int64, device="ocl")],
                            [torch.ones(2, dtype=torch.int64, device="ocl")], 0.5)


# --------------------------------------------------------------------------------- optimizers


def _model_params(seed):
    g = torch.Generator().manual_seed(seed)
    # shapes of a small MLP, plus a non-contiguous parameter
    return [torch.randn(16, 8, generator=g), torch.randn(16, generator=g), torch.randn(8, 4, generator=g).t(),
            torch.randn(1, generator=g)]


OPTIMIZERS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, betas=(0.8, 0.9))),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
]


def _run(cls, kw, foreach, params, grads_per_step):
    opt = getattr(torch.optim, cls)(params, foreach=foreach, **kw)
    for grads in grads_per_step:
        for p, g in zip(params, grads):
            p.grad = g.to(p.device)
        opt.step()
    return opt


@pytest.mark.parametrize("foreach", [True, False], ids=["foreach", "for-loop"])
@pytest.mark.parametrize("cls,kw", OPTIMIZERS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(OPTIMIZERS)])
def test_optimizer_matches_cpu(cls, kw, foreach):
    base = _model_params(0)
    g = torch.Generator().manual_seed(1)
    grads = [[torch.randn(p.shape, generator=g) for p in base] for _ in range(4)]
    cpu = [p.clone().requires_grad_() for p in base]
    ocl = [p.to("ocl").requires_grad_() for p in base]
    _run(cls, kw, foreach, cpu, grads)
    try:
        _run(cls, kw, foreach, ocl, grads)
    except NotImplementedError as e:
        if not foreach and "is not implemented for the ocl device" in str(e):
            pytest.skip(f"the for-loop path needs an elementwise op of another family: {str(e).splitlines()[0]}")
        raise
    for o, c in zip(ocl, cpu):
        assert_close(o.detach().cpu(), c.detach(), rtol=1e-5, atol=1e-6)


def test_foreach_is_the_default_on_ocl():
    from torch.optim.optimizer import _default_to_fused_or_foreach
    params = [torch.zeros(3, device="ocl", requires_grad=True)]
    assert _default_to_fused_or_foreach(params, differentiable=False, use_fused=False) == (False, True)
    # the default Adam/SGD step runs without any CPU fallback (strict mode raises otherwise)
    for cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW):
        p = torch.ones(4, device="ocl", requires_grad=True)
        opt = cls([p], lr=0.1) if cls is not torch.optim.SGD else cls([p], lr=0.1, momentum=0.9)
        p.grad = torch.full((4,), 0.5, device="ocl")
        opt.step()
        opt.zero_grad()
        assert p.grad is None
        assert (p.detach().cpu() < 1).all()


def test_optimizer_mixed_dtypes_and_clip_grad():
    """Groups of float32 and float16 parameters (foreach groups by dtype), then clip_grad_norm_."""
    ps_cpu = [torch.randn(5, 3).requires_grad_(), torch.randn(7).half().requires_grad_()]
    ps_ocl = [p.detach().to("ocl").requires_grad_() for p in ps_cpu]
    for ps in (ps_cpu, ps_ocl):
        opt = torch.optim.SGD(ps, lr=0.1, momentum=0.9)
        for step in range(3):
            for p in ps:
                p.grad = torch.full(p.shape, 0.25 * (step + 1), dtype=p.dtype, device=p.device)
            opt.step()
    for o, c in zip(ps_ocl, ps_cpu):
        assert_close(o.detach().cpu(), c.detach(), rtol=1e-3, atol=1e-3)
    for p in ps_ocl:
        p.grad = torch.ones_like(p)
    try:
        total = torch.nn.utils.clip_grad_norm_(ps_ocl[:1], max_norm=1.0, foreach=True)
    except NotImplementedError as e:
        pytest.skip(f"clip_grad_norm_ needs an op of another family: {str(e).splitlines()[0]}")
    assert_close(total.cpu(), torch.tensor(15 ** 0.5))


# ----------------------------------------------------------------------------- OpInfo yardstick

FOREACH_OPINFOS = ["_foreach_add", "_foreach_sub", "_foreach_mul", "_foreach_div", "_foreach_clamp_min",
                   "_foreach_clamp_max", "_foreach_minimum", "_foreach_maximum", "_foreach_addcmul",
                   "_foreach_addcdiv", "_foreach_lerp", "_foreach_neg", "_foreach_sqrt", "_foreach_rsqrt",
                   "_foreach_reciprocal", "_foreach_exp", "_foreach_log", "_foreach_zero", "_foreach_copy",
                   "_foreach_norm"]
# Ops of other families that some samples or backward formulas need (comparisons for the
# maximum/clamp gradients, pow for rsqrt's, linalg_vector_norm for norm orders other than 1, 2, inf).
FOREIGN = {"eq", "ne", "lt", "le", "gt", "ge", "pow", "abs", "sgn", "sign", "linalg_vector_norm", "mul", "div"}


def _norm_samples(dtype, sample):
    """_foreach_norm's samples (ord 0, 1, 2, -1, -2, inf, -inf, all with dtype=float64) build one
    reduction program per (ord, input dtype), seconds each on PoCL. Every ord runs in float32
    (forward and gradients); the accumulation is float64 whatever the input, so the other dtypes
    add only their loads into it, which the ord=2 samples (with and without an empty tensor) check.
    (Integer samples, which ocl must refuse as the CPU does, build nothing: all of them run.)"""
    return dtype == torch.float32 or not dtype.is_floating_point or sample.kwargs.get("ord", 2) == 2


@pytest.mark.parametrize("name", FOREACH_OPINFOS)
def test_opinfo_yardstick(name):
    ops = opinfos_named([name])
    if not ops:
        pytest.skip(f"no OpInfo named {name} in this torch")
    dtypes = FLOATS + [torch.int64, torch.int32, torch.uint8, torch.bool]
    passed, failures, blocked = 0, [], []
    for op in ops:
        p, f = run_opinfo(op, dtypes, foreign=FOREIGN, blocked=blocked, tol=FOREACH_REDUCED_TOL,
                          sample_filter=_norm_samples if name == "_foreach_norm" else None)
        passed += p
        failures += f
    assert not failures, f"{len(failures)} of {passed + len(failures)} samples failed:\n" + "\n".join(failures[:20])


def test_multi_tensor_launches_and_order():
    """Contiguous tensors of a list share launches (ew_multi), and an item that touches what an
    earlier one writes waits for it: results equal one op per tensor in list order."""
    import pytorch_ocl.profiler

    torch.manual_seed(0)
    sizes = [1, 7, 1000, 33, 4096, 5] * 5
    xs = [torch.randn(n) for n in sizes]
    ys = [torch.randn(n) for n in sizes]
    xd, yd = [x.to("ocl:0") for x in xs], [y.to("ocl:0") for y in ys]
    with pytorch_ocl.profiler.profile() as prof:
        torch._foreach_add_(xd, yd, alpha=0.5)
        outs = torch._foreach_addcmul(xd, yd, yd, value=2.0)
        torch.ocl.synchronize()
    launches = sum(r["calls"] for r in prof.summary())
    assert launches <= 6, prof.table()  # 30 tensors: 2 launches per op
    for x, y, xo, o in zip(xs, ys, xd, outs):
        ref = x + 0.5 * y
        torch.testing.assert_close(xo.cpu(), ref)
        torch.testing.assert_close(o.cpu(), ref + 2.0 * y * y)
    # More tensors than a batch keeps pending (64): it flushes and goes on.
    many = [torch.randn(5 + i % 7) for i in range(100)]
    many_d = [t.to("ocl:0") for t in many]
    with pytorch_ocl.profiler.profile() as prof:
        torch._foreach_mul_(many_d, 3.0)
        torch.ocl.synchronize()
    assert sum(r["calls"] for r in prof.summary()) <= 8, prof.table()
    for t, td in zip(many, many_d):
        torch.testing.assert_close(td.cpu(), t * 3.0)
    # Aliasing inside one list: a twice as output, and a as the other operand of a later item.
    a, b, c = (torch.randn(100) for _ in range(3))
    ad, bd, cd = a.to("ocl:0"), b.to("ocl:0"), c.to("ocl:0")
    torch._foreach_add_([ad, ad, bd], [bd, cd, ad])
    a_ref = a + b + c
    torch.testing.assert_close(ad.cpu(), a_ref)
    torch.testing.assert_close(bd.cpu(), b + a_ref)
    # Views of one buffer that overlap, and a non-contiguous member (its own launch).
    base = torch.randn(300)
    bd2 = base.to("ocl:0")
    t = torch.randn(10, 10)
    td = t.to("ocl:0").t()
    torch._foreach_mul_([bd2[0:200], bd2[100:300], td], [2.0, 3.0, 4.0])
    ref = base.clone()
    ref[0:200] *= 2.0
    ref[100:300] *= 3.0
    torch.testing.assert_close(bd2.cpu(), ref)
    torch.testing.assert_close(td.cpu(), t.t() * 4.0)


@pytest.mark.parametrize("dtype", FLOATS, ids=ids(FLOATS))
def test_multi_tensor_vector_items(dtype):
    """Items whose size and offsets are multiples of 4 run 4 elements per work-item (ew_multi_vec4), the
    others one (ew_multi), in separate launches of one call: sizes and offsets of both kinds mixed, views at
    an aligned and an unaligned offset of one buffer, a scalar and a 0-dim device tensor operand."""
    g = torch.Generator().manual_seed(7)
    base = torch.randn(64, generator=g).to(dtype)
    xs = [torch.randn(n, generator=g).to(dtype) for n in (4, 8, 4096, 12, 7, 1000, 1)] + [base[4:24], base[33:45]]
    ys = [torch.randn(x.shape, generator=g).to(dtype) for x in xs]
    xd, yd = dev(xs), dev(ys)
    xd[-2:] = [b for b in (base.to("ocl")[4:24], base.to("ocl")[33:45])]
    outs = torch._foreach_addcmul(xd, yd, yd, value=0.5)
    check_lists(outs, [x + 0.5 * y * y for x, y in zip(xs, ys)], dtype)
    w = torch.tensor(0.25, dtype=dtype)
    check_lists(torch._foreach_mul(xd, w.to("ocl")), torch._foreach_mul(xs, w), dtype)
    torch._foreach_lerp_(xd, yd, 0.3)
    check_lists(xd, torch._foreach_lerp(xs, ys, 0.3), dtype)


def test_foreach_dense_route_edges():
    """The fast route (contiguous operands of one floating dtype, items built without a TensorIterator) and the
    cases it must leave to the TensorIterator route: dtype promotion, a 0-dim device operand, an input that
    partially overlaps the output (an error, as on the CPU), a bool scalar or alpha, a list mixing both routes."""
    g = torch.Generator().manual_seed(11)
    a = [torch.randn(n, generator=g) for n in (5, 64, 0, 1)] + [torch.randn((), generator=g)]
    b = [torch.randn(t.shape, generator=g) for t in a]
    # Mixed routes in one list: a float64 member (promotion) and a transposed one between contiguous ones.
    mixed_a = a[:2] + [torch.randn(3, 4, generator=g).t().contiguous().t()] + a[2:]
    mixed_b = b[:2] + [torch.randn(4, 3, generator=g).t()] + b[2:]
    mixed_b[0] = mixed_b[0].double()
    for f, args in [(torch._foreach_add, (mixed_b,)), (torch._foreach_mul, (1.5,)), (torch._foreach_sqrt, ()),
                    (torch._foreach_addcdiv, (mixed_b, [t.abs() + 1 for t in mixed_b], 0.25))]:
        ocl_args = tuple(dev(x) if isinstance(x, list) else x for x in args)
        check_lists(f(dev(mixed_a), *ocl_args), f(mixed_a, *args))
    # An int scalar on float16 rounds to float16 first, as the CPU does (2049 -> 2048).
    h = [torch.ones(8, dtype=torch.float16)]
    check_lists(torch._foreach_mul(dev(h), 2049), torch._foreach_mul(h, 2049), torch.float16)
    # A 0-dim device tensor as the other operand of every item (broadcast), in place.
    oa, ca = dev(a), [t.clone() for t in a]
    s = torch.tensor(0.75)
    torch._foreach_mul_(oa, s.to("ocl"))
    torch._foreach_mul_(ca, s)
    check_lists(oa, ca)
    # Partial overlap of an input with the written tensor raises as on the CPU; full aliasing is fine.
    base_c = torch.randn(20, generator=g)
    for base in (base_c, base_c.to("ocl")):
        with pytest.raises(RuntimeError, match="unsupported operation"):
            torch._foreach_add_([base[0:10]], [base[5:15]])
    o = base_c.to("ocl")
    torch._foreach_add_([o], [o])
    check_lists([o], [base_c * 2])
    # Inputs that are the written tensor itself (read through the output's pointer), alternating with ones
    # that are not, and every input the output.
    xs = [torch.randn(n, generator=g) for n in (8, 5, 12)]
    ys = [torch.randn(n, generator=g) for n in (8, 5, 12)]
    xd, yd = dev(xs), dev(ys)
    torch._foreach_add_(xd, [xd[0], yd[1], xd[2]], alpha=0.5)
    check_lists(xd, [xs[0] * 1.5, xs[1] + 0.5 * ys[1], xs[2] * 1.5])
    xd = dev(xs)
    torch._foreach_addcmul_(xd, xd, xd, value=0.25)
    check_lists(xd, [x + 0.25 * x * x for x in xs])
    # Bool operands keep the CPU's errors.
    for t in (base_c, base_c.to("ocl")):
        with pytest.raises(RuntimeError, match="Subtraction"):
            torch._foreach_sub([t], True)
        with pytest.raises(RuntimeError, match="Boolean alpha"):
            torch._foreach_add([t], [t], alpha=True)
