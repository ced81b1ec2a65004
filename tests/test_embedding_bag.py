"""embedding_bag (EmbeddingBag.cpp) against the CPU: the OpInfo samples (float32 with gradients,
float64, float16/bfloat16), every mode with offsets (empty bags, include_last_offset), 2-D
input, padding_idx, per_sample_weights, scale_grad_by_freq, ties in max mode, the auxiliary
outputs, and the CPU's errors."""
import pytest
import torch
import torch.nn.functional as F

from opinfo_compare import opinfos_named, run_opinfo

DEV = "ocl:0"


@pytest.mark.parametrize("op", opinfos_named(["nn.functional.embedding_bag"]), ids=lambda o: o.name)
def test_opinfo(op):
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], max_samples=40)
    assert not failures, "\n".join(failures[:5])
    reduced = {torch.float16: dict(rtol=1e-2, atol=1e-2), torch.bfloat16: dict(rtol=2e-2, atol=5e-2)}
    p16, f16 = run_opinfo(op, [torch.float16, torch.bfloat16], max_samples=12, tol=reduced)
    assert not f16, "\n".join(f16[:5])
    assert passed > 0 and p16 > 0


def compare(weight, *args, psw=None, **kw):
    wc, wd = weight.clone().requires_grad_(), weight.to(DEV).requires_grad_()
    pc = psw.clone().requires_grad_() if psw is not None else None
    pd = psw.to(DEV).requires_grad_() if psw is not None else None
    dargs = [a.to(DEV) if isinstance(a, torch.Tensor) else a for a in args]
    r = F.embedding_bag(args[0], wc, *args[1:], per_sample_weights=pc, **kw)
    o = F.embedding_bag(dargs[0], wd, *dargs[1:], per_sample_weights=pd, **kw)
    torch.testing.assert_close(o.cpu(), r.detach())
    g = torch.randn_like(r)
    r.backward(g)
    o.backward(g.to(DEV))
    torch.testing.assert_close(wd.grad.cpu(), wc.grad)
    if psw is not None:
        torch.testing.assert_close(pd.grad.cpu(), pc.grad)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("include_last_offset", [False, True])
def test_modes_offsets_padding(mode, include_last_offset):
    torch.manual_seed(0)
    w = torch.randn(10, 5)
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 7])
    offsets = torch.tensor([0, 4, 4, 8, 10]) if include_last_offset else torch.tensor([0, 4, 4, 8])  # an empty bag
    for padding_idx in (None, 2):
        compare(w, idx, offsets, mode=mode, include_last_offset=include_last_offset, padding_idx=padding_idx)
    compare(w, idx.reshape(2, 5), mode=mode)  # 2-D input: fixed-size bags
    compare(w, idx, offsets.int(), mode=mode, include_last_offset=include_last_offset)  # int32 offsets


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_scale_grad_by_freq(mode):
    # The documented meaning (each row's gradient divided by its count in the mini-batch), as CUDA
    # computes it; torch 2.13's CPU kernel divides some rows by another row's count (index 4 below
    # gets 1/3, index 9 1/2), so the reference is the unscaled gradient divided by the counts.
    torch.manual_seed(5)
    w = torch.randn(10, 5)
    idx, offsets = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 7]), torch.tensor([0, 4, 4, 8])
    wc, wd = w.clone().requires_grad_(), w.to(DEV).requires_grad_()
    g = torch.randn(4, 5)
    F.embedding_bag(idx, wc, offsets, mode=mode).backward(g)
    F.embedding_bag(idx.to(DEV), wd, offsets.to(DEV), mode=mode, scale_grad_by_freq=True).backward(g.to(DEV))
    counts = torch.bincount(idx, minlength=10).clamp_min(1).unsqueeze(1)
    torch.testing.assert_close(wd.grad.cpu(), wc.grad / counts)


def test_per_sample_weights_and_ties():
    torch.manual_seed(1)
    w = torch.randn(8, 4)
    idx, offsets = torch.tensor([0, 3, 3, 7, 1, 0]), torch.tensor([0, 2, 5])
    compare(w, idx, offsets, mode="sum", psw=torch.rand(6))
    compare(w, idx, offsets, mode="sum", psw=torch.rand(6), padding_idx=3)
    wt = torch.randint(-2, 3, (8, 4)).float()  # ties: the first maximum wins (and gets the gradient)
    compare(wt, idx, offsets, mode="max")
    compare(w.t().contiguous().t(), idx, offsets, mode="mean")  # non-contiguous weight


def test_auxiliary_outputs():
    w = torch.randn(10, 3)
    idx, off = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 4, 4])
    for mode in (0, 1, 2):
        r = torch.ops.aten._embedding_bag(w, idx, off, False, mode, False, None, False, 2)
        o = torch.ops.aten._embedding_bag(w.to(DEV), idx.to(DEV), off.to(DEV), False, mode, False, None, False, 2)
        for a, b in zip(o, r):
            torch.testing.assert_close(a.cpu(), b)


def test_errors():
    w = torch.randn(5, 2)
    cases = [(torch.tensor([0, 1, 2]), torch.tensor([1, 2])),  # offsets[0] != 0
             (torch.tensor([0, 1, 2]), torch.tensor([0, 5]))]  # offsets[-1] beyond the input
    for idx, off in cases:
        with pytest.raises(RuntimeError) as cpu:
            F.embedding_bag(idx, w, off)
        with pytest.raises(RuntimeError) as dev:
            F.embedding_bag(idx.to(DEV), w.to(DEV), off.to(DEV))
        assert str(cpu.value).splitlines()[0] == str(dev.value)
    with pytest.raises(IndexError, match="index 7 is out of bounds"):  # raised at the next wait, as CUDA
        F.embedding_bag(torch.tensor([0, 7], device=DEV), w.to(DEV), torch.tensor([0], device=DEV)).cpu()
    with pytest.raises(NotImplementedError, match="sparse"):
        F.embedding_bag(torch.tensor([0, 1], device=DEV), w.to(DEV).requires_grad_(), torch.tensor([0], device=DEV),
                        sparse=True).sum().backward()
