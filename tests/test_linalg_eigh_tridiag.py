"""linalg.eigh / eigvalsh of real symmetric matrices above the Jacobi crossover (csrc/aten/LinalgEighTridiag.cpp,
dlprim/kernels/linalg_tridiag.cl: blocked tridiagonal reduction, orgqr, implicit QL) against the CPU's LAPACK.
Eigenvectors are unique only up to sign and within repeated eigenvalues, so the vectors are checked by invariants:
the residual ||A V - V diag(w)|| and the orthogonality ||V^T V - I||, bounded by a multiple of n eps ||A||_2.
PYTORCH_OCL_LINALG_BLOCK (the panel width) is made small so that small matrices take several panels and a ragged
last one; PYTORCH_OCL_EIGH_CROSSOVER moves the switch from Jacobi."""
import pytest
import torch

import pytorch_ocl  # noqa: F401

DEV = "ocl"
DTYPES = [torch.float32, torch.float64]


@pytest.fixture(autouse=True)
def _tridiag(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_EIGH_CROSSOVER", "32")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _sym(shape, dtype, seed=0):
    a = torch.randn(shape, dtype=dtype, generator=_gen(seed))
    return a + a.mT


def _orthogonal(n, dtype, seed=0):
    q, _ = torch.linalg.qr(torch.randn(n, n, dtype=torch.float64, generator=_gen(seed)))
    return q.to(dtype)


def _check(A, w, V, wc, slack=1.0):
    """Eigenvalues vs the CPU's, and the invariants of the vectors (batched)."""
    n = A.shape[-1]
    eps = torch.finfo(A.dtype).eps
    if A.numel() == 0:
        assert w.shape == wc.shape and (V is None or V.shape == A.shape)
        return
    scale = max(wc.abs().max().item(), 1e-30)  # ||A||_2 (of the largest matrix in a batch)
    torch.testing.assert_close(w, wc, rtol=0, atol=slack * 4 * n * eps * scale)
    if V is None:
        return
    res = (A @ V - V * w.unsqueeze(-2)).abs().amax().item()
    orth = (V.mT @ V - torch.eye(n, dtype=A.dtype)).abs().amax().item()
    assert res <= slack * 4 * n * eps * scale, res
    assert orth <= slack * 4 * n * eps, orth


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(33, 33), (40, 40), (3, 37, 37), (2, 1, 34, 34)])
def test_random_symmetric(shape, dtype):
    A = _sym(shape, dtype)
    for uplo in ("L", "U"):
        # Only the named triangle is read: garbage in the other one must not matter.
        B = A.tril() + torch.triu(torch.randn(shape, dtype=dtype, generator=_gen(1)), 1) if uplo == "L" \
            else A.triu() + torch.tril(torch.randn(shape, dtype=dtype, generator=_gen(1)), -1)
        w, V = torch.linalg.eigh(B.to(DEV), UPLO=uplo)
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(B, UPLO=uplo))
        wv = torch.linalg.eigvalsh(B.to(DEV), UPLO=uplo)
        _check(A, wv.cpu(), None, torch.linalg.eigvalsh(B, UPLO=uplo))


@pytest.mark.parametrize("nb", ["1", "64"])
def test_panel_widths(nb, monkeypatch):
    """One column per panel, and one panel for everything (nb >= n - 1) with the default width."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", nb)
    A = _sym((45, 45), torch.float64, seed=3)
    w, V = torch.linalg.eigh(A.to(DEV))
    _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


def test_larger_default_block(monkeypatch):
    monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK")
    A = _sym((150, 150), torch.float32, seed=4)
    w, V = torch.linalg.eigh(A.to(DEV))
    _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


@pytest.mark.parametrize("dtype", DTYPES)
def test_clustered_eigenvalues(dtype):
    n = 41
    # Identity plus rank 2: the eigenvalue 1 n - 2 times.
    u = torch.randn(n, 2, dtype=dtype, generator=_gen(5))
    low_rank = torch.eye(n, dtype=dtype) + u @ u.mT
    # An exactly 3-fold eigenvalue among distinct ones, in a random basis.
    lam = torch.linspace(-3, 3, n, dtype=torch.float64)
    lam[10:13] = 0.5
    Q = _orthogonal(n, torch.float64, seed=6)
    threefold = ((Q * lam) @ Q.mT).to(dtype)
    threefold = (threefold + threefold.mT) / 2
    # Graded: a diagonal over 12 orders of magnitude with small couplings.
    g = torch.logspace(0, -12, n, dtype=torch.float64)
    graded = torch.diag(g) + 1e-3 * torch.diag(g[1:].sqrt() * g[:-1].sqrt(), 1)
    graded = (graded + graded.mT - torch.diag(g)).to(dtype)
    for A in (low_rank, threefold, graded):
        w, V = torch.linalg.eigh(A.to(DEV))
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_matrices(dtype):
    n = 36
    for A in (torch.zeros(n, n, dtype=dtype), torch.diag(torch.randn(n, dtype=dtype, generator=_gen(7))),
              torch.eye(n, dtype=dtype), torch.ones(n, n, dtype=dtype)):
        w, V = torch.linalg.eigh(A.to(DEV))
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))
    # n = 1, 2 and empty stay on Jacobi (or need nothing), whatever the crossover.
    for n in (0, 1, 2):
        A = _sym((2, n, n), dtype, seed=8)
        w, V = torch.linalg.eigh(A.to(DEV))
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


@pytest.mark.parametrize("dtype", DTYPES)
def test_extreme_scales(dtype):
    """Entries whose squares over- or underflow (the matrix is scaled by a power of two first, as ?syev)."""
    big = 1e30 if dtype == torch.float32 else 1e300
    for s in (big, 1 / big):
        A = _sym((2, 40, 40), dtype, seed=14) * s
        w, V = torch.linalg.eigh(A.to(DEV))
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))
        _check(A, torch.linalg.eigvalsh(A.to(DEV)).cpu(), None, torch.linalg.eigvalsh(A))


def test_crossover_zero(monkeypatch):
    """The tridiagonal path down to n = 2 (crossover 0; n = 1 stays on Jacobi), batched."""
    monkeypatch.setenv("PYTORCH_OCL_EIGH_CROSSOVER", "0")
    for n in (1, 2, 3, 4, 5, 9):
        A = _sym((3, n, n), torch.float64, seed=n)
        w, V = torch.linalg.eigh(A.to(DEV))
        _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))
        _check(A, torch.linalg.eigvalsh(A.to(DEV)).cpu(), None, torch.linalg.eigvalsh(A))


@pytest.mark.parametrize("layout", ["0", "1"])
def test_ql_several_groups(layout, monkeypatch):
    """The QL kernel as on GPUs: its rows in several work-groups (4 rows each: 10 groups for n = 37), each
    repeating the serial sweeps, Q row- or column-major (seeded layouts under PYTORCH_OCL_TUNE)."""
    monkeypatch.setenv("PYTORCH_OCL_EIGH_QL_ROWS", "4")
    monkeypatch.setenv("PYTORCH_OCL_TUNE", "random:" + layout)
    A = _sym((2, 37, 37), torch.float64, seed=13)
    w, V = torch.linalg.eigh(A.to(DEV))
    _check(A, w.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


def test_out_and_noncontiguous():
    A = _sym((34, 34), torch.float64, seed=9)
    At = A.mT.contiguous().mT  # column-major storage, the same symmetric matrix
    L = torch.empty(0, dtype=torch.float64, device=DEV)
    V = torch.empty(34, 34, dtype=torch.float64, device=DEV).mT  # transposed out
    torch.linalg.eigh(At.to(DEV), out=(L, V))
    _check(A, L.cpu(), V.cpu(), torch.linalg.eigvalsh(A))


def test_gradcheck(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_EIGH_CROSSOVER", "4")
    A = _sym((7, 7), torch.float64, seed=10).to(DEV).requires_grad_()  # a leaf

    def f(a):
        w, V = torch.linalg.eigh(a + a.mT)  # eigh reads one triangle: a function of both
        return w, V.abs()  # the vectors' sign is arbitrary: |V| is a function of A

    torch.autograd.gradcheck(f, (A,))
    torch.autograd.gradcheck(lambda a: torch.linalg.eigvalsh(a + a.mT), (A,))


def test_backward_matches_cpu():
    A = _sym((38, 38), torch.float64, seed=11)
    C = torch.randn(38, 38, dtype=torch.float64, generator=_gen(12))
    grads = []
    for dev in ("cpu", DEV):
        a = A.to(dev).detach().clone().requires_grad_()  # a leaf on each device
        w, V = torch.linalg.eigh(a)
        loss = (w * torch.arange(38, dtype=torch.float64, device=dev)).sum() + (V * V * C.to(dev)).sum()
        loss.backward()
        grads.append(a.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-7, atol=1e-7)


def test_nonfinite_raises():
    A = _sym((35, 35), torch.float64)
    A[20, 3] = float("nan")
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.eigh(A.to(DEV))


def test_failure_to_converge_is_reported(monkeypatch):
    # QL giving up on an eigenvalue raises the CPU's LinAlgError (LAPACK's "failed to converge"), never a silent
    # answer; one sweep per eigenvalue cannot converge on a random matrix.
    monkeypatch.setenv("PYTORCH_OCL_EIGH_CROSSOVER", "2")
    monkeypatch.setenv("PYTORCH_OCL_EIGH_QL_SWEEPS", "1")
    a = torch.randn(2, 40, 40, dtype=torch.float64)
    a = (a + a.mT).to("ocl")
    with pytest.raises(torch.linalg.LinAlgError, match="failed to converge"):
        torch.linalg.eigh(a)
    with pytest.raises(torch.linalg.LinAlgError, match="failed to converge"):
        torch.linalg.eigh(a[0])
    monkeypatch.delenv("PYTORCH_OCL_EIGH_QL_SWEEPS")
    w, v = torch.linalg.eigh(a)
    assert torch.allclose(w.cpu(), torch.linalg.eigvalsh(a.cpu()), atol=1e-10)
