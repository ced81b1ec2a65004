"""The functional and in-place forms of the pointwise rows (add.Tensor and add_.Tensor next to
add.out): registered straight to the backend, they skip torch's generated wrappers, which used to
allocate the result (with the promoted dtype) before calling .out. Driven by the schemas of every
registered overload: each runs on ocl and on the CPU with float, integer and bool tensors and
Python scalars of another kind, and must agree in value and dtype (in-place: in the tensor it was
given) -- or raise on both.
"""
import pytest
import torch

import pytorch_ocl

ROWS = pytorch_ocl._C._pointwise_ops()
OUT_SUFFIXES = ("out", "grad_input", "OutTensor", "output")
FORMS = sorted({ov for row in ROWS for ov in row[4] if not ov.split(".")[-1].endswith(OUT_SUFFIXES)})

# (tensor dtype, Python scalar): same kind, integer tensor with a float scalar, bool with an int.
CASES = [(torch.float32, 0.75), (torch.int64, 2), (torch.int64, 2.5), (torch.bool, 1)]
# Overloads whose tensor arguments are not free: the saved buffer of the forward pass.
NOT_FREE = {"log_sigmoid_backward"}
# Outputs compared, where not all: log_sigmoid_forward's buffer is empty on ocl (as on CUDA).
COMPARED_OUTPUTS = {"log_sigmoid_forward": 1}


def _op(overload):
    name, _, ov = overload.partition(".")
    return getattr(getattr(torch.ops.aten, name), ov or "default")


def _tensor(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g) * 4 - 2).to(dtype)
    # No zeros: integer division by zero raises on the CPU and gives 0 on ocl (as on CUDA).
    magnitude = torch.randint(1, 4, shape, generator=g)
    return torch.where(torch.rand(shape, generator=g) > 0.5, magnitude, -magnitude).to(dtype)


def _arguments(op, dtype, scalar):
    """CPU arguments for every Tensor / Scalar parameter (optional ones too); other parameters keep
    their defaults. None when a required parameter is of another type."""
    args = []
    tensors = 0
    for a in op._schema.arguments:
        kind = str(a.type).rstrip("?")
        if kind == "Tensor":
            # The first tensor has the full shape (in-place forms write it), the others broadcast.
            args.append(_tensor((4, 5) if tensors == 0 else (5,), dtype, seed=tensors))
            tensors += 1
        elif kind in ("Scalar", "number"):
            args.append(scalar)
        elif a.has_default_value():
            break  # the rest keep their defaults (positional order)
        elif kind == "int":
            args.append(1)
        elif kind == "float":
            args.append(0.5)
        else:
            return None
    return args


def _run(op, args):
    try:
        return op(*args), None
    except Exception as e:  # noqa: BLE001 -- any error must be raised on both devices
        return None, e


def _flat(value):
    return list(value) if isinstance(value, (tuple, list)) else [value]


@pytest.mark.parametrize("overload", FORMS)
def test_forms_match_cpu(overload):
    if overload in NOT_FREE:
        pytest.skip(f"{overload}: its tensor arguments are not independent (tested in test_pointwise_table.py)")
    op = _op(overload)
    inplace = op._schema.name.endswith("_") and op._schema.arguments[0].alias_info is not None
    for dtype, scalar in CASES:
        cpu_args = _arguments(op, dtype, scalar)
        if cpu_args is None:
            pytest.skip(f"{overload}: a required argument is neither a tensor nor a scalar")
        ocl_args = [a.to("ocl") if isinstance(a, torch.Tensor) else a for a in cpu_args]
        expected, cpu_error = _run(op, cpu_args)
        got, ocl_error = _run(op, ocl_args)
        case = f"{overload} on {dtype} with scalar {scalar!r}"
        if cpu_error is not None or ocl_error is not None:
            assert cpu_error is not None and ocl_error is not None, (
                f"{case}: cpu raised {cpu_error!r}, ocl raised {ocl_error!r}")
            assert "PYTORCH_OCL_STRICT" not in str(ocl_error), f"{case}: ocl has no kernel: {ocl_error}"
            continue
        if inplace:
            assert got is ocl_args[0], f"{case}: the in-place form did not return self"
        got, expected = _flat(got), _flat(expected)
        assert len(got) == len(expected), case
        n = COMPARED_OUTPUTS.get(overload, len(got))
        for g, e in zip(got[:n], expected[:n]):
            assert g.device.type == "ocl", case
            assert g.dtype == e.dtype, f"{case}: dtype {g.dtype}, cpu {e.dtype}"
            torch.testing.assert_close(g.cpu(), e, equal_nan=True, msg=lambda m: f"{case}: {m}")


def test_structured_ops_have_their_forms():
    """The forms exist for the rows whose torch op is structured (the registration helper finds
    them through the dispatcher; a rename upstream would silently drop them)."""
    for expected in ("add.Tensor", "add_.Tensor", "mul_.Tensor", "exp", "exp_", "eq_.Scalar", "silu_", "clamp",
                     "clamp_", "addcmul_", "lerp_.Scalar", "tanh_backward"):
        assert expected in FORMS, expected
