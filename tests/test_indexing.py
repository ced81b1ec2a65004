"""The indexing family against the CPU: index_select/embedding, advanced indexing (x[idx],
x[mask]), index_put_ (accumulate), gather/scatter/scatter_add/scatter_reduce, index_add/copy/
fill/reduce, take/put_, masked_select/masked_scatter, nonzero, repeat_interleave, bincount,
unique, searchsorted/bucketize; forward and gradients, all CPU dtypes, non-contiguous operands,
zero-size and 0-dim tensors, duplicate and negative indices, out-of-range errors. Ends with the
OpInfo samples of these ops (pass rate printed).

Run directly for the OpInfo report: python3 tests/test_indexing.py
"""
import os
import sys

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from opinfo_compare import opinfos_named, run_opinfo  # noqa: E402

D = "ocl"
ALL_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.bool]
FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
SUM_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int8]


def make(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-20 if dtype != torch.uint8 else 0, 20, shape, generator=g).to(dtype)


def tol(dtype):
    return dict(rtol=2e-2, atol=2e-2) if dtype in (torch.float16, torch.bfloat16) else {}


def same(a, b, dtype=None):
    assert a.device.type == "ocl"
    assert_close(a.cpu(), b, equal_nan=True, **tol(dtype or b.dtype))


def noncontig(t):
    """A non-contiguous copy (step-2 view of a larger tensor) with the same values."""
    if t.dim() == 0 or t.numel() <= 1:
        return t
    big = torch.zeros(*t.shape[:-1], t.shape[-1] * 2, dtype=t.dtype, device=t.device)
    big[..., ::2] = t
    return big[..., ::2]


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_select_dtypes(dtype):
    x = make((5, 4, 3), dtype)
    idx = torch.tensor([4, 0, -1, 2, 2])
    for dim in range(3):
        i = idx % x.shape[dim]
        same(torch.index_select(x.to(D), dim, i.to(D)), torch.index_select(x, dim, i))
    same(x.to(D).transpose(0, 2).index_select(1, idx.to(D) % 4), x.transpose(0, 2).index_select(1, idx % 4))
    same(x.to(D).index_select(0, i.int().to(D)), x.index_select(0, i.int()))


def test_index_select_edge_cases():
    x = make((4, 3), torch.float32)
    same(x.to(D).index_select(0, torch.tensor([], dtype=torch.long, device=D)), x.index_select(0, torch.tensor([], dtype=torch.long)))
    s = torch.tensor(3.5)
    same(s.to(D).index_select(0, torch.tensor([0], device=D)), s.index_select(0, torch.tensor([0])))
    same(x.to(D).index_select(1, torch.tensor(2, device=D)), x.index_select(1, torch.tensor(2)))
    z = torch.zeros(0, 3)
    same(z.to(D).index_select(1, torch.tensor([1, 1], device=D)), z.index_select(1, torch.tensor([1, 1])))
    with pytest.raises(IndexError, match="out of bounds"):
        x.to(D).index_select(0, torch.tensor([1, 4], device=D))
        torch.ocl.synchronize()  # reported at the next wait, as CUDA
    with pytest.raises(IndexError):
        x.to(D).index_select(0, torch.tensor([-5], device=D))
        torch.ocl.synchronize()  # reported at the next wait, as CUDA


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.float64])
def test_embedding_forward_backward(dtype):
    for padding_idx, scale in [(None, False), (2, False), (None, True), (1, True)]:
        emb = torch.nn.Embedding(10, 6, padding_idx=padding_idx, scale_grad_by_freq=scale).to(dtype)
        emb_o = torch.nn.Embedding(10, 6, padding_idx=padding_idx, scale_grad_by_freq=scale).to(dtype)
        emb_o.load_state_dict(emb.state_dict())
        emb_o = emb_o.to(D)
        idx = torch.tensor([[1, 2, 2, 9], [0, 2, 1, 1]])
        out = emb(idx)
        out_o = emb_o(idx.to(D))
        same(out_o, out.detach())
        g = make(out.shape, dtype, 1)
        out.backward(g)
        out_o.backward(g.to(D))
        same(emb_o.weight.grad, emb.weight.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_long_runs_of_one_index(dtype):
    # The keyed reduction folds a run of equal indices 8 rows at a time: runs of 1, 7, 8, 9 and 61 rows,
    # skipped (padding) rows inside and after a run, sums in the CPU's row order.
    g = torch.Generator().manual_seed(5)
    idx = torch.cat([torch.full((61,), 3), torch.tensor([0]), torch.full((7,), 5), torch.full((8,), 6),
                     torch.full((9,), 2), torch.tensor([1, 3, 3])])[torch.randperm(89, generator=g)]
    vals = make((89, 5), dtype, 2)
    x = make((8, 5), dtype, 3)
    same(x.to(D).index_put_((idx.to(D),), vals.to(D), accumulate=True), x.clone().index_put_((idx,), vals, accumulate=True))
    if dtype.is_floating_point:
        for padding_idx in (None, 5, 3):
            w = make((8, 5), dtype, 4)
            ref = w.clone().requires_grad_()
            dev = w.to(D).requires_grad_()
            F.embedding(idx, ref, padding_idx=padding_idx).backward(vals)
            F.embedding(idx.to(D), dev, padding_idx=padding_idx).backward(vals.to(D))
            same(dev.grad, ref.grad)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_runs_longer_than_a_chunk(dtype):
    # The embedding backward folds runs of >= 256 rows as partial sums of 64 rows (dl_index_reduce_chunks): runs
    # that start and end inside chunks, span many chunks, end on a boundary, padding rows inside a run, BERT's
    # token types (2 rows shared by every token). Compared with a float64 sum: the association differs from the
    # CPU's loop. index_put_ / index_add_ over the same runs keep the CPU's sequential order exactly.
    g = torch.Generator().manual_seed(7)
    idx = torch.cat([torch.full((700,), 1), torch.full((64,), 4), torch.full((130,), 0), torch.tensor([2, 3]),
                     torch.full((65,), 5)])[torch.randperm(961, generator=g)]
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    for ix, padding_idx in ((idx, None), (torch.sort(idx).values, None), (idx, 4)):
        grad = make((961, 8), dtype, 2)
        dev = make((6, 8), dtype, 4).to(D).requires_grad_()
        F.embedding(ix.to(D), dev, padding_idx=padding_idx).backward(grad.to(D))
        ref = torch.zeros(6, 8, dtype=torch.float64).index_add_(0, ix, grad.double())
        if padding_idx is not None:
            ref[padding_idx] = 0
        assert_close(dev.grad.cpu().double(), ref, **tol)
        x = make((6, 8), dtype, 3)
        assert torch.equal(x.to(D).index_put_((ix.to(D),), grad.to(D), accumulate=True).cpu(),
                           x.clone().index_put_((ix,), grad, accumulate=True))
    tokens = torch.randint(0, 2, (16, 512), generator=g)
    dev = make((2, 8), dtype, 4).to(D).requires_grad_()
    grad = make((16, 512, 8), dtype, 5)
    F.embedding(tokens.to(D), dev).backward(grad.to(D))
    ref = torch.zeros(2, 8, dtype=torch.float64).index_add_(0, tokens.flatten(), grad.double().flatten(0, 1))
    assert_close(dev.grad.cpu().double(), ref, **(dict(rtol=1e-5, atol=1e-3) if dtype == torch.float32 else tol))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_advanced_index_get(dtype):
    x = make((4, 5, 6), dtype)
    xo = x.to(D)
    i = torch.tensor([0, -1, 2, 2])
    j = torch.tensor([[1], [4]])
    mask = make((4, 5), torch.bool, 3)
    cases = [
        lambda t, dev: t[i.to(dev)],
        lambda t, dev: t[:, i.to(dev)],
        lambda t, dev: t[i.to(dev), :, j.to(dev)],   # separated: rows first
        lambda t, dev: t[:, j.to(dev), i.to(dev)],   # adjacent, broadcast
        lambda t, dev: t[mask.to(dev)],
        lambda t, dev: t[1:, ::2][torch.tensor([0, 2], device=dev)],
        lambda t, dev: t[..., torch.tensor([5, 0], device=dev)],
        lambda t, dev: t[mask.to(dev)[:, 0]],
        lambda t, dev: t[torch.tensor([], dtype=torch.long, device=dev)],
        lambda t, dev: t[i.to(dev).int()],
    ]
    for k, f in enumerate(cases):
        same(f(xo, D), f(x, "cpu"))
    same(xo[i], x[i])  # CPU index tensor on an ocl tensor
    s = make((), dtype)
    same(s.to(D)[torch.tensor(True, device=D)], s[torch.tensor(True)])
    with pytest.raises(IndexError):
        xo[torch.tensor([4], device=D)]
        torch.ocl.synchronize()  # reported at the next wait, as CUDA


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_put(dtype):
    x = make((5, 4), dtype)
    i = torch.tensor([0, 3, -1])
    v = make((3, 4), dtype, 1)
    a, b = x.clone(), x.clone().to(D)
    a[i] = v
    b[i.to(D)] = v.to(D)
    same(b, a)
    a[:, torch.tensor([1, 2])] = make((), dtype, 2)
    b[:, torch.tensor([1, 2], device=D)] = make((), dtype, 2).to(D)
    same(b, a)
    m = make((5, 4), torch.bool, 4)
    a[m] = make((), dtype, 5)
    b[m.to(D)] = make((), dtype, 5).to(D)
    same(b, a)
    if dtype in SUM_DTYPES:  # accumulate with duplicates
        idx = (torch.tensor([0, 0, 4, 0, -1]), torch.tensor([1, 1, 2, 1, 2]))
        vals = make((5,), dtype, 6)
        same(x.to(D).index_put_(tuple(t.to(D) for t in idx), vals.to(D), accumulate=True),
             x.clone().index_put_(idx, vals, accumulate=True))
        nc = noncontig(x.to(D).t().contiguous().t())
        same(nc.index_put_((idx[0].to(D),), noncontig(make((5, 4), dtype, 7).to(D)), accumulate=True),
             x.clone().index_put_((idx[0],), noncontig(make((5, 4), dtype, 7)), accumulate=True))


def test_index_put_grad_and_errors():
    x = make((6, 3), torch.float32).requires_grad_()
    xo = x.detach().to(D).requires_grad_()
    idx = torch.tensor([1, 1, 5, 0])
    y = (x[idx] * 2).sum() + x[x > 0].sum()
    yo = (xo[idx.to(D)] * 2).sum() + xo[xo > 0].sum()
    y.backward()
    yo.backward()
    same(xo.grad, x.grad)
    with pytest.raises(IndexError):
        xo.detach()[torch.tensor([6], device=D)] = 1.0
        torch.ocl.synchronize()  # reported at the next wait, as CUDA
    with pytest.raises(RuntimeError, match="dtypes match"):
        xo.detach().index_put_((idx.to(D),), torch.ones(4, 3, dtype=torch.float64, device=D))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_gather_scatter(dtype):
    x = make((4, 5), dtype)
    idx = torch.tensor([[0, 1, 3], [3, 3, 0], [2, 2, 2]])
    for dim in (0, 1):
        same(torch.gather(x.to(D), dim, idx.to(D)), torch.gather(x, dim, idx))
        same(torch.gather(x.to(D).t(), dim, idx.to(D)), torch.gather(x.t(), dim, idx))
    src = make((3, 4), dtype, 1)
    uniq = torch.tensor([[0, 1, 3], [1, 2, 0], [3, 0, 2]])  # no duplicates along dim 0
    same(x.to(D).scatter(0, uniq.to(D), src.to(D)), x.scatter(0, uniq, src))
    same(x.to(D).scatter(1, uniq.to(D), 1), x.scatter(1, uniq, 1))
    same(noncontig(x.to(D)).scatter_(1, uniq.to(D), src.to(D)), x.scatter(1, uniq, src))
    if dtype in SUM_DTYPES:
        same(x.to(D).scatter_add(0, idx.to(D), src.to(D)), x.scatter_add(0, idx, src))
        same(x.to(D).scatter(0, idx.to(D), src.to(D), reduce="add"), x.scatter(0, idx, src, reduce="add"))
    if dtype != torch.bool:
        for red in ("sum", "prod", "mean", "amax", "amin"):
            for inc in (True, False):
                if red == "mean" and dtype == torch.bool:
                    continue
                same(x.to(D).scatter_reduce(1, idx.to(D), src.to(D), red, include_self=inc),
                     x.scatter_reduce(1, idx, src, red, include_self=inc))


def test_gather_scatter_grad_and_errors():
    x = make((4, 5), torch.float32).requires_grad_()
    s = make((3, 3), torch.float32, 1).requires_grad_()
    xo, so = (t.detach().to(D).requires_grad_() for t in (x, s))
    idx = torch.tensor([[0, 1, 3], [3, 3, 0], [2, 2, 2]])
    for f in (lambda a, b, i: a.gather(1, i) * b,
              lambda a, b, i: a.scatter_add(0, i, b),
              lambda a, b, i: a.scatter_reduce(0, i, b, "amax", include_self=False),
              lambda a, b, i: a.scatter_reduce(1, i, b, "mean"),
              lambda a, b, i: a.scatter_reduce(1, i, b, "prod")):
        g = make((3, 3) if f(x, s, idx).shape == (3, 3) else (4, 5), torch.float32, 2)
        ga = torch.autograd.grad(f(x, s, idx), (x, s), g, allow_unused=True)
        gb = torch.autograd.grad(f(xo, so, idx.to(D)), (xo, so), g.to(D), allow_unused=True)
        for a, b in zip(gb, ga):
            if b is not None:
                same(a, b)
    with pytest.raises(IndexError, match="out of bounds"):
        xo.detach().gather(1, torch.tensor([[5]], device=D))
        torch.ocl.synchronize()  # reported at the next wait, as CUDA
    with pytest.raises(IndexError):
        xo.detach().scatter_add(0, torch.tensor([[-5]], device=D), so.detach())
        torch.ocl.synchronize()  # reported at the next wait, as CUDA
    zero = torch.empty(0, 5, dtype=torch.long)
    same(xo.detach().gather(0, zero.to(D)), x.detach().gather(0, zero))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_index_add_copy_fill(dtype):
    x = make((5, 3), dtype)
    idx = torch.tensor([0, 4, 0, 3, 2])  # index_add/copy/reduce take no negative indices (index_fill does)
    src = make((5, 3), dtype, 1)
    if dtype in SUM_DTYPES:
        same(x.to(D).index_add(0, idx.to(D), src.to(D)), x.index_add(0, idx, src))
        same(x.to(D).index_add(0, idx.to(D), src.to(D), alpha=2), x.index_add(0, idx, src, alpha=2))
        same(noncontig(x.to(D)).index_add_(1, torch.tensor([2, 2, 0, 2, 1], device=D)[:3], src.to(D)[:, :3].t().t()),
             x.index_add(1, torch.tensor([2, 2, 0]), src[:, :3]))
    uniq = torch.tensor([4, 0, 2])
    same(x.to(D).index_copy(0, uniq.to(D), src[:3].to(D)), x.index_copy(0, uniq, src[:3]))
    same(x.to(D).index_fill(1, torch.tensor([2, 0], device=D), 1), x.index_fill(1, torch.tensor([2, 0]), 1))
    same(x.to(D).index_fill(0, -idx.to(D) - 1, make((), dtype, 3).to(D)), x.index_fill(0, -idx - 1, make((), dtype, 3)))
    if dtype not in (torch.bool,):
        for red in ("prod", "mean", "amax", "amin"):
            same(x.to(D).index_reduce(0, idx.to(D), src.to(D), red, include_self=False),
                 x.index_reduce(0, idx, src, red, include_self=False))


def test_index_add_many_duplicates_deterministic():
    # every row goes to 3 destinations: the sums are folded in row order, as on the CPU
    x = torch.zeros(3, 64)
    idx = torch.randint(0, 3, (1000,), generator=torch.Generator().manual_seed(0))
    src = make((1000, 64), torch.float32)
    out = x.to(D).index_add(0, idx.to(D), src.to(D))
    assert torch.equal(out.cpu(), x.index_add(0, idx, src))
    assert torch.equal(out.cpu(), x.to(D).index_add(0, idx.to(D), src.to(D)).cpu())


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_take_put(dtype):
    x = make((4, 5), dtype)
    idx = torch.tensor([[0, 19], [-1, 7]])
    same(x.to(D).take(idx.to(D)), x.take(idx))
    same(x.to(D).t().take(idx.to(D)), x.t().take(idx))
    v = make((2, 2), dtype, 1)
    # put_ without accumulate: indices must be distinct (19 and -1 are the same element, and
    # which write wins is then undefined -- the GPU and the CPU differ).
    idx = torch.tensor([[0, 18], [-1, 7]])
    same(x.to(D).t().clone().put_(idx.to(D), v.to(D)), x.t().clone().put_(idx, v))
    if dtype in SUM_DTYPES:
        dup = torch.tensor([3, 3, -17, 0])
        same(x.to(D).put(dup.to(D), v.reshape(-1).to(D), accumulate=True), x.put(dup, v.reshape(-1), accumulate=True))
    with pytest.raises(IndexError):
        x.to(D).take(torch.tensor([20], device=D))
        torch.ocl.synchronize()  # reported at the next wait, as CUDA


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_masked_and_nonzero(dtype):
    x = make((4, 6), dtype)
    m = make((4, 6), torch.bool, 1)
    same(torch.nonzero(x.to(D)), torch.nonzero(x))
    same(torch.nonzero(noncontig(x.to(D))), torch.nonzero(x))
    same(x.to(D).masked_select(m.to(D)), x.masked_select(m))
    same(x.to(D).t().masked_select(m.to(D)[:, :4].t()[:, :4] if False else m.to(D).t()), x.t().masked_select(m.t()))
    same(x.to(D).masked_select(m.to(D)[0]), x.masked_select(m[0]))  # broadcast mask
    src = make((30,), dtype, 2)
    same(x.to(D).masked_scatter(m.to(D), src.to(D)), x.masked_scatter(m, src))
    same(torch.nonzero(make((), dtype, 5).to(D)), torch.nonzero(make((), dtype, 5)))
    same(torch.nonzero(torch.zeros(0, 3, dtype=dtype).to(D)), torch.nonzero(torch.zeros(0, 3, dtype=dtype)))
    same(torch.argwhere(x.to(D)), torch.argwhere(x))
    for t in torch.nonzero(x.to(D), as_tuple=True):
        assert t.device.type == "ocl"


def test_masked_grads():
    x = make((4, 6), torch.float32).requires_grad_()
    v = torch.tensor(2.5, requires_grad=True)
    m = make((4, 6), torch.bool, 1)
    xo, vo = x.detach().to(D).requires_grad_(), v.detach().to(D).requires_grad_()
    g = make((4, 6), torch.float32, 2)
    ga = torch.autograd.grad(x.masked_fill(m, v), (x, v), g)
    gb = torch.autograd.grad(xo.masked_fill(m.to(D), vo), (xo, vo), g.to(D))
    for a, b in zip(gb, ga):
        same(a, b)
    ga = torch.autograd.grad(x.masked_select(m).sum(), x)
    gb = torch.autograd.grad(xo.masked_select(m.to(D)).sum(), xo)
    same(gb[0], ga[0])
    with pytest.raises(RuntimeError):
        xo.detach().masked_scatter_(m.to(D), torch.zeros(2, device=D))


def test_repeat_interleave_bincount_unique_searchsorted():
    r = torch.tensor([2, 0, 3, 1])
    same(torch.repeat_interleave(r.to(D)), torch.repeat_interleave(r))
    x = make((4, 3), torch.float32)
    same(x.to(D).repeat_interleave(r.to(D), dim=0), x.repeat_interleave(r, dim=0))
    same(x.to(D).repeat_interleave(2, dim=1), x.repeat_interleave(2, dim=1))
    with pytest.raises(RuntimeError):
        torch.repeat_interleave(torch.tensor([1, -1], device=D))
    b = torch.tensor([1, 5, 2, 1, 0, 5, 5])
    w = make((7,), torch.float32, 1)
    same(torch.bincount(b.to(D)), torch.bincount(b))
    same(torch.bincount(b.to(D), minlength=10), torch.bincount(b, minlength=10))
    same(torch.bincount(b.to(D), weights=w.to(D)), torch.bincount(b, weights=w))
    same(torch.bincount(b.to(D), weights=w.double().to(D)), torch.bincount(b, weights=w.double()))
    same(torch.bincount(torch.tensor([], dtype=torch.long, device=D)), torch.bincount(torch.tensor([], dtype=torch.long)))
    u = torch.tensor([[3, 1, 3], [2, 1, 7]])
    for a, c in zip(torch.unique(u.to(D), return_inverse=True, return_counts=True),
                    torch.unique(u, return_inverse=True, return_counts=True)):
        same(a, c)
    uc = torch.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    for a, c in zip(torch.unique_consecutive(uc.to(D), return_inverse=True, return_counts=True),
                    torch.unique_consecutive(uc, return_inverse=True, return_counts=True)):
        same(a, c)
    bnd = torch.tensor([1.0, 3.0, 3.0, 5.0, 9.0])
    v = torch.tensor([[0.0, 3.0, 4.0], [9.0, 10.0, float("nan")]])
    for right in (False, True):
        same(torch.searchsorted(bnd.to(D), v.to(D), right=right), torch.searchsorted(bnd, v, right=right))
        same(torch.bucketize(v.to(D), bnd.to(D), right=right, out_int32=True),
             torch.bucketize(v, bnd, right=right, out_int32=True))
    rows = torch.sort(make((2, 6), torch.float32, 3), dim=1).values
    same(torch.searchsorted(rows.to(D), v.to(D)), torch.searchsorted(rows, v))
    unsorted = make((6,), torch.float32, 4)
    sorter = torch.argsort(unsorted)
    same(torch.searchsorted(unsorted.to(D), v.to(D), sorter=sorter.to(D)), torch.searchsorted(unsorted, v, sorter=sorter))


# OpInfo yardstick: the indexing ops' samples (forward for all dtypes, float32 gradients).
OPINFO_NAMES = ["index_select", "gather", "scatter", "scatter_add", "scatter_reduce", "index_put", "index_add",
                "index_copy", "index_fill", "index_reduce", "take", "put", "masked_select", "masked_scatter",
                "nonzero", "nn.functional.embedding", "__getitem__", "repeat_interleave", "take_along_dim",
                "bincount", "unique", "unique_consecutive", "searchsorted", "bucketize", "argwhere",
                "masked_fill", "index_add", "nonzero_static"]
OPINFO_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.uint8,
                 torch.bool]


def opinfo_report(max_samples):
    total_p = total_n = 0
    lines, failures = [], []
    for op in opinfos_named(set(OPINFO_NAMES)):
        p, f = run_opinfo(op, OPINFO_DTYPES, max_samples=max_samples)
        total_p += p
        total_n += p + len(f)
        label = op.name + ("." + op.variant_test_name if op.variant_test_name else "")
        lines.append(f"{label:32s} {p:4d}/{p + len(f):4d}")
        failures += f
    lines.append(f"{'TOTAL':32s} {total_p:4d}/{total_n:4d} = {100.0 * total_p / max(1, total_n):.1f}%")
    return total_p, total_n, lines, failures


def test_opinfo_indexing():
    p, n, lines, failures = opinfo_report(max_samples=6)
    sys.__stdout__.write("\n" + "\n".join(lines) + "\n")
    for f in failures[:20]:
        sys.__stdout__.write("  " + f + "\n")
    assert p >= 0.95 * n, "\n".join(failures[:20])


if __name__ == "__main__":
    _, _, report, fails = opinfo_report(max_samples=int(sys.argv[1]) if len(sys.argv) > 1 else 20)
    print("\n".join(report))
    for f in fails:
        print("  " + f)
