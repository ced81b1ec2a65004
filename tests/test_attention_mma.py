"""The matrix-engine attention (dlprim/kernels/attention_mma*.cl) against float64 CPU references.

PYTORCH_OCL_MMA=emulate runs the kernel with each mma.sync (and each quad shuffle) replaced by a local-memory
emulation of the same fragment layouts, so PoCL in CI tests every line; on an NVIDIA device
PYTORCH_OCL_MMA_TEST=native runs the same tests on the real instruction. Each call asserts that the mma
kernel ran (the profiler's launch names), and that the backward's dq and dk/dv passes run on the engine
(attention_mma_bwd.cl) where they should. Kinds: float32 at torch's default 'highest' matmul precision is
3xTF32 (fp32 tolerance), at 'high' plain TF32 (operands rounded to 10 mantissa bits: a looser bound), 16-bit
m16n8k16 with fp32 accumulation (test_attention.py's 16-bit tolerances). The backward reads the forward's lse,
so gradients are checked too; over head dim 64 its passes split the head dims over warp pairs (DSPLIT). At head
dims up to 64 the backward can be one kernel (PYTORCH_OCL_ATTN_BWD_ONEPASS=1, attention_mma_onepass.cl: the dk/dv
pass adding dq in a fixed order); two passes by default. Small shapes: the emulation is slow.
"""
import os

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl

NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"
MMA_LAUNCH = "attention_forward_mma"
DQ_LAUNCH = "attention_backward_dq_mma"
DKDV_LAUNCH = "attention_backward_dkdv_mma"
ONEPASS_LAUNCH = "attention_backward_onepass_mma"
TOL = {"3xtf32": 2e-5, "tf32": 4e-3, torch.float16: 5e-3, torch.bfloat16: 3e-2}


@pytest.fixture(autouse=True)
def _engine(monkeypatch):
    monkeypatch.delenv("PYTORCH_OCL_ATTN_MMA", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_3XTF32", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", raising=False)
    if NATIVE:
        monkeypatch.delenv("PYTORCH_OCL_MMA", raising=False)
    else:
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
    yield
    torch.set_float32_matmul_precision("highest")


def dtype_of(kind):
    if kind in ("3xtf32", "tf32"):
        torch.set_float32_matmul_precision("highest" if kind == "3xtf32" else "high")
        return torch.float32
    return kind


def launches(fn):
    with pytorch_ocl.profiler.profile() as prof:
        out = fn()
    return out, [r[0] for r in prof.records]


def make(B, Hq, Hk, L, S, D, Dv, transposed=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    if transposed:  # [B, L, H, D].transpose(1, 2), as transformers passes them
        return (torch.randn(B, L, Hq, D, generator=g).transpose(1, 2), torch.randn(B, S, Hk, D, generator=g).transpose(1, 2),
                torch.randn(B, S, Hk, Dv, generator=g).transpose(1, 2))
    return (torch.randn(B, Hq, L, D, generator=g), torch.randn(B, Hk, S, D, generator=g),
            torch.randn(B, Hk, S, Dv, generator=g))


def check(ref, got, tol, what):
    ref, got = ref.double(), got.detach().cpu().double()
    assert ref.shape == got.shape, (what, ref.shape, got.shape)
    if ref.numel():
        scale = max(ref.abs().max().item(), 1.0)
        err = (ref - got).abs().max().item()
        assert err <= tol * scale, f"{what}: max error {err:.3e} (scale {scale:.2f}, tol {tol * scale:.2e})"


def onepass_expected(D, Dv, dq_mma=True):
    """Whether the backward should be the one-pass kernel: heads up to 64, switched on (off by default)."""
    return dq_mma and max(D, Dv) <= 64 and os.environ.get("PYTORCH_OCL_ATTN_BWD_ONEPASS", "0") not in ("", "0", "off")


def run(kind, q, k, v, grad=False, mma=True, dq_mma=True, **kw):
    """The device's SDPA (checking that the mma forward ran, or did not) against float64 on the CPU; the gradients
    too with grad (checking which backward kernels ran: one pass, two mma passes or the FMA kernels)."""
    dtype = dtype_of(kind)
    tol = TOL[kind]
    dev = [t.to(dtype).to("ocl").requires_grad_(grad) for t in (q, k, v)]
    ref = [t.to(dtype).double().requires_grad_(grad) for t in (q, k, v)]
    kw_dev = {a: (b.to("ocl") if isinstance(b, torch.Tensor) else b) for a, b in kw.items()}
    if isinstance(kw.get("attn_mask"), torch.Tensor) and kw["attn_mask"].is_floating_point():
        kw_dev["attn_mask"] = kw["attn_mask"].to(dtype).to("ocl")
        kw["attn_mask"] = kw["attn_mask"].to(dtype).double()
    gqa = q.shape[1] != k.shape[1]
    out, names = launches(lambda: F.scaled_dot_product_attention(*dev, enable_gqa=gqa, **kw_dev))
    assert (MMA_LAUNCH in names) == mma, names
    o_ref = F.scaled_dot_product_attention(*ref, enable_gqa=gqa, **kw)
    check(o_ref, out, tol, "out")
    if grad:
        g = torch.linspace(-1, 1, o_ref.numel(), dtype=torch.float64).reshape(o_ref.shape)
        g_ref = torch.autograd.grad(o_ref, ref, g)
        g_dev, names = launches(lambda: torch.autograd.grad(out, dev, g.to(dtype).to("ocl")))
        one = onepass_expected(q.shape[-1], v.shape[-1], dq_mma)
        assert (ONEPASS_LAUNCH in names) == one, names
        assert (DQ_LAUNCH in names) == (dq_mma and not one), names
        # the dk/dv pass runs on the engine wherever the dq pass does (head dims up to 128)
        assert (DKDV_LAUNCH in names) == (dq_mma and not one), names
        for name, a, b in zip("qkv", g_ref, g_dev):
            check(a, b, 2 * tol, "grad " + name)  # through the forward's lse and output
        return out, g_dev
    return out


# (kind, B, Hq, Hk, L, S, D, Dv, causal, transposed): tails (L, S not multiples of the 64- / 128-query and
# 32- / 64-key tiles), L < S and L > S (causal is top-left aligned, as torch's is_causal), GQA, D 64 / 128 / 80 / 96 /
# odd 24 (scalar staging), Dv != D, the transformers layout.
GRID = [
    ("3xtf32", 1, 2, 2, 37, 45, 64, 64, False, False),
    ("3xtf32", 1, 4, 2, 70, 33, 80, 48, True, False),
    ("3xtf32", 1, 1, 1, 20, 50, 128, 128, True, True),
    ("tf32", 2, 2, 1, 30, 40, 96, 96, False, True),
    (torch.bfloat16, 1, 2, 2, 65, 47, 64, 64, True, True),
    (torch.bfloat16, 1, 3, 1, 9, 70, 24, 40, False, False),
    (torch.float16, 1, 2, 1, 40, 20, 128, 64, True, False),
    (torch.float16, 2, 1, 1, 17, 33, 64, 80, False, True),
]


@pytest.mark.parametrize("case", GRID, ids=lambda c: "-".join(str(x).replace("torch.", "") for x in c))
def test_forward_grid(case):
    kind, B, Hq, Hk, L, S, D, Dv, causal, transposed = case
    run(kind, *make(B, Hq, Hk, L, S, D, Dv, transposed), is_causal=causal, scale=0.3 if D == 80 else None)


# The backward on the matrix engine (attention_mma_bwd.cl), from the mma forward's lse: both passes up to head
# dim 128; over 64 the dk/dv pass (and the fp32 dq pass) split the head dims over warp pairs (DSPLIT): D 128,
# 96, 80 (16-bit: 5 k-steps, padded to 6), D != Dv, L != S, GQA, causal and full.
BWD = [
    ("3xtf32", 1, 4, 2, 33, 41, 64, 32, True, False),
    ("tf32", 1, 2, 2, 20, 17, 40, 56, False, True),
    (torch.bfloat16, 1, 2, 1, 33, 41, 128, 96, True, False),
    (torch.float16, 2, 1, 1, 18, 30, 32, 24, False, True),
    ("3xtf32", 1, 2, 1, 24, 19, 128, 128, True, False),
    ("3xtf32", 1, 1, 1, 17, 30, 128, 128, False, True),
    ("tf32", 1, 1, 1, 21, 13, 96, 80, True, False),
    (torch.bfloat16, 1, 2, 2, 19, 26, 128, 128, False, True),
    (torch.float16, 1, 1, 1, 30, 22, 128, 128, True, False),
    (torch.float16, 1, 2, 1, 14, 25, 80, 80, False, False),
    # 16-bit 8-warp layouts (128-query forward groups, 64-row dq / dk/dv tiles at heads up to 64, 32-key dq
    # tiles over 64) over several whole and partial tiles and work-groups
    (torch.bfloat16, 1, 1, 1, 150, 200, 64, 64, True, False),
    (torch.float16, 1, 1, 1, 140, 131, 128, 128, True, True),
]


@pytest.mark.parametrize("case", BWD, ids=lambda c: "-".join(str(x).replace("torch.", "") for x in c))
def test_backward(case):
    kind, B, Hq, Hk, L, S, D, Dv, causal, transposed = case
    run(kind, *make(B, Hq, Hk, L, S, D, Dv, transposed), grad=True, is_causal=causal)


# PYTORCH_OCL_ATTN_MMA_BWD (the backward passes' layouts; attention_mma.cpp): the head-dim split over warp pairs
# forced at head dims up to 64, other warp counts and tiles, over several tiles and work-groups. Each layout fits
# 48 KiB of local memory with the emulation's register copies (NVIDIA's cap: a larger one runs the FMA kernel there).
@pytest.mark.parametrize("layout,case", [
    ("dkdv=4,16,split+dq=4,16,split", ("3xtf32", 1, 2, 1, 45, 70, 64, 48, True, False)),
    ("dkdv=8,16,split+dq=8,32", ("3xtf32", 1, 1, 1, 70, 45, 40, 64, False, True)),
    ("dq=2,16,split+dkdv=2,32", (torch.bfloat16, 1, 2, 2, 50, 38, 64, 64, False, False)),
], ids=lambda x: x if isinstance(x, str) else "-".join(str(y).replace("torch.", "") for y in x))
def test_backward_env_layouts(monkeypatch, layout, case):
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA_BWD", layout)
    kind, B, Hq, Hk, L, S, D, Dv, causal, transposed = case
    run(kind, *make(B, Hq, Hk, L, S, D, Dv, transposed), grad=True, is_causal=causal)


def test_backward_over_128_stays_on_fma():
    run("3xtf32", *make(1, 1, 1, 9, 11, 144, 32), grad=True, mma=False, dq_mma=False)


@pytest.mark.parametrize("kind,D", [("3xtf32", 32), (torch.float16, 32), ("3xtf32", 128), (torch.bfloat16, 128)])
def test_masks(kind, D):
    B, L, S = (2, 19, 37) if D <= 64 else (1, 13, 21)
    q, k, v = make(B, 2, 2, L, S, D, D)
    keep = torch.rand(L, S, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[3] = False  # a row that sees nothing: zeros (lse +inf), as torch's math
    run(kind, q, k, v, attn_mask=keep, grad=True)
    bias = torch.randn(B, 1, L, S, generator=torch.Generator().manual_seed(2))
    run(kind, q, k, v, attn_mask=bias, grad=D > 64)


# The mma kernels share each Philox draw between lanes (row layout: lane pairs; the dk/dv pass's transposed
# layout: 4 lanes by index shuffles); several query and key tiles, 16-bit too, must draw the FMA kernels' mask.
@pytest.mark.parametrize("kind,D,L,S", [("3xtf32", 32, 21, 30), ("3xtf32", 128, 13, 18), ("3xtf32", 64, 70, 83),
                                        (torch.bfloat16, 64, 75, 90)])
def test_dropout_draws_the_fma_kernels_mask(monkeypatch, kind, D, L, S):
    dtype = dtype_of(kind)
    q, k, v = make(1, 2 if D <= 64 else 1, 2 if D <= 64 else 1, L, S, D, D)
    res = []
    for env in (None, "0"):
        if env:
            monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", env)
        ts = [t.to(dtype).to("ocl").requires_grad_() for t in (q, k, v)]
        torch.manual_seed(7)
        out, names = launches(lambda: F.scaled_dot_product_attention(*ts, dropout_p=0.3))
        assert (MMA_LAUNCH in names) == (env is None), names
        grads, names = launches(lambda: torch.autograd.grad(out, ts, torch.ones_like(out)))
        one = env is None and onepass_expected(D, D)
        assert (ONEPASS_LAUNCH in names) == one, names
        assert (DQ_LAUNCH in names) == (env is None and not one) and (DKDV_LAUNCH in names) == (DQ_LAUNCH in names), names
        res.append([out.cpu()] + [g.cpu() for g in grads])
    for name, a, b in zip(["out", "dq", "dk", "dv"], res[1], res[0]):
        check(a, b, TOL[kind], "dropout " + name)


def test_zero_sizes_and_fallbacks(monkeypatch):
    for shape in [(0, 2, 2, 5, 7, 16, 16), (1, 2, 2, 0, 7, 16, 16)]:
        q, k, v = make(*shape)
        out = F.scaled_dot_product_attention(q.to("ocl"), k.to("ocl"), v.to("ocl"))
        assert out.shape == q.shape[:-1] + (16,)
    # Head dims over 128 stay on the FMA kernels; PYTORCH_OCL_ATTN_MMA=0 keeps them everywhere; an odd number of
    # warps cannot pair them for the split backward (heads over 64): its passes stay on the FMA kernels.
    run("3xtf32", *make(1, 1, 1, 9, 9, 144, 16), mma=False)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "1,16,0")
    run("3xtf32", *make(1, 1, 1, 9, 11, 96, 72), grad=True, dq_mma=False)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "0")
    run(torch.bfloat16, *make(1, 1, 1, 9, 9, 16, 16), mma=False)


# The one-pass backward (attention_mma_onepass.cl) against the CPU and against the two passes: several key blocks
# (64 keys per work-group, 16-bit 128) and query tiles (16 queries, 16-bit 32) with tails, so tiles take turns
# from several blocks; L < S and L > S (causal key blocks wholly past the last query take no tile), GQA (turns
# per query head), odd head dims, the transformers layout.
ONEPASS = [
    ("3xtf32", 1, 2, 1, 70, 150, 64, 64, True, False),
    ("3xtf32", 1, 1, 1, 37, 140, 24, 40, False, True),
    ("tf32", 2, 2, 2, 70, 33, 32, 32, True, False),
    (torch.bfloat16, 1, 2, 1, 40, 300, 64, 64, True, False),
    (torch.bfloat16, 1, 1, 1, 70, 140, 64, 48, False, False),
    (torch.float16, 1, 1, 1, 45, 140, 40, 24, False, True),
]


@pytest.mark.parametrize("mode", ["1", "atomic"], ids=["ordered", "atomic"])
@pytest.mark.parametrize("case", ONEPASS, ids=lambda c: "-".join(str(x).replace("torch.", "") for x in c))
def test_onepass(case, mode, monkeypatch):
    kind, B, Hq, Hk, L, S, D, Dv, causal, transposed = case
    q, k, v = make(B, Hq, Hk, L, S, D, Dv, transposed)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", mode)
    _, one = run(kind, q, k, v, grad=True, is_causal=causal)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", "0")
    _, two = run(kind, q, k, v, grad=True, is_causal=causal)
    for name, a, b in zip("qkv", two, one):
        check(a.cpu(), b, TOL[kind], "one pass vs two, grad " + name)


@pytest.mark.parametrize("mode", ["1", "atomic"], ids=["ordered", "atomic"])
def test_onepass_masks_skip_their_turns(mode, monkeypatch):
    # Mask block flags skip a (query tile, key block) pair that is all masked; the block still takes its turn there:
    # queries 0..15 see no key of block 0 (so block 0, the last turn, adds nothing and writes block 1's sums), queries
    # 16..31 none of block 1 (block 1, the first turn, stores zeros); atomic: such a block arrives without adding,
    # and may be the last to arrive (it writes dq). A float bias broadcast over heads.
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", mode)
    q, k, v = make(2, 2, 2, 40, 80, 32, 32)
    keep = torch.rand(40, 80, generator=torch.Generator().manual_seed(1)) > 0.3
    keep[:16, :64] = False
    keep[16:32, 64:] = False
    run("3xtf32", q, k, v, attn_mask=keep, grad=True)
    bias = torch.randn(2, 1, 40, 80, generator=torch.Generator().manual_seed(2))
    run(torch.bfloat16, q, k, v, attn_mask=bias, grad=True)


def test_onepass_atomic_deterministic_mode(monkeypatch):
    # PYTORCH_OCL_ATTN_BWD_ONEPASS=atomic under torch.use_deterministic_algorithms takes the ordered kernel: still one
    # pass, and dq the same bits run after run.
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", "atomic")
    q, k, v = make(1, 2, 1, 70, 150, 64, 64)
    torch.use_deterministic_algorithms(True)
    try:
        runs = []
        for _ in range(2):
            dev = [t.to("ocl").requires_grad_() for t in (q, k, v)]
            o = F.scaled_dot_product_attention(*dev, is_causal=True, enable_gqa=True)
            g, names = launches(lambda: torch.autograd.grad(o.sum(), dev)[0].cpu())
            assert ONEPASS_LAUNCH in names, names
            runs.append(g)
        assert torch.equal(runs[0], runs[1])
    finally:
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("layout,one", [("2,32", True), ("1,16", True), ("1,32", False)])
def test_onepass_layouts(monkeypatch, layout, one):
    # PYTORCH_OCL_ATTN_BWD_ONEPASS=NW,BKT: 2 warps (32 keys) on 32-query tiles (a warp per 16-row block of dq), one
    # warp on 16; one warp cannot cover a 32-query tile's two row blocks: two passes then.
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", layout)
    q, k, v = make(1, 2, 1, 45, 70, 24, 16)
    ref = [t.double().requires_grad_() for t in (q, k, v)]
    o_ref = F.scaled_dot_product_attention(*ref, is_causal=True, enable_gqa=True)
    g_ref = torch.autograd.grad(o_ref, ref, torch.ones_like(o_ref))
    dev = [t.to("ocl").requires_grad_() for t in (q, k, v)]
    out = F.scaled_dot_product_attention(*dev, is_causal=True, enable_gqa=True)
    grads, names = launches(lambda: torch.autograd.grad(out, dev, torch.ones_like(out)))
    assert (ONEPASS_LAUNCH in names) == one and (DQ_LAUNCH in names) == (not one), names
    for name, a, b in zip("qkv", g_ref, grads):
        check(a, b, 2 * TOL["3xtf32"], "grad " + name)


def test_onepass_is_deterministic(monkeypatch):
    # dq's contributions are added in a fixed order: two backward runs give the same bits (PoCL runs work-groups on
    # several threads in any order), causal and not, with GQA.
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", "1")
    for causal in (False, True):
        q, k, v = (t.to("ocl").requires_grad_() for t in make(1, 4, 2, 90, 200, 32, 32))
        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)
        g = torch.randn(out.shape, generator=torch.Generator().manual_seed(3)).to("ocl")
        first, names = launches(lambda: torch.autograd.grad(out, (q, k, v), g, retain_graph=True))
        assert ONEPASS_LAUNCH in names, names
        second = torch.autograd.grad(out, (q, k, v), g)
        for name, a, b in zip("qkv", first, second):
            assert torch.equal(a.cpu(), b.cpu()), "grad " + name + " differs between two runs"
