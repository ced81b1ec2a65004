"""The pointwise table's special functions inside compiled kernels: digamma, polygamma, i0/i0e/i1/i1e, igamma(c),
zeta, ndtri, the Bessel and Airy functions, the orthogonal polynomials.

OpenCL C has no builtins for them. A kernel that uses one calls the eager table's own numerics
(dlprim/kernels/special_*.cl, through `_C._pointwise_row`): the row's body becomes a function `ocl_pw_<row>` in the
kernel's source, after the files it needs and the type macros the table's generator defines. Eager and compiled
code so share one implementation, and a compiled graph agrees with eager mode."""
import functools

import torch
from torch._inductor.codegen.common import pointwise_overrides_data
from torch._inductor.virtualized import V

# Inductor's names for ops whose row is another's (torch.special.gammainc is igamma)
_ALIASES = {"gammainc": "igamma", "gammaincc": "igammac"}
# Inductor's ops that are not table rows
_NOT_ROWS = {"fma", "mul_rn"}


def op_names():
    """Inductor's pointwise ops that may run on a table row (those without one raise when used)."""
    return [name for name in pointwise_overrides_data if name not in _NOT_ROWS]


@functools.lru_cache(maxsize=None)
def _row(op):
    from .. import _C

    data = pointwise_overrides_data.get(_ALIASES.get(op, op))
    row = _C._pointwise_row(data.name) if data is not None else None
    if row is None:
        raise NotImplementedError(f"torch.compile on ocl: {op} has no OpenCL implementation")
    files, body, n_inputs, n_params = row
    return data.name, tuple(files), body, n_inputs, n_params


def embedded_sources():
    """The kernel files special functions can put into generated kernels (part of the FX graph cache key)."""
    from .. import _C

    files = {"common"}
    for op in op_names():
        try:
            files.update(_row(op)[1])
        except NotImplementedError:
            pass
    return [_C._kernel_source(f) for f in sorted(files)]


def call(op, *args):
    """The OpenCL expression of Inductor's `ops.<op>(*args)`, recording on the kernel being generated the row it
    needs (prelude() writes its function)."""
    row_id, files, body, n_inputs, n_params = _row(op)
    if op == "polygamma":  # Inductor: polygamma(n, x); the row: the input x, then the order n as a parameter
        args = (args[1], args[0])
    if len(args) != n_inputs + n_params:
        raise NotImplementedError(f"torch.compile on ocl: {op} with {len(args)} operands")
    kernel = V.kernel
    if not hasattr(kernel, "ocl_special_rows"):
        kernel.ocl_special_rows, kernel.ocl_special_double = {}, False
    kernel.ocl_special_rows[row_id] = (files, body, n_inputs, n_params)
    kernel.ocl_special_double |= any(getattr(a, "dtype", None) == torch.float64 for a in args)
    return f"ocl_pw_{row_id}({', '.join(f'(dl_t)({a})' for a in args)})"


def prelude(kernel):
    """The source of the special functions `kernel` calls ("" when none): in double where any of its calls
    takes a double, else in float (16-bit values are computed in float, as everywhere in compiled kernels)."""
    rows = getattr(kernel, "ocl_special_rows", None)
    if not rows:
        return ""
    from .. import _C

    double = kernel.ocl_special_double
    # the table generator's type macros (elementwise_text.cpp type_macros), for a float or double compute type
    parts = [f"typedef {'double' if double else 'float'} dl_t;\n#define DL_IS_FLOAT 1\n"
             f"#define DL_IS_DOUBLE {int(double)}\n#define DL_IS_BOOL 0\n#define DL_IS_SIGNED 1\n"
             f"#define DL_BITS {64 if double else 32}\n#define DL_Y0_F16 0\n#define DL_Y0_BF16 0\n"]
    seen = set()
    for files, _, _, _ in rows.values():
        for f in ("common",) + files:
            if f not in seen:
                seen.add(f)
                parts.append(_C._kernel_source(f))
    for row_id, (_, body, n_inputs, n_params) in sorted(rows.items()):
        params = [f"dl_t x{k}" for k in range(n_inputs)] + [f"dl_t w{k}" for k in range(n_params)]
        parts.append(f"static inline dl_t ocl_pw_{row_id}({', '.join(params)}) {{\n  dl_t y0;\n  {{ {body} }}\n"
                     f"  return y0;\n}}\n")
    return "".join(parts)
