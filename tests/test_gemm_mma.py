"""Matrix-engine GEMMs (gemm_mma.cl) against float64 CPU references.

On devices without a matrix engine (PoCL in CI) PYTORCH_OCL_MMA=emulate runs the same kernel with each
mma.sync replaced by a local-memory emulation of the same fragment layouts, so every line of the kernel
(staging, fragments, tails, split-K, epilogue) is tested everywhere; on an NVIDIA device the real
instruction runs the same tests (PYTORCH_OCL_MMA_TEST=native).

float32 at torch's default 'highest' matmul precision runs as 3xTF32 on an engine with TF32 (fp32
accuracy; PYTORCH_OCL_3XTF32=0 keeps the FMA kernel), at 'high' / 'medium' as TF32.

Bounds (as tests/test_gemm.py, with the operand format's rounding): 16-bit operands are exact in the
fp32 products, so the fp32 accumulation bound holds; TF32 rounds each operand to 10 mantissa bits
(relative error <= 2^-11 each), adding 2 * 2^-11 * (|A| @ |B|); 3xTF32 must meet the fp32 bound.
"""
import itertools
import math
import os

import pytest
import torch

import pytorch_ocl

DEV = "ocl:0"
EPS32 = 2.0**-24
EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: EPS32}
NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"
KIND = "" if NATIVE else "-emulated"


@pytest.fixture(autouse=True)
def _engine(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")
    monkeypatch.delenv("PYTORCH_OCL_GEMM_CONFIG", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_3XTF32", raising=False)
    monkeypatch.setenv("PYTORCH_OCL_WGMMA", "0")  # the mma.sync kernel under test (sm_90 takes 16-bit products to wgmma)
    if NATIVE:
        monkeypatch.delenv("PYTORCH_OCL_MMA", raising=False)
    else:
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
    yield
    torch.set_float32_matmul_precision("highest")


def bound(a, b, ref, dtype, math_kind):
    k = max(a.shape[-1], 1)
    mag = a.double().abs() @ b.double().abs()
    tol = 8 * EPS32 * math.sqrt(k) * mag + 2 * EPS[dtype] * ref.abs() + 1e-300
    if math_kind == "tf32":
        tol = tol + 2 * 2.0**-11 * mag
    return tol


def check(out, a, b, dtype, math_kind, ref=None):
    ref = a.double() @ b.double() if ref is None else ref
    out = out.cpu().double()
    assert out.shape == ref.shape
    err = (out - ref).abs()
    tol = bound(a, b, ref, dtype, math_kind)
    assert ((err <= tol) | torch.isnan(ref)).all(), f"max err {err.max().item():.3e}, ratio {(err / tol).max():.2f}"
    return (err / tol).max().item()


def make(shape, dtype, transposed=False):
    if transposed:
        return torch.randn(*shape[:-2], shape[-1], shape[-2]).to(dtype).transpose(-1, -2)
    return torch.randn(*shape).to(dtype)


# (dtype, float32 matmul precision) of each kind.
KINDS = {"bf16": (torch.bfloat16, "highest"), "fp16": (torch.float16, "highest"), "tf32": (torch.float32, "high"),
         "3xtf32": (torch.float32, "highest")}


def use_kind(kind, monkeypatch):
    dtype, precision = KINDS[kind]
    torch.set_float32_matmul_precision(precision)
    return dtype


@pytest.mark.parametrize("kind", list(KINDS))
def test_plan_names_the_engine(kind, monkeypatch):
    dtype = use_kind(kind, monkeypatch)
    plan = pytorch_ocl.ops.gemm_plan(256, 256, 256, dtype=dtype)
    assert plan.startswith("tiled mma ") and f" {kind}{KIND} " in plan, plan
    # Tiny products keep the small kernels; PYTORCH_OCL_3XTF32=0 keeps fp32 at 'highest' on the FMA kernel.
    assert pytorch_ocl.ops.gemm_plan(3, 5, 7, dtype=dtype).startswith("small")
    torch.set_float32_matmul_precision("highest")
    monkeypatch.setenv("PYTORCH_OCL_3XTF32", "0")
    assert "mma" not in pytorch_ocl.ops.gemm_plan(256, 256, 256)
    assert "mma" in pytorch_ocl.ops.gemm_plan(256, 256, 256, dtype=torch.bfloat16)


def test_engine_off_switch(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_MMA", "0")
    assert "mma" not in pytorch_ocl.ops.gemm_plan(256, 256, 256, dtype=torch.bfloat16)


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("ta,tb", list(itertools.product((False, True), repeat=2)))
def test_layouts_and_tails(kind, ta, tb, monkeypatch):
    """Every staged layout of A and B, with M, N, K off the tile (checked loads, clamped rows, k past
    the end reading 0) and on it (4-wide staging loads)."""
    dtype = use_kind(kind, monkeypatch)
    for m, n, k in [(70, 45, 37), (64, 64, 64)]:
        a, b = make((m, k), dtype, ta), make((k, n), dtype, tb)
        check(a.to(DEV) @ b.to(DEV), a, b, dtype, kind)


# Every config the tuner may pick for each operand width (mma_candidates), forced; on PoCL their programs
# are built once per (config, layout), so one layout pair and a shape with tails per config.
CONFIGS16 = ["mma 128x128x32 w2x4 local", "mma 128x256x32 w2x4 local", "mma 256x128x32 w4x2 local",
             "mma 128x128x64 w2x4 local", "mma 128x128x32 w2x2 local", "mma 64x128x32 w2x2 local2",
             "mma 128x64x32 w2x2 local2", "mma 64x64x32 w2x2 local2", "mma 64x64x64 w2x2 local2",
             "mma 128x128x64 w2x2 local", "mma 32x32x32 w1x2 local2", "mma 16x16x32 w1x1 local",
             "mma 128x128x32 w2x2 async2", "mma 128x128x32 w2x4 async2", "mma 128x128x32 w2x2 async3",
             "mma 128x128x32 w2x4 async3", "mma 128x256x32 w2x4 async2", "mma 256x128x32 w4x2 async2",
             "mma 128x64x32 w2x2 async4", "mma 64x128x32 w2x2 async4", "mma 64x64x32 w2x2 async4"]
CONFIGS32 = ["mma 128x128x16 w2x4 local2", "mma 128x128x32 w2x4 local", "mma 128x256x16 w2x4 local",
             "mma 256x128x16 w4x2 local", "mma 128x128x16 w2x2 local2", "mma 64x128x16 w2x2 local2",
             "mma 128x64x16 w2x2 local2", "mma 64x64x32 w2x2 local2", "mma 64x64x16 w2x2 local2",
             "mma 32x32x16 w1x2 local2", "mma 16x16x16 w1x1 local", "mma 128x128x16 w2x2 async2",
             "mma 128x128x16 w2x4 async2", "mma 128x64x16 w2x2 async3", "mma 64x128x16 w2x2 async3"]


def assert_planned(config, m, n, k, dtype=torch.float32):
    """The forced config is the plan's. Emulated, the engine's scratch (6 words a work-item) sits beside
    the config's buffers; a device with 48 KiB of local memory (NVIDIA's) cannot hold both for the
    biggest cp.async configs, which its real instruction runs (PYTORCH_OCL_MMA_TEST=native)."""
    plan = pytorch_ocl.ops.gemm_plan(m, n, k, dtype=dtype)
    if config not in plan and not NATIVE and torch.ocl.get_device_properties(0).local_memory < 64 * 2**10:
        pytest.skip(f"emulated {config} does not fit this device's local memory; run natively")
    assert config in plan


def forced_shape(config):
    """(M, N, K) with tails in every dim; for the cp.async configs with 16-byte aligned rows, so that interior
    steps take the copies and edge steps the plain stores."""
    return (136, 136, 40) if "async" in config else (150, 140, 90)


@pytest.mark.parametrize("config", CONFIGS16)
def test_forced_configs_16bit(config, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    m, n, k = forced_shape(config)
    assert_planned(config, m, n, k, torch.bfloat16)
    a, b = make((m, k), torch.bfloat16), make((k, n), torch.bfloat16, True)
    check(a.to(DEV) @ b.to(DEV), a, b, torch.bfloat16, "bf16")


@pytest.mark.parametrize("config", CONFIGS32)
def test_forced_configs_tf32(config, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    torch.set_float32_matmul_precision("high")
    m, n, k = forced_shape(config)
    assert_planned(config, m, n, k)
    a, b = make((m, k), torch.float32, True), make((k, n), torch.float32)
    check(a.to(DEV) @ b.to(DEV), a, b, torch.float32, "tf32")


def test_tf32_rounds_and_3xtf32_does_not(monkeypatch):
    """Operands with low mantissa bits: TF32 loses them (its error exceeds the fp32 bound), 3xTF32 keeps
    them (within the fp32 bound), and the engine's rounding is to nearest, not truncation."""
    a = torch.full((64, 64), 1 + 2.0**-11 + 2.0**-20)
    b = torch.eye(64)
    torch.set_float32_matmul_precision("high")
    out = (a.to(DEV) @ b.to(DEV)).cpu()
    # TF32 keeps 10 mantissa bits: past half an ulp (2^-11) the value rounds up to 1 + 2^-10
    # (truncation would give 1).
    assert (out == 1 + 2.0**-10).all(), out[0, :4]
    torch.set_float32_matmul_precision("highest")
    assert "3xtf32" in pytorch_ocl.ops.gemm_plan(64, 64, 64)
    out = (a.to(DEV) @ b.to(DEV)).cpu()
    assert (out == a).all()
    x, y = torch.randn(96, 200), torch.randn(200, 80)
    check(x.to(DEV) @ y.to(DEV), x, y, torch.float32, "3xtf32")


def plant_non_finite(a, b):
    """inf, -inf and NaN in rows 0-2 of A over a zero row of B (inf * 0 = NaN in every column), and 3.4e38 (past
    FLT_MAX once rounded to tf32) alone in row 4 of A, met by a single 1.0 in column 1 of B. In place."""
    b[3] = 0
    a[0, 3] = float("inf")
    a[1, 5] = float("-inf")
    a[2, 7] = float("nan")
    a[4, :] = 0
    a[4, 9] = 3.4e38
    b[:, 1] = 0
    b[9, 1] = 1.0


def assert_non_finite_like_fp32(out, a, b):
    """out = a @ b of plant_non_finite's operands as the CPU's fp32 product has it: the same NaN pattern and
    infinities, 3.4e38 * 1 exactly, the finite entries within the fp32 bound."""
    ref = a @ b
    assert torch.equal(torch.isnan(out), torch.isnan(ref))
    assert torch.equal(torch.isinf(out), torch.isinf(ref))
    assert torch.equal(out[torch.isinf(ref)], ref[torch.isinf(ref)])
    assert out[4, 1] == ref[4, 1]  # 3.4e38 * 1 exactly
    fin = torch.isfinite(ref)
    fin[4] = False  # row 4 sums near FLT_MAX: no finite magnitude bound to compare against
    tol = bound(a.nan_to_num(0, 0, 0), b.nan_to_num(0, 0, 0), ref.nan_to_num(0, 0, 0), torch.float32, "3xtf32")
    assert ((out - ref).abs() <= tol)[fin].all()


@pytest.mark.parametrize("config", [None, "mma 64x64x16 w2x2 local2"])
def test_3xtf32_non_finite_inputs_like_fp32(config, monkeypatch):
    """inf, NaN and values near FLT_MAX: 3xTF32's split must not turn inf * x into NaN (inf * 0 in a cross
    term) or overflow a split; the NaN pattern and the infinities equal the CPU's fp32 product, also with
    split-K (each split recomputes its own partial sums)."""
    if config:
        monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    torch.set_float32_matmul_precision("highest")
    for m, n, k in [(70, 45, 37), (32, 32, 2048)]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        plant_non_finite(a, b)
        assert "3xtf32" in pytorch_ocl.ops.gemm_plan(m, n, k)
        assert_non_finite_like_fp32((a.to(DEV) @ b.to(DEV)).cpu(), a, b)


@pytest.mark.parametrize("kind", ["bf16", "tf32"])
def test_epilogue_batches_split_k(kind, monkeypatch):
    """addmm's alpha/beta/bias, baddbmm batches, a misaligned view, split-K partial sums and addbmm's
    summed slices, all through the engine's kernel."""
    dtype = use_kind(kind, monkeypatch)
    a, b, bias = make((96, 80), dtype), make((80, 72), dtype), torch.randn(72).to(dtype)
    out = torch.addmm(bias.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2.0)
    ref = 0.5 * bias.double() + 2.0 * (a.double() @ b.double())
    check(out / 2, a, b, dtype, kind, ref / 2)
    a, b = make((3, 70, 48), dtype), make((3, 48, 90), dtype, True)
    check(torch.bmm(a.to(DEV), b.to(DEV)), a, b, dtype, kind)
    base = torch.randn(1 + 132 * 64).to(dtype)
    a, b = base[1:].view(132, 64), make((64, 136), dtype)
    check(base.to(DEV)[1:].view(132, 64) @ b.to(DEV), a, b, dtype, kind)
    a, b = make((32, 2048), dtype), make((2048, 32), dtype)
    plan = pytorch_ocl.ops.gemm_plan(32, 32, 2048, dtype=dtype)
    assert "mma" in plan and "splits=1 " not in plan + " ", plan
    check(a.to(DEV) @ b.to(DEV), a, b, dtype, kind)
    a, b, s = make((5, 32, 70), dtype), make((5, 70, 32), dtype), torch.randn(32, 32).to(dtype)
    out = torch.addbmm(s.to(DEV), a.to(DEV), b.to(DEV))
    ref = s.double() + (a.double() @ b.double()).sum(0)
    check(out, a.transpose(0, 1).reshape(32, -1), b.reshape(-1, 32), dtype, kind, ref)


def test_mlp_trains_like_the_cpu_in_bf16_and_tf32(monkeypatch):
    """A small MLP, 3 SGD steps, each step's linear layers (forward, both gradients: all layouts) on the
    engine: bf16 autocast against CPU bf16 autocast, float32 with TF32 against CPU float32."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.ReLU(), torch.nn.Linear(96, 96), torch.nn.ReLU(),
                                torch.nn.Linear(96, 10))
    x, y = torch.randn(64, 48), torch.randint(0, 10, (64,))

    def train(device, autocast_dtype):
        m = __import__("copy").deepcopy(model).to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            with torch.autocast(device.split(":")[0], dtype=autocast_dtype, enabled=autocast_dtype is not None):
                loss = torch.nn.functional.cross_entropy(m(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach().cpu() for p in m.parameters()]

    ref_losses, ref_params = train("cpu", torch.bfloat16)
    losses, params = train(DEV, torch.bfloat16)
    assert "mma" in pytorch_ocl.ops.gemm_plan(64, 96, 96, dtype=torch.bfloat16)
    assert losses == pytest.approx(ref_losses, rel=3e-2)
    for p, r in zip(params, ref_params):
        assert torch.allclose(p, r, rtol=3e-2, atol=3e-2)
    ref_losses, ref_params = train("cpu", None)
    torch.set_float32_matmul_precision("high")
    losses, params = train(DEV, None)
    assert losses == pytest.approx(ref_losses, rel=2e-3)
    for p, r in zip(params, ref_params):
        assert torch.allclose(p, r, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("algo", ["im2col", "gemm1x1", "winograd"])
@pytest.mark.parametrize("allow_tf32", [True, False])
def test_conv_paths_follow_cudnn_allow_tf32(algo, allow_tf32, monkeypatch):
    """Convolutions use TF32 where torch.backends.cudnn.allow_tf32 allows it (CUDA's switch, on by default)
    and 3xTF32 (fp32 accuracy) otherwise -- Winograd always at fp32 accuracy: forward and both gradients of
    the GEMM-based paths, against float64 on the CPU with the matching bound."""
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT", "0")
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "1" if algo == "winograd" else "0")
    # The flags() context, not an assignment: torch.testing may have frozen the global cuDNN flags.
    with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=allow_tf32):
        check_conv_math(algo, allow_tf32)


def check_conv_math(algo, allow_tf32):
    import torch.nn.functional as F
    k = 1 if algo == "gemm1x1" else 3
    x, w = torch.randn(2, 24, 10, 12), torch.randn(20, 24, k, k)
    algos = pytorch_ocl.ops.conv_algorithms(tuple(x.shape), tuple(w.shape), padding=k // 2)
    assert algos["forward"] == algo, algos
    xd, wd = x.to(DEV).requires_grad_(), w.to(DEV).requires_grad_()
    y = F.conv2d(xd, wd, padding=k // 2)
    gy = torch.randn(y.shape)
    y.backward(gy.to(DEV))
    xr, wr = x.double().requires_grad_(), w.double().requires_grad_()
    yr = F.conv2d(xr, wr, padding=k // 2)
    yr.backward(gy.double())
    # Winograd keeps fp32 accuracy even where TF32 is allowed (its transforms amplify TF32's rounding);
    # they amplify fp32's too: 4x the GEMM bound.
    tf32 = allow_tf32 and algo != "winograd"
    scale = 4 if algo == "winograd" else 1
    mag = F.conv2d(x.double().abs(), w.double().abs(), padding=k // 2)
    for got, ref in [(y, yr), (xd.grad, xr.grad), (wd.grad, wr.grad)]:
        got, ref = got.detach().cpu().double(), ref.detach()
        rough = (got - ref).abs().max() / ref.abs().max()
        assert rough < (4e-3 if tf32 else 1e-5 * scale), (algo, rough.item())
    err = (y.detach().cpu().double() - yr.detach()).abs()
    tol = 8 * EPS32 * math.sqrt(24 * k * k) * mag + (2 * 2.0**-11 * mag if tf32 else 0)
    assert (err <= scale * tol + 1e-30).all(), (err / tol).max()


# The cp.async pipeline (configs "asyncN") stages interior steps by cp.async and edge steps by plain stores,
# and reads 16-bit fragments by ldmatrix (transposed for m- / n-fast tiles): every layout, with operands
# whose rows are 16-byte aligned (so the copies run) and tails in M, N and K.
ASYNC_CASES = [("bf16", "mma 128x128x32 w2x2 async3"), ("fp16", "mma 64x64x32 w2x2 async4"),
               ("tf32", "mma 128x64x16 w2x2 async3")]


@pytest.mark.parametrize("kind,config", ASYNC_CASES)
def test_async_pipeline_every_layout(kind, config, monkeypatch):
    dtype = use_kind(kind, monkeypatch)
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    m, n, k = forced_shape(config)
    assert_planned(config, m, n, k, dtype)
    for ta, tb in itertools.product((False, True), repeat=2):
        a, b = make((m, k), dtype, ta), make((k, n), dtype, tb)
        check(a.to(DEV) @ b.to(DEV), a, b, dtype, kind)
