"""Table-driven tests of the pointwise ops: parametrised from pytorch_ocl._C._pointwise_ops(), the
table the kernels and registrations are generated from, so a row without a test (or a test
without a row) fails here.

Each row runs on ocl and on the CPU for its dtypes (contiguous), then in float32 (or its first
dtype) with transposed, sliced (unaligned), broadcast, 0-dim, zero-size and Python-scalar
operands, in-place and with a non-contiguous out=. When the CPU raises, ocl must raise too
(with a real error, never the strict-mode fallback).
"""
import pytest
import torch

import pytorch_ocl

aten = torch.ops.aten
ROWS = {row[0]: row for row in pytorch_ocl._C._pointwise_ops()}

# Scalar arguments of the activation-like kinds (act*, bw*), by row id.
PARAMS = {
    "leaky_relu": (0.1,), "elu": (0.7, 1.3, 0.9), "softplus": (2.0, 5.0), "softshrink": (0.5,),
    "hardshrink": (0.5,), "threshold": (0.2, -1.0), "softplus_backward": (2.0, 5.0), "softshrink_backward": (0.5,),
    "hardshrink_backward": (0.5,), "threshold_backward": (0.2,), "hardtanh_backward": (-0.5, 0.7),
}
SIMPLE_KINDS = {"unary": 1, "unary_float": 1, "unary_bool": 1, "binary": 2, "binary_float": 2, "binary_alpha": 2,
                "comparison": 2, "logical": 2, "act0": 1, "act1": 1, "act2": 1, "act3": 1, "bw0": 2, "bw1": 2,
                "bw2": 2}

# Rows with their own signature: (function of the tensor operands, number of operands).
CUSTOM = {
    "isnan": (lambda x: aten.isnan(x), 1),
    "logical_not": (lambda x: aten.logical_not(x), 1),
    "nan_to_num": (lambda x: aten.nan_to_num(x, 0.5, 2.0, -2.0), 1),
    "round_decimals": (lambda x: aten.round(x, decimals=2), 1),
    "frexp": (lambda x: aten.frexp(x), 1),
    "polygamma": (lambda x: aten.polygamma(2, x), 1),
    "logit": (lambda x: aten.logit(x, 0.1), 1),
    "logit_backward": (lambda g, x: aten.logit_backward(g, x, 0.1), 2),
    "fake_quantize_cachemask": (lambda x: aten.fake_quantize_per_tensor_affine_cachemask(x, 0.1, 1, -20, 20), 1),
    "fake_quantize_tensor_qparams": (lambda x: aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams(
        x, torch.tensor([0.1], device=x.device), torch.tensor([1], device=x.device),
        torch.tensor([1], device=x.device), -20, 20), 1),
    "fake_quantize_per_channel": (lambda x: aten.fake_quantize_per_channel_affine_cachemask(
        x, torch.linspace(0.05, 0.3, x.shape[-1], device=x.device),
        torch.arange(x.shape[-1], dtype=torch.int32, device=x.device) % 5 - 2, x.dim() - 1, -20, 20), 1),
    # dX only: the scale and zero-point gradients are sums (test_fake_quantize_learnable.py checks them)
    "fake_quantize_learnable_backward": (lambda g, x: aten._fake_quantize_learnable_per_channel_affine_backward(
        g, x, torch.linspace(0.05, 0.3, x.shape[-1], device=x.device),
        torch.linspace(-2.5, 2.5, x.shape[-1], device=x.device), x.dim() - 1, -20, 20, 0.5)[0], 2),
    "rsub": (lambda x, y: aten.rsub(x, y, alpha=2), 2),
    "div_mode": (lambda x, y: (aten.div(x, y, rounding_mode="floor"), aten.div(x, y, rounding_mode="trunc")), 2),
    "floor_divide": (lambda x, y: aten.floor_divide(x, y), 2),
    "pow": (lambda x, y: aten.pow(x, y), 2),
    "where": (lambda c, x, y: aten.where(c > 0, x, y), 3),
    "lerp": (lambda x, y, w: aten.lerp(x, y, w), 3),
    "addcmul": (lambda x, y, z: aten.addcmul(x, y, z, value=0.5), 3),
    "addcdiv": (lambda x, y, z: aten.addcdiv(x, y, z, value=0.5), 3),
    "clamp": (lambda x, lo, hi: aten.clamp(x, lo, hi), 3),
    "clamp_scalar": (lambda x: (aten.clamp(x, -0.5, 0.5), aten.clamp(x, 2, 1), aten.clamp(x, 0.5, float("nan"))), 1),
    "clamp_min": (lambda x, y: (aten.clamp_min(x, y), aten.clamp_min(x, 0.5)), 2),
    "clamp_max": (lambda x, y: (aten.clamp_max(x, y), aten.clamp_max(x, 0.5)), 2),
    "masked_fill": (lambda x, m: x.clone().masked_fill_(m > 0, 3.0), 2),
    "linalg_cross": (lambda x, y: _cross3(x, y), 2),
    "renorm_factor": (lambda x: (aten.renorm(x, 2.0, 0, 0.9), aten.renorm(x, 1.5, -1, 0.5)), 1),
    "relu": (lambda x: aten.relu(x), 1),
    "hardtanh": (lambda x: aten.hardtanh(x, -0.5, 0.7), 1),
    "hardswish": (lambda x: aten.hardswish(x), 1),
    "hardswish_backward": (lambda g, x: aten.hardswish_backward(g, x), 2),
    "mish_backward": (lambda g, x: aten.mish_backward(g, x), 2),
    "leaky_relu_backward": (lambda g, x: aten.leaky_relu_backward(g, x, 0.1, False), 2),
    "elu_backward": (lambda g, x: (aten.elu_backward(g, 0.7, 1.3, 0.9, False, x),
                                   aten.elu_backward(g, 0.7, 1.3, 0.9, True, x)), 2),
    "gelu": (lambda x: (aten.gelu(x), aten.gelu(x, approximate="tanh")), 1),
    "gelu_backward": (lambda g, x: (aten.gelu_backward(g, x), aten.gelu_backward(g, x, approximate="tanh")), 2),
    "log_sigmoid_forward": (lambda x: aten.log_sigmoid_forward(x)[0], 1),
    "log_sigmoid_backward": (lambda g, x: aten.log_sigmoid_backward(g, x, aten.log_sigmoid_forward(x)[1]), 2),
    "prelu": (lambda x, w: aten._prelu_kernel(x, w), 2),
    "prelu_backward": (lambda g, x, w: aten._prelu_kernel_backward(g, x, w), 3),
    "glu": (lambda x: aten.glu(x, -1), 1),
    "glu_backward": (lambda g, x: aten.glu_backward(g[..., : x.shape[-1] // 2], x, -1), 2),
}

def _cross3(x, y):
    """linalg_cross of 3-vectors built from the operands along a new last dim (test_cross_renorm.py
    covers layouts of the 3-dim itself)."""
    x, y = torch.broadcast_tensors(x, y)
    return aten.linalg_cross(torch.stack([x, y, x - y], -1), torch.stack([y, x, x], -1))


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.uint8, torch.bool]
# Rows whose float64 / narrow-integer code paths differ from the types above.
FLOAT64_ROWS = {"frexp", "fake_quantize_cachemask", "fake_quantize_tensor_qparams", "fake_quantize_per_channel", "heaviside", "linalg_cross", "renorm_factor", "exp", "erfinv", "digamma", "polygamma", "lgamma", "div_mode", "remainder", "pow", "nextafter",
                "add", "sigmoid", "gelu"}
NARROW_INT_ROWS = {"div_mode", "floor_divide", "remainder", "fmod", "bitwise_left_shift", "bitwise_right_shift",
                   "linalg_cross", "pow", "abs", "neg", "sign", "add", "mul", "maximum", "clamp", "bitwise_not"}


def base_name(row):
    return row[2].split(".")[0]


def call_spec(row_id):
    row = ROWS[row_id]
    if row[1] in SIMPLE_KINDS:
        op = getattr(aten, base_name(row))
        extra = PARAMS.get(row_id, ())
        return (lambda *t: op(*t, *extra)), SIMPLE_KINDS[row[1]]
    return CUSTOM[row_id]


def row_dtypes(row_id):
    names = set(ROWS[row_id][3])
    return [d for d in DTYPES if _dtype_name(d) in names]


def _dtype_name(d):
    return {torch.float32: "Float", torch.float16: "Half", torch.bfloat16: "BFloat16", torch.float64: "Double",
            torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char", torch.uint8: "Byte",
            torch.bool: "Bool"}[d]


def make(shape, dtype, seed, nonzero=False):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.ones(shape, dtype=torch.bool) if nonzero else torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g, dtype=torch.float64) * 2).to(dtype)
    lo = 0 if dtype == torch.uint8 else -9
    t = torch.randint(lo, 10, shape, generator=g, dtype=torch.int64)
    if nonzero:
        t = torch.where(t == 0, torch.full_like(t, 3), t)
    return t.to(dtype)


def operands(n, shape, dtype, shapes=None):
    # Operands after the first are divisors for some rows: keep them nonzero (the CPU raises
    # ZeroDivisionError for integer division by zero; ocl returns 0 there, see README).
    return [make(shapes[k] if shapes else shape, dtype, seed=k, nonzero=k > 0) for k in range(n)]


def flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flatten(v)]
    return []


def upcast(t):
    return t.float() if isinstance(t, torch.Tensor) and t.dtype in (torch.float16, torch.bfloat16) else t


def check(fn, cpu_args, ocl_args=None):
    """Runs fn on CPU and ocl operands; results must match, or both must raise."""
    if ocl_args is None:
        ocl_args = [a.to("ocl") if isinstance(a, torch.Tensor) else a for a in cpu_args]
    try:
        expected = fn(*cpu_args)
    except Exception as cpu_error:
        if "primitive" in str(cpu_error):
            return  # an internal oneDNN failure of the CPU kernel, not a user error
        with pytest.raises(Exception) as info:
            fn(*ocl_args)
        assert "PYTORCH_OCL_STRICT" not in str(info.value), info.value
        return
    actual = fn(*ocl_args)
    reference = None
    if any(isinstance(a, torch.Tensor) and a.dtype in (torch.float16, torch.bfloat16) for a in cpu_args):
        reference = fn(*[upcast(a) for a in cpu_args])  # ocl computes 16-bit floats in float32
    a, e = flatten(actual), flatten(expected)
    r = flatten(reference) if reference is not None else [None] * len(e)
    assert len(a) == len(e)
    for x, y, z in zip(a, e, r):
        assert x.device.type == "ocl"
        assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
        try:
            torch.testing.assert_close(x.cpu(), y, equal_nan=True)
        except AssertionError:
            if z is None:
                raise
            # cancellation near zero: allow 16-bit results one rounding step apart
            torch.testing.assert_close(x.cpu(), z.to(y.dtype), equal_nan=True, atol=1e-3, rtol=1e-2)


def test_table_is_registered():
    assert len(ROWS) > 100
    for row_id, (_, kind, aten_name, dtypes, overloads) in ROWS.items():
        assert overloads, f"row {row_id} ({aten_name}) registered nothing"
        assert dtypes, row_id
        assert row_id in CUSTOM or kind in SIMPLE_KINDS, f"row {row_id} of kind {kind} has no test"
    assert not set(CUSTOM) - set(ROWS), f"tests for rows that do not exist: {set(CUSTOM) - set(ROWS)}"


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_dtypes(row_id):
    fn, n = call_spec(row_id)
    dtypes = row_dtypes(row_id)
    if row_id in FLOAT64_ROWS:
        dtypes.append(torch.float64)
    if row_id in NARROW_INT_ROWS:
        dtypes += [torch.int8, torch.int16, torch.int32]
    for dt in dtypes:
        check(fn, operands(n, (6, 4), dt))


def _layouts(n):
    """(name, cpu operands builder) of the layout variants, float32."""
    def transposed(dt):
        return [t.t() for t in operands(n, (4, 6), dt)]

    def sliced(dt):  # unaligned start and a tail: the scalar path of the contiguous kernel
        return [t[1:] for t in operands(n, (1032,), dt)]

    def strided(dt):
        return [t[::2, 1:] for t in operands(n, (12, 5), dt)]

    def broadcast(dt):
        return operands(n, None, dt, shapes=[(6, 4)] + [(1, 4)] * (n - 1))

    def broadcast_first(dt):
        return operands(n, None, dt, shapes=[(6, 1)] + [(6, 4)] * (n - 1))

    def zero_dim(dt):
        return operands(n, (), dt)

    def zero_size(dt):
        return operands(n, (0, 4), dt)

    def large(dt):
        return operands(n, (4099,), dt)

    return [("transposed", transposed), ("sliced", sliced), ("strided", strided), ("broadcast", broadcast),
            ("broadcast_first", broadcast_first), ("zero_dim", zero_dim), ("zero_size", zero_size), ("large", large)]


def _first_dtype(row_id):
    dts = row_dtypes(row_id)
    return torch.float32 if torch.float32 in dts else dts[0]


@pytest.mark.parametrize("row_id", sorted(ROWS))
def test_layouts(row_id):
    fn, n = call_spec(row_id)
    dt = _first_dtype(row_id)
    for name, build in _layouts(n):
        if row_id.startswith("glu") and name in ("zero_dim", "sliced", "large", "strided"):
            continue  # glu halves the last dim: it must be even
        if "backward" in row_id and name.startswith("broadcast"):
            continue  # a gradient has the shape of the output: backward ops do not broadcast
        cpu = build(dt)
        check(fn, cpu)


@pytest.mark.parametrize("row_id", sorted(r for r in ROWS if ROWS[r][1] in SIMPLE_KINDS and SIMPLE_KINDS[ROWS[r][1]] == 2
                                        and not ROWS[r][1].startswith("bw")))
def test_python_scalar_operand(row_id):
    fn, _ = call_spec(row_id)
    dt = _first_dtype(row_id)
    x = make((6, 4), dt, 0)
    for s in (3, 2.5, True):
        check(lambda a: fn(a, s), [x])
        check(lambda a: fn(a, torch.tensor(s)), [x], [x.to("ocl")])  # 0-dim CPU tensor operand


def _inplace_op(row):
    name = base_name(row) + "_"
    return getattr(aten, name, None) if hasattr(torch.Tensor, name) else None


@pytest.mark.parametrize("row_id", sorted(r for r in ROWS if ROWS[r][1] in SIMPLE_KINDS and not ROWS[r][1].startswith("bw")))
def test_inplace_and_out(row_id):
    row = ROWS[row_id]
    fn, n = call_spec(row_id)
    dt = _first_dtype(row_id)
    extra = PARAMS.get(row_id, ())
    op = getattr(aten, base_name(row))
    inplace = _inplace_op(row)
    if inplace is not None:
        # in-place: the .out kernel with out aliasing self, on a non-contiguous self
        def run_inplace(*t):
            self = t[0].clone().t()
            return inplace(self, *[u.t() for u in t[1:]], *extra)
        check(run_inplace, operands(n, (4, 6), dt))
    # out= a transposed, preallocated tensor of the result dtype
    cpu = operands(n, (6, 4), dt)
    try:
        expected = op(*cpu, *extra)
    except Exception:
        return
    out_cpu = torch.empty(4, 6, dtype=expected.dtype).t()
    out_ocl = torch.empty(4, 6, dtype=expected.dtype, device="ocl").t()
    op(*cpu, *extra, out=out_cpu)
    res = op(*[t.to("ocl") for t in cpu], *extra, out=out_ocl)
    assert res.data_ptr() == out_ocl.data_ptr() and out_ocl.stride() == (1, 6)
    torch.testing.assert_close(out_ocl.cpu(), out_cpu, equal_nan=True, atol=1e-2 if dt != torch.float32 else None,
                               rtol=1e-2 if dt != torch.float32 else None)


def test_out_resized_and_aliasing_other_input():
    x, y = make((5, 3), torch.float32, 0), make((5, 3), torch.float32, 1)
    dx, dy = x.to("ocl"), y.to("ocl")
    out = torch.empty(0, device="ocl")
    torch.add(dx, dy, out=out)
    torch.testing.assert_close(out.cpu(), x + y)
    torch.mul(dx, dy, out=dy)  # out aliases the second input
    torch.testing.assert_close(dy.cpu(), x * y)


def test_integer_semantics_match_cpu():
    a = torch.tensor([-7, -6, -1, 0, 1, 5, 7, 127, -128], dtype=torch.int8)
    b = torch.tensor([2, -4, 3, 5, -3, 2, -2, 3, -1], dtype=torch.int8)
    for fn in (lambda x, y: torch.div(x, y, rounding_mode="floor"), lambda x, y: torch.div(x, y, rounding_mode="trunc"),
               torch.remainder, torch.fmod, torch.floor_divide, lambda x, y: x << y, lambda x, y: x >> y,
               lambda x, y: torch.pow(x, y.abs())):
        check(fn, [a, b])
    big = torch.tensor([1, -1, 3, -8], dtype=torch.int64)
    check(lambda x, y: torch.bitwise_left_shift(x, y), [big, torch.tensor([70, 63, -1, 65])])
    check(lambda x, y: torch.bitwise_right_shift(x, y), [big, torch.tensor([70, 63, -1, 65])])
    check(torch.pow, [big, torch.tensor([-2, -3, 0, 2])])


def test_integer_division_by_zero_gives_zero():
    # Documented difference: the CPU raises ZeroDivisionError, ocl cannot trap on the device.
    x = torch.tensor([5, -3, 0], device="ocl")
    z = torch.zeros(3, dtype=torch.int64, device="ocl")
    assert torch.div(x, z, rounding_mode="trunc").cpu().tolist() == [0, 0, 0]
    assert torch.remainder(x, z).cpu().tolist() == [0, 0, 0]


def test_float_special_values():
    v = torch.tensor([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("nan"), 1e-30, 3.5, -2.5])
    w = v.flip(0)
    for fn in (torch.sign, torch.isnan, torch.isinf, torch.isfinite, torch.isposinf, torch.isneginf, torch.signbit,
               torch.round, torch.nan_to_num, torch.frac, torch.relu, torch.sigmoid, torch.erfinv, torch.digamma,
               torch.lgamma, lambda x: torch.clamp(x, -1, 1)):
        for dt in (torch.float32, torch.bfloat16, torch.float16):
            check(fn, [v.to(dt)])
    # polygamma at a pole (negative integer): ocl gives inf (sinpi is exact), the CPU a huge finite value
    check(lambda x: torch.polygamma(1, x), [v[v != -1]])
    for fn in (torch.maximum, torch.fmax, torch.minimum, torch.fmin, torch.logaddexp, torch.xlogy, torch.nextafter,
               torch.remainder, torch.fmod, lambda x, y: torch.div(x, y, rounding_mode="floor"), torch.pow,
               torch.atan2, torch.copysign, torch.hypot, torch.heaviside):
        for dt in (torch.float32, torch.bfloat16, torch.float16):
            check(fn, [v.to(dt), w.to(dt)])


def test_mixed_dtypes_promote_like_cpu():
    f = make((4, 3), torch.float16, 0)
    i = make((4, 3), torch.int32, 1, nonzero=True)
    b = make((4, 3), torch.bool, 2, nonzero=True)
    for fn in (torch.add, torch.mul, torch.div, torch.eq, torch.maximum, torch.atan2, torch.remainder):
        check(fn, [f, i])
        check(fn, [i, b])
    check(lambda x: torch.add(x, 2.5), [i])  # int tensor + float scalar -> default float
    check(lambda x: torch.exp(x), [i])


def test_float64_unsupported_error_is_not_testable_here():
    # PoCL has cl_khr_fp64; on a device without it, float64 kernels raise a clear error
    # naming the op and device (dlprim::elementwise). Nothing to check on this device.
    if torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device supports float64")
    with pytest.raises(RuntimeError, match="float64"):
        torch.ones(3, dtype=torch.float64, device="ocl").exp()


def test_silu_backward_is_one_kernel():
    """Upstream's functional silu_backward is CompositeImplicitAutograd (six kernels); ours is one."""
    import pytorch_ocl.profiler

    x = torch.randn(100, device="ocl:0", requires_grad=True)
    g = torch.randn(100, device="ocl:0")
    y = torch.nn.functional.silu(x)
    with pytorch_ocl.profiler.profile() as prof:
        (gx,) = torch.autograd.grad(y, x, g)
        torch.ocl.synchronize()
    assert [r["kernel"] for r in prof.summary()] == ["silu_backward"]
    torch.testing.assert_close(gx.cpu(), aten.silu_backward(g.cpu(), x.detach().cpu()))


def test_frexp_special_values_and_out():
    v = torch.tensor([0.0, -0.0, 1.0, -1.0, 0.75, 1024.0, float("inf"), float("-inf"), float("nan"), 1e-30, 3.5,
                      -2.5, 6e4])
    for dt in (torch.float32, torch.float64, torch.bfloat16, torch.float16):
        check(torch.frexp, [v.to(dt)])
    # out= non-contiguous outputs of the right dtypes; wrong dtypes raise as on the CPU
    x = make((4, 6), torch.float32, 0)
    m, e = torch.empty(6, 4, device="ocl").t(), torch.empty(6, 4, dtype=torch.int32, device="ocl").t()
    torch.frexp(x.to("ocl"), out=(m, e))
    em, ee = torch.frexp(x)
    torch.testing.assert_close(m.cpu(), em)
    torch.testing.assert_close(e.cpu(), ee)
    check(lambda t: torch.frexp(t, out=(torch.empty_like(t), torch.empty_like(t, dtype=torch.int64))), [x])
    check(lambda t: torch.frexp(t, out=(torch.empty_like(t, dtype=torch.float64), torch.empty_like(t, dtype=torch.int32))), [x])
    check(torch.frexp, [torch.arange(4)])  # integer input: the CPU's RuntimeError


def test_heaviside_dtype_rules():
    x = make((4, 6), torch.float32, 0)
    check(torch.heaviside, [x, x.double()])  # different dtypes raise, as on the CPU
    check(lambda a, b: torch.heaviside(a, b, out=torch.empty_like(a, dtype=torch.float64)), [x, x])
    z = torch.tensor([0.0, -0.0, 2.0, -2.0, float("nan"), float("inf")])
    check(torch.heaviside, [z, torch.full_like(z, 0.5)])
