"""Sparse COO and CSR tensors on ocl against the CPU: dense <-> COO (hybrid too), coalesce of
duplicates, the constructor and device copies, sparse @ dense (COO and CSR, both sides), add,
the COO and CSR value ops (unary functions, times / by a scalar), sparse @ vector,
CSR conversions, sparse_sampled_addmm and torch.sparse.mm(..., reduce) with their gradients, the
op_db samples of to_sparse / sparse.sampled_addmm / sparse.mm.reduce, torch.sparse.softmax /
log_softmax (forward, backward), index_select, torch.sparse.sum (forward, backward) and
Tensor.sum of COO tensors, and clear errors for what is
not supported (batched CSR). Indices must be equal; values close."""
import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401
from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl"
FLOATS = [torch.float32, torch.float64]
# Values in 16 bits: sums of duplicates round differently in another order.
TOL = {torch.float16: dict(rtol=1e-2, atol=1e-2)}


def sparse_dense(shape, dtype=torch.float32, density=0.4, seed=0):
    """A dense tensor with about `density` of its elements nonzero."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    return (x * (torch.rand(shape, generator=g) < density)).to(dtype)


def uncoalesced(dtype=torch.float32, dense_shape=()):
    """A (4, 5, *dense_shape) COO tensor with duplicate coordinates, out of order."""
    g = torch.Generator().manual_seed(1)
    indices = torch.tensor([[3, 0, 1, 0, 3, 2, 0], [4, 1, 2, 1, 4, 0, 1]])
    values = torch.randn((7,) + tuple(dense_shape), generator=g).to(dtype)
    return torch.sparse_coo_tensor(indices, values, (4, 5) + tuple(dense_shape))


def same_coo(out, ref, **tol):
    assert out.device.type == DEV and out.layout == torch.sparse_coo and out.shape == ref.shape
    assert out.is_coalesced() == ref.is_coalesced()
    assert torch.equal(out._indices().cpu(), ref._indices())
    assert_close(out._values().cpu(), ref._values(), **tol)


def same_csr(out, ref, **tol):
    assert out.device.type == DEV and out.layout == torch.sparse_csr and out.shape == ref.shape
    assert torch.equal(out.crow_indices().cpu(), ref.crow_indices())
    assert torch.equal(out.col_indices().cpu(), ref.col_indices())
    assert_close(out.values().cpu(), ref.values(), **tol)


DENSE_INPUTS = {
    "matrix": lambda dt: sparse_dense((6, 7), dt),
    "transposed": lambda dt: sparse_dense((7, 6), dt).t(),
    "sliced": lambda dt: sparse_dense((8, 9, 3), dt)[1::2, ::2],
    "3d": lambda dt: sparse_dense((3, 4, 5), dt),
    "all_zero": lambda dt: torch.zeros(4, 3, dtype=dt),
    "zero_size": lambda dt: torch.zeros(0, 3, dtype=dt),
    "scalar": lambda dt: torch.tensor(2.5, dtype=dt),
    "scalar_zero": lambda dt: torch.tensor(0.0, dtype=dt),
}


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16])
@pytest.mark.parametrize("name", sorted(DENSE_INPUTS))
def test_dense_to_coo_and_back(name, dtype):
    x = DENSE_INPUTS[name](dtype)
    for sparse_dim in sorted({x.dim(), min(1, x.dim())}):
        ref = x.to_sparse(sparse_dim)
        out = x.to(DEV).to_sparse(sparse_dim)
        same_coo(out, ref)
        assert (out.sparse_dim(), out.dense_dim()) == (ref.sparse_dim(), ref.dense_dim())
        assert torch.equal(out.to_dense().cpu(), x)


@pytest.mark.parametrize("dtype", FLOATS + [torch.float16])
@pytest.mark.parametrize("dense_shape", [(), (3,)], ids=["scalar_values", "hybrid"])
def test_uncoalesced_to_dense_and_coalesce(dtype, dense_shape):
    ref = uncoalesced(dtype, dense_shape)
    s = ref.to(DEV)
    assert not s.is_coalesced() and s._nnz() == 7
    assert_close(s.to_dense().cpu(), ref.to_dense(), **TOL.get(dtype, {}))
    same_coo(s.coalesce(), ref.coalesce(), **TOL.get(dtype, {}))
    assert s._nnz() == 7  # coalesce made a new tensor


@pytest.mark.parametrize("nnz", [0, 1])
def test_coalesce_trivial(nnz):
    ref = torch.sparse_coo_tensor(torch.tensor([[2], [1]])[:, :nnz], torch.ones(nnz), (3, 3))
    out = ref.to(DEV).coalesce()
    same_coo(out, ref.coalesce())
    assert out.to_dense().cpu().sum().item() == nnz


def test_constructor_on_device_and_copies():
    i, v = torch.tensor([[0, 2, 1], [1, 0, 1]]), torch.tensor([1.0, 2.0, 3.0])
    s = torch.sparse_coo_tensor(i.to(DEV), v.to(DEV), (3, 2))
    assert s.device.type == DEV and s.layout == torch.sparse_coo
    ref = torch.sparse_coo_tensor(i, v, (3, 2))
    assert torch.equal(s.to_dense().cpu(), ref.to_dense())
    back = s.cpu()
    assert back.device.type == "cpu" and torch.equal(back._indices(), i) and torch.equal(back._values(), v)
    assert torch.equal(s.clone().to_dense().cpu(), ref.to_dense())
    # size inferred from the indices
    inferred = torch.sparse_coo_tensor(i.to(DEV), v.to(DEV))
    assert inferred.shape == (3, 2)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("dense_kind", ["contiguous", "transposed"])
def test_coo_mm(dtype, dense_kind):
    a = uncoalesced(dtype)  # (4, 5), duplicates
    g = torch.Generator().manual_seed(2)
    d = torch.randn(6, 5, generator=g).to(dtype).t() if dense_kind == "transposed" else \
        torch.randn(5, 6, generator=g).to(dtype)
    ad, dd = a.to(DEV), d.to(DEV)
    assert_close((ad @ dd).cpu(), a @ d)
    assert_close(torch.sparse.mm(ad, dd).cpu(), torch.sparse.mm(a, d))
    t = torch.randn(4, 6, generator=g).to(dtype)
    assert_close(torch.addmm(t.to(DEV), ad, dd, beta=0.5, alpha=2.0).cpu(), torch.addmm(t, a, d, beta=0.5, alpha=2.0))
    # beta = 0 ignores self's NaN, as on the CPU
    nan = torch.full((4, 6), float("nan"), dtype=dtype)
    assert_close(torch.addmm(nan.to(DEV), ad, dd, beta=0).cpu(), torch.addmm(nan, a, d, beta=0))
    # dense @ sparse
    left = torch.randn(3, 4, generator=g).to(dtype)
    assert_close(torch.sparse.mm(left.to(DEV), ad).cpu(), torch.sparse.mm(left, a))
    # nothing stored
    empty = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=dtype), (4, 5))
    assert_close((empty.to(DEV) @ dd).cpu(), torch.zeros(4, 6, dtype=dtype))


def test_add_dense_and_sparse():
    a = uncoalesced()
    d = torch.randn(4, 5)
    assert_close((d.to(DEV) + a.to(DEV)).cpu(), d + a)
    assert_close(torch.add(d.to(DEV), a.to(DEV), alpha=-2).cpu(), torch.add(d, a, alpha=-2))
    out = d.to(DEV).t().contiguous().t()  # non-contiguous in-place target
    out.add_(a.to(DEV))
    assert_close(out.cpu(), d + a)
    both = a.to(DEV) + a.to(DEV)
    assert both.layout == torch.sparse_coo
    assert_close(both.to_dense().cpu(), (a + a).to_dense())
    with pytest.raises(RuntimeError):
        a.to(DEV) + d.to(DEV)


UNARY = ["abs", "asin", "asinh", "atan", "atanh", "ceil", "deg2rad", "erf", "erfinv", "expm1", "floor", "frac",
         "log1p", "rad2deg", "round", "sgn", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc", "neg", "relu"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_coo_value_ops(dtype):
    ref = uncoalesced(dtype, (2,)) * 0.4  # |values| < 1: in every unary op's domain but sqrt's
    s = ref.to(DEV)
    for name in UNARY:
        r, o = getattr(torch, name)(ref), getattr(torch, name)(s)
        same_coo(o, r, equal_nan=True)
        inplace = getattr(s.coalesce(), name + "_")()
        same_coo(inplace, getattr(ref.coalesce(), name + "_")(), equal_nan=True)
    same_coo((s * 2.5).coalesce(), (ref * 2.5).coalesce())
    same_coo((3 * s).coalesce(), (3 * ref).coalesce())
    same_coo((s / 4).coalesce(), (ref / 4).coalesce())
    with pytest.raises(NotImplementedError, match="scalar"):
        s * s
    # sparse @ vector, COO and CSR
    v = torch.randn(5, dtype=dtype)
    m = uncoalesced(dtype)
    assert_close((m.to(DEV) @ v.to(DEV)).cpu(), m @ v)
    csr = m.to_dense().to_sparse_csr()
    assert_close(torch.mv(csr.to(DEV), v.to(DEV)).cpu(), torch.mv(csr, v))
    t = torch.randn(4, dtype=dtype)
    assert_close(torch.addmv(t.to(DEV), csr.to(DEV), v.to(DEV), beta=0.5, alpha=2).cpu(),
                 torch.addmv(t, csr, v, beta=0.5, alpha=2))



@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nnz0", [False, True], ids=["values", "nnz0"])
def test_csr_value_ops(dtype, nnz0):
    ref = (torch.zeros(4, 5, dtype=dtype) if nnz0 else sparse_dense((4, 5), dtype) * 0.4).to_sparse_csr()
    s = ref.to(DEV)
    for name in UNARY:
        same_csr(getattr(torch, name)(s), getattr(torch, name)(ref), equal_nan=True)
        same_csr(getattr(s.clone(), name + "_")(), getattr(ref.clone(), name + "_")(), equal_nan=True)
    same_csr(s * 2.5, ref * 2.5)
    same_csr(3 * s, 3 * ref)
    same_csr(s * torch.tensor(-2.0, dtype=dtype, device=DEV), ref * torch.tensor(-2.0, dtype=dtype))
    same_csr(s.clone().mul_(0.5), ref.clone().mul_(0.5))
    # times a dense tensor, either order, in place, another dtype: the CSR's pattern kept
    d = torch.randn(5, 4, generator=torch.Generator().manual_seed(11)).to(dtype).t()  # non-contiguous
    same_csr(s * d.to(DEV), ref * d)
    same_csr(d.to(DEV) * s, d * ref)
    same_csr(s.clone().mul_(d.to(DEV)), ref.clone().mul_(d))
    same_csr(s.float() * d.double().to(DEV), ref.float() * d.double())
    # a broadcast row (which the CPU rejects): the dense product at the stored coordinates
    row = torch.arange(5.0, dtype=dtype)
    assert torch.equal((s * row.to(DEV)).to_dense().cpu(), ref.to_dense() * row)
    with pytest.raises(NotImplementedError, match="dense tensor or a scalar"):
        s * s

def test_gradients_through_coo():
    # to_dense of a sparse leaf: the gradient is the dense gradient at the stored coordinates
    grads = []
    for dev in ("cpu", DEV):
        s = uncoalesced().coalesce().to(dev).requires_grad_()
        w = torch.arange(20.0).reshape(4, 5).to(dev)
        (s.to_dense() * w).sum().backward()
        grads.append(s.grad)
    same_coo(grads[1].coalesce(), grads[0].coalesce())
    # to_sparse of a dense leaf and sparse @ dense wrt the dense operand
    x = sparse_dense((4, 5))
    d = torch.randn(5, 3)
    results = []
    for dev in ("cpu", DEV):
        xl, dl = x.detach().to(dev).requires_grad_(), d.detach().to(dev).requires_grad_()
        y = torch.sparse.mm(xl.to_sparse(), dl)
        (y * torch.arange(12.0).reshape(4, 3).to(dev)).sum().backward()
        results.append((y.detach().cpu(), xl.grad.cpu(), dl.grad.cpu()))
    for o, r in zip(results[1], results[0]):
        assert_close(o, r)


def test_gradient_wrt_constructor_values():
    # the GNN pattern: an adjacency built from learnable values, multiplied into features
    i = torch.tensor([[0, 1, 0, 2, 2], [1, 2, 1, 0, 2]])  # a duplicate
    results = []
    for dev in ("cpu", DEV):
        v = torch.tensor([1.0, 2.0, 3.0, 4.0, -1.0], device=dev, requires_grad=True)
        d = torch.randn(3, 2, generator=torch.Generator().manual_seed(9)).to(dev).requires_grad_()
        y = torch.sparse.mm(torch.sparse_coo_tensor(i.to(dev), v, (3, 3)), d)
        (y * y).sum().backward()
        results.append((y.detach().cpu(), v.grad.cpu(), d.grad.cpu()))
    for o, r in zip(results[1], results[0]):
        assert_close(o, r)


@pytest.mark.parametrize("dense_shape", [(), (2,)], ids=["scalar_values", "hybrid"])
def test_sparse_mask(dense_shape):
    g = torch.Generator().manual_seed(10)
    self_sparse = uncoalesced(torch.float32, dense_shape)  # duplicates: summed before masking
    mask = torch.sparse_coo_tensor(torch.tensor([[0, 3, 2, 1], [1, 4, 3, 0]]), torch.ones(4), (4, 5)).coalesce()
    if dense_shape:
        mask = torch.sparse_coo_tensor(mask._indices(), torch.ones(4, *dense_shape), (4, 5) + dense_shape).coalesce()
    dense = torch.randn((4, 5) + dense_shape, generator=g)
    for source in (self_sparse, dense):
        same_coo(source.to(DEV).sparse_mask(mask.to(DEV)), source.sparse_mask(mask))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", ["matrix", "transposed", "all_zero", "zero_size"])
def test_csr_conversions(name, dtype):
    x = DENSE_INPUTS[name](dtype)
    x[1:2] = 0 if x.shape[0] > 1 else x[1:2]  # an empty row
    ref = x.to_sparse_csr()
    out = x.to(DEV).to_sparse_csr()
    same_csr(out, ref)
    assert torch.equal(out.to_dense().cpu(), x)
    same_csr(x.to_sparse().to(DEV).to_sparse_csr(), ref)  # COO -> CSR
    same_coo(out.to_sparse(), ref.to_sparse())  # CSR -> COO
    same_csr(ref.to(DEV), ref)  # a copy keeps the layout


@pytest.mark.parametrize("dtype", FLOATS)
def test_csr_mm(dtype):
    x = sparse_dense((5, 4), dtype)
    x[2] = 0
    a = x.to_sparse_csr()
    g = torch.Generator().manual_seed(3)
    d = torch.randn(4, 3, generator=g).to(dtype)
    ad = a.to(DEV)
    assert_close((ad @ d.to(DEV)).cpu(), a @ d)
    t = torch.randn(5, 3, generator=g).to(dtype)
    assert_close(torch.addmm(t.to(DEV), ad, d.to(DEV), beta=0.3, alpha=1.5).cpu(),
                 torch.addmm(t, a, d, beta=0.3, alpha=1.5))
    left = torch.randn(2, 5, generator=g).to(dtype)
    assert_close(torch.mm(left.to(DEV), ad).cpu(), torch.mm(left, a))
    # the transpose is CSC sharing the CSR's index tensors: to_dense and products must leave them alone
    assert torch.equal(ad.t().to_dense().cpu(), x.t())
    assert_close((ad.t() @ torch.ones(5, 2, dtype=dtype, device=DEV)).cpu(), a.t() @ torch.ones(5, 2, dtype=dtype))
    assert_close((torch.ones(3, 4, dtype=dtype, device=DEV) @ ad.t()).cpu(), torch.ones(3, 4, dtype=dtype) @ a.t())
    assert_close(torch.mv(ad.t(), torch.ones(5, dtype=dtype, device=DEV)).cpu(), x.t() @ torch.ones(5, dtype=dtype))
    same_csr(ad, a)


def grads_of(fn, inputs, dev, seed=4):
    """fn's output (dense) and the gradients of the inputs that require them, on `dev`."""
    leaves = [t.detach().to(dev).requires_grad_(t.requires_grad) for t in inputs]
    out = fn(*leaves)
    g = torch.randn(out.shape, generator=torch.Generator().manual_seed(seed), dtype=out.dtype)
    if out.layout == torch.sparse_csr:
        g = torch.sparse_csr_tensor(out.crow_indices().cpu(), out.col_indices().cpu(),
                                    torch.randn(out._nnz(), generator=torch.Generator().manual_seed(seed),
                                                dtype=out.dtype), out.shape)
    grads = torch.autograd.grad(out, [t for t in leaves if t.requires_grad], g.to(dev))
    return out, grads


def assert_same_result(a, b):
    if a.layout == torch.sparse_csr:
        same_csr(a, b)
    else:
        assert a.device.type == DEV
        assert_close(a.cpu(), b)


@pytest.mark.parametrize("dtype", FLOATS)
def test_sparse_sampled_addmm(dtype):
    g = torch.Generator().manual_seed(5)
    pattern = sparse_dense((5, 6), dtype, seed=6)
    pattern[3] = 0
    c = pattern.to_sparse_csr().requires_grad_()
    m1 = torch.randn(5, 4, generator=g).to(dtype).requires_grad_()
    m2 = torch.randn(6, 4, generator=g).to(dtype).t().requires_grad_()  # non-contiguous
    fn = lambda c, a, b: torch.sparse.sampled_addmm(c, a, b, beta=0.2, alpha=0.6)  # noqa: E731
    ref, ref_grads = grads_of(fn, (c, m1, m2), "cpu")
    out, out_grads = grads_of(fn, (c, m1, m2), DEV)
    same_csr(out, ref)
    for o, r in zip(out_grads, ref_grads):
        assert_same_result(o, r)
    # nothing stored, empty inner dimension
    e = torch.zeros(5, 6, dtype=dtype).to_sparse_csr()
    same_csr(torch.sparse.sampled_addmm(e.to(DEV), m1.detach().to(DEV), m2.detach().to(DEV)),
             torch.sparse.sampled_addmm(e, m1.detach(), m2.detach()))
    k0 = (torch.zeros(5, 0, dtype=dtype), torch.zeros(0, 6, dtype=dtype))
    same_csr(torch.sparse.sampled_addmm(c.detach().to(DEV), *(t.to(DEV) for t in k0), beta=0.5),
             torch.sparse.sampled_addmm(c.detach(), *k0, beta=0.5))


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("dtype", FLOATS + [torch.float16])
def test_sparse_mm_reduce(reduce, dtype):
    x = sparse_dense((6, 5), dtype, density=0.5, seed=7)
    x[4] = 0  # an empty row: 0 in the result, no gradient
    x[1, 2] = x[1, 3] = 1.0  # a tie within a row for amax / amin
    a = x.to_sparse_csr().requires_grad_()
    o = torch.randn(5, 3, generator=torch.Generator().manual_seed(8)).to(dtype)
    o[3] = o[2]
    o.requires_grad_()
    fn = lambda a, o: torch.sparse.mm(a, o, reduce)  # noqa: E731
    ref, ref_grads = grads_of(fn, (a, o), "cpu")
    out, out_grads = grads_of(fn, (a, o), DEV)
    assert_same_result(out, ref)
    for og, rg in zip(out_grads, ref_grads):
        assert_same_result(og, rg)
    # without gradients (no arg_out)
    assert_close(torch.sparse.mm(a.detach().to(DEV), o.detach().to(DEV), reduce).cpu(),
                 torch.sparse.mm(a.detach(), o.detach(), reduce))


def test_unsupported_is_a_clear_error():
    batched = torch.zeros(2, 3, 3).to_sparse_csr()
    with pytest.raises(NotImplementedError, match="2-D"):
        torch.zeros(2, 3, 3, device=DEV).to_sparse_csr()
    with pytest.raises(NotImplementedError, match="2-D"):
        batched.to(DEV).to_dense()
    with pytest.raises(RuntimeError, match="reduce argument"):
        torch.sparse.mm(torch.eye(3).to_sparse_csr().to(DEV), torch.ones(3, 2, device=DEV), "prod")
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        uncoalesced().to(DEV) @ torch.ones(4, 2, device=DEV)



def coo_3d(dtype, nnz=12, seed=3):
    """A (3, 4, 5) COO tensor of random coordinates, duplicates likely (uncoalesced)."""
    g = torch.Generator().manual_seed(seed)
    indices = torch.stack([torch.randint(0, n, (nnz,), generator=g) for n in (3, 4, 5)])
    return torch.sparse_coo_tensor(indices, torch.randn(nnz, generator=g).to(dtype), (3, 4, 5))


SOFTMAX_INPUTS = {
    "uncoalesced": lambda dt: uncoalesced(dt),
    "hybrid": lambda dt: uncoalesced(dt, (3,)),
    "3d": lambda dt: coo_3d(dt),
    "coalesced_3d": lambda dt: coo_3d(dt).coalesce(),
    "nnz0": lambda dt: torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=dt), (4, 5)),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(SOFTMAX_INPUTS))
@pytest.mark.parametrize("fn", [torch.sparse.softmax, torch.sparse.log_softmax], ids=["softmax", "log_softmax"])
def test_sparse_softmax(fn, name, dtype):
    ref = SOFTMAX_INPUTS[name](dtype)
    for dim in range(-1, ref.dim()):
        out = fn(ref.to(DEV), dim)
        same_coo(out, fn(ref, dim))
    # gradients wrt the (possibly uncoalesced) sparse leaf, through to_dense; not with dim=-1, where the
    # CPU's backward takes the unwrapped dim for "no dim" (every value its own pool): checked below instead
    grads = {}
    for dim in range(ref.dim()):
        for dev in ("cpu", DEV):
            x = ref.detach().to(dev).requires_grad_()
            w = torch.linspace(-2, 3, ref.numel(), dtype=dtype).reshape(ref.shape).to(dev)
            (fn(x, dim).to_dense() * w).sum().backward()
            grads[dim, dev] = x.grad.coalesce()
        same_coo(grads[dim, DEV], grads[dim, "cpu"])
    x = ref.detach().to(DEV).requires_grad_()
    w = torch.linspace(-2, 3, ref.numel(), dtype=dtype).reshape(ref.shape).to(DEV)
    (fn(x, -1).to_dense() * w).sum().backward()
    same_coo(x.grad.coalesce().cpu().to(DEV), grads[ref.dim() - 1, "cpu"])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("log", [False, True])
def test_sparse_softmax_backward_other_coordinates(log, dtype):
    # a gradient storing other coordinates than the output (and duplicates): only the output's count
    op = torch.ops.aten._sparse_log_softmax_backward_data if log else torch.ops.aten._sparse_softmax_backward_data
    x = coo_3d(dtype)
    for dim in range(x.dim()):
        out = (torch.sparse.log_softmax if log else torch.sparse.softmax)(x, dim)
        grad = coo_3d(dtype, nnz=20, seed=4)
        ref = op(grad, out, dim, x)
        same_coo(op(grad.to(DEV), out.to(DEV), dim, x.to(DEV)), ref)
        # a dense gradient too (the CPU takes only sparse ones)
        same_coo(op(grad.to_dense().to(DEV), out.to(DEV), dim, x.to(DEV)), ref)


INDEX_SELECT_CASES = {
    "uncoalesced": (lambda dt: uncoalesced(dt), [3, 0, 0, 2, -1]),
    "hybrid": (lambda dt: uncoalesced(dt, (3,)), [2, 0, 2, 1]),  # the CPU rejects negatives along dense dims
    "3d": (lambda dt: coo_3d(dt, nnz=40), [1, 1, 2, 0]),
    "coalesced": (lambda dt: coo_3d(dt).coalesce(), [2, 0]),
    "longer_index": (lambda dt: uncoalesced(dt), [3, 0, 0, 2, -1, 1, 3, 0, 2]),  # len(index) > nnz: another order
    "empty_index": (lambda dt: uncoalesced(dt), []),
    "nnz0": (lambda dt: SOFTMAX_INPUTS["nnz0"](dt), [1, 1]),
}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", sorted(INDEX_SELECT_CASES))
def test_sparse_index_select(name, dtype):
    make, index = INDEX_SELECT_CASES[name]
    ref = make(dtype)
    for dim in range(ref.dim()):
        for index_dtype in (torch.long, torch.int):
            idx = torch.tensor([i for i in index if -ref.size(dim) <= i < ref.size(dim)], dtype=torch.long)
            expected = ref.index_select(dim, idx)  # the CPU takes int64 only
            out = ref.to(DEV).index_select(dim, idx.to(DEV, index_dtype))
            # the CPU's entry order exactly (by index position, then stored order), its coalesced flag
            same_coo(out, expected)
            assert torch.equal(out.to_dense().cpu(), expected.to_dense())
    with pytest.raises(IndexError, match="out of range"):
        ref.to(DEV).index_select(0, torch.tensor([0, ref.size(0)], device=DEV))
    with pytest.raises(IndexError, match="vector"):
        ref.to(DEV).index_select(0, torch.zeros(1, 1, dtype=torch.long, device=DEV))


def test_sparse_index_select_random_sizes():
    # both of the CPU's entry orders, around len(index) == nnz
    g = torch.Generator().manual_seed(5)
    for nnz, n_index in [(30, 29), (30, 30), (30, 31), (5, 40), (60, 7)]:
        indices = torch.stack([torch.randint(0, 6, (nnz,), generator=g), torch.randint(0, 7, (nnz,), generator=g)])
        ref = torch.sparse_coo_tensor(indices, torch.randn(nnz, generator=g), (6, 7))
        for dim in (0, 1):
            idx = torch.randint(0, ref.size(dim), (n_index,), generator=g)
            same_coo(ref.to(DEV).index_select(dim, idx.to(DEV)), ref.index_select(dim, idx))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("nnz0", [False, True], ids=["uncoalesced", "nnz0"])
def test_sparse_sum(dtype, nnz0):
    ref = uncoalesced(dtype, (3,))
    if nnz0:
        ref = torch.sparse_coo_tensor(torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, 3, dtype=dtype), (4, 5, 3))
    assert_close(torch.sparse.sum(ref.to(DEV)).cpu(), torch.sparse.sum(ref))
    for dims in [0, 1, 2, -1, (0, 1), (0, 2), (1, 2), (0, 1, 2)]:
        expected = torch.sparse.sum(ref, dims)
        out = torch.sparse.sum(ref.to(DEV), dims)
        if expected.is_sparse:
            same_coo(out, expected)
        else:
            assert_close(out.cpu(), expected)
        # the gradient wrt the sparse leaf (_sparse_sum_backward: a dense or a sparse incoming gradient)
        grads = []
        for dev in ("cpu", DEV):
            x = ref.detach().to(dev).requires_grad_()
            y = torch.sparse.sum(x, dims)
            w = torch.linspace(-1, 2, y.numel(), dtype=dtype).reshape(y.shape).to(dev)
            (y.to_dense() * w if y.is_sparse else y * w).sum().backward()
            grads.append(x.grad)
        same_coo(grads[1].coalesce(), grads[0].coalesce())
    # Tensor.sum: all of it (a dense gradient, as on the CPU), another dtype, over dims, keepdim
    x = ref.detach().to(DEV).requires_grad_()
    x.sum().backward()
    assert x.grad.layout == torch.strided and torch.equal(x.grad.cpu(), torch.ones(ref.shape, dtype=dtype))
    assert_close(ref.to(DEV).sum(dtype=torch.float64).cpu(), ref.sum(dtype=torch.float64))
    for dims in [1, (0, 2), -1]:
        for keepdim in (False, True):
            expected = ref.sum(dims, keepdim=keepdim)
            out = ref.to(DEV).sum(dims, keepdim=keepdim)
            assert out.layout == expected.layout and out.shape == expected.shape
            assert_close(out.to_dense().cpu(), expected.to_dense())
    # a CSR tensor's sum
    csr = ref.to_dense().sum(-1).to_sparse_csr()
    assert_close(csr.to(DEV).sum().cpu(), csr.sum())

@pytest.mark.parametrize("op", opinfos_named({"to_sparse", "sparse.sampled_addmm", "sparse.mm"}),
                         ids=lambda o: o.name + ("." + o.variant_test_name if o.variant_test_name else ""))
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=8)
    assert not failures, failures
    assert passed > 0
