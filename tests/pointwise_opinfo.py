"""OpInfo-driven comparison of the pointwise families (ocl vs CPU), shared by
tests/test_pointwise_opinfo.py and benchmarks/opinfo_coverage.py.

For each OpInfo of the families below and each dtype it declares (of DTYPES), the first
MAX_SAMPLES sample inputs run on the CPU and on ocl; outputs must match (torch's default
tolerance for the dtype), and in float32 the gradients of every differentiable input too,
for the samples as given and for a non-contiguous copy of them. Strict mode is on, so a CPU
fallback is a failure naming the missing op.
"""
import os
import traceback

import torch

import pytorch_ocl  # noqa: F401  (must come before torch.testing._internal)
from torch.testing._internal.common_methods_invocations import op_db  # noqa: E402

# The op families, by OpInfo name (variants of one name are all taken).
FAMILIES = {
    "unary": """abs neg sign sgn exp exp2 expm1 log log2 log10 log1p sqrt rsqrt reciprocal sin cos tan asin acos
        atan sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv lgamma digamma polygamma floor ceil
        round trunc frac isnan isinf isfinite isposinf isneginf nan_to_num signbit bitwise_not logical_not square
        positive frexp""",
    "binary": """add sub rsub mul div true_divide floor_divide remainder fmod pow float_power atan2 hypot copysign
        maximum minimum fmax fmin logaddexp logaddexp2 xlogy eq ne lt le gt ge logical_and logical_or logical_xor
        bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift isclose __radd__ __rsub__ __rmul__
        __rdiv__ __rpow__ heaviside""",
    "ternary": "where lerp addcmul addcdiv clamp clamp_min clamp_max masked_fill nextafter",
    "special": """i0 special.i0e special.i1 special.i1e special.bessel_j0 special.bessel_j1 special.bessel_y0
        special.bessel_y1 special.modified_bessel_i0 special.modified_bessel_i1 special.modified_bessel_k0
        special.modified_bessel_k1 special.scaled_modified_bessel_k0 special.scaled_modified_bessel_k1
        special.spherical_bessel_j0 special.airy_ai special.erfcx special.ndtri special.log_ndtr special.zeta
        igamma igammac mvlgamma special.chebyshev_polynomial_t
        special.chebyshev_polynomial_u special.chebyshev_polynomial_v special.chebyshev_polynomial_w
        special.shifted_chebyshev_polynomial_t special.shifted_chebyshev_polynomial_u
        special.shifted_chebyshev_polynomial_v special.shifted_chebyshev_polynomial_w special.hermite_polynomial_h
        special.hermite_polynomial_he special.laguerre_polynomial_l special.legendre_polynomial_p""",
    "activation": """nn.functional.relu nn.functional.relu6 nn.functional.leaky_relu nn.functional.elu
        nn.functional.selu nn.functional.celu nn.functional.gelu nn.functional.silu nn.functional.mish
        nn.functional.hardswish nn.functional.hardsigmoid nn.functional.hardtanh nn.functional.softplus
        nn.functional.softshrink nn.functional.hardshrink nn.functional.threshold nn.functional.logsigmoid
        nn.functional.prelu nn.functional.glu""",
}
OP_NAMES = {name: fam for fam, names in FAMILIES.items() for name in names.split()}

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]
# The special family: each (op, dtype) is a kernel program of its own to build, about a second on
# PoCL with a cold cache, so by default float32 for every op (forward, gradients, non-contiguous),
# float64 for one op of each kind of numerics (special_*.cl: table ranges, recurrences, series),
# and the promoting input dtypes once each (their loads are the elementwise generator's, shared by
# every row). PYTORCH_OCL_OPINFO_ALL_DTYPES=1 runs every declared dtype of every op, float64 too.
SPECIAL_SUBSET = {
    torch.float64: """special.bessel_y1 special.modified_bessel_k0 special.scaled_modified_bessel_k1 special.airy_ai
        special.i0e special.erfcx special.ndtri special.log_ndtr igamma igammac special.zeta
        special.chebyshev_polynomial_w special.hermite_polynomial_h special.legendre_polynomial_p""".split(),
    torch.int64: ["special.bessel_j0"],
    torch.bool: ["special.chebyshev_polynomial_t"],
    torch.float16: ["i0"],
    torch.bfloat16: ["special.i1e"],
}
ALL_DTYPES = os.environ.get("PYTORCH_OCL_OPINFO_ALL_DTYPES") == "1"


def _family_dtypes(op):
    if OP_NAMES[op.name] != "special":
        return DTYPES
    if ALL_DTYPES:
        return DTYPES + [torch.float64]
    return [torch.float32] + [dt for dt, names in SPECIAL_SUBSET.items() if op.name in names]


def _mp_unary(fn):
    """A float64 reference for a unary op from an mpmath function of one argument (NaN where it
    has no real value)."""
    def ref(x):
        import mpmath

        def one(v):
            try:
                r = fn(mpmath, mpmath.mpf(v))
                return float(r.real) if isinstance(r, mpmath.mpc) else float(r)
            except Exception:  # noqa: BLE001 - mpmath has no real value here (poles, infinities)
                return float("nan")
        return torch.tensor([one(v) for v in x.detach().flatten().tolist()], dtype=torch.float64).reshape(x.shape)
    return ref


# ATen's CPU kernels of these lose about 1e-6 in double (more than double's default tolerance) at
# some arguments in the samples' range: agreeing with the exact value (mpmath, 50 digits) is also
# a correct answer for them, in float64.
EXACT_REFERENCE = {
    "special.bessel_j0": _mp_unary(lambda m, v: m.besselj(0, v)),
    "special.bessel_j1": _mp_unary(lambda m, v: m.besselj(1, v)),
    "special.bessel_y0": _mp_unary(lambda m, v: m.bessely(0, v) if v > 0 else (-m.inf if v == 0 else m.nan)),
    "special.bessel_y1": _mp_unary(lambda m, v: m.bessely(1, v) if v > 0 else (-m.inf if v == 0 else m.nan)),
    "special.airy_ai": _mp_unary(lambda m, v: m.airyai(v)),
}
MAX_SAMPLES = int(os.environ.get("PYTORCH_OCL_OPINFO_SAMPLES", "8"))
# Fewer samples for the non-float32 dtypes: forward only, the kernels are the same code.
MAX_SAMPLES_OTHER = max(1, MAX_SAMPLES // 2)


def selected_opinfos():
    ops = [op for op in op_db if op.name in OP_NAMES]
    return [op for op in ops if not (op.variant_test_name and "complex" in op.variant_test_name)]


def opinfo_id(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def cases():
    """(opinfo, dtype) pairs to run: float32 always where declared, other DTYPES where declared."""
    out = []
    for op in selected_opinfos():
        declared = op.supported_dtypes("cpu")
        for dt in _family_dtypes(op):
            if dt in declared:
                out.append((op, dt))
    return out


def _to_ocl(x):
    """Copies a CPU tensor to ocl with the same strides (non-contiguous samples stay so)."""
    if isinstance(x, torch.Tensor):
        t = torch.empty_strided(x.shape, x.stride(), dtype=x.dtype, device="ocl")
        with torch.no_grad():
            t.copy_(x.detach())
        return t.requires_grad_(x.requires_grad)
    return x


def _map(fn, value):
    if isinstance(value, (list, tuple)):
        return type(value)(_map(fn, v) for v in value)
    if isinstance(value, dict):
        return {k: _map(fn, v) for k, v in value.items()}
    return fn(value)


def _flatten(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten(v)]
    return []


def _grad_inputs(sample):
    return [t for t in _flatten([sample.input, list(sample.args), list(sample.kwargs.values())])
            if t.requires_grad and t.is_floating_point()]


def _compare(actual, expected, what, reference=None, **tol):
    """assert_close per tensor; `reference` (same structure) is a second acceptable answer."""
    a, e = _flatten(actual), _flatten(expected)
    r = _flatten(reference) if reference is not None else [None] * len(e)
    assert len(a) == len(e), f"{what}: {len(a)} tensors vs {len(e)} on the CPU"
    for x, y, z in zip(a, e, r):
        assert x.device.type == "ocl", f"{what}: result on {x.device}"
        x = x.cpu()
        try:
            torch.testing.assert_close(x, y, equal_nan=True, msg=lambda m: f"{what}: {m}", **tol)
        except AssertionError:
            if z is None:
                raise
            torch.testing.assert_close(x, z.to(x.dtype), equal_nan=True, msg=lambda m: f"{what}: {m}", **tol)


def _upcast(x):
    if isinstance(x, torch.Tensor) and x.dtype in (torch.float16, torch.bfloat16):
        return x.detach().float()
    return x


def run_sample(op, sample, with_grad):
    """Runs one sample on the CPU and on ocl and compares outputs (and gradients)."""
    expected = op(sample.input, *sample.args, **sample.kwargs)
    dev = sample.transform(_to_ocl)
    actual = op(dev.input, *dev.args, **dev.kwargs)
    reference = None
    if sample.input.dtype in (torch.float16, torch.bfloat16) if isinstance(sample.input, torch.Tensor) else False:
        # The CPU rounds some 16-bit intermediates; ocl computes in float32 and rounds once
        # (as CUDA does): the float32 result rounded to the dtype is also a correct answer.
        up = sample.transform(_upcast)
        reference = op(up.input, *up.args, **up.kwargs)
    elif op.name in EXACT_REFERENCE and isinstance(sample.input, torch.Tensor) and sample.input.dtype == torch.float64:
        reference = EXACT_REFERENCE[op.name](sample.input)
    _compare(actual, expected, "forward", reference)
    if not with_grad:
        return
    cpu_inputs, ocl_inputs = _grad_inputs(sample), _grad_inputs(dev)
    if not cpu_inputs:
        return
    cpu_out = [t for t in _flatten(sample.output_process_fn_grad(expected)) if t.requires_grad]
    ocl_out = [t for t in _flatten(dev.output_process_fn_grad(actual)) if t.requires_grad]
    if not cpu_out:
        return
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(t.shape, dtype=t.dtype, generator=g) for t in cpu_out]
    cpu_grads = torch.autograd.grad(cpu_out, cpu_inputs, grads, allow_unused=True)
    ocl_grads = torch.autograd.grad(ocl_out, ocl_inputs, [x.to("ocl") for x in grads], allow_unused=True)
    for k, (a, e) in enumerate(zip(ocl_grads, cpu_grads)):
        if e is None:
            continue
        assert a is not None, f"gradient {k}: None on ocl"
        # Gradients of broadcast inputs are sums whose order differs from the CPU's.
        _compare(a, e, f"gradient {k}", rtol=1e-5, atol=1e-5)


def run_case(op, dtype):
    """Returns [(sample label, error or None)] for the samples of (op, dtype)."""
    with_grad = dtype == torch.float32 and op.supports_autograd
    limit = MAX_SAMPLES if dtype == torch.float32 else MAX_SAMPLES_OTHER
    results = []
    try:
        samples = list(op.sample_inputs("cpu", dtype, requires_grad=with_grad))[:limit]
    except Exception as e:  # sample generation itself failed: one failure for the case
        return [("samples", f"sample generation: {e}")]
    variants = [("", s) for s in samples]
    if dtype == torch.float32:
        variants += [("noncontig ", s.noncontiguous()) for s in samples]
    for k, (tag, sample) in enumerate(variants):
        label = f"{tag}sample {k % max(1, len(samples))}"
        try:
            run_sample(op, sample, with_grad)
            results.append((label, None))
        except Exception as e:  # any failure of this sample (missing op, mismatch, error)
            msg = f"{type(e).__name__}: {e}"
            if os.environ.get("PYTORCH_OCL_OPINFO_TRACE"):
                msg += "\n" + traceback.format_exc()
            results.append((label, msg.strip().splitlines()[0][:300]))
    return results
