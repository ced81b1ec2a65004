"""The blocked factorizations past the default block (64) on one matrix, where the triangular solves and row
interchanges on many columns run as a batch of 32-column chunks (LinalgCommon.cpp column_chunks) and the trailing
updates as one GEMM with beta 1, alpha -1 (LinalgBlocked.cpp sub_product): LU, Cholesky (lower and upper), solve
(plain, adjoint, left-transposed views), inv, lu_solve, cholesky_solve and triangular solves with wide right-hand
sides (a multiple of 32 columns and a ragged tail), real and complex, against the CPU."""
import pytest
import torch

import pytorch_ocl  # noqa: F401


def _randn(shape, dtype, seed):
    return torch.randn(shape, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _tol(dtype):
    return dict(rtol=1e-3, atol=1e-3) if dtype in (torch.float32, torch.complex64) else dict(rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_wide_factorizations_match_cpu(dtype):
    tol = _tol(dtype)
    n = 150
    A = _randn((n, n), dtype, 0) + n ** 0.5 * torch.eye(n, dtype=dtype)
    S = A @ A.mH / n + torch.eye(n, dtype=dtype)
    B = _randn((n, 100), dtype, 1)  # 3 chunks of 32 and a tail of 4
    Ao, So, Bo = A.to("ocl"), S.to("ocl"), B.to("ocl")
    LU, piv = torch.linalg.lu_factor(Ao)
    LUc, pivc = torch.linalg.lu_factor(A)
    assert torch.equal(piv.cpu(), pivc)
    torch.testing.assert_close(LU.cpu(), LUc, **tol)
    for upper in (False, True):
        torch.testing.assert_close(torch.linalg.cholesky(So, upper=upper).cpu(), torch.linalg.cholesky(S, upper=upper),
                                   **tol)
    torch.testing.assert_close(torch.linalg.solve(Ao, Bo).cpu(), torch.linalg.solve(A, B), **tol)
    torch.testing.assert_close(torch.linalg.solve(Ao.mT, Bo).cpu(), torch.linalg.solve(A.mT, B), **tol)
    torch.testing.assert_close(torch.linalg.solve(Ao, Bo.mT[:3].mT.contiguous(), left=True).cpu(),
                               torch.linalg.solve(A, B.mT[:3].mT.contiguous()), **tol)
    torch.testing.assert_close(torch.linalg.inv(Ao).cpu(), torch.linalg.inv(A), **tol)
    torch.testing.assert_close(torch.linalg.lu_solve(LU, piv, Bo, adjoint=True).cpu(),
                               torch.linalg.lu_solve(LUc, pivc, B, adjoint=True), **tol)
    L = torch.linalg.cholesky(S)
    torch.testing.assert_close(torch.cholesky_solve(Bo, L.to("ocl")).cpu(), torch.cholesky_solve(B, L), **tol)
    for upper in (False, True):
        T = L.mH if upper else L
        torch.testing.assert_close(torch.linalg.solve_triangular(T.to("ocl"), Bo, upper=upper).cpu(),
                                   torch.linalg.solve_triangular(T, B, upper=upper), **tol)
        torch.testing.assert_close(torch.linalg.solve_triangular(T.to("ocl"), Bo.mT, upper=upper, left=False).cpu(),
                                   torch.linalg.solve_triangular(T, B.mT, upper=upper, left=False), **tol)
