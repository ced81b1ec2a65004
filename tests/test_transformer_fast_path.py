"""The inference fast path of nn.MultiheadAttention and nn.TransformerEncoderLayer (eval, no grad; torch takes it on
ocl as on CUDA): _native_multi_head_attention, _transformer_encoder_layer_fwd and _masked_softmax on the device,
against the CPU's own fast path, with and without masks (boolean and additive, key padding and source masks,
rows whose keys are all masked: NaN, as the CPU gives), attention weights averaged or per head."""
import copy

import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401

B, L, E, H = 3, 6, 16, 4


def _copy(module):
    return copy.deepcopy(module).to("ocl")


def _masks():
    g = torch.Generator().manual_seed(1)
    kpm = torch.zeros(B, L, dtype=torch.bool)
    kpm[1, 4:] = True
    kpm[2, :] = True  # a sequence with every key masked (NaN weights on the CPU)
    src = torch.rand(L, L, generator=g) > 0.7
    src.fill_diagonal_(False)
    return {"none": (None, None), "key_padding": (kpm, None), "source": (None, src), "both": (kpm, src),
            "additive_source": (None, torch.zeros(L, L).masked_fill(src, float("-inf")))}


@pytest.mark.parametrize("masks", list(_masks()))
@pytest.mark.parametrize("need_weights,average", [(False, True), (True, True), (True, False)])
def test_multihead_attention_fast_path_matches_the_cpu(masks, need_weights, average):
    torch.manual_seed(0)
    cpu = nn.MultiheadAttention(E, H, batch_first=True).eval()
    dev = _copy(cpu)
    x = torch.randn(B, L, E)
    kpm, src = _masks()[masks]
    with torch.no_grad():
        ref = cpu(x, x, x, key_padding_mask=kpm, attn_mask=src, need_weights=need_weights,
                  average_attn_weights=average)
        got = dev(*(x.to("ocl"),) * 3, key_padding_mask=None if kpm is None else kpm.to("ocl"),
                  attn_mask=None if src is None else src.to("ocl"), need_weights=need_weights,
                  average_attn_weights=average)
    assert_close(got[0].cpu(), ref[0], atol=2e-5, rtol=1e-4, equal_nan=True)
    if need_weights:
        assert_close(got[1].cpu(), ref[1], atol=2e-5, rtol=1e-4, equal_nan=True)


@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "key_padding", "source"])
def test_encoder_layer_fast_path_matches_the_cpu(activation, norm_first, masks):
    torch.manual_seed(0)
    cpu = nn.TransformerEncoderLayer(E, H, 32, activation=activation, norm_first=norm_first, batch_first=True).eval()
    dev = _copy(cpu)
    x = torch.randn(B, L, E)
    kpm, src = _masks()[masks]
    with torch.no_grad():
        ref = cpu(x, src_mask=src, src_key_padding_mask=kpm)
        got = dev(x.to("ocl"), src_mask=None if src is None else src.to("ocl"),
                  src_key_padding_mask=None if kpm is None else kpm.to("ocl"))
    assert_close(got.cpu(), ref, atol=1e-4, rtol=1e-4, equal_nan=True)


def test_encoder_stack_without_nested_tensors():
    """nn.TransformerEncoder with a key padding mask turns the batch into nested tensors on the fast path, which
    ocl lacks; with enable_nested_tensor=False each layer takes the fast path with the mask."""
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(E, H, 32, batch_first=True)
    cpu = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    dev = _copy(cpu)
    x = torch.randn(B, L, E)
    kpm = _masks()["key_padding"][0]
    kpm[2, :] = False
    with torch.no_grad():
        ref, got = cpu(x, src_key_padding_mask=kpm), dev(x.to("ocl"), src_key_padding_mask=kpm.to("ocl"))
    assert_close(got.cpu(), ref, atol=1e-4, rtol=1e-4)


def test_masked_softmax_matches_the_cpu():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(B, H, L, L, generator=g)
    for mask, mask_type in [(torch.rand(B, H, L, L, generator=g) > 0.5, None),
                            (_masks()["key_padding"][0], 1), (_masks()["source"][1], 0)]:
        ref = torch._masked_softmax(x, mask, 3, mask_type)
        got = torch._masked_softmax(x.to("ocl"), mask.to("ocl"), 3, mask_type)
        assert_close(got.cpu(), ref, atol=1e-6, rtol=1e-5, equal_nan=True)
