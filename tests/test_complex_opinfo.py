"""op_db samples of the complex families against the CPU, strict mode: the complex rows of the
pointwise table (ComplexPointwise.cpp + kernels/complex.cl), the matrix products on the real
GEMM (ComplexGemm.cpp), the reductions (prod, var/std, norms, any/all, cumsum/cumprod) and the
ops that only move complex64 elements (gathers, flips, triangles, pads), in
complex64 (and complex128 where the device has fp64), on the samples as given and on
non-contiguous (transposed) copies, with input gradients through autograd's complex rules for a
few ops per family."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from opinfo_compare import opinfos_named, sample_failures, transposed_matrices  # noqa: E402

FP64 = torch.ocl.get_device_properties(0).fp64
DTYPES = [torch.complex64] + ([torch.complex128] if FP64 else [])

FAMILIES = {
    "unary": """exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan sinh cosh tanh asinh acosh
        atanh sigmoid sinc reciprocal square isnan logical_not nn.functional.tanhshrink nn.functional.silu""",
    "binary": "pow __rpow__ rsub __rsub__ logical_and logical_or logical_xor float_power",
    "ternary": "where masked_fill addcmul addcdiv lerp",
    "matmul": """mm bmm addmm addmv mv dot vdot addr addbmm baddbmm matmul einsum inner tensordot
        nn.functional.linear linalg.multi_dot linalg.vecdot""",
    "reduce": "prod var std var_mean std_mean linalg.vector_norm norm dist any all count_nonzero cumsum cumprod",
    # complex64 elements moved as 64-bit integers (gathers, scatters, flips, triangles, pads);
    # accumulating scatters on the real and imaginary parts
    "move": """flip rot90 tril triu index_select gather take masked_select __getitem__ take_along_dim combinations
        nn.functional.pad index_add scatter_add index_put put""",
    # log-sum-exp family on the complex logaddexp row / exp-sum-log; slice rows; real planes
    "logexp": "logaddexp logsumexp masked.logsumexp logcumsumexp",
    # (op_db's `cross` samples without dim would spend torch.cross's warn-once that test_cross_renorm checks)
    "slices": "linalg.cross renorm linspace",
    "planes": "nn.functional.unfold nn.functional.fold stft",
}
# Variants that need other families (norm.nuc: the SVD; pad.circular is a cat of slices, no pad kernel).
SKIP = {"norm.nuc", "nn.functional.pad.circular", "nn.functional.pad.constant"}
# Ops whose gradients are checked too (complex64): one or two per kind of backward formula.
GRAD_OPS = {"exp", "log", "sqrt", "tanh", "asin", "pow", "where", "addcdiv", "mm", "addmm", "vdot", "prod", "var",
            "linalg.vector_norm", "cumsum", "logaddexp", "logsumexp", "linalg.cross", "renorm", "nn.functional.pad",
            "nn.functional.unfold", "nn.functional.fold", "put"}
# complex128 runs the same bodies in double: one or two ops per kind of body (each op and dtype
# is a program to build, about a second on PoCL).
FP64_OPS = {"exp", "log", "sqrt", "tanh", "atanh", "acos", "pow", "where", "addcdiv", "mm", "addmm", "bmm", "prod", "var",
            "cumsum", "cumprod", "linalg.vector_norm", "logaddexp", "logcumsumexp", "linalg.cross", "put", "take",
            "nn.functional.unfold", "nn.functional.pad", "linspace"}
MAX_SAMPLES = 2
# float_power computes in complex128: only where the device has fp64.
NEEDS_FP64 = {"float_power"}


def _cases():
    names = {n: fam for fam, ns in FAMILIES.items() for n in ns.split()}
    out = []
    for op in opinfos_named(set(names)):
        if f"{op.name}.{op.variant_test_name}" in SKIP:
            continue
        for dt in DTYPES:
            if dt == torch.complex128 and op.name not in FP64_OPS:
                continue
            if dt in op.supported_dtypes("cpu") and (FP64 or op.name not in NEEDS_FP64):
                out.append(pytest.param(op, dt, id=f"{names[op.name]}-{op.name}.{op.variant_test_name}-{dt}"))
    return out


@pytest.mark.parametrize("op,dtype", _cases())
def test_complex_opinfo(op, dtype):
    grad = dtype == torch.complex64 and op.name in GRAD_OPS and op.supports_autograd
    failures = sample_failures(op, dtype, grad, MAX_SAMPLES, {torch.complex64: dict(rtol=2e-5, atol=2e-5)},
                               transform=transposed_matrices)
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_math_corners(dtype):
    """Zeros, axes, large and small magnitudes, infinities and NaN through the complex math."""
    vals = [0, 1, -1, 1j, -1j, 0.5 + 0.5j, -2 - 3j, 1e-6 + 1e-6j, 30 + 1j, -30 - 1j, 3 + 40j, 1e20 + 1e20j,
            float("inf"), complex(float("nan"), 0)]
    x = torch.tensor(vals, dtype=dtype)
    xo = x.to("ocl")
    for fn in (torch.exp, torch.log, torch.sqrt, torch.tanh, torch.sin, torch.cosh, torch.asinh, torch.atanh,
               torch.acos, torch.sigmoid, torch.reciprocal, torch.expm1, torch.log1p):
        got, exp = fn(xo).cpu(), fn(x)
        finite = torch.isfinite(exp) & (exp.abs() < 1e15) & (x.abs() < 1e15)
        torch.testing.assert_close(got[finite], exp[finite], rtol=1e-5, atol=1e-5, msg=lambda m: f"{fn.__name__}: {m}")
    torch.testing.assert_close(torch.pow(xo, 2.5).cpu()[:10], torch.pow(x, 2.5)[:10], rtol=1e-5, atol=1e-5)
    assert torch.equal(torch.pow(xo, 0).cpu(), torch.ones_like(x))


def test_complex_matmul_shapes_and_out():
    """Transposed / conjugated operands, alpha and beta complex, out= of another layout, zero-size."""
    a, b = torch.randn(5, 7, dtype=torch.complex64), torch.randn(7, 3, dtype=torch.complex64)
    c = torch.randn(5, 3, dtype=torch.complex64)
    ao, bo, co = a.to("ocl"), b.to("ocl"), c.to("ocl")
    close = torch.testing.assert_close
    close((ao.conj() @ bo).cpu(), a.conj() @ b)
    close((ao.t().t() @ bo.t().contiguous().t()).cpu(), a @ b)
    close(torch.addmm(co, ao, bo, beta=0.5 - 1j, alpha=2j).cpu(), torch.addmm(c, a, b, beta=0.5 - 1j, alpha=2j),
          rtol=1e-5, atol=1e-5)
    out = torch.empty(3, 5, dtype=torch.complex64, device="ocl").t()
    torch.mm(ao, bo, out=out)
    close(out.cpu(), a @ b)
    close(torch.mm(ao[:, :0], bo[:0]).cpu(), torch.zeros(5, 3, dtype=torch.complex64))
    z = torch.addmm(co, ao, bo, beta=0)
    close(z.cpu(), a @ b)
    with pytest.raises(RuntimeError):
        torch.mm(ao, bo.to(torch.complex128) if FP64 else bo.real)


def test_complex_scatters():
    """Non-accumulating scatters move complex64 elements as 64-bit integers; accumulating ones add the
    real and imaginary parts separately."""
    x = torch.randn(4, 5, dtype=torch.complex64)
    src = torch.randn(4, 5, dtype=torch.complex64)
    idx = torch.tensor([[0, 1, 2, 3, 4]] * 4).remainder(4)  # repeats: for the accumulating scatter
    # a plain scatter with repeated indices keeps an unspecified writer (as on CUDA): a permutation per column
    perm = torch.stack([torch.randperm(4, generator=torch.Generator().manual_seed(j)) for j in range(5)], 1)
    xo = x.to("ocl")
    close = torch.testing.assert_close
    close(xo.scatter(0, perm.to("ocl"), src.to("ocl")).cpu(), x.scatter(0, perm, src))
    close(xo.index_put((torch.tensor([2, 0]).to("ocl"),), src[:2].to("ocl")).cpu(),
          x.index_put((torch.tensor([2, 0]),), src[:2]))
    close(xo.put(torch.tensor([7, 1]).to("ocl"), src[0, :2].to("ocl")).cpu(), x.put(torch.tensor([7, 1]), src[0, :2]))
    close(xo.conj().flip(1).cpu(), x.conj().flip(1))
    close(torch.triu(xo.conj(), 1).cpu(), torch.triu(x.conj(), 1))
    close(xo.scatter_add(0, idx.to("ocl"), src.to("ocl")).cpu(), x.scatter_add(0, idx, src))
    i2 = torch.tensor([2, 0, 2])
    close(xo.index_add(0, i2.to("ocl"), src[:3].conj().to("ocl"), alpha=2 - 1j).cpu(),
          x.index_add(0, i2, src[:3].conj(), alpha=2 - 1j))
    close(xo.index_put((i2.to("ocl"),), src[:3].to("ocl"), accumulate=True).cpu(),
          x.index_put((i2,), src[:3], accumulate=True))


def test_complex_logexp_corners():
    """logaddexp / logcumsumexp / logsumexp at infinities and NaN (the CPU's special cases and the
    imaginary branch of its sequential scan), the logcumsumexp gradient against a complex128 reference (op_db's samples reach |x| = 1e4, where the
    CPU's complex64 gradient is itself off by 2e-3), empty reductions."""
    inf, nan = float("inf"), float("nan")
    a = torch.tensor([complex(-inf, 1), complex(inf, 0), complex(inf, 2), complex(nan, 0), 1 + 2j, -3 + 1e-3j])
    b = torch.tensor([complex(-inf, 3), complex(inf, 0), complex(1, 1), 1 + 1j, complex(0, nan), 40 - 2j])
    close = torch.testing.assert_close
    for dt in DTYPES:
        ao, bo = a.to(dt).to("ocl"), b.to(dt).to("ocl")
        close(torch.logaddexp(ao, bo).cpu(), torch.logaddexp(a.to(dt), b.to(dt)), equal_nan=True)
        close(torch.logaddexp(ao.conj(), bo[:1]).cpu(), torch.logaddexp(a.to(dt).conj(), b[:1].to(dt)), equal_nan=True)
    # the CPU's sequential scan leaves the principal branch: its imaginary parts, -inf and NaN runs
    c = torch.tensor([complex(-inf, 2), complex(-inf, 1), 1 + 3j, complex(-inf, 0), 5 - 7j, 5 + 7j, 2 + 9j,
                      complex(nan, 0), 1 + 1j])
    close(torch.logcumsumexp(c.to("ocl"), 0).cpu(), torch.logcumsumexp(c, 0), equal_nan=True)
    x = torch.randn(3, 200, dtype=torch.complex64) * 8
    x[1, 2] = complex(-inf, 0)
    xo = x.to("ocl")
    close(torch.logcumsumexp(xo, 1).cpu(), torch.logcumsumexp(x, 1), rtol=2e-5, atol=2e-5)
    close(torch.logcumsumexp(xo.t(), 0).cpu(), torch.logcumsumexp(x.t(), 0), rtol=2e-5, atol=2e-5)
    close(torch.logsumexp(xo, (0, 1)).cpu(), torch.logsumexp(x, (0, 1)), rtol=2e-5, atol=2e-5)
    close(torch.logsumexp(xo.t(), 0, keepdim=True).cpu(), torch.logsumexp(x.t(), 0, keepdim=True), rtol=2e-5, atol=2e-5)
    e = torch.empty(0, 3, dtype=torch.complex64)
    close(torch.logsumexp(e.to("ocl"), 0).cpu(), torch.logsumexp(e, 0))
    xg = torch.randn(5, 7, dtype=torch.complex64).to("ocl").requires_grad_()
    g = torch.randn(5, 7, dtype=torch.complex64)
    got = torch.autograd.grad(torch.logcumsumexp(xg, 1), xg, g.to("ocl"))[0].cpu()
    xd = xg.detach().cpu().to(torch.complex128).requires_grad_()
    ref = torch.autograd.grad(torch.logcumsumexp(xd, 1), xd, g.to(torch.complex128))[0]
    close(got, ref.to(torch.complex64), rtol=1e-4, atol=1e-4)


def test_complex_planes_and_slices():
    """Pads (1-3 d, forward and backward), unfold/fold, take/put_(accumulate), cross, renorm, linspace
    in each complex dtype, on strided and conjugated inputs."""
    close = torch.testing.assert_close
    for dt in DTYPES:
        x = torch.randn(2, 3, 4, 5, 6, dtype=dt)
        for k, mode in ((1, "reflect"), (2, "replicate"), (3, "reflect"), (3, "replicate")):
            pad = (2, 1, 1, 0, 0, 2)[: 2 * k]
            xc = x.clone().requires_grad_()
            xo = x.to("ocl").requires_grad_()
            src, srco = xc[(0,) * (3 - k)], xo[(0,) * (3 - k)]  # (k + 2)-d
            yc, yo = (torch.nn.functional.pad(t.transpose(-1, -2).conj(), pad, mode=mode) for t in (src, srco))
            close(yo.cpu(), yc)
            g = torch.randn_like(yc)
            close(torch.autograd.grad(yo, xo, g.to("ocl"))[0].cpu(), torch.autograd.grad(yc, xc, g)[0])
        img = torch.randn(3, 5, 6, dtype=dt)
        cols = torch.nn.functional.unfold(img, (2, 3), padding=1, stride=(1, 2))
        close(torch.nn.functional.unfold(img.to("ocl").conj(), (2, 3), padding=1, stride=(1, 2)).cpu(), cols.conj())
        close(torch.nn.functional.fold(cols.to("ocl"), (5, 6), (2, 3), padding=1, stride=(1, 2)).cpu(),
              torch.nn.functional.fold(cols, (5, 6), (2, 3), padding=1, stride=(1, 2)))
        t = torch.randn(4, 6, dtype=dt)
        i = torch.tensor([[0, 3], [5, 7]])
        close(torch.take(t.to("ocl")[:, ::2], i.to("ocl")).cpu(), torch.take(t[:, ::2], i))
        ir = torch.tensor([1, 7, 1, 0, 7])
        v = torch.randn(5, dtype=dt)
        close(t.to("ocl").put_(ir.to("ocl"), v.to("ocl"), accumulate=True).cpu(), t.clone().put_(ir, v, accumulate=True))
        tt = t.t()
        close(tt.to("ocl").put_(ir[1:3].to("ocl"), v[:2].conj().to("ocl")).cpu(), tt.clone().put_(ir[1:3], v[:2].conj()))
        a, b = torch.randn(4, 3, dtype=dt), torch.randn(1, 3, dtype=dt)
        close(torch.linalg.cross(a.to("ocl").conj(), b.to("ocl")).cpu(), torch.linalg.cross(a.conj(), b))
        close(torch.cross(a.t().to("ocl"), a.t().flip(1).to("ocl"), dim=0).cpu(), torch.cross(a.t(), a.t().flip(1), dim=0))
        ao = a.to("ocl")
        torch.linalg.cross(ao, b.to("ocl"), out=ao)  # out aliasing an input
        close(ao.cpu(), torch.linalg.cross(a, b))
        r = torch.randn(3, 4, 2, dtype=dt)
        for p in (1, 2, float("inf")):
            close(torch.renorm(r.to("ocl"), p, 1, 0.7).cpu(), torch.renorm(r, p, 1, 0.7))
        for steps in (0, 1, 2, 7):
            close(torch.linspace(1 - 2j, -3 + 0.5j, steps, dtype=dt, device="ocl").cpu(),
                  torch.linspace(1 - 2j, -3 + 0.5j, steps, dtype=dt))
