"""Attention masks by block (dlprim/kernels/attention_mask_blocks.cl; attention_common.cl's tile flags).

The block flags (0 every element 0, 1 every element -inf, 2 anything else, per 16 x 16 block of queries x keys,
per batch / head the mask does not broadcast) against a CPU classification; then every fused kernel path (the
row kernels, the register-tiled forward and backward passes, and the matrix-engine kernels emulated on PoCL)
with each mask kind, forward and backward against the CPU, and bit for bit against the same kernels with the
flags off (PYTORCH_OCL_ATTN_MASK_BLOCKS=0: every block "mixed", the mask read everywhere as before), so a
skipped tile or an unread mask changes nothing; causal + mask through the op itself (SDPA refuses the pair).
"""
import os

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl

NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"
MB = 16
B, H, L, S, D = 2, 2, 40, 72, 16


def reference_flags(mask, q_shape, S):
    """The flags attention_mask_blocks computes, on the CPU: mask as an additive float64 mask."""
    Bq, Hq, Lq = q_shape[0], q_shape[1], q_shape[2]
    m = mask.double()
    if mask.dtype == torch.bool:
        m = torch.zeros(mask.shape, dtype=torch.float64).masked_fill(~mask, float("-inf"))
    while m.dim() < 4:
        m = m.unsqueeze(0)
    fb, fh = (1 if m.size(0) == 1 else Bq), (1 if m.size(1) == 1 else Hq)
    rows, cols = (1 if m.size(2) == 1 else Lq), (1 if m.size(3) == 1 else S)
    m = m.expand(fb, fh, rows, cols)
    fq, fk = -(-rows // MB), -(-cols // MB)
    out = torch.empty(fb, fh, fq, fk, dtype=torch.uint8)
    for a in range(fb):
        for b in range(fh):
            for r in range(fq):
                for c in range(fk):
                    blk = m[a, b, r * MB:(r + 1) * MB, c * MB:(c + 1) * MB]
                    out[a, b, r, c] = 0 if (blk == 0).all() else 1 if (blk == float("-inf")).all() else 2
    return out


def block_mask(shape, seed, dtype=torch.float32):
    """An additive mask whose 16 x 16 blocks are all 0, all -inf or random (a mixed block)."""
    g = torch.Generator().manual_seed(seed)
    *lead, rows, cols = shape
    kinds = torch.randint(0, 3, (*lead, -(-rows // MB), -(-cols // MB)), generator=g)
    kinds = kinds.repeat_interleave(MB, -2).repeat_interleave(MB, -1)[..., :rows, :cols]
    rnd = torch.randn(shape, generator=g)
    return torch.where(kinds == 0, 0.0, torch.where(kinds == 1, float("-inf"), rnd)).to(dtype)


@pytest.mark.parametrize("case", ["blocks", "bool", "keys_only", "heads_only", "batch_rows", "specials", "bf16",
                                  "one_row"])
def test_flags_match_the_cpu(case):
    g = torch.Generator().manual_seed(1)
    dtype = torch.bfloat16 if case == "bf16" else torch.float32
    q = torch.randn(B, H, L, D, generator=g).to(dtype)
    k = torch.randn(B, H, S, D, generator=g).to(dtype)
    if case in ("blocks", "bf16"):
        mask = block_mask((B, H, L, S), 2, dtype)
    elif case == "bool":
        mask = block_mask((L, S), 3) == 0
        mask[:, 5] = True  # one visible key in each row: the blocks of key 5 are mixed
    elif case == "keys_only":  # padding: [B, 1, 1, S]
        mask = torch.zeros(B, 1, 1, S)
        mask[1, ..., 30:] = float("-inf")
    elif case == "heads_only":
        mask = block_mask((1, H, L, S), 4)
    elif case == "batch_rows":  # [B, 1, L, 1]: keys broadcast
        mask = torch.zeros(B, 1, L, 1)
        mask[0, :, 17:] = float("-inf")
    elif case == "one_row":  # L = 1 (decode)
        q = q[:, :, :1]
        mask = block_mask((B, 1, 1, S), 5)
    else:  # finite non-zero, +inf and NaN make a block mixed; so do -inf next to 0
        mask = torch.zeros(L, S)
        mask[0, 0] = 1e-30
        mask[0, 20] = float("inf")
        mask[0, 40] = float("nan")
        mask[17, 60] = float("-inf")
        mask[32:, 48:64] = float("-inf")
    mask = mask.to(dtype) if mask.is_floating_point() else mask
    got = pytorch_ocl._C._attention_mask_blocks(q.to("ocl"), k.to("ocl"), mask.to("ocl")).cpu()
    assert torch.equal(got, reference_flags(mask, q.shape, S)), (got, reference_flags(mask, q.shape, S))


def mask_of(kind):
    """(mask, sdpa_mask_shape_note) for a mask kind over [B, H, L, S]."""
    g = torch.Generator().manual_seed(7)
    if kind == "visible":  # an all-ones bool mask (compiled BERT's padding mask without padding)
        return torch.ones(B, 1, 1, S, dtype=torch.bool)
    if kind == "padding":  # the last keys masked in half of the batch
        m = torch.ones(B, 1, 1, S, dtype=torch.bool)
        m[1, ..., 30:] = False
        return m
    if kind == "blocks":  # block-sparse: all-0, all -inf and mixed 16 x 16 blocks, per batch and head
        return block_mask((B, H, L, S), 8)
    if kind == "blocks_heads":  # the same, broadcast over the batch
        return block_mask((H, L, S), 9)
    if kind == "masked_rows":  # queries 16..31 see nothing; a key block masked for every query
        m = torch.ones(L, S, dtype=torch.bool)
        m[16:32] = False
        m[:, 32:64] = False
        m[:, 40] = True
        return m
    if kind == "causal_like":  # a lower-triangular bool mask: the blocks above the diagonal are skipped
        return torch.ones(L, S, dtype=torch.bool).tril()
    if kind == "random":
        return torch.rand(B, 1, L, S, generator=g) > 0.3
    return torch.randn(1, H, 1, S, generator=g)  # additive, finite: every block mixed


KINDS = ["visible", "padding", "blocks", "blocks_heads", "masked_rows", "causal_like", "random", "additive"]

# Kernel paths: environment for each (the library reads these on every call).
PATHS = {
    "rows": {"PYTORCH_OCL_ATTN_MMA": "0", "PYTORCH_OCL_ATTN_TILED": "0", "PYTORCH_OCL_ATTN_BWD_TILED": "0"},
    # the default tiles (64 queries x 32 keys forward / dq, 32 keys x 32 queries dk/dv)
    "tiled": {"PYTORCH_OCL_ATTN_MMA": "0"},
    # small tiles with tails (several query tiles; the forward streams the head dim), the dk/dv pass split
    "tiled_small": {"PYTORCH_OCL_ATTN_MMA": "0", "PYTORCH_OCL_ATTN_TILED": "16,16,8,2",
                    "PYTORCH_OCL_ATTN_BWD_TILED": "dq=16,16,2+dkdv=8,16,2,split"},
    "mma": {"PYTORCH_OCL_MMA": "emulate", "PYTORCH_OCL_ATTN_MMA": "2,16,1"},  # prefetch, 32-query blocks
}
TOL = {torch.float64: 1e-10, torch.float32: 2e-5, torch.bfloat16: 3e-2}


def set_env(monkeypatch, env):
    for var in ("PYTORCH_OCL_ATTN_TILED", "PYTORCH_OCL_ATTN_BWD_TILED", "PYTORCH_OCL_ATTN_MMA", "PYTORCH_OCL_MMA",
                "PYTORCH_OCL_ATTN_MASK_BLOCKS"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        if var == "PYTORCH_OCL_MMA" and NATIVE:
            continue
        monkeypatch.setenv(var, value)


def inputs(dtype, Hk=H):
    g = torch.Generator().manual_seed(11)
    return (torch.randn(B, H, L, D, generator=g).to(dtype), torch.randn(B, Hk, S, D, generator=g).to(dtype),
            torch.randn(B, Hk, S, D, generator=g).to(dtype), torch.randn(B, H, L, D, generator=g).to(dtype))


def run_ocl(fn, q, k, v, go, mask, launch="attention_forward"):
    ts = [t.to("ocl").requires_grad_() for t in (q, k, v)]
    with pytorch_ocl.profiler.profile() as prof:
        o = fn(*ts, mask.to("ocl"))
        grads = torch.autograd.grad(o, ts, go.to("ocl"))
    names = [r[0] for r in prof.records]
    if launch:
        assert any(n.startswith(launch) for n in names), names
    if os.environ.get("PYTORCH_OCL_ATTN_MASK_BLOCKS") != "0":  # flags off: a buffer fill, no kernel
        assert "attention_mask_blocks" in names, names
    return [o.detach().cpu()] + [x.cpu() for x in grads]


def run_cpu(fn, q, k, v, go, mask):
    ts = [t.double().requires_grad_() for t in (q, k, v)]
    m = mask.double() if mask.is_floating_point() else mask
    o = fn(*ts, m)
    return [o.detach()] + list(torch.autograd.grad(o, ts, go.double()))


def compare(ref, got, dtype, flags_off):
    for name, a, b, c in zip(["out", "dq", "dk", "dv"], ref, got, flags_off):
        assert torch.equal(b.nan_to_num(7.0), c.nan_to_num(7.0)), f"{name}: flags on != flags off"
        scale = max(a.abs().max().item(), 1.0)
        err = (a - b.double()).abs().max().item()
        assert err <= TOL[dtype] * scale, f"{name}: max error {err:.3e}"


def sdpa(q, k, v, m):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=q.size(1) != k.size(1))


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("kind", KINDS)
def test_kernels_with_each_mask_kind(kind, path, monkeypatch):
    set_env(monkeypatch, PATHS[path])
    dtype = torch.float32
    q, k, v, go = inputs(dtype)
    mask = mask_of(kind)
    launch = "attention_forward_mma" if path == "mma" else "attention_forward"
    got = run_ocl(sdpa, q, k, v, go, mask, launch)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MASK_BLOCKS", "0")
    off = run_ocl(sdpa, q, k, v, go, mask, launch)
    compare(run_cpu(sdpa, q, k, v, go, mask), got, dtype, off)


@pytest.mark.parametrize("path", ["rows", "tiled", "mma"])
def test_grouped_query_heads_and_16_bit(path, monkeypatch):
    # GQA (the dk/dv passes walk the query heads of a key head, each with its own mask blocks) in bfloat16.
    set_env(monkeypatch, PATHS[path])
    q, k, v, go = inputs(torch.bfloat16, Hk=1)
    mask = mask_of("blocks").to(torch.bfloat16)  # SDPA takes an additive mask of the query's dtype
    got = run_ocl(sdpa, q, k, v, go, mask)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MASK_BLOCKS", "0")
    off = run_ocl(sdpa, q, k, v, go, mask)
    compare(run_cpu(sdpa, q, k, v, go, mask), got, torch.bfloat16, off)


def causal_op(q, k, v, m):
    # SDPA refuses is_causal with a mask; the fused op (and its backward) take both.
    if q.device.type == "cpu":
        keep = torch.ones(q.size(2), k.size(2), dtype=torch.bool).tril()
        bias = m if m.is_floating_point() else torch.zeros(m.shape, dtype=q.dtype).masked_fill(~m, float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.masked_fill(~keep, float("-inf")))
    return FusedCausal.apply(q, k, v, m)


class FusedCausal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, m):
        bias = m if m.is_floating_point() else torch.zeros(m.shape, dtype=q.dtype, device=q.device).masked_fill(
            ~m, float("-inf"))
        bias = bias.expand(q.size(0), q.size(1), q.size(2), k.size(2))
        res = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, bias, 0.0, True, False)
        ctx.save_for_backward(q, k, v, bias, res[0], res[1], res[6], res[7])
        return res[0]

    @staticmethod
    def backward(ctx, go):
        q, k, v, bias, o, lse, seed, offset = ctx.saved_tensors
        dq, dk, dv, _ = torch.ops.aten._scaled_dot_product_fused_attention_overrideable_backward(
            go, q, k, v, bias, [True, True, True, False], o, lse, torch.Tensor(), torch.Tensor(), q.size(2),
            k.size(2), 0.0, True, seed, offset)
        return dq, dk, dv, None


@pytest.mark.parametrize("path", ["rows", "tiled_small", "mma"])
@pytest.mark.parametrize("kind", ["padding", "blocks", "masked_rows"])
def test_causal_with_a_mask(kind, path, monkeypatch):
    set_env(monkeypatch, PATHS[path])
    q, k, v, go = inputs(torch.float32)
    mask = mask_of(kind)
    got = run_ocl(causal_op, q, k, v, go, mask)
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MASK_BLOCKS", "0")
    off = run_ocl(causal_op, q, k, v, go, mask)
    compare(run_cpu(causal_op, q, k, v, go, mask), got, torch.float32, off)


@pytest.mark.parametrize("path", list(PATHS))
def test_all_masked_tiles_are_not_read(path, monkeypatch):
    # Values behind an all-masked tile never reach the kernels' arithmetic with the flags on: NaN values of
    # keys 32.. (whole key tiles of the forward and dq passes on every path; padding masks keys 30.. of the
    # second batch) leave the output and dq finite, where reading them (flags off) makes 0 * NaN = NaN. (The
    # dk / dv of those keys themselves may be NaN where a dk/dv work-group's keys are not all masked.)
    set_env(monkeypatch, PATHS[path])
    q, k, v, go = inputs(torch.float32)
    v[1, :, 32:] = float("nan")
    mask = mask_of("padding")
    got = run_ocl(sdpa, q, k, v, go, mask)
    assert torch.isfinite(got[0]).all() and torch.isfinite(got[1]).all()
    assert torch.isfinite(got[2][:, :, :32]).all() and torch.isfinite(got[3][:, :, :32]).all()
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MASK_BLOCKS", "0")
    off = run_ocl(sdpa, q, k, v, go, mask)
    assert torch.isnan(off[0][1]).any()
    ref = run_cpu(sdpa, q, k, v.nan_to_num(0.0), go, mask)  # what the visible keys give
    for name, a, b in zip(["out", "dq"], ref, got):
        assert (a - b.double()).abs().max().item() <= TOL[torch.float32] * max(a.abs().max().item(), 1.0), name
