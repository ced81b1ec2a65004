"""The Winograd F(4x4, 3x3) convolution path (3x3, stride 1, dilation 1, one group), forced with
PYTORCH_OCL_CONV_WINOGRAD=1, against float64 CPU references: forward (with bias), the input
gradient (which runs as a Winograd convolution of the output gradient), the weight gradient
(transformed x and dy tiles, reduced over the tiles in the 36 GEMMs) and the bias gradient.

Tolerance: the bound of test_conv.py (8 * eps_acc * sqrt(R) * mag + 2 * eps_out * |ref|, R the
reduction length, mag the same computation on absolute values) with R + 36 for R and its first
term times WINOGRAD_FACTOR (16), for the output and the input and weight gradients. The
transforms scale values by up to ~10 (the points +-2 give entries 4, 5 and 8 in B^T and A^T,
and 1/24 in G) before the products are summed, so the rounding error relative to the
magnitudes grows by about that much compared with direct summation, and they sum 36 terms per
output even for one input channel. Measured worst err/tol with this bound: 0.51 (PoCL, all
cases; WINO_REPORT=1 prints it).
"""
import math
import os

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl

DEV = "ocl:0"
EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}
ACC = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
       torch.float64: torch.float64}
WINOGRAD_FACTOR = 16


@pytest.fixture(autouse=True)
def _forced_winograd(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "1")


WORST = {}


def check(name, got, ref, mag, red, dtype, factor):
    got = got.detach().cpu().double()
    assert got.shape == ref.shape, (name, got.shape, ref.shape)
    if factor > 1:  # the transforms add 36-term sums to the reduction
        red = red + 36
    tol = factor * 8 * EPS[ACC[dtype]] * math.sqrt(max(red, 1)) * mag + 2 * EPS[dtype] * ref.abs() + 1e-30
    err = (got - ref).abs()
    if os.environ.get("WINO_REPORT"):
        print(f"\nERRTOL {name} {dtype} {(err / tol).max().item():.3f}")
    assert (err <= tol).all(), f"{name}: max err {err.max().item():.3e}, worst err/tol {(err / tol).max().item():.2f}"


def run(n, cin, cout, h, w, pad, bias=True, dtype=torch.float32, layout=None):
    torch.manual_seed(n * 1000 + cin * 100 + cout * 10 + h + w + sum(pad))
    x = torch.randn(n, cin, h, w).to(dtype)
    wt = (torch.randn(cout, cin, 3, 3) / math.sqrt(cin * 9)).to(dtype)
    b = torch.randn(cout).to(dtype) if bias else None
    xr = x.double().clone().requires_grad_()
    wr = wt.double().clone().requires_grad_()
    br = b.double().clone().requires_grad_() if bias else None
    y = F.conv2d(xr, wr, br, 1, pad)
    gy = torch.randn_like(y).to(dtype).double()
    y.backward(gy)
    xa, wa = xr.detach().abs().requires_grad_(), wr.detach().abs().requires_grad_()
    ba = br.detach().abs() if bias else None
    ya = F.conv2d(xa, wa, ba, 1, pad)
    ya.backward(gy.abs())

    xd = x.to(DEV)
    if layout == "channels_last":
        xd = xd.contiguous(memory_format=torch.channels_last)
    elif layout == "strided":  # a step-2 view along the width
        big = torch.zeros(n, cin, h, 2 * w, dtype=dtype)
        big[..., ::2] = x
        xd = big.to(DEV)[..., ::2]
    elif layout == "sliced":  # a channel slice: odd batch and channel strides
        big = torch.zeros(n, cin + 2, h, w, dtype=dtype)
        big[:, 1:-1] = x
        xd = big.to(DEV)[:, 1:-1]
    xd.requires_grad_()
    wd = wt.to(DEV).requires_grad_()
    bd = b.to(DEV).requires_grad_() if bias else None
    yd = F.conv2d(xd, wd, bd, 1, pad)
    yd.backward(gy.to(dtype).to(DEV))
    check("output", yd, y.detach(), ya.detach(), cin * 9, dtype, WINOGRAD_FACTOR)
    check("grad_input", xd.grad, xr.grad, xa.grad, cout * 9, dtype, WINOGRAD_FACTOR)
    check("grad_weight", wd.grad, wr.grad, wa.grad, y.numel() // cout, dtype, WINOGRAD_FACTOR)
    if bias:
        check("grad_bias", bd.grad, br.grad, gy.abs().sum((0, 2, 3)), y.numel() // cout, dtype, 1)


CASES = [  # n, cin, cout, h, w, pad
    (1, 1, 1, 5, 5, (0, 0)),
    (1, 3, 8, 7, 9, (1, 1)),
    (3, 16, 16, 11, 6, (1, 1)),
    (3, 33, 16, 9, 13, (2, 2)),
    (1, 16, 33, 8, 8, (0, 0)),
    (3, 3, 1, 4, 4, (2, 2)),
    (1, 33, 33, 13, 10, (1, 2)),
    (3, 1, 16, 6, 17, (2, 0)),
    (1, 16, 3, 3, 3, (0, 1)),
    (3, 3, 33, 1, 12, (1, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:5])) + f"p{c[5][0]}{c[5][1]}")
def test_winograd_float32(case):
    n, cin, cout, h, w, pad = case
    run(n, cin, cout, h, w, pad, bias=(cin + cout) % 2 == 1 or h == 11)


@pytest.mark.parametrize("layout", ["channels_last", "strided", "sliced"])
def test_winograd_layouts(layout):
    run(3, 16, 8, 10, 7, (1, 1), layout=layout)


def test_winograd_no_bias():
    run(3, 16, 16, 12, 12, (1, 1), bias=False)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_winograd_dtypes(dtype):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device without fp64")
    run(3, 16, 12, 9, 11, (1, 1), dtype=dtype)


def test_winograd_is_used(monkeypatch):
    algo = pytorch_ocl.ops.conv_algorithms((2, 16, 9, 9), (8, 16, 3, 3), 1, 1)
    assert set(algo.values()) == {"winograd"}, algo
    # Not eligible: stride 2, dilation 2, groups 2, 5x5.
    for args in [((2, 16, 9, 9), (8, 16, 3, 3), 2, 1, 1, 1), ((2, 16, 9, 9), (8, 16, 3, 3), 1, 2, 2, 1),
                 ((2, 16, 9, 9), (8, 8, 3, 3), 1, 1, 1, 2), ((2, 16, 9, 9), (8, 16, 5, 5), 1, 2, 1, 1)]:
        algo = pytorch_ocl.ops.conv_algorithms(*args)
        assert "winograd" not in algo.values(), (args, algo)
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "0")
    algo = pytorch_ocl.ops.conv_algorithms((2, 16, 9, 9), (8, 16, 3, 3), 1, 1)
    assert "winograd" not in algo.values(), algo


def test_winograd_timed_choice(monkeypatch):
    """With tuning on and nothing forced, the choice is timed; either way the result is right."""
    monkeypatch.delenv("PYTORCH_OCL_CONV_WINOGRAD")
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "1")
    algo = pytorch_ocl.ops.conv_algorithms((3, 16, 12, 12), (16, 16, 3, 3), 1, 1)
    assert algo["forward"] in ("winograd", "im2col") or algo["forward"].startswith("implicit"), algo
    assert algo["backward_data"] in ("winograd", "col2im"), algo
    assert algo["backward_weight"] in ("winograd", "im2col"), algo
    keys = pytorch_ocl.ops.autotune_decisions()
    assert any(k.startswith("conv_fwd|") and "|w" in k for k in keys), keys
    assert any(k.startswith("conv_bwd_data|") for k in keys), keys
    assert any(k.startswith("conv_bwd_weight|") for k in keys), keys
    run(3, 16, 16, 12, 12, (1, 1))
