"""The implicit-GEMM convolution forward on the matrix engine (gemm_mma.cl with conv_implicit.cl's patch-gathering
hooks; a tuning candidate by default, PYTORCH_OCL_CONV_IMPLICIT_MMA=0 leaves it out) against float64 CPU references,
in TF32 (torch's default for convolutions), 3xTF32 (TF32 off: float32 accuracy) and bfloat16.

On PoCL (CI) the fragments run through PYTORCH_OCL_MMA=emulate (test_gemm_mma.py says how); on an NVIDIA device
the real instruction runs the same tests (PYTORCH_OCL_MMA_TEST=native).
"""
import os

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl

from test_conv import EPS, implicit_forward_cases

DEV = "ocl:0"
NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"
# Work-group sizes that are multiples of BN / 4 (tf32 units) or BN / 8 (16-bit), one and two local buffers.
CONFIGS = ["mma 64x64x16 w2x2 local2", "mma 32x32x16 w1x2 local2", "mma 128x64x16 w2x2 local2",
           "mma 64x64x32 w2x2 local2"]


@pytest.fixture(autouse=True)
def _engine(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT", "1")
    monkeypatch.delenv("PYTORCH_OCL_CONV_IMPLICIT_MMA", raising=False)  # a candidate by default
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "0")
    monkeypatch.delenv("PYTORCH_OCL_3XTF32", raising=False)
    if NATIVE:
        monkeypatch.delenv("PYTORCH_OCL_MMA", raising=False)
    else:
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")


def tf32(on):
    """torch.backends.cudnn.allow_tf32 (ocl's convolutions read it) for a block: the suite's conftest turns it off,
    and once torch.testing's helpers disabled global flag changes only the context manager may set it."""
    return torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=on)


def forward_kernels(fn):
    with pytorch_ocl.profiler.profile() as prof:
        out = fn()
        torch.ocl.synchronize()
    return out, {r["kernel"] for r in prof.summary()}


def check(name, got, x, w, b, kw, dtype, tf32):
    """As test_conv.check (fp32 accumulation over the patch), with TF32's operand rounding added."""
    ref = F.conv2d(x.double(), w.double(), b.double(), **kw)
    mag = F.conv2d(x.double().abs(), w.double().abs(), b.double().abs(), **kw)
    red = w[0].numel()
    tol = 8 * EPS[torch.float32] * red**0.5 * mag + 2 * EPS[dtype] * ref.abs() + 1e-30
    if tf32:
        tol = tol + 2 * 2.0**-11 * mag
    got = got.detach().cpu().double()
    err = (got - ref).abs()
    assert (err <= tol).all(), f"{name}: max err {err.max().item():.3e}, worst err/tol {(err / tol).max().item():.2f}"


@pytest.mark.parametrize("math_kind", ["tf32", "3xtf32"])
@pytest.mark.parametrize("config", CONFIGS)
def test_forward_grid(config, math_kind, monkeypatch):
    """Strides, dilations, paddings, groups, 1x1 to 7x7 kernels, partial tiles in every dimension, channels-last
    input (gathered through its strides)."""
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    with tf32(math_kind == "tf32"):
        forward_grid(config, math_kind)


def forward_grid(config, math_kind):
    for case, p, x, w, b, kw, xd in implicit_forward_cases(14):
        out, names = forward_kernels(lambda: F.conv2d(xd, w.to(DEV), b.to(DEV), **kw))
        assert "conv_implicit_fwd" in names, (case, names)
        algo = pytorch_ocl.ops.conv_algorithms(tuple(x.shape), tuple(w.shape), p["stride"], p["pad"], p["dil"],
                                               p["groups"], device=DEV)["forward"]
        assert algo.startswith("implicit " + config), (case, algo)
        check(f"{config} {math_kind} {case}", out, x, w, b, kw, torch.float32, math_kind == "tf32")


def test_3xtf32_keeps_float32_bits_tf32_does_not(monkeypatch):
    """Inputs whose low mantissa bits matter: 3xTF32 meets the float32 bound without TF32's term; TF32 rounds."""
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", CONFIGS[0])
    torch.manual_seed(3)
    x = 1 + torch.rand(2, 16, 12, 12) * 2.0**-12  # differences below TF32's 10 mantissa bits
    w = torch.randn(8, 16, 3, 3)
    kw = dict(padding=1)
    ref = F.conv2d(x.double(), w.double(), **kw)
    with tf32(False):
        exact = F.conv2d(x.to(DEV), w.to(DEV), **kw).cpu().double()
    check("3xtf32", exact, x, w, torch.zeros(8), kw, torch.float32, False)
    with tf32(True):
        rounded = F.conv2d(x.to(DEV), w.to(DEV), **kw).cpu().double()
    assert (rounded - ref).abs().max() > 10 * (exact - ref).abs().max()


def test_non_finite_inputs_like_float32(monkeypatch):
    """3xTF32 cannot split inf / NaN / huge values: the work-group recomputes in plain fp32 (B_AT's any-column
    gather), so inf and NaN land where float32 puts them."""
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", CONFIGS[0])
    torch.manual_seed(4)
    x = torch.randn(2, 8, 10, 11)
    x[0, 3, 4, 5] = float("inf")
    x[1, 2, 7, 1] = float("nan")
    w = torch.randn(6, 8, 3, 3).abs()
    kw = dict(stride=2, padding=1)
    with tf32(False):
        out = F.conv2d(x.to(DEV), w.to(DEV), **kw).cpu()
    ref = F.conv2d(x.double(), w.double(), **kw).float()
    assert torch.equal(torch.isnan(out), torch.isnan(ref)) and torch.equal(torch.isinf(out), torch.isinf(ref))
    finite = torch.isfinite(ref)
    torch.testing.assert_close(out[finite], ref[finite], rtol=1e-4, atol=1e-4)


def test_bfloat16(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", "mma 64x64x32 w2x2 local2")
    torch.manual_seed(5)
    x, w, b = torch.randn(3, 12, 13, 9), torch.randn(10, 12, 3, 3), torch.randn(10)
    xb, wb, bb = (t.bfloat16() for t in (x, w, b))
    kw = dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1))
    out, names = forward_kernels(lambda: F.conv2d(xb.to(DEV), wb.to(DEV), bb.to(DEV), **kw))
    assert "conv_implicit_fwd" in names
    check("bf16", out.float(), xb.float(), wb.float(), bb.float(), kw, torch.bfloat16, False)


def test_switch_off_keeps_the_fma_kernels(monkeypatch):
    """With PYTORCH_OCL_CONV_IMPLICIT_MMA=0 a forced matrix-engine config is not taken (the tiled default runs)."""
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT_MMA", "0")
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", CONFIGS[0])
    algo = pytorch_ocl.ops.conv_algorithms((2, 8, 9, 9), (4, 8, 3, 3), 1, 1, 1, 1, device=DEV)["forward"]
    assert "mma" not in algo, algo


def test_network_trains_like_cpu_with_it_forced(monkeypatch):
    """Whole-network training with every convolution forward on the matrix-engine implicit kernel (3xTF32: TF32 off,
    as the suite runs): test_random_tuning's branch-free ResNet, its update against the CPU's float32 spread."""
    from test_random_tuning import smooth_resnet_errors

    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", "mma 32x32x16 w1x2 local2")
    cpu_err, ocl_err = smooth_resnet_errors((4, 3, 16, 16), 3, lambda: tf32(False))
    algo = pytorch_ocl.ops.conv_algorithms((4, 16, 8, 8), (32, 16, 3, 3), 2, 1, 1, 1, device=DEV)["forward"]
    assert algo.startswith("implicit mma"), algo
    assert ocl_err < max(3 * cpu_err, 1e-5), (ocl_err, cpu_err)
