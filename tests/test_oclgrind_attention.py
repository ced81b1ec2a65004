"""The fused attention kernels under Oclgrind (scripts/oclgrind.sh runs this file with test_oclgrind_kernels.py,
whose helpers and settings it shares): the row, tiled and matrix-engine (emulated) forward and backward passes,
masks, GQA, wide heads, the one-pass backward and the dropout variants."""
import pytest
import torch
import torch.nn.functional as F

from test_oclgrind_kernels import DEV, _no_tuning, check, rand  # noqa: F401  (_no_tuning: the autouse fixture)


@pytest.mark.parametrize("case", ["causal", "mask_gqa", "wide_head", "tiled_streamed", "row_forward", "tiled_dq",
                                  "tiled_dkdv", "mma", "mma_split", "mma_onepass", "mma_onepass_atomic",
                                  "mask_blocks"])
def test_fused_attention(case, monkeypatch):
    # Tails in every tile: L, S not multiples of the row/column tiles; D not a multiple of 4.
    if case == "tiled_dkdv":  # the backward's tiled dk/dv pass (opt-in): GQA, causal, L != S, BK not a multiple of 4 NTC
        monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_TILED", "dkdv=4,12,2")
        q, k, v = rand(1, 4, 11, 10, grad=True), rand(1, 2, 14, 10, grad=True), rand(1, 2, 14, 7, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), q, k, v)
    elif case == "tiled_dq":  # the backward's tiled dq pass (opt-in), small tiles with tails
        monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_TILED", "8,8,2")
        q, k, v = rand(1, 2, 11, 10, grad=True), rand(1, 2, 13, 10, grad=True), rand(1, 2, 13, 7, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    elif case in ("tiled_streamed", "row_forward"):
        # the tiled forward streaming the head dim in chunks (small tiles), and the row kernel
        monkeypatch.setenv("PYTORCH_OCL_ATTN_TILED", "8,8,4,2" if case == "tiled_streamed" else "0")
        q, k, v = rand(1, 2, 11, 10, grad=True), rand(1, 2, 13, 10, grad=True), rand(1, 2, 13, 7, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    elif case == "mma":  # the matrix-engine forward and dq pass, emulated (attention_mma*.cl): one-warp groups
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")  # 16-key tiles, prefetch, a mask, GQA, D not a multiple of 8
        monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "1,16,1")
        q, k, v = rand(1, 2, 18, 6, grad=True), rand(1, 1, 19, 6, grad=True), rand(1, 1, 19, 5, grad=True)
        mask = torch.rand(18, 19) > 0.3
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
              q, k, v, mask)
    elif case.startswith("mma_onepass"):  # the one-pass backward (ordered, or float atomics with a last arrival) (attention_mma_onepass.cl) on one-warp groups: 3 key
        # blocks adding each query tile's dq in turn through the counters and the accumulator, a (tile, block)
        # pair all masked (its turn taken with nothing to add), GQA; then causal (blocks past the queries: no tile)
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
        monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "1,16,0")
        monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_ONEPASS", "atomic" if case.endswith("atomic") else "1")
        q, k, v = rand(1, 2, 20, 6, grad=True), rand(1, 1, 35, 6, grad=True), rand(1, 1, 35, 5, grad=True)
        mask = torch.rand(20, 35) > 0.3
        mask[:16, 16:32] = False
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
              q, k, v, mask)
        q = rand(1, 1, 20, 6, grad=True)
        k, v = rand(1, 1, 35, 6, grad=True), rand(1, 1, 35, 5, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    elif case == "mma_split":  # the backward's head-dim split over a warp pair (heads over 64): the exchange's
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")  # barrier, padded k-steps / n-tiles, GQA, causal
        monkeypatch.setenv("PYTORCH_OCL_ATTN_MMA", "2,16,0")
        q, k, v = rand(1, 2, 11, 68, grad=True), rand(1, 1, 13, 68, grad=True), rand(1, 1, 13, 66, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True), q, k, v)
    elif case == "mask_blocks":  # mask block flags (attention_mask_blocks.cl) on 16-key tiles: key tiles all masked
        # for the second batch skipped by the forward, dq and dk/dv passes; all-visible tiles read no mask
        monkeypatch.setenv("PYTORCH_OCL_ATTN_TILED", "16,16,8,2")
        monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_TILED", "dq=16,16,2+dkdv=8,16,2")
        q, k, v = rand(2, 1, 18, 6, grad=True), rand(2, 1, 35, 6, grad=True), rand(2, 1, 35, 5, grad=True)
        mask = torch.ones(2, 1, 1, 35, dtype=torch.bool)
        mask[1, ..., 14:] = False
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), q, k, v, mask)
    elif case == "causal":
        q, k, v = rand(1, 2, 9, 6, grad=True), rand(1, 2, 11, 6, grad=True), rand(1, 2, 11, 5, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), q, k, v)
    elif case == "mask_gqa":
        q, k, v = rand(1, 4, 7, 8, grad=True), rand(1, 2, 10, 8, grad=True), rand(1, 2, 10, 8, grad=True)
        mask = torch.rand(7, 10) > 0.3
        check(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m, enable_gqa=True),
              q, k, v, mask)
    else:  # tiled forward with head dims 70 / 66; three threads per row in the backward
        q, k, v = rand(1, 1, 5, 70, grad=True), rand(1, 1, 6, 70, grad=True), rand(1, 1, 6, 66, grad=True)
        check(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), q, k, v)


@pytest.mark.parametrize("bwd_tiled", ["0", "dkdv=4,8,2,split"])
def test_fused_attention_dropout(bwd_tiled, monkeypatch):
    # The dropout variants of the three kernels and the keep-mask kernel (values checked in
    # test_attention.py); then with the tiled dk/dv pass (PZ and dS sharing local memory).
    monkeypatch.setenv("PYTORCH_OCL_ATTN_BWD_TILED", bwd_tiled)
    q, k, v = (rand(1, 2, 9, 6).to(DEV).requires_grad_() for _ in range(3))
    o = F.scaled_dot_product_attention(q, k, v, dropout_p=0.25, is_causal=True)
    o.sum().backward()
    keep = torch.ops.aten._scaled_dot_product_fused_attention_overrideable(q, k, v, None, 0.25, False, True)[8]
    assert torch.isfinite(q.grad.cpu()).all() and keep.shape == (1, 2, 9, 9)
