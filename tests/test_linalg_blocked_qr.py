"""Blocked Householder QR (LinalgBlocked.cpp: geqrf and orgqr by panels, compact WY updates on the GEMM)
against the CPU's LAPACK: R, tau, Q, householder_product and ormqr equal up to rounding, with
PYTORCH_OCL_LINALG_BLOCK small enough that small matrices take the blocked path (several panels, a
ragged last one), real and complex, tall / wide / square / batched, non-contiguous inputs, reflectors
with tau = 0 (columns already zero below the diagonal: H = I, cut out of the WY factor), and qr's
backward."""
import pytest
import torch

import pytorch_ocl  # noqa: F401

DTYPES = [torch.float32, torch.float64, torch.complex64]
SHAPES = [(13, 13), (3, 20, 9), (2, 9, 21), (2, 1, 33, 17)]


def _tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype in (torch.float32, torch.complex64) else dict(rtol=1e-9, atol=1e-9)


def _randn(shape, dtype, seed=0):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("nb", [4, 8])
@pytest.mark.parametrize("dtype", DTYPES)
def test_blocked_qr_matches_cpu(nb, dtype, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", str(nb))
    tol = _tol(dtype)
    for shape in SHAPES:
        A = _randn(shape, dtype)
        for mode in ("reduced", "complete", "r"):
            Q, R = torch.linalg.qr(A.to("ocl"), mode=mode)
            Qc, Rc = torch.linalg.qr(A, mode=mode)
            torch.testing.assert_close(R.cpu(), Rc, **tol)
            if mode != "r":
                torch.testing.assert_close(Q.cpu(), Qc, **tol)
        QR, tau = torch.geqrf(A.to("ocl"))
        QRc, tauc = torch.geqrf(A)
        torch.testing.assert_close(QR.cpu(), QRc, **tol)
        torch.testing.assert_close(tau.cpu(), tauc, **tol)
        if shape[-2] >= shape[-1]:
            torch.testing.assert_close(torch.linalg.householder_product(QR, tau).cpu(),
                                       torch.linalg.householder_product(QRc, tauc), **tol)
        C = _randn(shape[:-2] + (shape[-2], 5), dtype, seed=1)
        for transpose in (False, True):
            torch.testing.assert_close(torch.ormqr(QR, tau, C.to("ocl"), transpose=transpose).cpu(),
                                       torch.ormqr(QRc, tauc, C, transpose=transpose), **tol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex64])
def test_blocked_qr_zero_reflectors_and_views(dtype, monkeypatch):
    """Columns already zero below the diagonal give tau = 0 (in the first panel, a middle one and
    all of a triangular matrix); transposed and sliced inputs go through the same path."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "4")
    tol = _tol(dtype)
    A = _randn((2, 15, 11), dtype)
    A[..., 1:, 0] = 0  # tau_0 = 0 (complex: with a real diagonal entry, as ?larfg)
    A[..., 0, 0] = 2.0
    A[0, 6:, :6] = 0  # block upper triangular: the reflectors 0..5 stay in rows 0..5, tau_5 = 0 (real)
    cases = [A, torch.triu(_randn((12, 12), dtype, 2)), _randn((11, 15), dtype, 3).mT,
             _randn((20, 30), dtype, 4)[2:17:1, ::2]]
    for M in cases:
        QR, tau = torch.geqrf(M.to("ocl"))
        QRc, tauc = torch.geqrf(M)
        torch.testing.assert_close(tau.cpu(), tauc, **tol)
        torch.testing.assert_close(QR.cpu(), QRc, **tol)
        Q, R = torch.linalg.qr(M.to("ocl"))
        Qc, Rc = torch.linalg.qr(M)
        torch.testing.assert_close(Q.cpu(), Qc, **tol)
        torch.testing.assert_close(R.cpu(), Rc, **tol)
    tauc = torch.geqrf(A)[1]
    assert (tauc[:, 0] == 0).all() and (dtype.is_complex or tauc[0, 5] == 0)  # the cases are reached


def test_blocked_qr_backward(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "4")
    A = _randn((2, 14, 10), torch.float64)
    gQ, gR = _randn((2, 14, 10), torch.float64, 1), _randn((2, 10, 10), torch.float64, 2)
    grads = []
    for dev in ("cpu", "ocl"):
        a = A.clone().to(dev).requires_grad_() if dev == "cpu" else A.to(dev).detach().requires_grad_()
        Q, R = torch.linalg.qr(a)
        torch.autograd.backward((Q, R), (gQ.to(dev), gR.to(dev)))
        grads.append(a.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-8, atol=1e-8)


def test_qr_blocked_at_default_block():
    """Past the default block (64): the blocked path without the environment variable."""
    A = _randn((150, 140), torch.float32)
    Q, R = torch.linalg.qr(A.to("ocl"))
    Qc, Rc = torch.linalg.qr(A)
    torch.testing.assert_close(R.cpu(), Rc, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(Q.cpu(), Qc, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("lanes", ["1", "4", "32"])
def test_geqrf_lanes(lanes, monkeypatch):
    """linalg_geqrf's reflector update with 1 work-item per column (CPU devices' default), a few, and 32
    (GPUs' default: a tree sum per column): the same R, tau and Q, real and complex, tall and wide."""
    monkeypatch.setenv("PYTORCH_OCL_GEQRF_LANES", lanes)
    for dtype in (torch.float64, torch.complex64):
        tol = _tol(dtype)
        for shape in [(3, 40, 9), (7, 30), (70, 66)]:
            A = _randn(shape, dtype, 5)
            QR, tau = torch.geqrf(A.to("ocl"))
            QRc, tauc = torch.geqrf(A)
            torch.testing.assert_close(QR.cpu(), QRc, **tol)
            torch.testing.assert_close(tau.cpu(), tauc, **tol)
            torch.testing.assert_close(torch.linalg.qr(A.to("ocl"))[0].cpu(), torch.linalg.qr(A)[0], **tol)
