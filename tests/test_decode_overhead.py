"""Host overhead of decoding: cat in one launch (KV-cache appends), index ops without a fill or a
blocking read per call, and benchmarks/decode_overhead.py at its tiny size."""
import pathlib
import subprocess
import sys

import pytest
import torch

import pytorch_ocl

D = "ocl"


def counts(fn):
    torch.ocl.synchronize()
    c0 = dict(pytorch_ocl._C.host_counters())
    out = fn()
    c1 = dict(pytorch_ocl._C.host_counters())
    return out, {k: c1[k] - c0[k] for k in c0}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_large_cat_copies_each_input(dtype):
    # Above 2^18 output elements each input goes through copy_ (one launch per input): GPT-2's backward cat of
    # the q/k/v gradients, each a permuted view of an attention gradient.
    g = torch.Generator().manual_seed(0)
    grads = [torch.randn(2, 4, 256, 64, generator=g).to(dtype) for _ in range(3)]
    views = [t.to(D).transpose(1, 2) for t in grads]  # [2, 256, 4, 64], not contiguous
    out, c = counts(lambda: torch.cat(views, dim=2))
    assert c["launches"] == 3 and c["blocking_reads"] == 0
    assert torch.equal(out.cpu(), torch.cat([t.transpose(1, 2) for t in grads], dim=2))
    assert torch.equal(torch.cat(views[:2], dim=0).cpu(), torch.cat([v.cpu() for v in views[:2]], dim=0))
    # many small inputs into a large output: the one-launch kernel, 4 inputs per launch
    parts = [torch.randn(64, 512, generator=g).to(dtype) for _ in range(12)]
    dev = [p.to(D) for p in parts]
    out, c = counts(lambda: torch.cat(dev, dim=1))
    assert c["launches"] == 3 and torch.equal(out.cpu(), torch.cat(parts, dim=1))


def test_kv_cache_cat_is_one_launch():
    past = torch.randn(1, 4, 9, 16)
    new = torch.randn(1, 4, 1, 16)
    pd, nd = past.to(D), new.to(D)
    torch.cat([pd, nd], dim=-2)  # program built
    out, c = counts(lambda: torch.cat([pd, nd], dim=-2))
    assert c["launches"] == 1 and c["blocking_reads"] == 0
    assert torch.equal(out.cpu(), torch.cat([past, new], dim=-2))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8, torch.bool,
                                   torch.complex64])
def test_cat_many_inputs_and_layouts(dtype):
    g = torch.Generator().manual_seed(0)
    base = [torch.randn(3, k, 5, generator=g) for k in (2, 0, 1, 3, 4, 0, 2)]  # > 4 inputs: two launches
    xs = [(t * 10).to(dtype) for t in base]
    xs[3] = xs[3].transpose(0, 2).contiguous().transpose(0, 2)  # non-contiguous
    xs[4] = (torch.randn(3, 5, 8, generator=g) * 10).to(dtype).transpose(1, 2)[:, ::2]  # strided view
    ref = torch.cat(xs, 1)
    out = torch.cat([x.to(D) if not x.is_contiguous() else x.to(D) for x in xs], 1)
    assert torch.equal(out.cpu(), ref)
    # out= a transposed (non-contiguous) tensor
    o = torch.empty(ref.shape[::-1], dtype=dtype, device=D).permute(2, 1, 0)
    torch.cat([x.to(D) for x in xs], 1, out=o)
    assert torch.equal(o.cpu(), ref)
    # strided device views as inputs (not copies)
    big = (torch.randn(4, 6, generator=g) * 10).to(dtype)
    bd = big.to(D)
    assert torch.equal(torch.cat([bd[:, ::2], bd.t()[:3, :3], bd[1:, :3][:3]], 0).cpu(),
                       torch.cat([big[:, ::2], big.t()[:3, :3], big[1:, :3][:3]], 0))


def test_cat_conj_and_mixed_dtypes_take_the_copy_path():
    z = torch.randn(2, 3, dtype=torch.complex64)
    assert torch.equal(torch.cat([z.to(D).conj(), z.to(D)]).cpu(), torch.cat([z.conj(), z]))
    a, i = torch.randn(2, 3), torch.arange(6, dtype=torch.int32).reshape(2, 3)
    assert torch.equal(torch.cat([a.to(D), i.to(D)]).cpu(), torch.cat([a, i]))


def test_index_select_has_no_fill_or_read():
    w = torch.randn(50, 8, device=D)
    tok = torch.tensor([3, 7], device=D)
    torch.nn.functional.embedding(tok, w)
    out, c = counts(lambda: torch.nn.functional.embedding(tok, w))
    assert c["blocking_reads"] == 0 and c["launches"] == 1  # the gather reads the index itself
    assert torch.equal(out.cpu(), w.cpu()[[3, 7]])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool,
                                   torch.complex64])
def test_index_select_one_launch_layouts(dtype):
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(6, 5, 4, generator=g) * 10).to(dtype)
    xd = x.to(D)
    idx = torch.tensor([5, 0, 3, 3, -0, 1])
    for dim in range(3):
        i = idx % x.shape[dim]
        assert torch.equal(xd.index_select(dim, i.to(D)).cpu(), x.index_select(dim, i))
        si = torch.stack([i, i]).t()[:, 1]  # strided index
        assert torch.equal(xd.index_select(dim, si.to(D)).cpu(), x.index_select(dim, si))
        t = xd.transpose(0, 2)  # strided self
        j = idx % t.shape[dim]
        assert torch.equal(t.index_select(dim, j.to(D)).cpu(), x.transpose(0, 2).index_select(dim, j))
    assert torch.equal(xd.index_select(1, torch.tensor(2, device=D)).cpu(), x.index_select(1, torch.tensor(2)))
    out = torch.empty(4, 3, 6, dtype=dtype, device=D).permute(2, 1, 0)  # non-contiguous out=
    torch.index_select(xd, 1, torch.tensor([4, 0, 2], device=D), out=out)
    assert torch.equal(out.cpu(), x.index_select(1, torch.tensor([4, 0, 2])))
    if dtype == torch.complex64:
        assert torch.equal(xd.conj().index_select(0, torch.tensor([1], device=D)).cpu(), x.conj()[[1]])
    with pytest.raises(IndexError, match="index_select: index -1 is out of bounds for dimension 2 with size 4"):
        xd.index_select(2, torch.tensor([0, -1], device=D)).cpu()


def test_decode_overhead_tool_runs():
    pytest.importorskip("transformers")
    script = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "decode_overhead.py"
    r = subprocess.run([sys.executable, str(script), "--tokens", "2", "--reps", "1"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [line for line in r.stdout.splitlines() if line.startswith("| GPT-2") or line.startswith("| Llama")]
    assert len(rows) == 2 and all(line.split("|")[-2].strip() == "yes" for line in rows), r.stdout
