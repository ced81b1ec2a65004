"""The recursive LU panel of blocked getrf (csrc/aten/LinalgBlocked.cpp, lu_panel): each nb-column
panel is split in halves down to PYTORCH_OCL_LU_LEAF columns (a trsm and a GEMM between halves,
the one-work-group kernel on the leaves only). Against the CPU (LAPACK): the same pivots (partial
pivoting, the first largest |a| on ties), LU factors, info of singular inputs, on square, tall, wide,
batched, complex and float64/float32 matrices, several recursion levels and uneven splits."""
import pytest
import torch

import pytorch_ocl  # noqa: F401

DEV = "ocl:0"
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.complex64: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9), torch.complex128: dict(rtol=1e-9, atol=1e-9)}


@pytest.fixture
def small_panels(monkeypatch):
    # Panels of 12 columns in leaves of 3: halves 6 | 6, then 3 | 3 (two recursion levels); the last
    # panel of a 40-column matrix is 4 wide (2 | 2), and 13 columns give an uneven 6 | 7 split.
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "12")
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "3")


def _check(A, dtype, tol=TOL):
    """lu_factor_ex on ocl against the CPU: pivots and info exactly, LU within tol[dtype]."""
    LU, piv, info = torch.linalg.lu_factor_ex(A.to(DEV))
    LUc, pivc, infoc = torch.linalg.lu_factor_ex(A)
    assert torch.equal(piv.cpu(), pivc), (piv.cpu(), pivc)
    assert torch.equal(info.cpu(), infoc)
    torch.testing.assert_close(LU.cpu(), LUc, **tol[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_lu_panel_shapes(dtype, small_panels):
    torch.manual_seed(1)
    A = torch.randn(2, 40, 40, dtype=dtype)
    for M in (A, A[0, :, :27], A[:, :27, :], A[1, :, 1:14]):  # square batch, tall, wide batch, 40 x 13
        _check(M, dtype)
    _check(A.mT, dtype)  # a transposed (row-major) input
    _check(torch.randn(2, 3, 26, 26, dtype=dtype), dtype)  # two batch dims


def test_lu_panel_ties(small_panels):
    """Small integers: many columns with several rows of equal largest |a|; LAPACK takes the first."""
    torch.manual_seed(2)
    A = torch.randint(-2, 3, (3, 36, 36)).double()
    A[:, :, 0] = torch.where(torch.arange(36) % 2 == 0, 2.0, -2.0)  # every row ties in column 0
    _check(A, torch.float64)
    _check(A.float(), torch.float32)


def test_lu_panel_singular(small_panels):
    """Exact zero pivots inside a leaf, in a later panel's second half, and an all-zero matrix: info
    the first zero pivot (1-based, as LAPACK), the factorization going on past it."""
    torch.manual_seed(3)
    A = torch.randn(4, 30, 30, dtype=torch.float64)
    A[0, :, 4] = 0  # first panel, second leaf
    A[1, :, 20] = 0  # second panel, right half
    A[1, :, 22] = 0  # a later zero pivot: the first one counts
    A[2] = 0
    _check(A, torch.float64)
    _check(A[:, :, :17], torch.float64)  # tall with the zero columns


def test_lu_panel_default_sizes():
    """The default block (64) and leaf (8): a 150 x 150 solve and pivots past two panels."""
    torch.manual_seed(4)
    A = torch.randn(150, 150, dtype=torch.float64)
    _check(A, torch.float64)
    B = torch.randn(150, 2, dtype=torch.float64)
    torch.testing.assert_close(torch.linalg.solve(A.to(DEV), B.to(DEV)).cpu(), torch.linalg.solve(A, B))


@pytest.mark.parametrize("col_major", [False, True])
def test_gemm_between_blocks_of_one_matrix(col_major):
    """The GEMM runner writes c in place when its operands are provably disjoint blocks of c's own
    matrix (GemmRunner.cpp, disjoint_blocks) and through a temporary otherwise: both against the CPU,
    with blocks apart by rows only, by columns only, overlapping, and the operand being c itself."""
    torch.manual_seed(5)
    base = torch.randn(24, 30, dtype=torch.float64)
    cases = [  # (c rows, c cols, a rows, a cols, b rows, b cols) as slices
        ((10, 24), (8, 14), (10, 24), (0, 4), (0, 4), (8, 14)),  # A22 -= A21 A12: apart by rows / cols
        ((0, 6), (10, 20), (0, 6), (0, 6), (6, 12), (10, 20)),  # a apart by columns, b by rows
        ((4, 12), (4, 12), (0, 8), (0, 8), (0, 8), (4, 12)),  # overlapping blocks
        ((2, 10), (3, 11), (2, 10), (3, 11), (2, 10), (3, 11)),  # c = a = b
        ((0, 24), (20, 26), (0, 24), (0, 4), (20, 24), (20, 26)),  # full-height columns, b inside c
    ]
    for cr, cc, ar, ac, br, bc in cases:
        want = base.clone()
        got = (base.mT.contiguous().mT if col_major else base).to(DEV)
        blocks = [[m[slice(*r), slice(*q)] for r, q in ((cr, cc), (ar, ac), (br, bc))] for m in (want, got)]
        c, a, b = blocks[0]
        c.sub_(a @ b)  # the product first: the CPU's in-place addmm_ of overlapping blocks is not this
        c, a, b = blocks[1]
        c.addmm_(a, b, beta=1, alpha=-1)
        torch.testing.assert_close(got.cpu(), want)
