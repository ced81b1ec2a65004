"""Fused scaled-dot-product attention (csrc/aten/Attention.cpp, dlprim/kernels/attention.cl).

Forward and backward against the CPU's math path over a grid of shapes, causal masking, boolean
and additive masks broadcast over batch/heads, grouped-query attention, scale, head dims up to 256
with Dv != D, non-contiguous q/k/v, zero sizes and float32/float64/float16/bfloat16; dropout
against the math on the kernel's own keep mask (return_debug_mask); every layout of the register-tiled
forward and backward passes (PYTORCH_OCL_ATTN_TILED / _BWD_TILED); the modules that call SDPA;
the calls the fused kernel leaves to torch's math path (dropout_p = 1, a mask that needs a
gradient) run natively too; memory stays linear in the sequence length.
"""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import pytorch_ocl


def pin_fma(monkeypatch, var, value):
    """Sets an FMA kernel layout variable (unset for None) and keeps attention off the matrix engine, which
    would otherwise take these calls on a GPU that has one (test_attention_mma.py tests that path)."""
    monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "0")
    if value is None:
        monkeypatch.delenv(var, raising=False)
    else:
        monkeypatch.setenv(var, value)


def sdpa_both(q, k, v, grad=True, **kw):
    """(out, grads) on the CPU in float64 and on ocl in the inputs' dtype."""
    res = []
    for dev in ("cpu", "ocl"):
        dt = torch.float64 if dev == "cpu" else q.dtype
        ts = [t.detach().to(dev, dt).requires_grad_(grad) for t in (q, k, v)]
        kw_dev = {a: (b.to(dev) if isinstance(b, torch.Tensor) else b) for a, b in kw.items()}
        if isinstance(kw_dev.get("attn_mask"), torch.Tensor) and kw_dev["attn_mask"].is_floating_point():
            kw_dev["attn_mask"] = kw_dev["attn_mask"].to(dt)
        o = F.scaled_dot_product_attention(*ts, **kw_dev)
        grads = None
        if grad:
            g = torch.linspace(-1, 1, o.numel(), dtype=torch.float64).reshape(o.shape).to(dev, o.dtype)
            grads = torch.autograd.grad(o, ts, g)
        res.append((o, grads))
    return res


def tol(dtype):
    return {torch.float64: 1e-10, torch.float32: 2e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}[dtype]


def check_close(ref, got, dtype, what):
    ref, got = ref.double(), got.detach().cpu().double()
    assert ref.shape == got.shape, (what, ref.shape, got.shape)
    if ref.numel() == 0:
        return
    scale = max(ref.abs().max().item(), 1.0)
    err = (ref - got).abs().max().item()
    assert err <= tol(dtype) * scale, f"{what}: max error {err:.3e} (scale {scale:.2f})"


def run_and_check(q, k, v, dtype=torch.float32, grad=True, expect_fused=True, **kw):
    (o_ref, g_ref), (o, g) = sdpa_both(q.to(dtype), k.to(dtype), v.to(dtype), grad=grad, **kw)
    if expect_fused and grad:
        assert "FusedAttentionOverrideable" in type(o.grad_fn).__name__, type(o.grad_fn).__name__
    check_close(o_ref, o, dtype, "out")
    if grad:
        for name, a, b in zip("qkv", g_ref, g):
            check_close(a, b, dtype, "grad " + name)


def qkv(B, Hq, Hk, L, S, D, Dv, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, Hq, L, D, generator=g), torch.randn(B, Hk, S, D, generator=g),
            torch.randn(B, Hk, S, Dv, generator=g))


GRID = [
    # B, Hq, Hk, L, S, D, Dv
    (2, 3, 3, 17, 23, 16, 16),
    (1, 2, 2, 64, 64, 64, 64),
    (2, 2, 2, 33, 70, 32, 48),
    (1, 1, 1, 1, 9, 8, 8),
    (1, 2, 2, 40, 5, 128, 128),
    (1, 1, 1, 7, 13, 256, 64),
    (1, 1, 1, 9, 9, 3, 5),
]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", GRID)
def test_grid_float64(shape, causal):
    B, Hq, Hk, L, S, D, Dv = shape
    run_and_check(*qkv(B, Hq, Hk, L, S, D, Dv), dtype=torch.float64, is_causal=causal)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", GRID[:3])
def test_grid_float32(shape, causal):
    B, Hq, Hk, L, S, D, Dv = shape
    run_and_check(*qkv(B, Hq, Hk, L, S, D, Dv, seed=1), dtype=torch.float32, is_causal=causal)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_half_types(dtype, causal):
    run_and_check(*qkv(2, 2, 2, 19, 27, 32, 32, seed=2), dtype=dtype, is_causal=causal)


@pytest.mark.parametrize("mask_shape", [(19, 27), (2, 1, 19, 27), (1, 3, 1, 27), (1, 27), (2, 3, 19, 27)])
@pytest.mark.parametrize("kind", ["bool", "additive"])
def test_masks_broadcast(mask_shape, kind):
    g = torch.Generator().manual_seed(3)
    if kind == "bool":
        mask = torch.rand(mask_shape, generator=g) > 0.3
    else:
        mask = torch.randn(mask_shape, generator=g)
    run_and_check(*qkv(2, 3, 3, 19, 27, 16, 16, seed=3), dtype=torch.float64, attn_mask=mask)


def test_fully_masked_rows_give_zero_like_cpu():
    mask = torch.ones(9, 11, dtype=torch.bool)
    mask[2] = False
    mask[5, :] = False
    run_and_check(*qkv(1, 2, 2, 9, 11, 8, 8), dtype=torch.float64, attn_mask=mask)


@pytest.mark.parametrize("groups", [2, 4])
@pytest.mark.parametrize("causal", [False, True])
def test_grouped_query_attention(groups, causal):
    run_and_check(*qkv(2, 2 * groups, 2, 21, 21, 16, 16, seed=4), dtype=torch.float64, is_causal=causal,
                  enable_gqa=True)


def test_scale():
    run_and_check(*qkv(1, 2, 2, 12, 15, 16, 16, seed=5), dtype=torch.float64, scale=0.37)
    run_and_check(*qkv(1, 2, 2, 12, 15, 16, 16, seed=5), dtype=torch.float64, scale=0.37, is_causal=True)


@pytest.mark.parametrize("bwd_tiled", ["0", "1"])
def test_non_contiguous_layouts(bwd_tiled, monkeypatch):
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", bwd_tiled)  # the row and the register-tiled backward
    # transformers passes q/k/v as [B, L, H, D] projections transposed to [B, H, L, D]
    g = torch.Generator().manual_seed(6)
    q = torch.randn(2, 13, 4, 16, generator=g, dtype=torch.float64).transpose(1, 2)
    k = torch.randn(2, 17, 4, 16, generator=g, dtype=torch.float64).transpose(1, 2)
    v = torch.randn(2, 16, 17, 4, generator=g, dtype=torch.float64).permute(0, 3, 2, 1)
    assert not q.is_contiguous() and not v.is_contiguous()
    run_and_check(q, k, v, dtype=torch.float64, is_causal=True)
    qs = torch.randn(2, 4, 26, 16, dtype=torch.float64)[:, :, ::2]  # sliced sequence
    run_and_check(qs, k, v, dtype=torch.float64)
    # rows that are contiguous but not 4-aligned (the kernels' scalar loads; aligned rows load 4-vectors)
    qo, ko, vo = (torch.randn(2, 4, n, 17, dtype=torch.float64)[..., 1:] for n in (13, 17, 17))
    run_and_check(qo, ko, vo, dtype=torch.float64, is_causal=True)


# Every forward layout the library can pick (attention.cpp: the register-tiled kernel with its
# queries staged whole or streamed in head-dim chunks, narrower tiles for small local memories,
# and the row kernel), forced through PYTORCH_OCL_ATTN_TILED, which the library reads per call.
FWD_LAYOUTS = ["0", "64,32,64,8", "64,32,8,8", "32,16,16,4", "16,64,4,8", "128,32,32,16", "8,8,12,2"]


def check_layout_grid(wide_dv):
    """The shapes a layout test runs: tails in every tile, GQA, a head dim below 4, causal and an
    additive mask with a fully masked row in float64, a boolean mask in float32."""
    for B, Hq, Hk, L, S, D, Dv in [(2, 4, 2, 37, 70, 20, 12), (1, 2, 2, 66, 9, 64, wide_dv), (1, 1, 1, 5, 40, 3, 5)]:
        q, k, v = qkv(B, Hq, Hk, L, S, D, Dv, seed=L)
        run_and_check(q, k, v, dtype=torch.float64, is_causal=True, enable_gqa=Hq != Hk)
        mask = torch.randn(B, 1, L, S, dtype=torch.float64)
        mask[..., 1, :] = float("-inf")  # a fully masked row
        run_and_check(q, k, v, dtype=torch.float64, attn_mask=mask, enable_gqa=Hq != Hk)
    q, k, v = qkv(2, 2, 2, 33, 47, 24, 24, seed=3)
    run_and_check(q, k, v, dtype=torch.float32, attn_mask=torch.rand(33, 47) > 0.3)
    return q, k, v


@pytest.mark.parametrize("layout", FWD_LAYOUTS)
def test_forward_layouts(layout, monkeypatch):
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_TILED", layout)
    check_layout_grid(wide_dv=128)


# The backward's dq pass on register tiles (PYTORCH_OCL_ATTN_BWD_TILED; both tiled passes are the default
# for head dims <= 64), every tile shape it can take; "0": the row kernels of both passes (the default for
# wider heads), on the same grid.
@pytest.mark.parametrize("layout", ["0", "1", "16,32,4", "8,8,2", "64,32,8"])
def test_backward_tiled_dq_layouts(layout, monkeypatch):
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", layout)
    q, k, v = check_layout_grid(wide_dv=48)  # the default tile takes head dims up to 64
    run_and_check(q, k, v, dtype=torch.bfloat16, is_causal=True)


def test_backward_tiled_dq_draws_the_same_dropout(monkeypatch):
    q, k, v = (t.double().to("ocl").requires_grad_() for t in qkv(2, 3, 3, 21, 50, 16, 8, seed=11))
    grads = []
    for lay in ("0", "1"):
        pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", lay)
        torch.manual_seed(5)
        o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True)
        grads.append(torch.autograd.grad(o.sum(), q)[0].cpu())
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-12, atol=1e-12)


# The backward's dk/dv pass on register tiles (PYTORCH_OCL_ATTN_BWD_TILED="dkdv=BQ,BK,NTC"):
# the default tile, a key block that is not a multiple of the column width (BK 20 with NTC 4), one
# thread across (NTC 1, odd BQ) and 128 threads (BK 64) with PZ and dS sharing local memory (split);
# half types through the default tile.
DKDV_LAYOUTS = ["dkdv", "dkdv=12,20,4", "dkdv=5,12,1", "dkdv=16,64,8,split"]


@pytest.mark.parametrize("layout", DKDV_LAYOUTS)
def test_backward_tiled_dkdv_layouts(layout, monkeypatch):
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", layout)
    q, k, v = check_layout_grid(wide_dv=48)  # the default tile takes head dims up to 64
    for dtype in (torch.float16, torch.bfloat16) if layout == "dkdv" else ():
        run_and_check(q, k, v, dtype=dtype, is_causal=True)


@pytest.mark.parametrize("value,dq,dkdv", [
    (None, True, True), ("0", False, False), ("1", True, True), ("8,8,2", True, False), ("dkdv", False, True),
    ("dq", True, False), ("dq+dkdv=8,8,2", True, True), ("dq=0+dkdv=1", False, True), ("dkdv=8,8,3", False, False),
    ("dkdv=8,8", False, False), ("dq=16,16,4,1", False, False), ("dkdv=8,8,2,split", False, True)])
def test_backward_tiled_selection(value, dq, dkdv, monkeypatch):
    # PYTORCH_OCL_ATTN_BWD_TILED's syntax (attention.cpp): which pass runs which kernel, read from the
    # profiler's launch names; a tile the pass cannot take (BQ not a multiple of NTC) or a value that
    # does not parse leaves it on rows.
    if value is None:
        pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", None)
    else:
        pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", value)
    q = torch.randn(1, 2, 9, 8, device="ocl", requires_grad=True)
    with pytorch_ocl.profiler.profile() as prof:
        F.scaled_dot_product_attention(q, q, q).sum().backward()
    names = {r[0] for r in prof.records}
    assert ("attention_backward_dq_tiled" in names) == dq and ("attention_backward_dq" in names) != dq, names
    assert ("attention_backward_dkdv_tiled" in names) == dkdv and ("attention_backward_dkdv" in names) != dkdv, names


@pytest.mark.parametrize("bwd_tiled", ["0", "dkdv=8,8,2"])
def test_backward_non_contiguous_grad_out(bwd_tiled, monkeypatch):
    # the gradient reaches the kernels with its strides ([B, L, H, Dv] transposed, as after an MHA projection)
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", bwd_tiled)
    q, k, v = qkv(2, 3, 3, 13, 19, 12, 12, seed=9)
    g = torch.randn(2, 13, 3, 12, dtype=torch.float64).transpose(1, 2)
    grads = []
    for dev in ("cpu", "ocl"):
        ts = [t.double().to(dev).requires_grad_() for t in (q, k, v)]
        o = F.scaled_dot_product_attention(*ts, is_causal=True)
        gd = g.to(dev)
        assert not gd.is_contiguous()
        grads.append(torch.autograd.grad(o, ts, gd))
    for name, a, b in zip("qkv", *grads):
        check_close(a, b, torch.float64, "grad " + name)


@pytest.mark.parametrize("layout", ["dkdv", "dkdv=12,20,4,split", "dq=8,8,2+dkdv=8,8,2"])
def test_backward_tiled_dkdv_draws_the_same_dropout(layout, monkeypatch):
    # The tiled pass redraws the forward's keep mask (its 4 keys of a thread are one Philox group)
    # exactly as the row kernel does: the gradients agree to rounding, with GQA, causal and a mask.
    q, k, v = (t.double().to("ocl").requires_grad_() for t in qkv(2, 4, 2, 21, 50, 16, 8, seed=11))
    mask = (torch.rand(21, 50, generator=torch.Generator().manual_seed(2)) > 0.2).to("ocl")
    grads = []
    for lay in ("0", layout):
        pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", lay)
        for kw in ({"is_causal": True}, {"attn_mask": mask}):
            torch.manual_seed(5)
            o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, enable_gqa=True, **kw)
            grads.append([g.cpu() for g in torch.autograd.grad(o, (q, k, v), torch.cos(o.detach()))])
    assert (grads[0][2] == 0).any() and (grads[0][2] != 0).any()
    for ref, got in zip(grads[:2], grads[2:]):
        for a, b in zip(ref, got):
            torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["0", "16,64,4,8", "8,8,12,2"])
def test_forward_layouts_draw_the_same_dropout(layout, monkeypatch):
    # The keep decisions depend only on (head, query, key), never on which thread draws them.
    q, k, v = (t.double().to("ocl") for t in qkv(2, 3, 3, 21, 50, 16, 8, seed=11))
    outs = []
    for lay in (None, layout):
        if lay is not None:
            pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_TILED", lay)
        torch.manual_seed(5)
        outs.append(F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True).cpu())
    assert (outs[0] != 0).any()
    torch.testing.assert_close(outs[1], outs[0], rtol=1e-12, atol=1e-12)


def test_zero_sizes():
    run_and_check(*qkv(0, 2, 2, 5, 6, 8, 8), dtype=torch.float64, expect_fused=False)
    run_and_check(*qkv(1, 2, 2, 0, 6, 8, 8), dtype=torch.float64, expect_fused=False)
    (o_ref, g_ref), (o, g) = sdpa_both(*qkv(1, 2, 2, 4, 0, 8, 8), grad=True)
    check_close(o_ref, o, torch.float32, "out with no keys")


def dropout_reference(q, k, v, keep, p, causal):
    """CPU float64 attention with the kernel's keep mask: softmax(.) * keep / (1 - p) @ v."""
    q, k, v = (t.detach().cpu().double().requires_grad_() for t in (q, k, v))
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    o = (torch.softmax(s, -1) * keep.cpu().double() / (1 - p)) @ v
    return o, (q, k, v)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 17, 23, 16), (1, 2, 40, 40, 64), (1, 1, 9, 30, 128)])
def test_dropout_against_the_math_with_the_same_mask(shape, causal):
    B, H, L, S, D = shape
    p = 0.3
    q, k, v = (t.double().to("ocl").requires_grad_() for t in qkv(B, H, H, L, S, D, D, seed=7))
    torch.manual_seed(11)
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal)
    assert "FusedAttentionOverrideable" in type(o.grad_fn).__name__
    g = torch.randn(o.shape, dtype=torch.float64)
    gq, gk, gv = torch.autograd.grad(o, (q, k, v), g.to("ocl"))
    torch.manual_seed(11)  # the same generator state draws the same mask: fetch it
    keep = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, None, p, causal, True)[8]
    assert keep.shape == (B, H, L, S)
    ref, leaves = dropout_reference(q, k, v, keep, p, causal)
    check_close(ref, o, torch.float64, "out")
    for name, a, b in zip("qkv", torch.autograd.grad(ref, leaves, g), (gq, gk, gv)):
        check_close(a, b, torch.float64, "grad " + name)


def test_dropout_mask_statistics_and_seeding():
    q, k, v = (t.to("ocl") for t in qkv(2, 4, 4, 64, 64, 16, 16, seed=8))
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    torch.manual_seed(1)
    keep1 = op(q, k, v, None, 0.25, False, True)[8].cpu()
    n = keep1.numel()
    dropped = float((keep1 == 0).sum()) / n
    assert abs(dropped - 0.25) < 4 * (0.25 * 0.75 / n) ** 0.5, dropped
    keep2 = op(q, k, v, None, 0.25, False, True)[8].cpu()  # the generator moved on: another mask
    assert (keep1 != keep2).any()
    torch.manual_seed(1)
    assert torch.equal(op(q, k, v, None, 0.25, False, True)[8].cpu(), keep1)
    # columns of one Philox group are not all kept or all dropped together
    assert ((keep1.reshape(-1, 4).sum(1) % 4) != 0).any()


def test_dropout_one_takes_the_math_path():
    q, k, v = (t.to("ocl").requires_grad_() for t in qkv(1, 2, 2, 8, 8, 8, 8))
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=1.0)
    assert "FusedAttentionOverrideable" not in type(o.grad_fn).__name__
    assert float(o.detach().abs().max().cpu()) == 0.0


def test_mask_that_needs_a_gradient_takes_the_math_path():
    q, k, v = qkv(1, 2, 2, 6, 7, 8, 8)
    bias = torch.randn(1, 2, 6, 7, dtype=torch.float64)
    grads = []
    for dev in ("cpu", "ocl"):
        b = bias.detach().to(dev).requires_grad_()
        o = F.scaled_dot_product_attention(q.double().to(dev), k.double().to(dev), v.double().to(dev), attn_mask=b)
        o.pow(2).sum().backward()
        grads.append(b.grad.cpu())
    check_close(grads[0], grads[1], torch.float64, "grad attn_mask")


def test_sdpa_kernel_math_switch_is_honoured():
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = (t.to("ocl").requires_grad_() for t in qkv(1, 2, 2, 8, 8, 8, 8))
    with sdpa_kernel(SDPBackend.MATH):
        o = F.scaled_dot_product_attention(q, k, v)
    assert "FusedAttentionOverrideable" not in type(o.grad_fn).__name__


@pytest.mark.parametrize("module", ["mha", "encoder_layer"])
def test_modules_use_it_and_match_cpu(module):
    torch.manual_seed(0)
    if module == "mha":
        m = nn.MultiheadAttention(32, 4, batch_first=True, dtype=torch.float64)
        fwd = lambda mod, x: mod(x, x, x, need_weights=False, is_causal=False)[0]  # noqa: E731
    else:
        m = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, dtype=torch.float64)
        fwd = lambda mod, x: mod(x)  # noqa: E731
    x = torch.randn(3, 10, 32, dtype=torch.float64)
    outs, grads = [], []
    for dev in ("cpu", "ocl"):
        mm = copy.deepcopy(m).to(dev)
        xx = x.detach().to(dev).requires_grad_()
        o = fwd(mm, xx)
        o.pow(2).sum().backward()
        outs.append(o.detach().cpu())
        grads.append([xx.grad.cpu()] + [p.grad.cpu() for p in mm.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 3
    check_close(outs[0], outs[1], torch.float64, "out")
    for a, b in zip(grads[0], grads[1]):
        check_close(a, b, torch.float64, "grad")


def test_memory_is_linear_in_sequence_length():
    L, D = 1024, 32
    q, k, v = (torch.randn(1, 1, L, D).to("ocl").requires_grad_() for _ in range(3))
    torch.ocl.synchronize()
    base = pytorch_ocl.memory.memory_allocated()
    pytorch_ocl.memory.reset_peak_memory_stats()
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o.sum().backward()
    torch.ocl.synchronize()
    extra = pytorch_ocl.memory.max_memory_allocated() - base
    # the L x L score matrix alone would be 4 MiB; o, lse, delta and the q/k/v grads are ~0.5 MiB
    assert extra < 1.5 * 2**20, extra


def test_bad_input_errors_name_the_op():
    q = torch.randn(1, 3, 4, 8, device="ocl")
    k = torch.randn(1, 2, 4, 8, device="ocl")
    with pytest.raises(RuntimeError, match="heads"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, k)
    with pytest.raises(RuntimeError, match="overrideable"):
        torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k[..., :4], k)


# Both forward layouts (tiled for head dims <= 64, rows for wider) and the opt-in tiled dq and dk/dv passes.
@pytest.mark.parametrize("head_dim,bwd_tiled", [(16, "0"), (96, "0"), (16, "1"), (24, "8,8,2"),
                                                (24, "dkdv=12,8,4")])
def test_transformer_block_trains_like_cpu(head_dim, bwd_tiled, monkeypatch):
    """A whole training run through the fused kernels (with dropout 0 so the CPU can be compared):
    3 AdamW steps of an embedding + causal encoder layer + head, parameters vs the CPU in float64."""
    pin_fma(monkeypatch, "PYTORCH_OCL_ATTN_BWD_TILED", bwd_tiled)
    torch.manual_seed(0)
    dim = 2 * head_dim
    net = nn.Sequential(nn.Embedding(50, dim),
                        nn.TransformerEncoderLayer(dim, 2, 2 * dim, dropout=0.0, batch_first=True,
                                                   dtype=torch.float64),
                        nn.Linear(dim, 50, dtype=torch.float64)).double()
    g = torch.Generator().manual_seed(1)
    data = [torch.randint(0, 50, (3, 11), generator=g) for _ in range(3)]
    mask = nn.Transformer.generate_square_subsequent_mask(11, dtype=torch.float64)
    params = []
    for dev in ("cpu", "ocl"):
        m = copy.deepcopy(net).to(dev)
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        for ids in data:
            opt.zero_grad()
            h = m[1](m[0](ids.to(dev)), src_mask=mask.to(dev), is_causal=True)
            F.cross_entropy(m[2](h).flatten(0, 1), ids.to(dev).roll(-1, 1).flatten()).backward()
            opt.step()
        params.append(torch.cat([p.detach().cpu().flatten() for p in m.parameters()]))
    start = torch.cat([p.detach().flatten() for p in net.parameters()])
    err = float((params[1] - params[0]).norm() / (params[0] - start).norm())
    assert err < 1e-8, err
