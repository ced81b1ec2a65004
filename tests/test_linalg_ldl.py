"""linalg.ldl_factor, linalg.ldl_factor_ex and linalg.ldl_solve on ocl (dlprim/kernels/linalg_ldl.cl:
LAPACK's Bunch-Kaufman ?sytf2 / ?hetf2 and ?sytrs / ?hetrs algorithms, lower triangle), strict mode,
against the CPU (MKL's ?sytrf / ?hetrf): the pivots (LAPACK's 1-based encoding, negative for 2x2
blocks) and info exactly, LD and the solutions to rounding. op_db samples in the four dtypes
(hermitian True and False for complex), then matrices that force 2x2 pivots and interchanges,
singular and zero columns (info > 0), sizes up to 70 (MKL's blocked path), batches, non-contiguous
and conjugate inputs, broadcasting, out=, and torch's errors."""
import os

os.environ.setdefault("PYTORCH_OCL_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401
from opinfo_compare import opinfo_params, raises_like_cpu, sample_failures  # noqa: E402

FP64 = torch.ocl.get_device_properties(0).fp64
DTYPES = [torch.float32, torch.complex64] + ([torch.float64, torch.complex128] if FP64 else [])
TOL = {torch.float32: 2e-4, torch.complex64: 2e-4, torch.float64: 1e-10, torch.complex128: 1e-10}


def _sym(A, herm):
    return A + (A.mH if herm else A.mT)


def _check_factor(A, herm=False, expect_2x2=None):
    """ldl_factor_ex of A (CPU tensor) on ocl: pivots and info equal to the CPU's, LD close."""
    ref = torch.linalg.ldl_factor_ex(A, hermitian=herm)
    out = torch.linalg.ldl_factor_ex(A.to("ocl"), hermitian=herm)
    assert all(o.device.type == "ocl" for o in out)
    assert torch.equal(out.pivots.cpu(), ref.pivots), (out.pivots, ref.pivots)
    assert torch.equal(out.info.cpu(), ref.info), (out.info, ref.info)
    scale = max(1.0, ref.LD.abs().max().item()) if A.numel() else 1.0
    torch.testing.assert_close(out.LD.cpu(), ref.LD, rtol=0, atol=TOL[A.dtype] * scale * max(1, A.shape[-1]))
    if expect_2x2 is not None:
        assert bool((ref.pivots < 0).any()) == expect_2x2
    return out


@pytest.mark.parametrize("op,dtype", opinfo_params({"linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve"}, DTYPES))
def test_ldl_opinfo(op, dtype):
    """Every op_db sample (hermitian True/False for complex), as given and with column-major
    complex matrices: pivots compared exactly (int32), LD and solutions with torch's tolerance."""
    assert sample_failures(op, dtype, grad=False, max_samples=100, tol=None) == []


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ldl_factor_pivoting(dtype):
    """Each Bunch-Kaufman branch: no interchange, 1x1 with interchange, 2x2 blocks (with and
    without interchange), zero columns and a trailing 2x2 block; random indefinite matrices."""
    herms = [False, True] if dtype.is_complex else [False]
    for herm in herms:
        _check_factor(torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=dtype), herm, expect_2x2=True)
        _check_factor(torch.tensor([[1e-3, 1.0, 0.0], [1.0, 5.0, 2.0], [0.0, 2.0, -1.0]], dtype=dtype), herm)
        _check_factor(torch.tensor([[1e-3, 0.1, 2.0], [0.1, 1e-3, 0.5], [2.0, 0.5, 1e-3]], dtype=dtype), herm,
                      expect_2x2=True)
        torch.manual_seed(3)
        for n in (3, 6, 9):
            A = _sym(torch.randn(4, n, n, dtype=dtype), herm)
            A.diagonal(dim1=-2, dim2=-1).mul_(1e-2)  # small diagonals: 2x2 blocks and interchanges
            _check_factor(A, herm, expect_2x2=True)
            _check_factor(_sym(torch.randn(2, n, n, dtype=dtype), herm), herm)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ldl_factor_singular(dtype):
    """Zero columns: info is the first (1-based), the step is skipped, the factorization goes on."""
    for herm in ([False, True] if dtype.is_complex else [False]):
        Z = torch.zeros(3, 4, 4, dtype=dtype)
        Z[1, 2:, 2:] = torch.tensor([[2.0, 1.0], [1.0, 3.0]])
        Z[2] = torch.diag(torch.tensor([1.0, 0.0, 2.0, 0.0]))
        out = _check_factor(Z, herm)
        assert out.info.cpu().tolist() == [1, 1, 2]
        _check_factor(torch.zeros(1, 1, dtype=dtype), herm)
        # ldl_factor (not _ex) refuses as the CPU does (torch's "Unknown error code" assert).
        raises_like_cpu(lambda a: torch.linalg.ldl_factor(a, hermitian=herm), torch.zeros(3, 3, dtype=dtype))
        raises_like_cpu(lambda a: torch.linalg.ldl_factor_ex(a, hermitian=herm, check_errors=True),
                        torch.zeros(2, 3, 3, dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ldl_factor_ties(dtype):
    """Small-integer matrices: equal magnitudes in the pivot searches (the first one wins, as
    i?amax) and updates that cancel exactly, which decide info and later pivots only when every
    product is rounded as LAPACK's (no fused multiply-add: this 3x3 has info 3 on the CPU)."""
    A = torch.tensor([[0.0, -1.0, 1.0], [-1.0, -2.0, -1.0], [1.0, -1.0, 4.0]], dtype=dtype)
    assert torch.linalg.ldl_factor_ex(A.to("ocl")).info.item() == 3  # reference LAPACK's rounding
    if torch.linalg.ldl_factor_ex(A).info.item() != 3:
        # torch 2.11's CPU build on the GPU machine: its LAPACK fuses this update (LD[2, 2] = -1.5e-8, info 0)
        pytest.skip("this CPU's LAPACK fuses multiply-adds: exact cancellations cannot be compared with it")
    _check_factor(A)
    torch.manual_seed(13)
    for herm in ([False, True] if dtype.is_complex else [False]):
        for n in (3, 5, 8):
            A = torch.randint(-2, 3, (40, n, n)).to(dtype)
            if dtype.is_complex:
                A = A + 1j * torch.randint(-2, 3, (40, n, n)).to(dtype)
            _check_factor(_sym(A, herm), herm)


@pytest.mark.parametrize("dtype", [torch.float32, torch.complex128] if FP64 else [torch.float32], ids=str)
def test_ldl_factor_sizes(dtype):
    """Sizes past MKL's block size (its ?lasyf path): the pivots still agree on these matrices."""
    torch.manual_seed(5)
    for n in (1, 2, 17, 33, 64, 70):
        A = _sym(torch.randn(2, n, n, dtype=dtype), dtype.is_complex)
        A.diagonal(dim1=-2, dim2=-1).mul_(0.1)
        _check_factor(A, dtype.is_complex)


def test_ldl_factor_layouts():
    """Non-contiguous inputs (transposed, sliced, expanded batches), conjugate views, zero-size,
    only the lower triangle read (the upper one is ignored, zeroed in LD), hermitian on real."""
    torch.manual_seed(7)
    A = _sym(torch.randn(3, 5, 5), False)
    _check_factor(A.mT)
    _check_factor(_sym(torch.randn(6, 10, 10), False)[::2, 1:6, 2:7])
    _check_factor(torch.randn(5, 5).expand(3, 5, 5))  # not symmetric: only its lower triangle counts
    _check_factor(A, herm=True)  # no effect on real matrices, as on the CPU
    Z = _sym(torch.randn(2, 4, 4, dtype=torch.complex64), True)
    for herm in (False, True):
        ref = torch.linalg.ldl_factor_ex(Z.conj().resolve_conj(), hermitian=herm)
        out = torch.linalg.ldl_factor_ex(Z.to("ocl").conj(), hermitian=herm)
        assert torch.equal(out.pivots.cpu(), ref.pivots)
        torch.testing.assert_close(out.LD.cpu(), ref.LD)
    for shape in ((0, 0), (0, 3, 3), (2, 0, 0)):
        _check_factor(torch.randn(shape))


def test_ldl_factor_out():
    """out=: non-contiguous LD and pivots, aliasing the input, and the CPU's dtype errors."""
    torch.manual_seed(9)
    A = _sym(torch.randn(2, 4, 4), False)
    A.diagonal(dim1=-2, dim2=-1).mul_(1e-2)
    ref = torch.linalg.ldl_factor_ex(A)
    LD = torch.zeros(2, 4, 8, device="ocl")[..., ::2]
    piv = torch.zeros(2, 8, dtype=torch.int32, device="ocl")[:, ::2]
    info = torch.full((2,), 7, dtype=torch.int32, device="ocl")
    torch.linalg.ldl_factor_ex(A.to("ocl"), out=(LD, piv, info))
    torch.testing.assert_close(LD.cpu(), ref.LD)
    assert torch.equal(piv.cpu(), ref.pivots) and torch.equal(info.cpu(), ref.info)
    a = A.to("ocl")
    p = torch.empty(0, dtype=torch.int32, device="ocl")
    torch.linalg.ldl_factor(a, out=(a, p))  # LD over its own input
    torch.testing.assert_close(a.cpu(), ref.LD)
    for bad in [(torch.empty(0), torch.empty(0, dtype=torch.long), torch.empty(0, dtype=torch.int)),
                (torch.empty(0, dtype=torch.double), torch.empty(0, dtype=torch.int), torch.empty(0, dtype=torch.int)),
                (torch.empty(0), torch.empty(0, dtype=torch.int), torch.empty(0, dtype=torch.long))]:
        with pytest.raises(RuntimeError) as cpu:
            torch.linalg.ldl_factor_ex(A, out=bad)
        with pytest.raises(RuntimeError, match=str(cpu.value)):
            torch.linalg.ldl_factor_ex(A.to("ocl"), out=tuple(t.to("ocl") for t in bad))


def test_ldl_errors_and_autograd():
    """torch's checks, raised as on the CPU; torch defines no derivative for either op."""
    for x in (torch.randn(3, 4), torch.randn(3), torch.ones(3, 3, dtype=torch.int32)):
        raises_like_cpu(torch.linalg.ldl_factor, x)
    LD, piv = torch.linalg.ldl_factor(_sym(torch.randn(3, 3), False))
    B = torch.randn(3, 2)
    cases = [
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.float().to(d), B.to(d)),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv[:2].to(d), B.to(d)),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.to(d), B.double().to(d)),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.to(d), torch.randn(3).to(d)),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.to(d), torch.randn(4, 2).to(d)),
        lambda d: torch.linalg.ldl_solve(LD.int().to(d), piv.to(d), B.to(d)),
        lambda d: torch.linalg.ldl_solve(LD[:, :2].to(d), piv.to(d), B.to(d)),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.to(d), B.to(d), out=torch.empty(0, dtype=torch.double).to(d)),
        lambda d: torch.linalg.ldl_factor(LD.to(d).requires_grad_())[0].sum().backward(),
        lambda d: torch.linalg.ldl_solve(LD.to(d), piv.to(d), B.to(d).requires_grad_()).sum().backward(),
    ]
    for fn in cases:
        with pytest.raises(Exception) as cpu:
            fn("cpu")
        with pytest.raises(type(cpu.value)) as dev:
            fn("ocl")
        assert str(dev.value) == str(cpu.value)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_ldl_solve(dtype):
    """Solutions against the CPU's for the factors of 2x2-pivoting matrices: batched, broadcast
    (LD over B's batch and B over LD's), non-contiguous B, int64 pivots, out= (B itself too)."""
    torch.manual_seed(11)
    for herm in ([False, True] if dtype.is_complex else [False]):
        A = _sym(torch.randn(3, 6, 6, dtype=dtype), herm)
        A.diagonal(dim1=-2, dim2=-1).mul_(1e-2)
        LD, piv = torch.linalg.ldl_factor(A, hermitian=herm)
        assert (piv < 0).any()
        tol = dict(rtol=TOL[dtype] * 50, atol=TOL[dtype] * 50)
        for ld, p, b in [
            (LD, piv, torch.randn(3, 6, 4, dtype=dtype)),
            (LD[1], piv[1], torch.randn(2, 3, 6, 2, dtype=dtype)),  # LD broadcast
            (LD, piv.long(), torch.randn(6, 1, dtype=dtype)),  # B broadcast, int64 pivots
            (LD, piv, torch.randn(3, 5, 6, dtype=dtype).mT),  # B transposed
            (LD.mT.contiguous().mT, piv, torch.randn(3, 6, 0, dtype=dtype)),
        ]:
            ref = torch.linalg.ldl_solve(ld, p, b, hermitian=herm)
            out = torch.linalg.ldl_solve(ld.to("ocl"), p.to("ocl"), b.to("ocl"), hermitian=herm)
            assert out.shape == ref.shape and out.dtype == ref.dtype
            torch.testing.assert_close(out.cpu(), ref, **tol)
        b = torch.randn(3, 6, 2, dtype=dtype)
        ref = torch.linalg.ldl_solve(LD, piv, b, hermitian=herm)
        bo = b.to("ocl")
        torch.linalg.ldl_solve(LD.to("ocl"), piv.to("ocl"), bo, hermitian=herm, out=bo)
        torch.testing.assert_close(bo.cpu(), ref, **tol)
        o = torch.empty(3, 2, 6, dtype=dtype, device="ocl").mT
        torch.linalg.ldl_solve(LD.to("ocl"), piv.to("ocl"), b.to("ocl"), hermitian=herm, out=o)
        torch.testing.assert_close(o.cpu(), ref, **tol)
        torch.testing.assert_close((A @ o.cpu()), b, **tol)
