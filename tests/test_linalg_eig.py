"""linalg.eig and linalg.eigvals on ocl (dlprim/kernels/linalg_eig.cl: Hessenberg reduction, complex
shifted QR, back-substitution on the Schur form), strict mode, against the CPU. Eigenvalues come in
no particular order and eigenvectors only up to a phase (and within repeated eigenvalues), so the
checks are: eigenvalues equal to the CPU's as multisets, A V = V diag(w), unit-norm columns with
their largest component real (zgeev's convention), and gradients of phase-invariant losses equal to
the CPU's. op_db samples in all four dtypes, then hand-made cases: complex-conjugate pairs of real
matrices, repeated and defective eigenvalues, diagonal, triangular, 1x1, zero-size, non-contiguous,
conjugate views, batches, out=, and errors."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from opinfo_compare import opinfo_params, raises_like_cpu  # noqa: E402

FP64 = torch.ocl.get_device_properties(0).fp64
DTYPES = [torch.float32, torch.complex64] + ([torch.float64, torch.complex128] if FP64 else [])
EPS = {torch.float32: 1.2e-7, torch.complex64: 1.2e-7, torch.float64: 2.3e-16, torch.complex128: 2.3e-16}


def _match(w, ref, tol):
    """w and ref (..., n) are the same multisets within tol (each value's nearest in the other)."""
    assert w.shape == ref.shape
    if w.numel() == 0:
        return
    d = (w.unsqueeze(-1) - ref.unsqueeze(-2)).abs()
    assert d.min(-1).values.max().item() <= tol, (w, ref)
    assert d.min(-2).values.max().item() <= tol, (w, ref)


def _check(A, w, V=None, tol_w=None, tol_res=None):
    """w (and V) from ocl for A (CPU tensor): eigenvalues against the CPU's, residual, normalisation."""
    ct = torch.complex128 if A.dtype in (torch.float64, torch.complex128) else torch.complex64
    assert w.device.type == "ocl" and w.dtype == ct
    w = w.cpu()
    scale = max(1.0, A.abs().max().item()) if A.numel() else 1.0
    eps = EPS[A.dtype]
    n = A.shape[-1]
    _match(w, torch.linalg.eigvals(A), tol_w if tol_w is not None else 200 * n * eps * scale)
    if V is None:
        return
    assert V.dtype == ct and V.shape == A.shape
    V = V.cpu()
    if V.numel() == 0:
        return
    res = (A.to(ct) @ V - V * w.unsqueeze(-2)).abs().max().item()
    assert res <= (tol_res if tol_res is not None else 100 * n * eps * scale), res
    torch.testing.assert_close(torch.linalg.vector_norm(V, dim=-2), torch.ones(V.shape[:-1], dtype=ct.to_real()),
                               rtol=0, atol=20 * n * eps)
    # A component of largest modulus is real (zgeev: the first; ties within rounding here).
    mags = V.abs()
    real_max = mags.where(V.imag == 0, torch.zeros_like(mags)).amax(-2)
    assert (real_max >= mags.amax(-2) * (1 - 100 * eps)).all()


@pytest.mark.parametrize("op,dtype", opinfo_params({"linalg.eig", "linalg.eigvals"}, DTYPES))
def test_eig_opinfo(op, dtype):
    n_checked = 0
    for sample in op.sample_inputs("cpu", dtype):
        A = sample.input.detach()
        for a in (A, A.transpose(-2, -1).contiguous().transpose(-2, -1)):  # as given and column-major
            out = op(a.to("ocl"))
            if op.name == "linalg.eig":
                _check(A, out[0], out[1])
            else:
                _check(A, out)
            n_checked += 1
    assert n_checked > 0


GRAD_DTYPES = [torch.float32, torch.complex64] + ([torch.float64, torch.complex128] if FP64 else [])


@pytest.mark.parametrize("dtype", GRAD_DTYPES, ids=str)
def test_eig_grad(dtype):
    """linalg_eig_backward (torch's formula, on native complex ops) against the CPU's on losses
    invariant to the eigenvectors' phases: eigenvalues' parts and |V|."""
    torch.manual_seed(1)
    A = torch.randn(2, 4, 4, dtype=dtype)
    grads = []
    for dev in ("cpu", "ocl"):
        a = A.clone().to(dev).requires_grad_()
        w, V = torch.linalg.eig(a)
        (w.real.sum() + (w.imag ** 2).sum() + V.abs().sum()).backward()
        b = A.clone().to(dev).requires_grad_()
        torch.linalg.eigvals(b).abs().sum().backward()
        grads.append((a.grad.cpu(), b.grad.cpu()))
    tol = dict(rtol=1e-3, atol=1e-3) if dtype in (torch.float32, torch.complex64) else dict(rtol=1e-9, atol=1e-9)
    for g_ocl, g_cpu in zip(grads[1], grads[0]):
        torch.testing.assert_close(g_ocl, g_cpu, **tol)


def _real(dt, rows):
    return torch.tensor(rows, dtype=dt)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_special_matrices(dtype):
    cases = [
        _real(dtype, [[0.0, -1.0], [1.0, 0.0]]),  # rotation: +-i
        _real(dtype, [[1.0, 2.0, 0.0], [-2.0, 1.0, 0.0], [0.0, 0.0, 3.0]]),  # 1 +- 2i and 3
        torch.diag(torch.tensor([3.0, -1.0, 3.0, 0.5], dtype=dtype)),  # diagonal, repeated
        torch.triu(torch.arange(1.0, 26.0).reshape(5, 5)).to(dtype),  # triangular (already Schur)
        torch.tril(torch.arange(1.0, 17.0).reshape(4, 4)).to(dtype),
        torch.eye(4, dtype=dtype) * 2,  # every eigenvalue repeated
        torch.zeros(3, 3, dtype=dtype),
        torch.tensor([[2.5]], dtype=dtype),  # 1x1
        torch.tensor([[0.0, 1.0], [-1.0, 0.0]], dtype=dtype) * 1e-3,  # small scale
        torch.tensor([[4.0, 1.0], [-2.0, 1.0]], dtype=dtype) * 1e6,  # large scale
    ]
    if dtype.is_complex:
        cases.append(torch.tensor([[1j, 2.0], [0.5 - 1j, -1.0 + 3j]], dtype=dtype))
    # The cyclic permutation (roots of unity: unshifted QR would not move) and a companion matrix.
    cases.append(torch.roll(torch.eye(6), 1, 0).to(dtype))
    companion = torch.diag(torch.ones(4), -1)
    companion[:, -1] = torch.tensor([-1.0, 2.0, -3.0, 4.0, -5.0])
    cases.append(companion.to(dtype))
    for A in cases:
        w, V = torch.linalg.eig(A.to("ocl"))
        _check(A, w, V)
    # A defective matrix (one Jordan block, eigenvalue 2 three times): eigenvalues to ~eps^(1/3),
    # and the vectors (all nearly parallel) still satisfy A V = V diag(w) to rounding.
    J = torch.tensor([[2.0, 1.0, 0.0], [0.0, 2.0, 1.0], [0.0, 0.0, 2.0]], dtype=torch.float64)
    Q = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3)))[0]
    Jd = (Q @ J @ Q.T).to(dtype)
    w, V = torch.linalg.eig(Jd.to("ocl"))
    _check(Jd, w, V, tol_w=20 * EPS[dtype] ** (1 / 3), tol_res=1e3 * EPS[dtype])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_eig_layouts_and_batches(dtype):
    torch.manual_seed(2)
    A = torch.randn(3, 2, 6, 6, dtype=dtype)
    # Batched and broadcast batch dims, a non-contiguous slice, a transposed view.
    for a in (A, A[:, 1], A[..., ::1, :].transpose(-2, -1), A.expand(2, 3, 2, 6, 6)[1], A[::2, :, 1:5, 1:5]):
        ref = a.contiguous()
        w, V = torch.linalg.eig(a.to("ocl"))
        _check(ref, w, V)
        _check(ref, torch.linalg.eigvals(a.to("ocl")))
    # A larger matrix, as op_db's do not reach (several QR sweeps per eigenvalue, groups of 64).
    B = torch.randn(40, 40, dtype=dtype)
    w, V = torch.linalg.eig(B.to("ocl"))
    _check(B, w, V)
    if dtype.is_complex:  # a conjugate view: its values, not the storage's
        c = A[0, 0].conj()
        w, V = torch.linalg.eig(A[0, 0].to("ocl").conj())
        _check(c.resolve_conj(), w, V)
    # Zero-size batch and zero-size matrices: shapes as the CPU's.
    for shape in ((0, 3, 3), (2, 0, 0), (0, 0)):
        e = torch.empty(shape, dtype=dtype)
        w, V = torch.linalg.eig(e.to("ocl"))
        wc, Vc = torch.linalg.eig(e)
        assert w.shape == wc.shape and V.shape == Vc.shape and w.dtype == wc.dtype


def test_eig_out_and_input_untouched():
    A = torch.randn(2, 4, 4)
    a = A.to("ocl")
    w = torch.empty(0, dtype=torch.complex64, device="ocl")
    V = torch.empty(0, dtype=torch.complex64, device="ocl")
    torch.linalg.eig(a, out=(w, V))
    _check(A, w, V)
    torch.testing.assert_close(a.cpu(), A, rtol=0, atol=0)
    out = torch.empty(2, 4, dtype=torch.complex64, device="ocl")
    torch.linalg.eigvals(a, out=out)
    _check(A, out)
    # float64 outputs of complex128 for float64 input, as the CPU (safe casts only).
    if FP64:
        w2 = torch.empty(0, dtype=torch.complex128, device="ocl")
        V2 = torch.empty(0, dtype=torch.complex128, device="ocl")
        torch.linalg.eig(a, out=(w2, V2))
        _check(A, w2.to(torch.complex64), V2.to(torch.complex64))


def test_eig_errors():
    raises_like_cpu(torch.linalg.eig, torch.randn(2, 3))
    raises_like_cpu(torch.linalg.eigvals, torch.randn(3, 2, 4))
    raises_like_cpu(torch.linalg.eig, torch.randn(3))
    bad = torch.randn(3, 3)
    bad[1, 2] = float("nan")
    raises_like_cpu(torch.linalg.eig, bad)
    # (not the CPU's eigvals on NaN: this torch build's LAPACK path crashes on it)
    with pytest.raises(RuntimeError, match="torch.linalg.eigvals: input tensor should not contain infs or NaNs"):
        torch.linalg.eigvals(bad.to("ocl"))
    with pytest.raises(RuntimeError, match="linalg.eig"):
        torch.linalg.eig(torch.randn(2, 3, device="ocl"))
    with pytest.raises(RuntimeError, match="should not contain infs or NaNs"):
        torch.linalg.eig(bad.to("ocl"))
    with pytest.raises(RuntimeError, match="eigenvalues"):  # an out dtype that cannot hold complex
        torch.linalg.eig(torch.randn(3, 3, device="ocl"), out=(torch.empty(0, device="ocl"),
                                                                torch.empty(0, dtype=torch.complex64, device="ocl")))
    with pytest.raises(NotImplementedError, match="linalg.eig"):
        torch.linalg.eig(torch.randn(3, 3, device="ocl").half())
