"""The linear-algebra kernel families under Oclgrind (scripts/oclgrind.sh runs this file with
test_oclgrind_kernels.py, whose helpers and settings it shares): tiny complex factorizations, the on-chip
kernels of the blocked factorizations, LDL, and the two-stage eigh's tridiagonal kernels."""
import torch

from test_oclgrind_kernels import _no_tuning, check  # noqa: F401  (_no_tuning: the autouse fixture)


def test_complex_linalg():
    """linalg.cl, linalg_qr.cl and linalg_jacobi.cl on complex T (float2): LU (pivot search in local
    memory), the triangular solves (plain and conjugated), laswp, Cholesky, Householder QR, and the
    Jacobi eigh and SVD with complex rotations (vectors compared up to phase: |V|, U @ Vh)."""
    a = torch.randn(2, 5, 5, dtype=torch.complex64) + 3 * torch.eye(5)
    b = torch.randn(2, 5, 2, dtype=torch.complex64)
    check(lambda a: torch.linalg.lu_factor(a).LU, a, backward=False)
    check(lambda a, b: torch.linalg.solve(a, b), a, b, backward=False)
    check(lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True), a, b, backward=False)
    check(lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a @ a.mH)), a, b, backward=False)
    check(lambda a: torch.linalg.qr(a[:, :, :3]), a, backward=False)
    check(lambda a: (lambda w, V: (w, V.abs()))(*torch.linalg.eigh(a + a.mH)), a, backward=False)
    check(lambda a: (lambda U, S, Vh: (S, U @ Vh))(*torch.linalg.svd(a[:, :, :3], full_matrices=False)), a,
          backward=False)


def test_linalg_on_chip(monkeypatch):
    """linalg_block.cl: blocked Cholesky's diagonal blocks factored and inverted in local memory (blocks of
    4 and a tail of 2, complex too: the conjugated products) and small triangular solves in local memory;
    linalg_lu_leaf.cl: LU leaves in registers."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "4")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")  # Oclgrind's device counts as a CPU: GPU paths forced
    for dt in (torch.float32, torch.complex64):
        a = torch.randn(2, 10, 10, dtype=dt)
        check(lambda a: torch.linalg.cholesky(a @ a.mH + 10 * torch.eye(10, device=a.device)), a, backward=False)
    # linalg_cholesky_block with several items (blocks of 9: 3 x 3 items, two columns a step and a last single
    # one, a tail of 3, the inverse's widths 1, 2, 4, 8 cut at 9), and failures inside a block at the first and
    # the second column of a step (info; the leading columns' inverse, zeros past them).
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "9")
    for dt in (torch.float32, torch.complex64):
        a = torch.randn(3, 21, 21, dtype=dt)
        a = a @ a.mH + 21 * torch.eye(21)
        a[1, 13, 13] = -1
        a[2, 14, 14] = -1
        check(lambda a: torch.linalg.cholesky_ex(a).info, a, backward=False)
        check(lambda a: torch.linalg.cholesky(a[0].mT), a, backward=False)
    # LU leaves in registers (linalg_lu_leaf.cl): a 140 x 10 matrix in panels of 8, leaves of 4 (W = 4: 16
    # work-items of up to 16 rows) and of 8 (W = 8: 32 items of up to 8 rows), then whole panels as leaves
    # (W = 16: 64 items of up to 4 rows, the argmax's two levels); ties in column 0 (the first row wins).
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")
    a = torch.randn(140, 10)
    a[:, 0] = torch.where(torch.arange(140) % 3 == 0, 1.0, -1.0)
    for leaf in ("4", "8"):
        monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", leaf)
        check(lambda a: torch.linalg.lu_factor(a), a, backward=False)
    monkeypatch.delenv("PYTORCH_OCL_LU_LEAF")
    check(lambda a: torch.linalg.lu_factor(a), a, backward=False)
    # linalg_wy_factor: blocked QR's T per panel (panels of 4; a zero column: tau = 0 cut out).
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "4")
    for dt in (torch.float32, torch.complex64):
        q = torch.randn(11, 9, dtype=dt)
        q[5:, 5] = 0
        check(lambda q: torch.geqrf(q), q, backward=False)
    # linalg_trsm_local: the small triangular solves in local memory (plain, unit, conjugated).
    for dt in (torch.float32, torch.complex64):
        t = torch.randn(10, 10, dtype=dt) + 4 * torch.eye(10)
        b = torch.randn(10, 5, dtype=dt)
        check(lambda t, b: torch.linalg.solve_triangular(t, b, upper=True), t, b, backward=False)
        check(lambda t, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(t), b, adjoint=True), t, b, backward=False)


def test_qr_leaf(monkeypatch):
    """linalg_qr_leaf.cl: the recursive QR panel's leaves in registers, a 50 x 12 matrix in panels of 8 split
    into leaves of 4 (W = 4: 4 work-items of up to 16 rows), then a whole panel as one leaf (W = 8), real and
    complex; a column zero below the diagonal (tau = 0); then panels of 16 as one leaf (W = 16)."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")
    for dt in (torch.float32, torch.complex64):
        a = torch.randn(50, 12, dtype=dt)
        a[3:, :3] = 0
        monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "4")
        check(lambda a: torch.geqrf(a), a, backward=False)
        monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "16")
        check(lambda a: torch.geqrf(a), a, backward=False)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "16")
    check(lambda a: torch.geqrf(a), torch.randn(40, 20), backward=False)


def test_ldl():
    """linalg_ldl.cl: Bunch-Kaufman with 1x1 and 2x2 blocks and interchanges (symmetric real, Hermitian
    complex; the pivot decision by one item, the swaps and rank updates by the group), then the
    per-right-hand-side solve."""
    for dt, herm in ((torch.float32, False), (torch.complex64, True)):
        a = torch.randn(2, 5, 5, dtype=dt)
        a = a + (a.mH if herm else a.mT)
        a.diagonal(dim1=-2, dim2=-1).mul_(1e-2)
        b = torch.randn(2, 5, 3, dtype=dt)
        check(lambda a: torch.linalg.ldl_factor_ex(a, hermitian=herm), a, backward=False)
        check(lambda a, b: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a, hermitian=herm), b, hermitian=herm),
              a, b, backward=False)


def test_eigh_tridiag(monkeypatch):
    """linalg_tridiag.cl: the reduction's column, row-dot and W kernels over two panels (a ragged last one), then
    implicit QL rotating the 7 rows of Q in two groups of 4 (each repeating the sweeps), and eigvalsh's bisection,
    batched."""
    monkeypatch.setenv("PYTORCH_OCL_EIGH_CROSSOVER", "2")
    monkeypatch.setenv("PYTORCH_OCL_EIGH_QL_ROWS", "4")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "4")
    a = torch.randn(2, 7, 7)
    a = a + a.mT
    check(lambda a: (lambda w, V: (w, (a @ V - V * w.unsqueeze(-2)).abs().amax() < 1e-4))(*torch.linalg.eigh(a)), a,
          backward=False)
    check(lambda a: torch.linalg.eigvalsh(a), a, backward=False)


def test_lu_fused_step(monkeypatch):
    """linalg_block.cl's linalg_lu_swap_solve (a blocked LU step's interchanges over the other columns and U12
    in one launch: columns left and right of the panel, batched, a wide matrix whose last panel has columns
    right of it only) and the leaves' swaps over the rest of their panel (linalg_lu_leaf in registers and
    linalg.cl's linalg_lu, the U12 solve of the split they end): panels of 6 in leaves of 3, real and complex;
    pivots from a later panel's rows."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "6")
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "3")
    for on_chip in ("1", "0"):
        monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
        for dt in (torch.float32, torch.complex64):
            a = torch.randn(2, 15, 17, dtype=dt)
            a[:, 14, 0] = 20  # column 0's pivot in the third panel's rows
            check(lambda a: torch.linalg.lu_factor(a), a, backward=False)
            check(lambda a: torch.linalg.lu_factor(a), a[0, :13, :].mT, backward=False)
    # linalg_qr.cl's linalg_unit_lower (blocked orgqr's V per panel) and linalg_geqrf writing V with its zeros
    # above (the global-memory leaves of the recursive QR panel): Q of panels of 6 in leaves of 3, batched.
    monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "3")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "0")
    for dt in (torch.float32, torch.complex64):
        check(lambda q: torch.linalg.qr(q), torch.randn(2, 14, 9, dtype=dt), backward=False)
    # linalg_wy_factor's products (T^H Y in geqrf's updates, T Y in orgqr's), over two groups of Y's columns
    # (a 70 x 70 complete Q: orgqr's Y 70 wide; a 6 x 70 matrix: geqrf's trailing 66 columns).
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")
    for dt in (torch.float32, torch.complex64):
        check(lambda q: torch.linalg.qr(q, mode="complete"), torch.randn(70, 5, dtype=dt), backward=False)
        check(lambda q: torch.geqrf(q), torch.randn(6, 70, dtype=dt), backward=False)
