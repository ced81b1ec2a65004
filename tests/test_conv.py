"""Convolutions on the ocl device against float64 CPU references, forward and all gradients.

Tolerance (documented in the README): every element of the output and of each gradient must
satisfy |ocl - ref| <= 8 * eps_acc * sqrt(R) * mag + 2 * eps_out * |ref|, where `mag` is the same
quantity computed from absolute values (|x|, |w|, |grad|: a bound on the sum of the magnitudes
of the products), R the reduction length of that quantity (C/g*KH*KW for the output,
K/g*KH*KW for the input gradient, N*OH*OW for the weight and bias gradients), eps_acc the
accumulation type's epsilon (float32 for float16/bfloat16/float32, float64 for float64) and
eps_out the output dtype's.
"""
import copy
import math
import random

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl

DEV = "ocl:0"
# The fp32 bound needs float32 convolutions: TF32 (on by default, as CUDA's) is off in the suite's conftest, and here
# too for the scripts that import run_case in a fresh interpreter (on a matrix engine they failed by ~100x the bound).
if torch.backends.cudnn.allow_tf32:  # set only where still on: after torch.testing's import a set raises
    torch.backends.cudnn.allow_tf32 = False
EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}
ACC = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
       torch.float64: torch.float64}


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")


def check(name, got, ref, mag, red, dtype):
    got = got.detach().cpu().double()
    assert got.shape == ref.shape, (name, got.shape, ref.shape)
    tol = 8 * EPS[ACC[dtype]] * math.sqrt(max(red, 1)) * mag + 2 * EPS[dtype] * ref.abs() + 1e-30
    err = (got - ref).abs()
    assert (err <= tol).all(), f"{name}: max err {err.max().item():.3e}, worst err/tol {(err / tol).max().item():.2f}"


def run_case(conv, x, w, b, dtype=torch.float32, layout=None, **kw):
    """conv(x, w, b, **kw) on ocl vs float64 on the CPU; forward and the gradients of x, w, b.
    layout: None (contiguous), "channels_last" (the input), "channels_last_all" (the input and the
    output gradient) or "strided" (a step-2 view of the input and a transposed weight)."""
    xs, ws = x.to(dtype), w.to(dtype)
    bs = b.to(dtype) if b is not None else None
    # Reference from the dtype-rounded inputs, in float64.
    xr, wr = xs.detach().double().clone().requires_grad_(), ws.detach().double().clone().requires_grad_()
    br = bs.detach().double().clone().requires_grad_() if bs is not None else None
    y = conv(xr, wr, br, **kw)
    gy = torch.randn_like(y).to(dtype).double()
    y.backward(gy)
    # Magnitudes: the same computation on absolute values.
    xa, wa = xr.detach().abs().requires_grad_(), wr.detach().abs().requires_grad_()
    ba = br.detach().abs().requires_grad_() if br is not None else None
    ya = conv(xa, wa, ba, **kw)
    ya.backward(gy.abs())

    xd = xs.to(DEV)
    if layout in ("channels_last", "channels_last_all"):
        xd = xd.contiguous(memory_format=torch.channels_last)
    elif layout == "strided":  # a step-2 view along the width
        big = torch.zeros(*xs.shape[:-1], 2 * xs.shape[-1], dtype=dtype)
        big[..., ::2] = xs
        xd = big.to(DEV)[..., ::2]
    wd = ws.to(DEV)
    if layout == "strided":
        wd = ws.transpose(-1, -2).contiguous().to(DEV).transpose(-1, -2)  # non-contiguous weight
    xd.requires_grad_()
    wd.requires_grad_()
    bd = bs.to(DEV).requires_grad_() if bs is not None else None
    yd = conv(xd, wd, bd, **kw)
    gyd = gy.to(dtype).to(DEV)
    if layout == "channels_last_all":
        gyd = gyd.contiguous(memory_format=torch.channels_last)
    yd.backward(gyd)

    groups = kw.get("groups", 1)
    ksz = math.prod(w.shape[2:])
    transposed = conv in (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)
    out_ch = y.shape[1]
    red_y = (w.shape[1] * ksz) if not transposed else (x.shape[1] // groups * ksz)
    red_x = (out_ch // groups * ksz) if not transposed else (w.shape[1] * ksz)
    red_w = y.numel() // out_ch if not transposed else x.numel() // x.shape[1]
    check("output", yd, y.detach(), ya.detach(), red_y, dtype)
    check("grad_input", xd.grad, xr.grad, xa.grad, red_x, dtype)
    check("grad_weight", wd.grad, wr.grad, wa.grad, red_w, dtype)
    if bs is not None:
        check("grad_bias", bd.grad, br.grad, ba.grad, y.numel() // out_ch, dtype)


def grid_cases():
    """A representative sample of the parameter grid (the full product is far too large):
    every value of every parameter appears, combined pseudo-randomly, plus corner cases."""
    rng = random.Random(1234)
    values = dict(batch=[1, 3, 8], ch=[1, 3, 16, 33], kernel=[(1, 1), (3, 3), (5, 5), (7, 7), (1, 3)],
                  stride=[1, 2, 3], dil=[1, 2, 3], pad=[0, 1, 3], groups=["1", "2", "dw"])
    cases = []
    for i in range(36):
        c = {k: v[i % len(v)] if i < 12 else rng.choice(v) for k, v in values.items()}
        cases.append(c)
    return cases


def params_of(c):
    cin = c["ch"]
    groups = {"1": 1, "2": 2, "dw": cin}[c["groups"]]
    if cin % groups:
        cin *= groups
    cout = {"1": 8, "2": 6, "dw": cin}[c["groups"]]
    if c["groups"] == "dw" and c["batch"] == 3:
        cout = 2 * cin  # depthwise with a channel multiplier
    kh, kw = c["kernel"]
    h = max(9, (kh - 1) * c["dil"] + 1) + 2
    w = h + 3
    return dict(batch=c["batch"], cin=cin, cout=cout, groups=groups, kh=kh, kw=kw, h=h, w=w, stride=c["stride"],
                dil=c["dil"], pad=c["pad"])


@pytest.mark.parametrize("case", grid_cases(), ids=lambda c: "-".join(str(v) for v in c.values()))
def test_conv2d_grid(case):
    p = params_of(case)
    torch.manual_seed(0)
    x = torch.randn(p["batch"], p["cin"], p["h"], p["w"])
    w = torch.randn(p["cout"], p["cin"] // p["groups"], p["kh"], p["kw"])
    b = torch.randn(p["cout"])
    layout = [None, "channels_last", "strided"][hash(tuple(case.values())) % 3]
    run_case(F.conv2d, x, w, b, layout=layout, stride=p["stride"], padding=p["pad"], dilation=p["dil"],
             groups=p["groups"])


@pytest.mark.parametrize("layout", [None, "channels_last", "strided"])
@pytest.mark.parametrize("k,groups", [(3, 1), (1, 1), (3, 4), (1, 2)])
def test_conv2d_layouts(layout, k, groups):
    torch.manual_seed(1)
    x, w, b = torch.randn(3, 8, 11, 13), torch.randn(12, 8 // groups, k, k), torch.randn(12)
    run_case(F.conv2d, x, w, b, layout=layout, stride=1, padding=k // 2, groups=groups)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("k,stride,groups", [(3, 1, 1), (1, 1, 1), (3, 2, 8)])
def test_conv2d_dtypes(dtype, k, stride, groups):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device without fp64")
    torch.manual_seed(2)
    x, w, b = torch.randn(2, 8, 9, 10), torch.randn(8, 8 // groups, k, k), torch.randn(8)
    run_case(F.conv2d, x, w, b, dtype=dtype, stride=stride, padding=k // 2, groups=groups)


@pytest.mark.parametrize("k,stride,pad,dil,groups", [(3, 1, 1, 1, 1), (5, 2, 2, 1, 2), (3, 3, 0, 2, 1), (1, 1, 0, 1, 1),
                                                     (3, 1, 1, 1, 6)])
def test_conv1d(k, stride, pad, dil, groups):
    torch.manual_seed(3)
    x, w, b = torch.randn(3, 6, 29), torch.randn(12, 6 // groups, k), torch.randn(12)
    run_case(F.conv1d, x, w, b, stride=stride, padding=pad, dilation=dil, groups=groups)


@pytest.mark.parametrize("k,stride,pad,outpad,dil,groups", [(3, 1, 1, 0, 1, 1), (3, 2, 1, 1, 1, 2), (4, 2, 1, 0, 1, 1),
                                                            (3, 3, 0, 2, 2, 1), (1, 1, 0, 0, 1, 1), (3, 2, 1, 1, 1, 4)])
def test_conv_transpose2d(k, stride, pad, outpad, dil, groups):
    torch.manual_seed(4)
    x, w, b = torch.randn(2, 8, 7, 6), torch.randn(8, 12 // groups, k, k), torch.randn(12)
    run_case(F.conv_transpose2d, x, w, b, stride=stride, padding=pad, output_padding=outpad, dilation=dil,
             groups=groups)


def test_conv_transpose1d():
    torch.manual_seed(5)
    x, w, b = torch.randn(2, 4, 13), torch.randn(4, 6, 5), torch.randn(6)
    run_case(F.conv_transpose1d, x, w, b, stride=2, padding=2, output_padding=1)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True), (True, True, True)])
def test_backward_output_mask(mask):
    x, w = torch.randn(2, 4, 9, 9), torch.randn(6, 4, 3, 3)
    gy = torch.randn(2, 6, 5, 5)
    args = ([2, 2], [1, 1], [1, 1], False, [0, 0], 1, list(mask))
    ref = torch.ops.aten.convolution_backward(gy, x, w, [6], *args)
    out = torch.ops.aten.convolution_backward(gy.to(DEV), x.to(DEV), w.to(DEV), [6], *args)
    for r, o, wanted in zip(ref, out, mask):
        if wanted:
            torch.testing.assert_close(o.cpu(), r, atol=1e-4, rtol=1e-4)
        else:
            assert o is None


def test_module_training_step_matches_cpu():
    torch.manual_seed(6)
    net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.Conv2d(8, 8, 3, stride=2, groups=8),
                              torch.nn.Conv2d(8, 4, 1))
    net_d = copy.deepcopy(net).to(DEV)
    x = torch.randn(4, 3, 16, 16)
    y, yd = net(x), net_d(x.to(DEV))
    (y * y).sum().backward()
    (yd * yd).sum().backward()
    for p, q in zip(net.parameters(), net_d.parameters()):
        torch.testing.assert_close(q.grad.cpu(), p.grad, atol=1e-3, rtol=1e-4)


def test_zero_batch_and_errors():
    y = F.conv2d(torch.randn(0, 3, 8, 8, device=DEV), torch.randn(4, 3, 3, 3, device=DEV))
    assert y.shape == (0, 4, 6, 6)
    with pytest.raises(RuntimeError, match="should be the same"):
        F.conv2d(torch.randn(1, 2, 4, 4, device=DEV), torch.randn(2, 2, 1, 1, device=DEV, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="channels"):
        F.conv2d(torch.randn(1, 3, 4, 4, device=DEV), torch.randn(2, 2, 1, 1, device=DEV))


def test_ops_conv2d():
    torch.manual_seed(7)
    x, w, b = torch.randn(2, 4, 9, 9), torch.randn(6, 2, 3, 3), torch.randn(6)
    xd, wd, bd = (t.to(DEV).requires_grad_() for t in (x, w, b))
    xc, wc, bc = (t.clone().requires_grad_() for t in (x, w, b))
    yd = pytorch_ocl.ops.conv2d(xd, wd, bd, stride=2, padding=(1, 1), groups=2)
    yc = F.conv2d(xc, wc, bc, stride=2, padding=1, groups=2)
    torch.testing.assert_close(yd.cpu(), yc, atol=1e-5, rtol=1e-5)
    g = torch.randn_like(yc)
    yd.backward(g.to(DEV))
    yc.backward(g)
    for a, c in ((xd, xc), (wd, wc), (bd, bc)):
        torch.testing.assert_close(a.grad.cpu(), c.grad, atol=1e-4, rtol=1e-5)


# The implicit-GEMM forward kernel is what GPUs pick; on a CPU device it runs only when forced.
IMPLICIT_CONFIGS = ["32x32x16 t8x8 v4x4 local", "128x128x16 t16x16 v4x4 local", "64x64x32 t8x8 v8x8 local",
                    "64x64x16 t16x16 v1x1 local", "128x128x8 t16x16 v4x4 local2"]


def implicit_forward_cases(count):
    """The first `count` grid cases but depthwise ones (their own kernel) as (case, p, x, w, b, conv2d keywords, x on
    the device: channels-last every other case)."""
    for i, case in enumerate(grid_cases()[:count]):
        p = params_of(case)
        if p["groups"] == p["cin"]:
            continue
        torch.manual_seed(i)
        x = torch.randn(p["batch"], p["cin"], p["h"], p["w"])
        w = torch.randn(p["cout"], p["cin"] // p["groups"], p["kh"], p["kw"])
        b = torch.randn(p["cout"])
        kw = dict(stride=p["stride"], padding=p["pad"], dilation=p["dil"], groups=p["groups"])
        xd = x.to(DEV)
        if i % 2:
            xd = xd.contiguous(memory_format=torch.channels_last)
        yield case, p, x, w, b, kw, xd


@pytest.mark.parametrize("config", IMPLICIT_CONFIGS)
def test_implicit_gemm_forward(config, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT", "1")
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    for case, p, x, w, b, kw, xd in implicit_forward_cases(12):
        ref = F.conv2d(x.double(), w.double(), b.double(), **kw)
        mag = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), **kw)
        out = F.conv2d(xd, w.to(DEV), b.to(DEV), **kw)
        check(f"output {case}", out, ref, mag, w[0].numel(), torch.float32)
    # Few output tiles and a long reduction: split-K partial sums.
    x, w = torch.randn(1, 64, 5, 5), torch.randn(8, 64, 3, 3)
    out = F.conv2d(x.to(DEV), w.to(DEV), padding=1)
    check("split-K", out, F.conv2d(x.double(), w.double(), padding=1), F.conv2d(x.double().abs(), w.double().abs(),
                                                                               padding=1), 64 * 9, torch.float32)


DEPTHWISE_SLICES_SCRIPT = r"""
import sys
sys.path.insert(0, TESTS)
import torch, torch.nn.functional as F
from test_conv import run_case
torch.manual_seed(0)
# Depthwise under the GPU mapping: conv_depthwise.cl, built per kernel size / width stride / width
# dilation, several outputs per item, and the channel-fastest mapping for channels-last tensors.
# (N, C, H, W), multiplier, kernel, stride, dilation, padding, layout, dtype.
f32, f64 = torch.float32, torch.float64
for shape, mult, k, stride, dil, pad, layout, dtype in [
        ((2, 8, 23, 29), 1, (7, 7), 1, 1, 3, "channels_last_all", f32),  # ConvNeXt
        ((2, 8, 23, 29), 1, (7, 7), 1, 1, 3, None, f64),
        ((3, 6, 17, 70), 2, (3, 3), 2, 1, 1, "channels_last_all", f64),  # multiplier 2, stride 2
        ((3, 6, 17, 70), 2, (3, 3), 2, 1, 1, None, f32),
        ((2, 5, 19, 13), 1, (1, 3), (1, 2), (1, 2), (0, 2), None, f32),
        ((2, 5, 19, 13), 1, (5, 5), (2, 3), 2, 2, "channels_last_all", f32),
        ((2, 5, 19, 13), 1, (3, 3), 1, 1, 1, "channels_last", f32),  # channels-last input, NCHW gradient
        ((1, 3, 2, 3), 1, (3, 3), 1, 1, 1, "channels_last_all", f32),
        # Few weight elements over many positions: slices summed by a second kernel.
        ((4, 1, 64, 64), 1, (3, 3), 1, 1, 1, None, f32), ((3, 2, 70, 50), 1, (3, 3), 2, 1, 1, None, f32),
        ((3, 1, 100, 101), 1, (3, 3), 1, 2, 1, None, f64), ((1, 1, 3, 3), 1, (3, 3), 1, 1, 1, None, f32),
        ((8, 3, 40, 40), 1, (3, 3), 1, 1, 1, "channels_last_all", f32)]:
    c = shape[1]
    x = torch.randn(shape)
    w = torch.randn(c * mult, 1, *k)
    b = torch.randn(c * mult)
    run_case(F.conv2d, x, w, b, dtype=dtype, layout=layout, stride=stride, padding=pad, dilation=dil, groups=c)
# Dense and grouped strided convolutions: their weight gradient runs im2col's GPU kernel here (an output pixel
# an item, channel chunks of a tap an item: CPU devices use the one-row-per-item kernel in every other test), and
# col2im's (a position an item; four planes each where it has at most one tap: the 1x1 and 2x2 stride-2 cases).
# Channel counts of 17-81 a group split into chunks of 8-9, the last one short or empty; dilation.
for shape, cout, k, stride, groups, dil in [((2, 4, 13, 11), 6, 3, 2, 1, 1), ((3, 6, 9, 10), 4, 5, 3, 2, 1),
                                            ((2, 70, 9, 7), 8, 3, 2, 1, 1), ((1, 34, 8, 9), 6, 1, 2, 2, 1),
                                            ((2, 81, 6, 6), 5, 3, 1, 1, 2), ((3, 17, 12, 5), 4, 2, 2, 1, 1)]:
    x = torch.randn(shape)
    w = torch.randn(cout, shape[1] // groups, k, k)
    run_case(F.conv2d, x, w, torch.randn(cout), stride=stride, padding=min(1, k // 2), groups=groups, dilation=dil)
print("ok")
"""


def test_gpu_mapping_conv_paths():
    """Under the GPU mapping: the GPU depthwise kernels (NCHW and channels-last mappings, sliced weight
    gradients incl. slices that end mid-image) and the GPU im2col / col2im kernels, against float64."""
    import os

    from conftest import run_python

    code = DEPTHWISE_SLICES_SCRIPT.replace("TESTS", repr(os.path.dirname(os.path.abspath(__file__))))
    out = run_python(code, env={"PYTORCH_OCL_GPU_MAPPING": "1", "PYTORCH_OCL_AUTOTUNE": "0"}).stdout
    assert "ok" in out
