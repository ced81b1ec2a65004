"""The launches of one blocked LU / QR panel step (csrc/aten/LinalgBlocked.cpp). LU: the leaves write absolute
pivots, swap the rest of their panel's rows themselves, keep the first failure in info and solve the U12 of the
split they end (no laswp, pivot add, trsm or info merge in the recursive panel), and one linalg_lu_swap_solve
per step applies the panel's interchanges to every other column and solves U12 (no laswp, triangular inverse,
GEMM and copy for it). QR: the leaves write the panel's V with its zeros (no zero fill per panel), the WY
kernel multiplies by T itself, orgqr's V is one launch. Against the CPU (LAPACK): pivots and info exactly,
factors within rounding, with both leaf kernels (registers: PYTORCH_OCL_LINALG_ON_CHIP=1; global memory: =0),
square, tall, wide, batched, singular, pivots from rows of later panels, transposed inputs; then the launch
counts by kernel."""
import pytest
import torch

import pytorch_ocl  # noqa: F401
import pytorch_ocl.profiler

DEV = "ocl:0"
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.complex64: dict(rtol=1e-4, atol=1e-4),
       torch.float64: dict(rtol=1e-9, atol=1e-9), torch.complex128: dict(rtol=1e-9, atol=1e-9)}


def _check_lu(A, dtype):
    LU, piv, info = torch.linalg.lu_factor_ex(A.to(DEV))
    LUc, pivc, infoc = torch.linalg.lu_factor_ex(A)
    assert torch.equal(piv.cpu(), pivc), (piv.cpu(), pivc)
    assert torch.equal(info.cpu(), infoc), (info.cpu(), infoc)
    torch.testing.assert_close(LU.cpu(), LUc, **TOL[dtype])


def _far_pivots(A):
    """Every column's largest entry in a row of the last panel (rows from the bottom up): each panel's first
    interchanges reach rows several panels below, and the swap-solve moves them across the matrix."""
    A = A.clone()
    m, k = A.shape[-2], min(A.shape[-2:])
    for j in range(0, k, 2):
        A[..., m - 1 - (j % max(m // 3, 1)), j] = 50 + j
    return A


@pytest.mark.parametrize("on_chip", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64, torch.complex128])
def test_lu_fused_steps(dtype, on_chip, monkeypatch):
    """Panels of 12 in leaves of 3 (6 -> 3 + 3, the 13-column panel 6 | 7): square and batched, tall, wide
    (the last panel's swap-solve on the columns right of it only), two batch dims, a transposed input, and
    pivots from far below."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "12")
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "3")
    torch.manual_seed(11)
    A = torch.randn(2, 41, 41, dtype=dtype)
    for M in (A, A[0, :, :29], A[:, :26, :], A[1, :, 2:15], A.mT, _far_pivots(A)):
        _check_lu(M, dtype)
    _check_lu(torch.randn(2, 2, 27, 30, dtype=dtype), dtype)


@pytest.mark.parametrize("on_chip", ["1", "0"])
def test_lu_fused_steps_singular_and_ties(on_chip, monkeypatch):
    """Exact zero pivots in a first leaf, a later leaf and a later panel (info the first), an all-zero matrix,
    ties between rows of different panels (the first row wins), the default block and leaf sizes (panels of
    64, recursion down to 16 columns) with rows past two panels, and a solve through the factors."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "8")
    torch.manual_seed(12)
    A = torch.randn(4, 30, 30, dtype=torch.float64)
    A[0, :, 1] = 0
    A[1, :, 5] = 0
    A[1, :, 21] = 0
    A[2] = 0
    A[3, :, 0] = torch.where(torch.arange(30) % 2 == 0, 2.0, -2.0)  # every row ties in column 0
    _check_lu(A, torch.float64)
    _check_lu(A[:, :, :19], torch.float64)
    _check_lu(torch.randint(-2, 3, (2, 26, 26)).double(), torch.float64)
    monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK")
    B = _far_pivots(torch.randn(150, 150, dtype=torch.float64))
    _check_lu(B, torch.float64)
    rhs = torch.randn(150, 3, dtype=torch.float64)
    torch.testing.assert_close(torch.linalg.solve(B.to(DEV), rhs.to(DEV)).cpu(), torch.linalg.solve(B, rhs))


def _dirty_allocator():
    """Cached device blocks full of NaN, so a V that is not written where it should be zero shows."""
    x = torch.full((1 << 16,), float("nan"), device=DEV, dtype=torch.float64)
    del x


@pytest.mark.parametrize("on_chip", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128])
def test_qr_panel_v_without_zero_fill(dtype, on_chip, monkeypatch):
    """The panel's V starts uninitialized: the leaves write its zeros above them (registers) or the tril pass
    does (global-memory leaves), over panels of 12 in leaves of 3, batched, tall and wide; R, tau and Q."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", on_chip)
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "12")
    monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "3")
    A = torch.randn((2, 41, 29), dtype=dtype, generator=torch.Generator().manual_seed(13))
    for M in (A, A[:, :20, :]):
        _dirty_allocator()
        QR, tau = torch.geqrf(M.to(DEV))
        QRc, tauc = torch.geqrf(M)
        tol = TOL[dtype] if dtype != torch.float32 else dict(rtol=2e-4, atol=2e-4)
        torch.testing.assert_close(QR.cpu(), QRc, **tol)
        torch.testing.assert_close(tau.cpu(), tauc, **tol)
        _dirty_allocator()
        Q, R = torch.linalg.qr(M.to(DEV))
        torch.testing.assert_close((Q @ R).cpu(), M, **tol)


def _launches(fn):
    """Kernel launches by name, and "(fills, copies)": the buffer fills and copies (not kernels)."""
    before = pytorch_ocl._C.host_counters()["launches"]  # kernels, buffer fills and copies
    with pytorch_ocl.profiler.profile() as prof:
        fn()
        torch.ocl.synchronize()
    calls = {r["kernel"]: r["calls"] for r in prof.summary()}
    calls["(fills, copies)"] = pytorch_ocl._C.host_counters()["launches"] - before - sum(calls.values())
    return calls


def test_launches_per_step(monkeypatch):
    """One blocked LU of 96 x 96 in panels of 16 (leaves of 8: one split a panel): per step two leaves (the
    first solving the split's U12) and one GEMM inside the panel, one swap-solve and one trailing GEMM; no
    laswp, trsm, triangular inverse, pivot offsets or info merge. QR: no zero fill of V per panel, T's product
    in the WY kernel; orgqr: V in one launch per panel."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "16")
    monkeypatch.setenv("PYTORCH_OCL_LU_LEAF", "8")
    a = torch.randn(96, 96, dtype=torch.float64).to(DEV)
    torch.linalg.lu_factor(a)  # builds
    calls = _launches(lambda: torch.linalg.lu_factor(a))
    steps = 96 // 16
    assert calls.get("linalg_lu_swap_solve") == steps, calls
    assert calls.get("linalg_lu_leaf") == 2 * steps, calls
    assert not any("laswp" in k or "trsm" in k for k in calls), calls
    # per step: 2 leaves + GEMM (panel) + swap-solve + GEMM (trailing, not after the last panel); once:
    # info's zero fill, the input's copy into the result and lu_factor's info check (before: 94 kernels,
    # laswps, trsms, pivot adds, the inverse of L11 and a copy per step, the info merge)
    assert sum(calls.values()) <= 5 * steps + 3, calls
    monkeypatch.setenv("PYTORCH_OCL_QR_LEAF", "8")
    torch.geqrf(a)
    calls = _launches(lambda: torch.geqrf(a))
    assert calls.get("linalg_geqrf_leaf") == 2 * steps, calls
    # the one buffer copy: the input into geqrf's result (before: one zero fill of V per panel too)
    assert calls["(fills, copies)"] <= 1 and "fill" not in calls and "dl_positional" not in calls, calls
    # per step: 2 leaves, 2 block-reflector updates (the split's, the trailing one: V^H V, V^H rest, the WY
    # kernel with T^H's product, one GEMM each) (before: 12 and a zero fill a step)
    assert sum(calls.values()) <= 10 * steps + 1, calls
    # orgqr: each panel's V in one launch (before: a tril and a diagonal fill)
    QR, tau = torch.geqrf(a)
    calls = _launches(lambda: torch.linalg.householder_product(QR, tau))
    assert calls.get("linalg_unit_lower") == steps and "dl_positional" not in calls, calls
