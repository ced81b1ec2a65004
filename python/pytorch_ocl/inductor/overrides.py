"""Inductor's pointwise ops (`ops.exp`, `ops.where`, ...) written as OpenCL C expressions.

Values are computed in float for float16/bfloat16 (as our eager kernels do); they are
16-bit only in memory (see kernel.py load/store) and where a to_dtype asks for rounding.
Every CSE variable is declared with its dtype's OpenCL type at the top of the kernel, so an
assignment converts like a C++ `static_cast`."""
import functools
import math

import torch
from torch._inductor.codegen.common import IndentedBuffer, OpOverrides
from torch._inductor.utils import get_bounds_index_expr
from torch._inductor.virtualized import V, ops

from . import special

# Type of a value in registers (16-bit floats computed in float).
COMPUTE_TYPE = {
    torch.bool: "bool", torch.int8: "char", torch.uint8: "uchar", torch.int16: "short",
    torch.uint16: "ushort", torch.int32: "int", torch.uint32: "uint", torch.int64: "long",
    torch.uint64: "ulong", torch.float16: "float", torch.bfloat16: "float", torch.float32: "float",
    torch.float64: "double",
}
# Type of the element in a __global buffer.
STORAGE_TYPE = {**COMPUTE_TYPE, torch.bool: "uchar", torch.float16: "half", torch.bfloat16: "ushort"}
_INT_LIMITS = {torch.int8: 8, torch.int16: 16, torch.int32: 32, torch.int64: 64}


def ctype(dtype):
    try:
        return COMPUTE_TYPE[dtype]
    except KeyError:
        raise NotImplementedError(f"torch.compile on ocl: dtype {dtype} is not supported by the OpenCL codegen")


def dtype_of(x):
    return getattr(x, "dtype", None)


def is_float(x):
    d = dtype_of(x)
    return d is not None and d.is_floating_point


def float_type(*xs):
    return "double" if any(dtype_of(x) == torch.float64 for x in xs) else "float"


def constant_str(val, dtype):
    if dtype == torch.bool:
        return "true" if val else "false"
    if dtype.is_floating_point or isinstance(val, float):
        val = float(val)
        suffix = "" if dtype == torch.float64 else "f"
        if math.isnan(val):
            return "NAN"
        if math.isinf(val):
            return "INFINITY" if val > 0 else "(-INFINITY)"
        if not dtype.is_floating_point:  # an integer dtype given a float: keep C integer
            return str(int(val))
        return f"{val!r}{suffix}"
    val = int(val)
    if dtype == torch.int64 or not -(2**31) <= val < 2**31:
        if val == -(2**63):
            return "(-9223372036854775807L - 1)"
        return f"{val}L"
    return str(val) if dtype in (torch.int32, torch.int16, torch.int8) else f"(({ctype(dtype)}){val})"


def type_limit(dtype, lowest: bool):
    """-inf/+inf for floats, the type's min/max for integers (reduction identities)."""
    if dtype.is_floating_point:
        return "(-INFINITY)" if lowest else "INFINITY"
    if dtype == torch.bool:
        return "false" if lowest else "true"
    if dtype in _INT_LIMITS:
        info = torch.iinfo(dtype)
        return constant_str(info.min if lowest else info.max, dtype)
    info = torch.iinfo(dtype)
    return constant_str(info.min if lowest else info.max, torch.int64)


# Ops whose formula depends on whether an operand is floating point: name -> (float formula, integer
# formula), operands as {0}, {1}.
_FLOAT_OR_INT = {
    "maximum": ("OCL_MAXF({0}, {1})", "OCL_MAXI({0}, {1})"),
    "minimum": ("OCL_MINF({0}, {1})", "OCL_MINI({0}, {1})"),
    "floordiv": ("floor(({0}) / ({1}))", "OCL_FLOORDIV({0}, {1})"),
    "truncdiv": ("trunc(({0}) / ({1}))", "(({0}) / ({1}))"),
    "mod": ("fmod({0}, {1})", "(({0}) % ({1}))"),
    "fmod": ("fmod({0}, {1})", "(({0}) % ({1}))"),
    "remainder": ("OCL_REMF({0}, {1})", "OCL_PYMOD({0}, {1})"),
    "abs": ("fabs({0})", "(({0}) < 0 ? -({0}) : ({0}))"),
    "signbit": ("(signbit({0}) != 0)", "(({0}) < 0)"),
    "isnan": ("(isnan({0}) != 0)", "false"),
    "isinf": ("(isinf({0}) != 0)", "false"),
    "round": ("rint({0})", "{0}"),
    "floor": ("floor({0})", "{0}"),
    "ceil": ("ceil({0})", "{0}"),
    "trunc": ("trunc({0})", "{0}"),
}


def _float_or_int(name, float_formula, int_formula):
    def op(*args):
        return (float_formula if any(map(is_float, args)) else int_formula).format(*args)

    op.__name__ = name
    return staticmethod(op)


def _fn(name, n=1):
    """A builtin of OpenCL C's math library applied to float values (ints are converted)."""

    def op(*args):
        ft = float_type(*args)
        conv = [a if is_float(a) else f"(({ft})({a}))" for a in args]
        return f"{name}({', '.join(map(str, conv))})"

    op.__name__ = name
    return staticmethod(op)


class OpenCLOverrides(OpOverrides):
    @staticmethod
    def constant(val, dtype):
        return constant_str(val, dtype)

    @staticmethod
    def to_dtype(x, dtype, src_dtype=None, use_compute_types=True):
        if dtype == torch.bool:
            return f"(({x}) != 0)"
        if dtype == torch.float16:
            return f"ocl_round_half((float)({x}))"
        if dtype == torch.bfloat16:
            return f"ocl_round_bf16((float)({x}))"
        return f"(({ctype(dtype)})({x}))"

    @staticmethod
    def to_dtype_bitcast(x, dtype, src_dtype):
        src, dst = STORAGE_TYPE[src_dtype], STORAGE_TYPE[dtype]
        if src_dtype == torch.bfloat16:
            x = f"ocl_float_to_bf16({x})"
        elif src_dtype == torch.float16:
            x = f"ocl_float_to_half_bits({x})"
        elif src_dtype == torch.bool:
            x = f"((uchar)({x}))"
        else:
            x = f"(({src})({x}))"
        dst_bits = {"half": "ushort"}.get(dst, dst)
        out = f"as_{dst_bits}({x})" if dst_bits != src.replace("half", "ushort") else x
        if dtype == torch.bfloat16:
            return f"ocl_bf16_to_float({out})"
        if dtype == torch.float16:
            return f"ocl_half_bits_to_float({out})"
        return out

    @staticmethod
    def index_expr(expr, dtype):
        idx = V.kernel.index_to_str(V.kernel.prepare_indexing(expr))
        # Integer index math in the index type; a float expression (1.0 / numel, ...) as a float.
        if expr.is_integer is False or not all(a.is_integer for a in expr.atoms() if a.is_number):
            var_dtype = dtype if dtype.is_floating_point else torch.float32
        else:
            var_dtype = V.kernel.get_index_dtype_as_torch_dtype()
        var = V.kernel.cse.generate(V.kernel.compute, idx, bounds=get_bounds_index_expr(expr), dtype=var_dtype)
        return ops.to_dtype(var, dtype)

    @staticmethod
    def value_expr(expr, dtype):
        return OpenCLOverrides.index_expr(expr, dtype)

    @staticmethod
    def masked(mask, body, other):
        # `if (mask) { body } else other`: loads in the body may be out of bounds when masked off.
        scoped = IndentedBuffer()
        with V.kernel.swap_buffers(scoped), scoped.indent():
            result = body()
        dtype = dtype_of(result) or torch.float32
        var = V.kernel.cse.newvar(dtype=dtype)
        other_str = constant_str(other, dtype) if isinstance(other, (bool, int, float)) else str(other)
        V.kernel.compute.writeline(f"if ({mask}) {{")
        V.kernel.compute.splice(scoped)
        V.kernel.compute.writeline(f"    {var} = {result};")
        V.kernel.compute.writeline(f"}} else {{ {var} = {other_str}; }}")
        return var

    @staticmethod
    def where(a, b, c):
        return f"(({a}) ? ({b}) : ({c}))"

    @staticmethod
    def neg(x):
        return f"(-({x}))"

    @staticmethod
    def sign(x):
        return f"(({ctype(dtype_of(x) or torch.float32)})((0 < ({x})) - (({x}) < 0)))"

    @staticmethod
    def truediv(a, b):
        if not (is_float(a) or is_float(b)):
            return f"((float)({a}) / (float)({b}))"
        return f"(({a}) / ({b}))"

    @staticmethod
    def int_truediv(a, b):
        return OpenCLOverrides.truediv(a, b)

    @staticmethod
    def pow(a, b):
        if not (is_float(a) or is_float(b)):
            return f"ocl_ipow((long)({a}), (long)({b}))"
        ft = float_type(a, b)
        return f"pow(({ft})({a}), ({ft})({b}))"

    @staticmethod
    def logical_and(a, b):
        return f"(({a}) && ({b}))"

    @staticmethod
    def logical_or(a, b):
        return f"(({a}) || ({b}))"

    @staticmethod
    def logical_xor(a, b):
        return f"((({a}) != 0) != (({b}) != 0))"

    @staticmethod
    def logical_not(a):
        return f"(!({a}))"

    @staticmethod
    def bitwise_not(x):
        return f"(!({x}))" if dtype_of(x) == torch.bool else f"(~({x}))"

    @staticmethod
    def relu(x):
        return ops.maximum(x, ops.constant(0, dtype_of(x) or torch.float32))

    @staticmethod
    def sigmoid(x):
        ft = float_type(x)
        return f"(({ft})1 / (({ft})1 + exp(-({x}))))"

    @staticmethod
    def reciprocal(x):
        return f"(({float_type(x)})1 / ({x}))"

    @staticmethod
    def fma(x, y, z):
        return f"fma({x}, {y}, {z})" if all(map(is_float, (x, y, z))) else f"(({x}) * ({y}) + ({z}))"

    @staticmethod
    def erfinv(x):
        return f"ocl_erfinv((float)({x}))"

    @staticmethod
    def rand(seed, offset):
        return f"ocl_rand((ulong)({seed}), (ulong)({offset}))"

    @staticmethod
    def randn(seed, offset):
        return f"ocl_randn((ulong)({seed}), (ulong)({offset}))"

    @staticmethod
    def randint64(seed, offset, low, high):
        return f"ocl_randint64((ulong)({seed}), (ulong)({offset}), (long)({low}), (long)({high}))"

    @staticmethod
    def device_assert_async(cond, msg):  # (Inductor versions that route it through the op handler: an expression)
        V.kernel.note_check(msg)
        return f"((!({cond})) ? (atomic_or(ocl_check, 1), 0) : 0)"


for _name in ("exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan",
              "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "lgamma"):
    setattr(OpenCLOverrides, _name, _fn(_name))
for _name in ("atan2", "hypot", "copysign", "nextafter"):
    setattr(OpenCLOverrides, _name, _fn(_name, 2))
# torch.special's functions and the like: the pointwise table's own numerics (special.py)
for _name in special.op_names():
    if _name not in OpenCLOverrides.__dict__:
        setattr(OpenCLOverrides, _name, staticmethod(functools.partial(special.call, _name)))
for _name, (_float_formula, _int_formula) in _FLOAT_OR_INT.items():
    setattr(OpenCLOverrides, _name, _float_or_int(_name, _float_formula, _int_formula))
