"""Reductions of the OpenCL kernel (kernel.py): per-lane accumulation in the r0 loop, then a
tree over the RBLOCK lanes of a row in __local memory
(LRED(lane): where a lane of this work-item's row keeps its partial, see kernel.py).

Each reduction type is (accumulator dtypes, identity values, combine statements): combine
updates accumulators `a*` from `b*`, used both for an element (in the loop) and for another
lane's partial result (in the tree), so both stages agree by construction."""
import torch
from torch._inductor.virtualized import V

from .overrides import ctype, type_limit


def _better(kind, float_vals):
    """C condition: (b0, b1) replaces (a0, a1) for argmax/argmin (NaN wins, then lower index)."""
    cmp = ">" if kind == "argmax" else "<"
    cond = f"(b0 {cmp} a0) || (b0 == a0 && b1 < a1)"
    if float_vals:
        cond += " || (isnan(b0) && (!isnan(a0) || b1 < a1))"
    return cond


def _spec(reduction_type, dtype, src_dtype):
    """(accumulator dtypes, identity C values, combine C statements, element -> b values fn)."""
    if reduction_type in ("sum", "prod", "xor_sum", "any"):
        acc = torch.bool if reduction_type == "any" else dtype
        ident = {"sum": "0", "prod": "1", "xor_sum": "0", "any": "false"}[reduction_type]
        op = {"sum": "a0 + b0", "prod": "a0 * b0", "xor_sum": "a0 ^ b0", "any": "a0 || b0"}[reduction_type]
        return [acc], [ident], f"a0 = {op};", lambda v: [v]
    if reduction_type in ("max", "min"):
        f = "F" if src_dtype.is_floating_point else "I"
        op = f"OCL_{reduction_type.upper()}{f}(a0, b0)"
        return [src_dtype], [type_limit(src_dtype, reduction_type == "max")], f"a0 = {op};", lambda v: [v]
    if reduction_type in ("argmax", "argmin"):
        cond = _better(reduction_type, src_dtype.is_floating_point)
        ident = [type_limit(src_dtype, reduction_type == "argmax"), "9223372036854775807L"]
        return ([src_dtype, torch.int64], ident, f"if ({cond}) {{ a0 = b0; a1 = b1; }}",
                lambda v: [v, "r0_index"])
    if reduction_type in ("welford_reduce", "welford_combine"):
        comb = ("{ float w = a2 + b2; float d = b0 - a0; float f = w == 0 ? 0.0f : b2 / w;"
                " a0 = a0 + d * f; a1 = a1 + b1 + d * d * a2 * f; a2 = w; }")
        elem = (lambda v: [v, "0.0f", "1.0f"]) if reduction_type == "welford_reduce" else (lambda v: list(v))
        return [torch.float32] * 3, ["0.0f"] * 3, comb, elem
    raise NotImplementedError(f"torch.compile on ocl: reduction {reduction_type}")


def _named(stmt, a, b):
    """The combine statement with a*/b* replaced by the given C lvalues/values."""
    decl = [f"{t} a{i} = {x};" for i, (t, x) in enumerate(a)] + [f"{t} b{i} = {x};" for i, (t, x) in enumerate(b)]
    return "{ " + " ".join(decl) + " " + stmt + " " + " ".join(f"{x} = a{i};" for i, (_, x) in enumerate(a)) + " }"


def codegen_reduction(kernel, dtype, src_dtype, reduction_type, value):
    acc_dtypes, idents, combine, element = _spec(reduction_type, dtype, src_dtype)
    types = [ctype(d) for d in acc_dtypes]
    accs = [kernel.cse.newvar(dtype=d) for d in acc_dtypes]
    for acc, ident in zip(accs, idents):
        kernel.body.writeline(f"{acc} = {ident};")  # before the loop that codegen_body writes
    elem = element(value)
    kernel.compute.writeline(_named(combine, list(zip(types, map(str, accs))), list(zip(types, map(str, elem)))))
    # The tree over the RBLOCK lanes of a row (no step when the launch has RBLOCK == 1).
    out = kernel.post_loop
    bufs = [kernel.new_local(t) for t in types]
    for buf, acc in zip(bufs, accs):
        out.writeline(f"{buf}[LRED(rlane)] = {acc};")
    out.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
    out.writeline("for (int s = RBLOCK / 2; s > 0; s >>= 1) {")
    with out.indent():
        a = [(t, f"{buf}[LRED(rlane)]") for t, buf in zip(types, bufs)]
        b = [(t, f"{buf}[LRED(rlane + s)]") for t, buf in zip(types, bufs)]
        out.writeline(f"if (rlane < s) {_named(combine, a, b)}")
        out.writeline("barrier(CLK_LOCAL_MEM_FENCE);")
    out.writeline("}")
    for buf, acc in zip(bufs, accs):
        out.writeline(f"{acc} = {buf}[LRED(0)];")
    if reduction_type in ("argmax", "argmin"):
        return accs[1]
    if reduction_type.startswith("welford"):
        return tuple(accs)
    return accs[0]
