"""The recursive Householder QR panel (csrc/aten/LinalgBlocked.cpp, qr_panel): each nb-column panel of blocked
geqrf factored by halves, the left half's block reflector applied to the right half on the GEMM, down to leaves
of a few columns that run one work-group kernel: in registers (dlprim/kernels/linalg_qr_leaf.cl, W = 4, 8 or 16;
on CPU devices only with PYTORCH_OCL_LINALG_ON_CHIP=1) or the global-memory linalg_geqrf (=0). Against the
CPU's LAPACK: geqrf's (a, tau) and Q, R, real and complex, float32/float64, tall / wide / square / batched,
sizes past the panel and not multiples of it, leaves of 3 (the 8-column program) and the default 16, several
rows per work-item; tau = 0 for columns already zero; rank-deficient matrices (Q R = A, Q orthonormal); the two
leaf kernels agree."""
import pytest
import torch

import pytorch_ocl  # noqa: F401

DEV = "ocl:0"
TOL = {torch.float32: dict(rtol=2e-4, atol=2e-4), torch.complex64: dict(rtol=2e-4, atol=2e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9), torch.complex128: dict(rtol=1e-9, atol=1e-9)}


def _randn(shape, dtype, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _check_geqrf(A, dtype):
    QR, tau = torch.geqrf(A.to(DEV))
    QRc, tauc = torch.geqrf(A)
    torch.testing.assert_close(QR.cpu(), QRc, **TOL[dtype])
    torch.testing.assert_close(tau.cpu(), tauc, **TOL[dtype])
    return QR, tau


@pytest.mark.parametrize("on_chip", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_qr_panel_leaves(dtype, on_chip, monkeypatch):
    """Panels of 12 split into leaves of 3 (6 -> 3 + 3), tall, wide, batched and a transposed view; then the
    defaults (panels of 64, leaves of 16) at 150 x 140 (a ragged last panel, 16-column leaves of 150 rows:
    several rows per work-item), with Q."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "12")
    monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "3")
    A = _randn((2, 41, 29), dtype)
    for M in (A, A[0, :, :25].mT, A[:, :27, :]):
        _check_geqrf(M, dtype)
    monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK")
    monkeypatch.delenv("PYTORCH_OCL_QR_LEAF")
    B = _randn((150, 140), dtype, 1)
    _check_geqrf(B, dtype)
    Q, R = torch.linalg.qr(B.to(DEV))
    Qc, Rc = torch.linalg.qr(B)
    torch.testing.assert_close(Q.cpu(), Qc, **TOL[dtype])
    torch.testing.assert_close(R.cpu(), Rc, **TOL[dtype])
    if dtype == torch.float64:
        _check_geqrf(_randn((2, 200, 70), dtype, 2), dtype)


@pytest.mark.parametrize("on_chip", ["1", "0"])
def test_qr_panel_zero_columns_and_rank_deficient(on_chip, monkeypatch):
    """Columns zero below the diagonal inside a leaf, at a leaf's first column and in the right half of a split
    (tau exactly 0, as LAPACK's); a zero matrix; rank-deficient matrices (repeated and zero columns: the reflectors
    after the rank depend on rounding, so Q R = A and Q^H Q = I are checked, and the columns before it)."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "16")
    monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "4")
    for dtype in (torch.float64, torch.complex64):
        A = _randn((2, 40, 20), dtype)
        A[0, 3:, :3] = 0  # block upper triangular: column 2 stays zero below the diagonal (inside a leaf)
        A[0, 5:, :5] = 0  # column 4: a leaf's first column
        A[1, 9:, :9] = 0  # column 8: the right half of the 16-column panel's split
        _, tau = _check_geqrf(A, dtype)
        if not dtype.is_complex:  # (complex: tau = 0 only with a real diagonal entry, as ?larfg)
            assert tau[0, 2] == 0 and tau[0, 4] == 0 and tau[1, 8] == 0
        _check_geqrf(torch.zeros(30, 20, dtype=dtype), dtype)
        D = _randn((60, 30), dtype, 3)
        D[:, 10] = D[:, 1]
        D[:, 20:] = 0
        Q, R = torch.linalg.qr(D.to(DEV))
        torch.testing.assert_close((Q @ R).cpu(), D, **TOL[dtype])
        torch.testing.assert_close((Q.mH @ Q).cpu(), torch.eye(30, dtype=dtype), **TOL[dtype])
        torch.testing.assert_close(R[:10].cpu(), torch.linalg.qr(D)[1][:10], **TOL[dtype])


def test_qr_leaf_kernels_agree(monkeypatch):
    """The register leaf and the global-memory leaf give the same factors up to rounding (float64, leaves of 8
    and 16 over 300 rows, batched: a tall and skinny matrix, one panel, takes the recursive panel too), and
    householder_product consumes them as the CPU's; the whole panel in one kernel (leaf 64) as well."""
    A = _randn((3, 300, 64), torch.float64, 4)
    outs = []
    for oc in ("1", "0"):
        monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", oc)
        for leaf in ("8", "16", "64"):
            monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", leaf)
            outs.append([t.cpu() for t in torch.geqrf(A.to(DEV))])
    for o in outs[1:]:
        for x, y in zip(o, outs[0]):
            torch.testing.assert_close(x, y, rtol=1e-10, atol=1e-10)
    QRc, tauc = torch.geqrf(A)
    torch.testing.assert_close(torch.linalg.householder_product(outs[0][0], outs[0][1]),
                               torch.linalg.householder_product(QRc, tauc), rtol=1e-9, atol=1e-9)
