"""Blocked Cholesky's diagonal-block kernel (dlprim/kernels/linalg_block.cl, linalg_cholesky_block): each block
factored with one barrier a column (or two columns: PYTORCH_OCL_CHOLESKY_PAIR=1; a 4 x 4 tile of the block in
each work-item's registers, the unscaled L D L^H update, the columns scaled at the end) and inverted by
recursive doubling (the inverse feeds the panel below, L21 = A21 inv(L11)^H, so a wrong inverse shows in L). Against the CPU (LAPACK): blocks of 1, 2,
3, 17, 63 and 64 (groups of 1 to 256 items; inverses over non-power-of-two widths) with a tail block, the
default block at n = 65 and 200, batched, transposed input, float32 / float64 / complex64; info equal to the
CPU's for matrices failing at several columns, the first and the second of a step (a negative or zero
diagonal, one made negative by the updates, NaN on and off the diagonal); a solve through the factor; wider
outer steps (PYTORCH_OCL_CHOLESKY_PANEL). Each case also checks that the kernel ran (one launch a block), so
a path that bypassed it fails."""
import pytest
import torch

import pytorch_ocl  # noqa: F401
import pytorch_ocl.profiler

DEV = "ocl:0"
TOL = {torch.float32: dict(rtol=2e-4, atol=2e-4), torch.complex64: dict(rtol=2e-4, atol=2e-4),
       torch.float64: dict(rtol=1e-10, atol=1e-10)}


def spd(*shape, dtype):
    n = shape[-1]
    a = torch.randn(*shape, dtype=dtype)
    return a @ a.mH / n + torch.eye(n, dtype=dtype)


def leading_columns(S, k):
    """The first k columns of S's Cholesky factor, all rows (they depend on S's first k columns only), where
    S fails past them: LAPACK's blocked potrf leaves rows below a failing block unfinished, so the CPU's own
    result is compared on the leading k x k only; this factors S with its trailing block made definite."""
    S2 = S.clone()
    S2[k:, k:] += 1e3 * S.shape[-1] * torch.eye(S.shape[-1] - k, dtype=S.dtype)
    return torch.linalg.cholesky(S2)[:, :k]


@pytest.fixture(autouse=True)
def _on_chip(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_LINALG_ON_CHIP", "1")


def _cholesky_ex(a):
    """torch.linalg.cholesky_ex on ocl and the number of diagonal-block launches it made."""
    L, info, names = _cholesky_ex_kernels(a)
    return L, info, names.count("linalg_cholesky_block")


def _cholesky_ex_kernels(a):
    with pytorch_ocl.profiler.profile() as prof:
        L, info = torch.linalg.cholesky_ex(a)
        torch.ocl.synchronize()
    return L.cpu(), info.cpu(), [r[0] for r in prof.records]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
@pytest.mark.parametrize("nb,n", [(1, 3), (2, 5), (3, 7), (17, 40), (63, 130), (64, 65), (None, 200)])
def test_block_sizes(nb, n, dtype, monkeypatch):
    if nb is not None:
        monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", str(nb))
    else:
        monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK", raising=False)
    blocks = -(-n // (nb or 64))
    torch.manual_seed(n)
    S = spd(n, n, dtype=dtype)
    L, info, launches = _cholesky_ex(S.to(DEV))
    assert launches == blocks and info.item() == 0
    torch.testing.assert_close(L, torch.linalg.cholesky(S), **TOL[dtype])
    # Batched, and a transposed (row-major) view: the kernel's other item order.
    B = spd(3, n, n, dtype=dtype)
    L, info, launches = _cholesky_ex(B.to(DEV).mT)
    assert launches == blocks and info.tolist() == [0, 0, 0]
    torch.testing.assert_close(L, torch.linalg.cholesky(B.mT), **TOL[dtype])


@pytest.mark.parametrize("pair", ["1", "0"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.complex64])
def test_info_matches_lapack(dtype, pair, monkeypatch):
    """Blocks of 17 over 40 columns: failures at the first column, inside the first block, at its last
    column, at the second block's first, in the tail block's last column; a diagonal made negative only by
    the updates (|s_kj| > sqrt(s_kk s_jj)); NaN on the diagonal and off it; a good matrix beside them. One
    column a step (the default) and two (PYTORCH_OCL_CHOLESKY_PAIR=1)."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "17")
    monkeypatch.setenv("PYTORCH_OCL_CHOLESKY_PAIR", pair)
    torch.manual_seed(5)
    n = 40
    S = spd(10, n, n, dtype=dtype)
    for b, k, val in [(0, 0, -1.0), (1, 5, 0.0), (2, 16, -3.0), (3, 17, -1.0), (4, 39, -0.5)]:
        S[b, k, k] = val
    big = 3 * (S[5, 20, 20].real * S[5, 21, 21].real).sqrt()
    S[5, 21, 20] = S[5, 20, 21] = big
    S[6, 9, 9] = float("nan")
    S[7, 30, 3] = float("nan")  # the lower triangle is read: row 30 fails
    S[8, 3, 30] = float("nan")  # the upper triangle is not read: no failure
    L, info, launches = _cholesky_ex(S.to(DEV))
    Lc, infoc = torch.linalg.cholesky_ex(S)
    assert info.tolist() == infoc.tolist()
    assert info.tolist() == [1, 6, 17, 18, 40, 22, 10, 31, 0, 0]
    assert launches == 3
    torch.testing.assert_close(L[8:], Lc[8:], **TOL[dtype])
    # The columns before a failure are factored, all rows (the failing block's inverse of its leading columns).
    torch.testing.assert_close(L[5, :, :21], leading_columns(S[5], 21), **TOL[dtype])
    torch.testing.assert_close(L[5, :21, :21], Lc[5, :21, :21], **TOL[dtype])
    with pytest.raises(torch.linalg.LinAlgError, match="order 17"):
        torch.linalg.cholesky(S[2].to(DEV))


def test_solve_through_factor(monkeypatch):
    """cholesky + cholesky_solve / cholesky_inverse of a 100 x 100 matrix in blocks of 32 (float64)."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", "32")
    torch.manual_seed(6)
    S = spd(100, 100, dtype=torch.float64)
    b = torch.randn(100, 3, dtype=torch.float64)
    L = torch.linalg.cholesky(S.to(DEV))
    x = torch.cholesky_solve(b.to(DEV), L).cpu()
    torch.testing.assert_close(x, torch.linalg.solve(S, b), rtol=1e-9, atol=1e-9)
    torch.testing.assert_close(torch.cholesky_inverse(L).cpu(), torch.linalg.inv(S), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("nb,panel,n", [(17, 34, 90), (17, 51, 90), (8, 32, 70), (None, 128, 200), (None, 256, 300)])
def test_wider_panels(nb, panel, n, monkeypatch):
    """PYTORCH_OCL_CHOLESKY_PANEL: outer steps of several blocks, each diagonal block factored by halves
    within (the kernel at the leaves) and its inverse assembled from theirs; a tail step not a multiple of the
    block; float64 and complex64; info of a failure in the second half of an outer step's block."""
    monkeypatch.setenv("PYTORCH_OCL_CHOLESKY_PANEL", str(panel))
    if nb is not None:
        monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", str(nb))
    else:
        monkeypatch.delenv("PYTORCH_OCL_LINALG_BLOCK", raising=False)
    torch.manual_seed(panel + n)
    for dtype in (torch.float64, torch.complex64):
        S = spd(2, n, n, dtype=dtype)
        S[1, panel - 2, panel - 2] = -1.0
        L, info, launches = _cholesky_ex(S.to(DEV))
        Lc, infoc = torch.linalg.cholesky_ex(S)
        assert launches == -(-n // (nb or 64))
        assert info.tolist() == infoc.tolist() == [0, panel - 1]
        torch.testing.assert_close(L[0], Lc[0], **TOL[dtype])
        torch.testing.assert_close(L[1, :, :panel - 2], leading_columns(S[1], panel - 2), **TOL[dtype])
    # The setting took: the launches differ (inverses assembled within the outer steps, fewer and larger
    # trailing products; which way their count moves depends on the device's GEMM paths).
    wide = _cholesky_ex_kernels(S.to(DEV))[2]
    monkeypatch.delenv("PYTORCH_OCL_CHOLESKY_PANEL")
    assert _cholesky_ex_kernels(S.to(DEV))[2] != wide
