"""Complex Hermitian eigh and complex SVD with vectors on ocl (linalg_jacobi.cl with complex
rotations) and what builds on them, against the CPU, strict mode: op_db samples in complex64 and
complex128 (where the device has fp64), as given and non-contiguous, the input gradients in
complex64. Eigen/singular vectors are unique only up to a unit phase per column: the vector
outputs go through the OpInfo's phase-invariant output_process_fn_grad (|V|, U @ Vh, ...) before
they are compared, forward and backward (opinfo_compare.PHASE_FREE), as the CPU's and CUDA's
LAPACKs differ there too. Then
what the samples do not reach: reconstructions and unitarity past one work-group's width,
repeated eigenvalues, rank-deficient and wide SVDs, conjugate views, UPLO, full_matrices."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401  (registers the device before torch.testing._internal)
from opinfo_compare import opinfo_params, sample_failures  # noqa: E402

DEV = "ocl:0"
FP64 = torch.ocl.get_device_properties(0).fp64
DTYPES = [torch.complex64] + ([torch.complex128] if FP64 else [])
OPS = """linalg.eigh linalg.eigvalsh linalg.svd svd linalg.svdvals linalg.pinv pinverse linalg.matrix_rank
    linalg.matrix_norm linalg.norm norm linalg.cond linalg.lstsq svd_lowrank pca_lowrank""".split()
# Gradients (complex64) for these: the eigh and svd backward formulas and what composes them.
GRAD_OPS = {"linalg.eigh", "linalg.eigvalsh", "linalg.svd", "svd", "linalg.svdvals", "linalg.pinv", "linalg.cond",
            "linalg.matrix_norm", "linalg.lstsq"}
MAX_SAMPLES = 4
TOL = {torch.complex64: dict(rtol=1e-4, atol=1e-4), torch.complex128: dict(rtol=1e-8, atol=1e-8),
       torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-8, atol=1e-8)}
GRAD_TOL = dict(rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("op,dtype", opinfo_params(OPS, DTYPES))
def test_complex_eigh_svd_opinfo(op, dtype):
    grad = dtype == torch.complex64 and op.name in GRAD_OPS and op.supports_autograd
    failures = sample_failures(op, dtype, grad, MAX_SAMPLES, TOL, {torch.complex64: GRAD_TOL}, seed=0)
    assert not failures, "\n".join(failures)


def _rand(*shape, dtype=torch.complex64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, dtype=dtype, generator=g)


def _unitary_err(Q):
    """max |Q^H Q - I| over the columns of Q."""
    return (Q.mH @ Q - torch.eye(Q.shape[-1], dtype=Q.dtype)).abs().max().item()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [5, 40])
def test_complex_eigh(dtype, n):
    """Values equal to the CPU's (ascending), A = V diag(w) V^H and V unitary past one group's width;
    both triangles (the other one's garbage ignored, the diagonal's imaginary part too, as heevd);
    a conjugate view as input."""
    eps = torch.finfo(dtype.to_real()).eps
    X = _rand(2, n, n, dtype=dtype, seed=n)
    H = X + X.mH
    for uplo in ("L", "U"):
        junk = X if uplo == "L" else X.mH  # the named triangle is H's, the rest arbitrary
        A = (H.tril() + junk.triu(1)) if uplo == "L" else (H.triu() + junk.tril(-1))
        A = A + 1j * torch.diag_embed(torch.ones(n, dtype=dtype.to_real()))  # ignored imaginary diagonal
        w, V = torch.linalg.eigh(A.to(DEV), UPLO=uplo)
        w, V = w.cpu(), V.cpu()
        assert w.dtype == dtype.to_real()
        torch.testing.assert_close(w, torch.linalg.eigvalsh(A, UPLO=uplo), **TOL[dtype.to_real()])
        scale = H.abs().max().item()
        assert (V @ torch.diag_embed(w.to(dtype)) @ V.mH - H).abs().max().item() < 50 * n * eps * scale
        assert _unitary_err(V) < 50 * n * eps
    wc = torch.linalg.eigvalsh(H.conj())
    torch.testing.assert_close(torch.linalg.eigvalsh(H.to(DEV).conj()).cpu(), wc, **TOL[dtype.to_real()])


@pytest.mark.parametrize("dtype", DTYPES)
def test_complex_eigh_repeated(dtype):
    """A repeated eigenvalue: any unitary basis of its eigenspace will do; the projector onto the
    eigenspace (phase- and basis-invariant) equals the CPU's."""
    Q = torch.linalg.qr(_rand(6, 6, dtype=dtype, seed=5)).Q
    d = torch.tensor([-2.0, 1, 1, 1, 3, 3], dtype=dtype.to_real())
    H = Q @ torch.diag(d.to(dtype)) @ Q.mH
    w, V = (t.cpu() for t in torch.linalg.eigh(H.to(DEV)))
    torch.testing.assert_close(w, d, **TOL[dtype.to_real()])
    for lo, hi in ((0, 1), (1, 4), (4, 6)):
        P, Pc = V[:, lo:hi] @ V[:, lo:hi].mH, Q[:, lo:hi] @ Q[:, lo:hi].mH
        torch.testing.assert_close(P, Pc, **TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7, 4), (4, 7), (3, 33, 33), (2, 5, 40)])
def test_complex_svd(dtype, shape):
    """Tall, wide, batched and past one group's width, full_matrices both ways: S equal to the CPU's
    (descending), A = U S Vh, U and Vh unitary (full bases too); rank-deficient input: the zero
    singular values and a unitary completion."""
    eps = torch.finfo(dtype.to_real()).eps
    A = _rand(*shape, dtype=dtype, seed=sum(shape))
    B = A[..., :, :2] @ A[..., :2, :]  # rank 2
    for M in (A, B):
        for full in (False, True):
            U, S, Vh = (t.cpu() for t in torch.linalg.svd(M.to(DEV), full_matrices=full))
            k = S.shape[-1]
            torch.testing.assert_close(S, torch.linalg.svdvals(M), **TOL[dtype.to_real()])
            rec = (U[..., :k] * S.to(dtype).unsqueeze(-2)) @ Vh[..., :k, :]
            assert (rec - M).abs().max().item() < 50 * max(shape) * eps * M.abs().max().item()
            assert _unitary_err(U) < 50 * max(shape) * eps
            assert _unitary_err(Vh.mH) < 50 * max(shape) * eps
    # a conjugate view and a transposed one
    torch.testing.assert_close(torch.linalg.svdvals(A.to(DEV).conj().mT).cpu(), torch.linalg.svdvals(A.mH),
                               **TOL[dtype.to_real()])


def test_complex_gradients_phase_invariant():
    """Gradients of phase-invariant losses of the vectors (|V|, |U|, U @ Vh) and of the values
    equal the CPU's; a phase-dependent loss raises as on the CPU."""
    A = _rand(5, 5, seed=11)
    H = A + A.mH
    cases = [
        (lambda a: (lambda w, V: w.sum() + V.abs().sum())(*torch.linalg.eigh(a)), H),
        (lambda a: torch.linalg.eigvalsh(a).pow(2).sum(), H),
        (lambda a: (lambda U, S, Vh: (U @ Vh).real.sum() + S.sum() + U.abs().sum())(
            *torch.linalg.svd(a, full_matrices=False)), A[:, :3]),
        (lambda a: torch.linalg.svdvals(a).sum(), A[:3]),
        (lambda a: torch.linalg.pinv(a).abs().sum(), A[:, :4]),
        (lambda a: torch.linalg.matrix_norm(a, "nuc"), A),
    ]
    for fn, x in cases:
        xc = x.clone().requires_grad_()
        xo = x.to(DEV).requires_grad_()
        fn(xc).backward()
        fn(xo).backward()
        torch.testing.assert_close(xo.grad.cpu(), xc.grad, rtol=1e-3, atol=1e-3)
    xo = H.to(DEV).requires_grad_()
    with pytest.raises(RuntimeError, match="ill-defined"):
        torch.linalg.eigh(xo)[1].real.sum().backward()


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss"])
def test_complex_lstsq(driver):
    """Over- and underdetermined complex least squares, every driver's outputs (real residuals and
    singular values)."""
    for shape in ((6, 4), (3, 5)):
        A, B = _rand(*shape, seed=2), _rand(shape[0], 2, seed=3)
        if driver == "gels" and shape[0] < shape[1]:
            continue  # the CPU's gels wants full rank; compared on the tall case only
        r, rc = torch.linalg.lstsq(A.to(DEV), B.to(DEV), driver=driver), torch.linalg.lstsq(A, B, driver=driver)
        for x, y in zip(r, rc):
            assert x.dtype == y.dtype and x.shape == y.shape, (x.dtype, y.dtype, x.shape, y.shape)
            torch.testing.assert_close(x.cpu(), y, rtol=1e-4, atol=1e-4)


def test_out_dtypes():
    """out= of the wrong dtype raises as on the CPU (values are real, vectors A's dtype): the kernels
    would write the wrong element type into them."""
    H = _rand(4, 4)
    H = (H + H.mH).to(DEV)
    c64, f32 = torch.complex64, torch.float32
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.linalg.eigh(H, out=(torch.empty(0, dtype=c64, device=DEV), torch.empty(0, dtype=c64, device=DEV)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.linalg.eigh(H, out=(torch.empty(0, dtype=f32, device=DEV), torch.empty(0, dtype=f32, device=DEV)))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.linalg.svdvals(H, out=torch.empty(0, dtype=c64, device=DEV))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.linalg.svdvals(H.real, out=torch.empty(0, dtype=c64, device=DEV))
    w, V = torch.empty(0, dtype=f32, device=DEV), torch.empty(0, dtype=c64, device=DEV)
    torch.linalg.eigh(H, out=(w, V))
    torch.testing.assert_close(w.cpu(), torch.linalg.eigvalsh(H.cpu()), **TOL[f32])
