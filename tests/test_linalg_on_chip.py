"""The on-chip kernels of the blocked factorizations (dlprim/kernels/linalg_block.cl, linalg_lu_leaf.cl): Cholesky's diagonal
blocks factored and inverted in local memory by one kernel that also records info (csrc/aten/LinalgBlocked.cpp,
blocked_cholesky_on_chip), and the recursive LU panel's leaves factored in registers (linalg_lu_leaf, W = 4, 8 or 16; on
CPU devices only with PYTORCH_OCL_LINALG_ON_CHIP=1, which these tests set). Against the CPU (LAPACK): factors
of sizes past one block and not a multiple of it, upper and lower, batched, float32/float64/complex, transposed
input, info of matrices that fail in the first, a middle and the last block; LU pivots exactly the CPU's (ties:
the first row), leaves of several rows per work-item and a two-level argmax; small triangular solves in local
memory; blocked QR's compact-WY T in one kernel; and the same results with PYTORCH_OCL_LINALG_ON_CHIP=0 (the
global-memory path)."""
import pytest
import torch

import pytorch_ocl  # noqa: F401
from test_linalg_lu_panel import _check as _check_lu_factor

DEV = "ocl:0"
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.complex64: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-10, atol=1e-10), torch.complex128: dict(rtol=1e-10, atol=1e-10)}


def spd(*shape, dtype):
    n = shape[-1]
    a = torch.randn(*shape, dtype=dtype)
    return a @ a.mH / n + torch.eye(n, dtype=dtype)


@pytest.fixture(autouse=True)
def _on_chip(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")


@pytest.mark.parametrize("on_chip", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_cholesky_blocks(dtype, on_chip, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "16")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    torch.manual_seed(0)
    S = spd(2, 45, 45, dtype=dtype)  # blocks 16, 16, 13
    for upper in (False, True):
        got = torch.linalg.cholesky(S.to(DEV), upper=upper).cpu()
        torch.testing.assert_close(got, torch.linalg.cholesky(S, upper=upper), **TOL[dtype])
    S1 = spd(48, 48, dtype=dtype)  # exactly three blocks, one matrix, row-major view of a transpose
    torch.testing.assert_close(torch.linalg.cholesky(S1.to(DEV).mT).cpu(), torch.linalg.cholesky(S1.mT),
                               **TOL[dtype])


@pytest.mark.parametrize("on_chip", ["1", "0"])
def test_cholesky_info(on_chip, monkeypatch):
    """info of the first failing leading minor: in the first block, a middle one, the last one, and with a
    later second failure (the first counts); good matrices of the batch unaffected."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    torch.manual_seed(1)
    S = spd(5, 30, 30, dtype=torch.float64)
    S[0, 3, 3] = -1.0
    S[1, 12, 12] = -5.0
    S[1, 25, 25] = -5.0
    S[2, 29, 29] = 0.0
    S[3, 8, 8] = float("nan")
    L, info = torch.linalg.cholesky_ex(S.to(DEV))
    Lc, infoc = torch.linalg.cholesky_ex(S)
    assert info.tolist() == infoc.tolist()
    torch.testing.assert_close(L[4].cpu(), Lc[4])
    with pytest.raises(torch.linalg.LinAlgError, match="order 4"):
        torch.linalg.cholesky(S[0].to(DEV))


def test_cholesky_default_block_info_out():
    """The default block (64): 150 = 64 + 64 + 22, float32, and an info out= that is not contiguous."""
    torch.manual_seed(2)
    S = spd(3, 150, 150, dtype=torch.float32)
    S[1, 100, 100] = -1
    L = torch.empty(3, 150, 150, device=DEV)
    info = torch.empty(3, 2, dtype=torch.int32, device=DEV)[:, 0]
    torch.linalg.cholesky_ex(S.to(DEV), out=(L, info))
    Lc, infoc = torch.linalg.cholesky_ex(S)
    assert info.tolist() == infoc.tolist() == [0, 101, 0]
    torch.testing.assert_close(L[0].cpu(), Lc[0], rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(L[2].cpu(), Lc[2], rtol=1e-4, atol=1e-4)


def test_cholesky_backward_blocked(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    torch.manual_seed(3)
    S = spd(20, 20, dtype=torch.float64).requires_grad_()
    Sd = S.detach().to(DEV).requires_grad_()
    g = torch.randn(20, 20, dtype=torch.float64).tril()
    torch.linalg.cholesky(S).backward(g)
    torch.linalg.cholesky(Sd).backward(g.to(DEV))
    torch.testing.assert_close(Sd.grad.cpu(), S.grad)


def _check_lu(A, dtype):
    _check_lu_factor(A, dtype, TOL)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_lu_leaves(dtype, monkeypatch):
    """Leaves of 3 (the 4-column kernel) in panels of 12; then the defaults (blocks of 64, leaves of 16):
    150 rows are 64 items of up to 3 rows and a two-level argmax; tall, wide and batched."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "12")
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "3")
    torch.manual_seed(4)
    A = torch.randn(2, 40, 40, dtype=dtype)
    for M in (A, A[0, :, :27], A[:, :27, :], A.mT):
        _check_lu(M, dtype)
    monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK")
    monkeypatch.delenv("PYTORCH_OCL_LU_LEAF")
    B = torch.randn(150, 150, dtype=dtype)
    _check_lu(B, dtype)
    if dtype == torch.float64:
        _check_lu(torch.randn(2, 200, 70, dtype=dtype), dtype)


def test_lu_leaf_ties_and_singular(monkeypatch):
    """Small integers (many equal largest |a| across work-items and within one item's rows: the first row
    wins), exact zero pivots inside a leaf and later ones (info the first), an all-zero matrix."""
    torch.manual_seed(5)
    A = torch.randint(-2, 3, (3, 150, 150)).double()
    A[:, :, 0] = torch.where(torch.arange(150) % 2 == 0, 2.0, -2.0)
    A[1, :, 5] = 0
    A[1, :, 90] = 0
    A[2] = 0
    _check_lu(A, torch.float64)
    # float32 at 150: rounding of the updated columns (not exact there) already picks other near-tied rows than
    # LAPACK's order of operations, on the global-memory path too; 36 columns stay exact.
    _check_lu(A[:, :36, :36].float(), torch.float32)
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "8")
    _check_lu(A[:2, :, :100], torch.float64)


def test_lu_leaf_nonfinite_matches_global_kernel(monkeypatch):
    """NaN and inf entries: the register leaf picks the pivots the global-memory kernel picks (the same
    strict > scan in row order), so both paths agree on every output."""
    torch.manual_seed(6)
    A = torch.randn(2, 100, 100, dtype=torch.float64)
    A[0, 7, 3] = float("nan")
    A[0, :, 20] = float("nan")
    A[1, 50, 1] = float("inf")
    outs = []
    for oc in ("1", "0"):
        monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", oc)
        outs.append([t.cpu() for t in torch.linalg.lu_factor_ex(A.to(DEV))])
    for x, y in zip(*outs):
        torch.testing.assert_close(x, y, equal_nan=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_triangular_solves_in_local_memory(dtype, monkeypatch):
    """linalg_trsm_local: lower / upper, unit, left and right (transposed A), batched, a non-contiguous right
    side, 64 x 64 (the largest on chip) and wider right sides (32-column chunks), the adjoint LU solve (A read
    conjugated), and blocked solves (blocks of 16) whose diagonal solves take it."""
    torch.manual_seed(7)
    A = torch.randn(2, 64, 64, dtype=dtype) + 8 * torch.eye(64, dtype=dtype)
    B = torch.randn(2, 64, 100, dtype=dtype)
    for upper in (False, True):
        for unit in (False, True):
            for left in (True, False):
                a, b = (A[:, :37, :37], B[:, :37, 1::3]) if left else (A[:, :23, :23], B[:, 3:40, :23].mT.mT)
                want = torch.linalg.solve_triangular(a, b, upper=upper, unitriangular=unit, left=left)
                got = torch.linalg.solve_triangular(a.to(DEV), b.to(DEV), upper=upper, unitriangular=unit, left=left)
                # unit: the random off-diagonal part grows the solution (to ~1e5): errors relative to its size
                tol = dict(rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * want.abs().max().item())
                torch.testing.assert_close(got.cpu(), want, **tol)
    want = torch.linalg.solve_triangular(A[0], B[0], upper=False)
    torch.testing.assert_close(torch.linalg.solve_triangular(A[0].to(DEV), B[0].to(DEV), upper=False).cpu(), want,
                               **TOL[dtype])
    LU, piv = torch.linalg.lu_factor(A[:, :30, :30])
    rhs = B[:, :30, :5]
    want = torch.linalg.lu_solve(LU, piv, rhs, adjoint=True)
    got = torch.linalg.lu_solve(LU.to(DEV), piv.to(DEV), rhs.to(DEV), adjoint=True)
    torch.testing.assert_close(got.cpu(), want, **TOL[dtype])
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "16")
    want = torch.linalg.solve_triangular(A[:, :45, :45], B[:, :45, :7], upper=True)
    got = torch.linalg.solve_triangular(A[:, :45, :45].to(DEV), B[:, :45, :7].to(DEV), upper=True)
    torch.testing.assert_close(got.cpu(), want, **TOL[dtype])


@pytest.mark.parametrize("on_chip", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
def test_blocked_qr_wy_factor(dtype, on_chip, monkeypatch):
    """linalg_wy_factor (blocked QR's T per panel in one kernel) against the CPU and the launch-by-launch path:
    panels of 8 over 30 columns, batched, a column already zero below the diagonal (tau = 0), Q and R."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    torch.manual_seed(8)
    A = torch.randn(2, 37, 30, dtype=dtype)
    A[1, 12:, 12] = 0
    QR, tau = torch.geqrf(A.to(DEV))
    QRc, tauc = torch.geqrf(A)
    torch.testing.assert_close(QR.cpu(), QRc, **TOL[dtype])
    torch.testing.assert_close(tau.cpu(), tauc, **TOL[dtype])
    Q, R = torch.linalg.qr(A.to(DEV))
    torch.testing.assert_close((Q @ R).cpu(), A, **TOL[dtype])
    torch.testing.assert_close(torch.linalg.householder_product(QR, tau).cpu(),
                               torch.linalg.householder_product(QRc, tauc), **TOL[dtype])
