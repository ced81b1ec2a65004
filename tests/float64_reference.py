"""Which of ocl and the CPU is nearer the truth on a 16-bit op_db sample: both against a float64
reference (the sample's float16/bfloat16 tensors upcast, the op run in float64 on the CPU).

ocl accumulates 16-bit work in float32 where several CPU kernels round partial results to the
input dtype, so a 16-bit sample can fail the ocl-vs-CPU comparison because the CPU is the less
accurate of the two. `float64_errors` measures both errors in units of torch's default tolerance
for the dtype (an error of 1.0 is exactly the tolerance: |x - ref| = atol + rtol * |ref|), so
benchmarks/opinfo_dtype_coverage.py can count a sample whose ocl error is no more than the CPU's
as passing against float64, apart from the plain passes, and tests can assert it."""
import torch

import pytorch_ocl  # noqa: F401  (registers the device before torch.testing._internal is imported)
from opinfo_compare import map_tensors, tensor_leaves

# torch.testing.assert_close's defaults
DEFAULT_TOL = {torch.float16: (1e-3, 1e-5), torch.bfloat16: (1.6e-2, 1e-5), torch.float32: (1.3e-6, 1e-5)}


def tolerance_units(x, ref, dtype):
    """The largest |x - ref| / (atol + rtol * |ref|) over the elements (float64); a NaN where ref is
    NaN, and the infinity that ref rounds to in `dtype`, count as exact, any other NaN or infinity
    as infinitely wrong."""
    rtol, atol = DEFAULT_TOL[dtype]
    x, ref = x.detach().cpu().double(), ref.detach().double()
    if x.numel() == 0:
        return 0.0
    both_nan = torch.isnan(x) & torch.isnan(ref)
    # beyond the dtype's range the correctly rounded answer is an infinity (float16: |ref| >= 65520)
    rounded = ref.to(dtype).double()
    same_inf = torch.isinf(rounded) & (x == rounded)
    err = (x - ref).abs() / (atol + rtol * ref.abs())
    err = torch.where(both_nan | same_inf, torch.zeros_like(err), err)
    err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
    return float(err.max())


def _plainly_close(ocl, cpu):
    try:
        for o, c in zip(ocl, cpu):
            torch.testing.assert_close(o.detach().cpu(), c.detach(), equal_nan=True)
        return True
    except AssertionError:
        return False


def _group_errors(ref, cpu, ocl, dtype):
    """(ocl error, CPU error) over one group of tensors; None when a non-floating one differs."""
    err_ocl = err_cpu = 0.0
    for r, c, o in zip(ref, cpu, ocl):
        if not c.is_floating_point():
            if not torch.equal(o.cpu(), c):
                return None
            continue
        tol_dtype = c.dtype if c.dtype in DEFAULT_TOL else dtype
        err_ocl = max(err_ocl, tolerance_units(o, r, tol_dtype))
        err_cpu = max(err_cpu, tolerance_units(c, r, tol_dtype))
    return err_ocl, err_cpu


def float64_errors(op, sample, dtype, grad=False):
    """(ocl error, CPU error) of `op` on `sample` (of 16-bit `dtype`) against float64, each the largest
    over the floating outputs in tolerance units; with `grad`, the input gradients (from the same random
    upstream gradients, rounded to the outputs' dtype) are a second group, and only the groups where ocl
    and the CPU differ beyond the default tolerance count (taking the larger errors of those groups).
    None when there is no comparable reference (the float64 run raises, the outputs differ in number or
    shape, a non-floating output, e.g. indices, differs between ocl and the CPU, or the op reads storage
    beyond its input's elements: as_strided)."""
    if op.name.startswith("as_strided"):
        return None  # reads the storage behind its input, which an upcast copy does not have

    def copy(convert):
        def fn(t):
            c = convert(t.detach())
            return c.requires_grad_() if grad and t.requires_grad else c
        return fn

    # Three copies made before any run: some ops update arguments in place (running statistics).
    inputs = {name: map_tensors((sample.input, list(sample.args), dict(sample.kwargs)), copy(fn)) for name, fn in (
        ("float64", lambda t: t.double() if t.dtype == dtype else t.clone()),
        ("cpu", lambda t: t.clone()),
        ("ocl", lambda t: t.to("ocl")))}

    def run(name):
        torch.manual_seed(0)  # the same seed for the three runs, as the coverage script seeds each sample
        x, args, kwargs = inputs[name]
        return tensor_leaves(op(x, *args, **kwargs))

    try:
        ref = run("float64")
    except Exception:  # noqa: BLE001 - no float64 reference for this sample
        return None
    cpu, ocl = run("cpu"), run("ocl")
    if not len(ref) == len(cpu) == len(ocl) or any(r.shape != c.shape or r.shape != o.shape
                                                   for r, c, o in zip(ref, cpu, ocl)):
        return None
    groups = [(ref, cpu, ocl)]
    outs = [k for k, c in enumerate(cpu) if grad and c.requires_grad]
    leaves = [k for k, t in enumerate(tensor_leaves(inputs["cpu"])) if t.requires_grad]
    if outs and leaves:
        torch.manual_seed(1)
        upstream = [torch.randn_like(cpu[k].detach()) for k in outs]

        def grads(name, results, convert):
            xs = [tensor_leaves(inputs[name])[k] for k in leaves]
            g = torch.autograd.grad([results[k] for k in outs], xs, [convert(u) for u in upstream],
                                    allow_unused=True)
            return [torch.zeros_like(x) if d is None else d for d, x in zip(g, xs)]
        try:
            g_ref = grads("float64", ref, lambda u: u.double())
        except Exception:  # noqa: BLE001 - no float64 gradient
            return None
        groups.append((g_ref, grads("cpu", cpu, lambda u: u), grads("ocl", ocl, lambda u: u.to("ocl"))))
    differing = [g for g in groups if not _plainly_close(g[2], g[1])] or groups
    errs = [_group_errors(*g, dtype) for g in differing]
    if any(e is None for e in errs):
        return None
    return max(e[0] for e in errs), max(e[1] for e in errs)
