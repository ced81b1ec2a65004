"""torch.linalg on ocl (dlprim/kernels/linalg*.cl: Cholesky, LU with partial pivoting, triangular
solves, Householder QR, Jacobi eigh and SVD; csrc/aten/Linalg*.cpp) against the CPU: PyTorch's
OpInfo samples of every op we claim, forward and backward, float32 and float64, contiguous and
non-contiguous; then what the samples do not reach: sizes past one work-group's width, broadcast
batches, out= with awkward layouts, zero-size inputs, singular and non-positive-definite inputs
(`_ex` info values, the CPU's errors), exact pivots, ill-conditioned systems, repeated eigenvalues,
rank-deficient SVDs and every lstsq driver."""
import pytest
import torch

import pytorch_ocl  # noqa: F401  (registers the device before torch.testing._internal)
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import noncontiguous_like
from opinfo_compare import map_tensors, tensor_leaves

DEV = "ocl:0"
# OpInfo names whose every sample must pass (they reach only our kernels and native ops).
OPS = ["linalg.cholesky", "linalg.cholesky_ex", "cholesky", "cholesky_solve", "cholesky_inverse",
       "linalg.solve_triangular", "triangular_solve", "linalg.lu_factor", "linalg.lu_factor_ex", "linalg.lu",
       "lu_unpack", "linalg.lu_solve", "lu", "lu_solve", "linalg.solve", "linalg.solve_ex", "linalg.inv",
       "linalg.inv_ex", "linalg.det", "linalg.slogdet", "logdet", "linalg.matrix_power", "linalg.tensorinv",
       "linalg.tensorsolve", "geqrf", "linalg.householder_product", "linalg.qr", "qr", "ormqr", "linalg.eigh",
       "linalg.eigvalsh", "linalg.svd", "linalg.svdvals", "svd", "linalg.pinv", "pinverse", "linalg.matrix_rank",
       "linalg.matrix_norm", "linalg.norm", "linalg.cond", "linalg.lstsq", "matrix_exp"]
# Eigen/singular vectors are unique up to sign (Jacobi's and LAPACK's signs differ): these compare
# the outputs through the OpInfo's sign-invariant output_process_fn_grad, forward and backward.
SIGN_FREE = {"linalg.eigh", "linalg.svd", "svd"}
MAX_SAMPLES = 8
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-7, atol=1e-7)}
# matrix_exp's float32 samples have entries in the hundreds: rounding of the Padé solve vs the CPU's
# Taylor scheme exceeds 1e-4 on the small entries.
OP_TOL = {("matrix_exp", torch.float32): dict(rtol=1e-3, atol=1e-3)}
GRAD_TOL = {torch.float32: dict(rtol=1e-3, atol=1e-3), torch.float64: dict(rtol=1e-6, atol=1e-6)}


def _to_dev(obj, noncontig):
    def move(t):
        d = t.detach()
        d = noncontiguous_like(d) if noncontig and d.numel() > 1 else d
        return d.to(DEV).requires_grad_(t.requires_grad)
    return map_tensors(obj, move)


def _check_sample(op, sample, dtype, noncontig, grad):
    args, kwargs = (sample.input,) + tuple(sample.args), dict(sample.kwargs)
    try:
        expected = op(*args, **kwargs)
    except Exception as cpu_error:  # noqa: BLE001 - the CPU refuses: ocl must refuse alike
        with pytest.raises(type(cpu_error)):
            op(*_to_dev(args, noncontig), **_to_dev(kwargs, noncontig))
        return
    dargs, dkwargs = _to_dev(args, noncontig), _to_dev(kwargs, noncontig)
    actual = op(*dargs, **dkwargs)
    if op.name in SIGN_FREE:
        expected, actual = sample.output_process_fn_grad(expected), sample.output_process_fn_grad(actual)
    outs, douts = tensor_leaves(expected), tensor_leaves(actual)
    assert all(o.device.type == "ocl" for o in douts)
    torch.testing.assert_close([o.detach().cpu() for o in douts], [o.detach() for o in outs], equal_nan=True,
                               **OP_TOL.get((op.name, dtype), TOL[dtype]))
    if not grad:
        return
    pairs = [(o, d) for o, d in zip(outs, douts) if o.requires_grad and o.is_floating_point()]
    ins = [t for t in tensor_leaves((args, kwargs)) if t.requires_grad]
    dins = [t for t in tensor_leaves((dargs, dkwargs)) if t.requires_grad]
    if not pairs or not ins:
        return
    gen = torch.Generator().manual_seed(0)
    gouts = [torch.randn(o.shape, generator=gen, dtype=o.dtype) for o, _ in pairs]
    try:
        expected_g = torch.autograd.grad([o for o, _ in pairs], ins, gouts, allow_unused=True)
    except Exception:  # noqa: BLE001 - no CPU gradient to compare with
        return
    actual_g = torch.autograd.grad([d for _, d in pairs], dins, [g.to(DEV) for g in gouts], allow_unused=True)
    for a, e in zip(actual_g, expected_g):
        assert (a is None) == (e is None)
        if e is not None:
            torch.testing.assert_close(a.cpu(), e, equal_nan=True, **GRAD_TOL[dtype])


@pytest.mark.parametrize("name", OPS)
def test_opinfo(name):
    ops = [o for o in op_db if o.name == name]
    assert ops, name
    for op in ops:
        for dtype in (torch.float32, torch.float64):
            samples = list(op.sample_inputs("cpu", dtype, requires_grad=op.supports_autograd))[:MAX_SAMPLES]
            for i, sample in enumerate(samples):
                # Forward and backward on contiguous inputs in both dtypes; non-contiguous inputs
                # (forward) in float64 only, to keep CI time down (the same kernels run either way).
                for noncontig in ((False, True) if dtype == torch.float64 else (False,)):
                    grad = not noncontig
                    try:
                        _check_sample(op, sample, dtype, noncontig, grad)
                    except Exception as e:
                        raise AssertionError(f"{name} {dtype} sample {i} noncontig={noncontig}: {e}") from e


# ------------------------------------------------------------------ beyond the samples
def _spd(*batch, n, dtype=torch.float64):
    a = torch.randn(*batch, n, n, dtype=dtype)
    return a @ a.mT + n * torch.eye(n, dtype=dtype)


@pytest.mark.parametrize("n", [1, 33, 130])
def test_sizes_past_one_group(n):
    """Steps wider than a work-group (130^2 > 256 items), odd sizes, a batch of 3; pivots exact."""
    torch.manual_seed(n)
    A = torch.randn(3, n, n, dtype=torch.float64)
    B = torch.randn(3, n, 2, dtype=torch.float64)
    S = _spd(3, n=n)
    Ad, Bd, Sd = A.to(DEV), B.to(DEV), S.to(DEV)
    torch.testing.assert_close(torch.linalg.cholesky(Sd).cpu(), torch.linalg.cholesky(S))
    LU, piv = torch.linalg.lu_factor(A)
    LUd, pivd = torch.linalg.lu_factor(Ad)
    assert torch.equal(pivd.cpu(), piv)
    torch.testing.assert_close(LUd.cpu(), LU)
    torch.testing.assert_close(torch.linalg.solve(Ad, Bd).cpu(), torch.linalg.solve(A, B))
    torch.testing.assert_close(torch.linalg.det(Ad).cpu(), torch.linalg.det(A))
    X = torch.linalg.solve_triangular(Sd.triu(), Bd.mT, upper=True, left=False)
    torch.testing.assert_close(X.cpu(), torch.linalg.solve_triangular(S.triu(), B.mT, upper=True, left=False))


def test_float32_large_solve_residual():
    torch.manual_seed(1)
    A = torch.randn(200, 200) + 200 * torch.eye(200)
    b = torch.randn(200, 3)
    x = torch.linalg.solve(A.to(DEV), b.to(DEV)).cpu()
    assert (A.double() @ x.double() - b.double()).abs().max() < 1e-4


def test_broadcast_and_strided_inputs():
    torch.manual_seed(2)
    A = torch.randn(4, 1, 5, 5, dtype=torch.float64)[::2]  # sliced batch, broadcast against B
    B = torch.randn(3, 5, 4, dtype=torch.float64).transpose(-2, -1)[..., :3, :]  # (3, 3, 5) strided
    Bm = B.mT
    for fn in (lambda a, b: torch.linalg.solve(a, b), lambda a, b: torch.linalg.solve(a, b.mT, left=False),
               lambda a, b: torch.linalg.solve_triangular(a.tril(), b, upper=False, unitriangular=True),
               lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b, adjoint=True),
               lambda a, b: torch.cholesky_solve(b, torch.linalg.cholesky(a @ a.mT + torch.eye(5, device=a.device)),
                                                 upper=False)):
        torch.testing.assert_close(fn(A.to(DEV), Bm.to(DEV)).cpu(), fn(A, Bm))
    E = torch.randn(5, 5, dtype=torch.float64).expand(3, 5, 5)  # stride-0 batch
    torch.testing.assert_close(torch.linalg.inv(E.to(DEV)).cpu(), torch.linalg.inv(E))


def test_out_with_awkward_layouts():
    torch.manual_seed(3)
    A = torch.randn(2, 3, 4, 4, dtype=torch.float64)
    S = A @ A.mT + 4 * torch.eye(4, dtype=torch.float64)
    # batch dims that do not collapse into one stride: the kernels work on a copy, copied back
    L = torch.empty(3, 2, 4, 4, dtype=torch.float64, device=DEV).transpose(0, 1)
    info = torch.empty(2, 3, dtype=torch.int32, device=DEV)
    torch.linalg.cholesky_ex(S.to(DEV), out=(L, info))
    torch.testing.assert_close(L.cpu(), torch.linalg.cholesky(S))
    LU = torch.empty(0, dtype=torch.float64, device=DEV)
    piv = torch.empty(3, 2, 4, dtype=torch.int32, device=DEV).transpose(0, 1)
    torch.linalg.lu_factor(A.to(DEV), out=(LU, piv))
    LUc, pivc = torch.linalg.lu_factor(A)
    torch.testing.assert_close(LU.cpu(), LUc)
    assert torch.equal(piv.cpu(), pivc)
    # out= aliasing B: solved in place
    B = torch.randn(2, 3, 4, 2, dtype=torch.float64)
    Bd = B.to(DEV)
    torch.linalg.solve_triangular(S.to(DEV).tril(), Bd, upper=False, out=Bd)
    torch.testing.assert_close(Bd.cpu(), torch.linalg.solve_triangular(S.tril(), B, upper=False))
    # 1x1 inverse (the identity it starts from is its own B)
    x = torch.tensor([[4.0]])
    torch.testing.assert_close(torch.linalg.inv(x.to(DEV)).cpu(), torch.tensor([[0.25]]))


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0), (0, 0)])
def test_zero_size(shape):
    A = torch.randn(shape, dtype=torch.float64)
    for fn in (torch.linalg.cholesky_ex, torch.linalg.lu_factor_ex, torch.linalg.inv_ex, torch.linalg.det,
               torch.linalg.slogdet, torch.linalg.lu, lambda a: torch.linalg.solve(a, a),
               lambda a: torch.linalg.solve_triangular(a, a, upper=True)):
        got, want = fn(A.to(DEV)), fn(A)
        for g, w in zip(tensor_leaves(got), tensor_leaves(want)):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g.cpu(), w)


def test_ex_info_values():
    """info as LAPACK's: the order of the first non-positive-definite minor, the first zero pivot."""
    S = _spd(4, n=4)
    S[1, 2, 2] = -100.0  # leading minor of order 3 not positive definite
    S[3] = -S[3]         # order 1
    L, info = torch.linalg.cholesky_ex(S.to(DEV))
    assert info.tolist() == torch.linalg.cholesky_ex(S).info.tolist() == [0, 3, 0, 1]
    torch.testing.assert_close(L[0].cpu(), torch.linalg.cholesky(S[0]))
    A = torch.randn(4, 5, 5, dtype=torch.float64)
    A[1, :, 2] = 0                      # zero column: pivot 3 is exactly zero
    A[2] = 0                            # every pivot zero: info 1
    A[3, 2] = 0                         # a zero row stays exactly zero and is pivoted last: info 5
    for fn in (torch.linalg.lu_factor_ex, torch.linalg.inv_ex, torch.linalg.solve_ex):
        args = (A,) if fn is not torch.linalg.solve_ex else (A, torch.ones(4, 5, 1, dtype=torch.float64))
        want = fn(*args).info
        got = fn(*[a.to(DEV) for a in args]).info
        assert got.tolist() == want.tolist() == [0, 3, 1, 5], (fn, got, want)
    torch.testing.assert_close(torch.linalg.det(A.to(DEV)).cpu(), torch.linalg.det(A))


def _raises_like_cpu(fn, *args):
    with pytest.raises(Exception) as cpu_err:
        fn(*args)
    with pytest.raises(type(cpu_err.value)) as dev_err:
        fn(*[a.to(DEV) for a in args])
    assert str(dev_err.value) == str(cpu_err.value)


def test_errors_match_the_cpu():
    neg = -torch.eye(3)
    _raises_like_cpu(torch.linalg.cholesky, neg)
    _raises_like_cpu(torch.linalg.cholesky, neg.expand(2, 3, 3))
    _raises_like_cpu(lambda a: torch.cholesky(a), neg)
    _raises_like_cpu(torch.linalg.inv, torch.zeros(3, 3))
    _raises_like_cpu(torch.linalg.solve, torch.zeros(2, 3, 3), torch.ones(2, 3))
    _raises_like_cpu(torch.linalg.lu_factor, torch.zeros(3, 3))
    _raises_like_cpu(torch.linalg.cholesky, torch.ones(2, 3))              # not square
    _raises_like_cpu(torch.linalg.solve, torch.eye(3), torch.ones(4))      # incompatible shapes
    _raises_like_cpu(torch.linalg.solve_triangular, torch.eye(3), torch.ones(3))  # B not a matrix
    nan = torch.randn(3, 4, 4)
    nan[1, 2, 0] = float("nan")  # in the lower triangle eigh reads
    _raises_like_cpu(torch.linalg.svd, nan)
    _raises_like_cpu(torch.linalg.pinv, nan[1])
    with pytest.raises(torch.linalg.LinAlgError, match="failed to converge"):
        torch.linalg.eigh(nan.to(DEV))
    torch.linalg.eigh(nan.mT.to(DEV))  # the NaN in the triangle it ignores: fine, as on the CPU
    with pytest.raises(NotImplementedError, match="float32 and float64"):
        torch.linalg.cholesky(torch.eye(2, dtype=torch.float16, device=DEV))
    with pytest.raises(RuntimeError, match="without pivoting"):
        torch.linalg.lu_factor(torch.eye(2, device=DEV), pivot=False)


def test_ill_conditioned():
    """Hilbert matrices: the same pivots as LAPACK, and residuals at LAPACK's level."""
    n = 8
    i = torch.arange(n, dtype=torch.float64)
    H = 1.0 / (i[:, None] + i[None, :] + 1)
    b = H.sum(-1, keepdim=True)
    x = torch.linalg.solve(H.to(DEV), b.to(DEV)).cpu()
    assert (H @ x - b).abs().max() < 1e-12
    assert torch.equal(torch.linalg.lu_factor(H.to(DEV)).pivots.cpu(), torch.linalg.lu_factor(H).pivots)
    torch.testing.assert_close(torch.linalg.cholesky(H.to(DEV)).cpu(), torch.linalg.cholesky(H))
    torch.testing.assert_close(torch.linalg.slogdet(H.to(DEV)).logabsdet.cpu(), torch.linalg.slogdet(H).logabsdet)


def test_gradients_float64():
    torch.manual_seed(4)
    A = torch.randn(2, 6, 6, dtype=torch.float64)
    S = _spd(2, n=6)
    B = torch.randn(2, 6, 3, dtype=torch.float64)
    fns = [lambda a, s, b: torch.linalg.solve(a, b), lambda a, s, b: torch.linalg.inv(a),
           lambda a, s, b: torch.linalg.det(a), lambda a, s, b: torch.linalg.slogdet(a)[1],
           lambda a, s, b: torch.linalg.cholesky(s), lambda a, s, b: torch.cholesky_solve(b, torch.linalg.cholesky(s)),
           lambda a, s, b: torch.linalg.solve_triangular(a.triu(), b, upper=True),
           lambda a, s, b: torch.linalg.lu(a)[1:], lambda a, s, b: torch.cholesky_inverse(torch.linalg.cholesky(s))]
    for fn in fns:
        cpu = [t.clone().requires_grad_() for t in (A, S, B)]
        dev = [t.to(DEV).requires_grad_() for t in (A, S, B)]
        outs_c, outs_d = tensor_leaves(fn(*cpu)), tensor_leaves(fn(*dev))
        gs = [torch.randn_like(o) for o in outs_c]
        torch.autograd.backward(outs_c, gs)
        torch.autograd.backward(outs_d, [g.to(DEV) for g in gs])
        for c, d in zip(cpu, dev):
            if c.grad is not None:
                torch.testing.assert_close(d.grad.cpu(), c.grad)


def _canon(V):
    """Columns signed so that each one's largest-magnitude entry is positive."""
    idx = V.abs().argmax(-2, keepdim=True)
    return V * torch.gather(V, -2, idx).sign()


@pytest.mark.parametrize("n", [2, 7, 40])
def test_eigh_sizes(n):
    """Jacobi eigh vs LAPACK past one group's width: values, vectors up to sign, residual; UPLO."""
    torch.manual_seed(n)
    A = torch.randn(2, n, n, dtype=torch.float64)
    for uplo in ("L", "U"):
        w, V = torch.linalg.eigh(A.to(DEV), UPLO=uplo)
        wc, Vc = torch.linalg.eigh(A, UPLO=uplo)
        torch.testing.assert_close(w.cpu(), wc)
        torch.testing.assert_close(_canon(V.cpu()), _canon(Vc))
        S = A.tril() + A.tril(-1).mT if uplo == "L" else A.triu() + A.triu(1).mT
        torch.testing.assert_close(S @ V.cpu(), V.cpu() * w.cpu().unsqueeze(-2))
    torch.testing.assert_close(torch.linalg.eigvalsh(A.float().to(DEV)).cpu(), torch.linalg.eigvalsh(A.float()),
                               rtol=1e-4, atol=1e-4)


def test_eigh_repeated_eigenvalues():
    Q = torch.linalg.qr(torch.randn(6, 6, dtype=torch.float64)).Q
    A = Q @ torch.diag(torch.tensor([1.0, 1.0, 1.0, 2.0, 2.0, 5.0], dtype=torch.float64)) @ Q.mT
    for M in (A, torch.eye(5, dtype=torch.float64), torch.zeros(3, 3, dtype=torch.float64)):
        w, V = torch.linalg.eigh(M.to(DEV))
        torch.testing.assert_close(w.cpu(), torch.linalg.eigvalsh(M))
        torch.testing.assert_close(V.cpu().mT @ V.cpu(), torch.eye(M.shape[-1], dtype=torch.float64))
        torch.testing.assert_close(V.cpu() @ torch.diag_embed(w.cpu()) @ V.cpu().mT, M)


@pytest.mark.parametrize("shape", [(70, 9), (9, 70), (16, 16), (3, 0), (0, 3)])
def test_svd_shapes(shape):
    torch.manual_seed(sum(shape))
    A = torch.randn(2, *shape, dtype=torch.float64)
    k = min(shape)
    for full in (False, True):
        U, S, Vh = torch.linalg.svd(A.to(DEV), full_matrices=full)
        Uc, Sc, Vhc = torch.linalg.svd(A, full_matrices=full)
        assert U.shape == Uc.shape and S.shape == Sc.shape and Vh.shape == Vhc.shape
        U, S, Vh = U.cpu(), S.cpu(), Vh.cpu()
        torch.testing.assert_close(S, Sc)
        torch.testing.assert_close(U[..., :k] * S.unsqueeze(-2) @ Vh[..., :k, :], A)
        torch.testing.assert_close(U.mT @ U, torch.eye(U.shape[-1], dtype=torch.float64).expand_as(U.mT @ U))
        torch.testing.assert_close(Vh @ Vh.mT, torch.eye(Vh.shape[-2], dtype=torch.float64).expand_as(Vh @ Vh.mT))


def test_svd_rank_deficient():
    """Zero singular values: the left vectors still complete to an orthonormal basis (no NaN), so
    pinv / matrix_rank / lstsq-like uses match the CPU."""
    torch.manual_seed(5)
    B = torch.randn(2, 6, 3, dtype=torch.float64)
    A = B @ torch.randn(2, 3, 5, dtype=torch.float64)  # rank 3
    U, S, Vh = torch.linalg.svd(A.to(DEV))
    assert torch.isfinite(U).all() and torch.isfinite(Vh).all()
    torch.testing.assert_close(U.cpu().mT @ U.cpu(), torch.eye(6, dtype=torch.float64).expand(2, 6, 6))
    torch.testing.assert_close(S.cpu(), torch.linalg.svdvals(A))
    assert torch.equal(torch.linalg.matrix_rank(A.to(DEV)).cpu(), torch.linalg.matrix_rank(A))
    torch.testing.assert_close(torch.linalg.pinv(A.to(DEV)).cpu(), torch.linalg.pinv(A))
    Z = torch.zeros(4, 3, dtype=torch.float64)
    U, S, Vh = torch.linalg.svd(Z.to(DEV))
    torch.testing.assert_close(U.cpu().mT @ U.cpu(), torch.eye(4, dtype=torch.float64))
    assert S.abs().max().item() == 0


def test_qr_modes_and_shapes():
    torch.manual_seed(6)
    for shape in ((7, 4), (4, 7), (5, 5), (3, 0, 2)):
        A = torch.randn(*shape, dtype=torch.float64)
        for mode in ("reduced", "complete", "r"):
            got, want = torch.linalg.qr(A.to(DEV), mode=mode), torch.linalg.qr(A, mode=mode)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                torch.testing.assert_close(g.cpu(), w)


@pytest.mark.parametrize("driver", ["gels", "gelsy", "gelsd", "gelss", None])
def test_lstsq_drivers(driver):
    """The CPU's per-driver outputs (rank, singular values, residuals) on over- and underdetermined,
    batched, vector, zero-size and rank-deficient problems."""
    torch.manual_seed(7)
    f64 = dict(dtype=torch.float64)
    A, b = torch.randn(5, 3, **f64), torch.randn(5, **f64)
    cases = [(A, b), (A.expand(2, 5, 3), b.expand(2, 5)), (A.mT, torch.randn(3, 4, **f64)),
             (torch.zeros(2, 0, 3, **f64), torch.zeros(2, 0, 2, **f64)),
             (torch.zeros(2, 3, 0, **f64), torch.zeros(2, 3, 2, **f64))]
    if driver != "gels":  # gels assumes full rank
        cases.append((torch.randn(6, 2, **f64) @ torch.randn(2, 4, **f64), torch.randn(6, 2, **f64)))
    for A, B in cases:
        want = torch.linalg.lstsq(A, B, driver=driver)
        got = torch.linalg.lstsq(A.to(DEV), B.to(DEV), driver=driver)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            torch.testing.assert_close(g.cpu(), w)


def test_matrix_exp_scales():
    """Padé 13 with per-matrix scaling in one batch (norms from 1e-8 to 100), float32 and float64."""
    torch.manual_seed(8)
    A = torch.randn(4, 6, 6, dtype=torch.float64) / 6 * torch.tensor([1e-8, 1.0, 10.0, 100.0]).view(4, 1, 1)
    for dtype, rtol in ((torch.float64, 1e-12), (torch.float32, 1e-5)):
        want = torch.linalg.matrix_exp(A.to(dtype))
        got = torch.linalg.matrix_exp(A.to(dtype).to(DEV)).cpu()
        scale = want.abs().amax((-2, -1), keepdim=True)
        assert ((got - want).abs() / scale).max() < rtol
    h = A[:2].half()  # computed in float32 (the CPU's float16 Taylor overflows here: inf)
    torch.testing.assert_close(torch.linalg.matrix_exp(h.to(DEV)).cpu(), torch.linalg.matrix_exp(h.float()).half())


@pytest.mark.parametrize("nb", [3, 8])
def test_blocked_paths(nb, monkeypatch):
    """Matrices larger than PYTORCH_OCL_LINALG_BLOCK are factored by blocks (kernels on panels,
    matmul trailing updates): the same results, pivots and info as the CPU."""
    monkeypatch.setenv("PYTORCH_OCL_LINALG_BLOCK", str(nb))
    torch.manual_seed(nb)
    f64 = dict(dtype=torch.float64)
    A = torch.randn(2, 20, 20, **f64)
    S = _spd(2, n=20)
    B = torch.randn(2, 20, 3, **f64)
    for upper in (False, True):
        torch.testing.assert_close(torch.linalg.cholesky(S.to(DEV), upper=upper).cpu(),
                                   torch.linalg.cholesky(S, upper=upper))
    bad = S.clone()
    bad[1, 13, 13] = -1e3  # fails in a later block: info 14
    assert torch.linalg.cholesky_ex(bad.to(DEV)).info.tolist() == torch.linalg.cholesky_ex(bad).info.tolist()
    for M in (A, A[:, :, :13], A[:, :13, :]):  # square, tall, wide
        LU, piv, info = torch.linalg.lu_factor_ex(M.to(DEV))
        LUc, pivc, infoc = torch.linalg.lu_factor_ex(M)
        assert torch.equal(piv.cpu(), pivc) and torch.equal(info.cpu(), infoc)
        torch.testing.assert_close(LU.cpu(), LUc)
    Z = A.clone()
    Z[0, :, 11] = 0  # zero column: first zero pivot 12
    assert torch.linalg.lu_factor_ex(Z.to(DEV)).info.tolist() == torch.linalg.lu_factor_ex(Z).info.tolist()
    torch.testing.assert_close(torch.linalg.solve(A.to(DEV), B.to(DEV)).cpu(), torch.linalg.solve(A, B))
    torch.testing.assert_close(torch.linalg.inv(A.to(DEV)).cpu(), torch.linalg.inv(A))
    torch.testing.assert_close(torch.linalg.det(A.to(DEV)).cpu(), torch.linalg.det(A))
    T = S.tril()
    for upper, left, unit in ((False, True, False), (True, True, True), (False, False, False), (True, False, True)):
        M = T.mT if upper else T
        rhs = B if left else B.mT
        torch.testing.assert_close(
            torch.linalg.solve_triangular(M.to(DEV), rhs.to(DEV), upper=upper, left=left, unitriangular=unit).cpu(),
            torch.linalg.solve_triangular(M, rhs, upper=upper, left=left, unitriangular=unit))
    torch.testing.assert_close(torch.cholesky_inverse(torch.linalg.cholesky(S.to(DEV))).cpu(), torch.inverse(S))


def test_out_variants():
    """out= of the functions whose .out overloads we register (or that reach them), wrong-sized outs resized."""
    torch.manual_seed(9)
    f64 = dict(dtype=torch.float64)
    A, S, B = torch.randn(2, 4, 4, **f64), _spd(2, n=4), torch.randn(2, 4, 3, **f64)
    calls = [
        (torch.linalg.cholesky, (S,), 1), (torch.cholesky_inverse, (S,), 1), (torch.linalg.inv, (A,), 1),
        (torch.linalg.solve, (A, B), 1), (torch.linalg.det, (A,), 1), (torch.linalg.slogdet, (A,), 2),
        (torch.linalg.lu_factor, (A,), 2), (torch.linalg.lu, (A,), 3), (torch.linalg.qr, (A,), 2),
        (torch.linalg.eigh, (S,), 2), (torch.linalg.svd, (A,), 3), (torch.geqrf, (A,), 2),
        (torch.linalg.eigvalsh, (S,), 1), (torch.linalg.svdvals, (A,), 1),
        (lambda *a, out=None: torch.linalg.solve_triangular(*a, upper=True, out=out), (S.triu(), B), 1),
        (lambda *a, out=None: torch.linalg.lu_solve(*a, out=out), torch.linalg.lu_factor(A) + (B,), 1),
        (lambda *a, out=None: torch.linalg.lstsq(*a, driver="gelsd", out=out), (A, B), 4),
    ]
    for fn, args, n_out in calls:
        want = fn(*args, out=tuple(torch.empty(0, dtype=a.dtype) for a in tensor_leaves(fn(*args))) if n_out > 1
                  else torch.empty(0, **f64))
        outs = tuple(torch.empty(1, dtype=w.dtype, device=DEV) for w in tensor_leaves(want))
        got = fn(*[a.to(DEV) for a in args], out=outs if n_out > 1 else outs[0])
        sign_free = fn in (torch.linalg.eigh, torch.linalg.svd)  # vectors up to sign: compare |.|
        for g, w, o in zip(tensor_leaves(got), tensor_leaves(want), outs):
            assert g.data_ptr() == o.data_ptr() or g.numel() == 0
            g, w = (g.cpu().abs(), w.abs()) if sign_free else (g.cpu(), w)
            torch.testing.assert_close(g, w, msg=lambda m: f"{fn}: {m}")
