"""The GEMM on Hopper's wgmma (dlprim/kernels/gemm_wgmma.cl; on by default on sm_90, PYTORCH_OCL_WGMMA=0
keeps the mma.sync kernels) against float64 CPU references: 16-bit operands, and float32 ones as TF32 ('high'
matmul precision) or 3xTF32 (the default 'highest': within the fp32 bound, non-finite values as fp32 sums).

The path exists on sm_90 devices (NVIDIA Hopper through NVIDIA's OpenCL, the kernel's sm_90a instructions put in
by editing the built PTX: dlprim/src/ptx_sm90a.h), where PYTORCH_OCL_MMA_TEST=native runs these tests on the real
instruction. Elsewhere (CI on PoCL) they run the kernel's emulation (PYTORCH_OCL_MMA=emulate PYTORCH_OCL_WGMMA=1:
the same packing, tiles, descriptor offsets and epilogue, each product computed from the bytes the descriptors
name), with K cut to 96 at most (the emulation is slow). Each call checks that the wgmma kernel ran (the profiler's
launch names). Shapes: whole tiles, tails in M, N and K (zero padding in the packed operands), transposed operands
(the packing reads any strides), batches, addmm's beta * bias and alpha, a column-major output, the linear
layer's forward and backward, and three SGD steps of a small MLP under bfloat16 autocast (and in float32 on
3xTF32) against the CPU's.
"""
import os

import pytest
import torch

import pytorch_ocl
from test_gemm_mma import assert_non_finite_like_fp32, bound, plant_non_finite

DEV = "ocl:0"
NATIVE = os.environ.get("PYTORCH_OCL_MMA_TEST") == "native"
EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8}


def _sm90():
    try:
        return "sm_90" in torch.ocl.matrix_engine(0)["description"]
    except Exception:
        return False


REAL = NATIVE and _sm90()


@pytest.fixture(autouse=True)
def _wgmma(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_WGMMA", "1")
    monkeypatch.delenv("PYTORCH_OCL_3XTF32", raising=False)
    if not REAL:
        monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
    yield
    torch.set_float32_matmul_precision("highest")


def launches(fn):
    with pytorch_ocl.profiler.profile() as prof:
        out = fn()
        torch.ocl.synchronize()
    return out, [r[0] for r in prof.records]


def check(out, ref, absref, dtype, K):
    """ocl's result within the fp32-accumulation bound of the 16-bit output: rounding of C plus K fp32 adds."""
    out = out.detach().cpu().double()
    bound = EPS[dtype] * ref.abs() + 2.0**-22 * K * absref + 1e-6
    err = (out - ref).abs()
    assert bool((err <= bound).all()), f"max error {err.max().item():.3e}, bound at it {bound.flatten()[err.argmax()].item():.3e}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("M,N,K", [(256, 256, 64), (200, 136, 40), (64, 300, 1000), (130, 70, 17)])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
def test_mm(dtype, M, N, K, layout):
    K = K if REAL else min(K, 96)
    g = torch.Generator().manual_seed(M * 7 + N + K)
    a = torch.randn(M, K, generator=g).to(dtype) if layout[0] == "n" else torch.randn(K, M, generator=g).to(dtype).t()
    b = torch.randn(K, N, generator=g).to(dtype) if layout[1] == "n" else torch.randn(N, K, generator=g).to(dtype).t()
    out, names = launches(lambda: a.to(DEV) @ b.to(DEV))  # .to keeps the transposed strides
    assert "gemm_wgmma" in names, names
    ref = a.double() @ b.double()
    check(out, ref, a.double().abs() @ b.double().abs(), dtype, K)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bmm_and_addmm(dtype):
    g = torch.Generator().manual_seed(1)
    a = torch.randn(3, 130, 96, generator=g).to(dtype)
    b = torch.randn(3, 96, 200, generator=g).to(dtype)
    out, names = launches(lambda: torch.bmm(a.to(DEV), b.to(DEV)))
    assert "gemm_wgmma" in names, names
    check(out, a.double() @ b.double(), a.double().abs() @ b.double().abs(), dtype, 96)
    x = torch.randn(150, 80, generator=g).to(dtype)
    w = torch.randn(80, 140, generator=g).to(dtype)
    bias = torch.randn(140, generator=g).to(dtype)
    out, names = launches(lambda: torch.addmm(bias.to(DEV), x.to(DEV), w.to(DEV), beta=0.5, alpha=2.0))
    assert "gemm_wgmma" in names, names
    ref = 0.5 * bias.double() + 2.0 * (x.double() @ w.double())
    check(out, ref, 0.5 * bias.double().abs() + 2.0 * (x.double().abs() @ w.double().abs()), dtype, 80)
    c = torch.empty(140, 150, dtype=dtype, device=DEV).t()  # a column-major output (the plan swaps A and B)
    _, names = launches(lambda: torch.mm(x.to(DEV), w.to(DEV), out=c))
    assert "gemm_wgmma" in names and c.stride() == (1, 150), (names, c.stride())
    check(c, x.double() @ w.double(), x.double().abs() @ w.double().abs(), dtype, 80)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_packing_reads(dtype):
    """The packing's 16-byte reads (K contiguous, rows starting on 8 elements) and its element reads: views whose
    offset or row stride is not a multiple of 8 elements, K tails inside the last 8, a batch stride of 0."""
    g = torch.Generator().manual_seed(3)
    base = torch.randn(140, 100, generator=g).to(dtype)
    w = torch.randn(72, 90, generator=g).to(dtype)
    for a, b in [(base[:, :40], w[:40, :]),           # offset 0, row stride 100: 16-byte reads of A
                 (base[3:, 5:45], w[1:41, 2:70]),     # offsets 305 / 92: element reads
                 (base[:, :37], w[:37, :])]:          # K = 37: the last chunk of each row by elements
        out, names = launches(lambda: a.to(DEV) @ b.to(DEV))
        assert "gemm_wgmma" in names, names
        check(out, a.double() @ b.double(), a.double().abs() @ b.double().abs(), dtype, a.shape[1])
    a = torch.randn(130, 48, generator=g).to(dtype)
    b = torch.randn(2, 48, 66, generator=g).to(dtype)
    out, names = launches(lambda: torch.matmul(a.to(DEV).expand(2, 130, 48), b.to(DEV)))  # A's batch stride 0
    assert "gemm_wgmma" in names, names
    check(out, a.double() @ b.double(), a.double().abs() @ b.double().abs(), dtype, 48)


def test_linear_forward_backward():
    g = torch.Generator().manual_seed(2)
    lin = torch.nn.Linear(192, 160).to(torch.bfloat16)
    x = torch.randn(4, 70, 192, generator=g).to(torch.bfloat16)
    lin_d = torch.nn.Linear(192, 160).to(torch.bfloat16).to(DEV)
    lin_d.load_state_dict(lin.state_dict())
    xd = x.to(DEV).requires_grad_()
    xc = x.double().requires_grad_()
    (out, names) = launches(lambda: lin_d(xd))
    assert "gemm_wgmma" in names, names
    ref = torch.nn.functional.linear(xc, lin.weight.double(), lin.bias.double())
    check(out, ref.detach(), (xc.abs() @ lin.weight.double().abs().t()).detach() + lin.bias.double().abs(), torch.bfloat16, 192)
    gout = torch.randn(4, 70, 160, generator=g).to(torch.bfloat16)
    (gx, gw), names = launches(lambda: torch.autograd.grad(out, (xd, lin_d.weight), gout.to(DEV)))
    assert names.count("gemm_wgmma") >= 2, names
    rgx, rgw = torch.autograd.grad(ref, (xc, ), gout.double())[0], gout.double().reshape(-1, 160).t() @ xc.detach().reshape(-1, 192)
    check(gx, rgx, gout.double().abs() @ lin.weight.double().abs(), torch.bfloat16, 160)
    check(gw, rgw, gout.double().abs().reshape(-1, 160).t() @ xc.detach().abs().reshape(-1, 192), torch.bfloat16, 280)


def check32(out, a, b, kind, ref=None):
    """float32 products: the fp32 bound of tests/test_gemm_mma.py (3xTF32), plus TF32's operand rounding."""
    ref = a.double() @ b.double() if ref is None else ref
    tol = bound(a, b, ref, torch.float32, kind)
    err = (out.detach().cpu().double() - ref).abs()
    assert bool((err <= tol).all()), f"max error {err.max().item():.3e}, ratio {(err / tol).max().item():.2f}"


def use32(kind):
    torch.set_float32_matmul_precision("high" if kind == "tf32" else "highest")


@pytest.mark.parametrize("kind", ["tf32", "3xtf32"])
@pytest.mark.parametrize("M,N,K", [(256, 128, 64), (200, 136, 40), (130, 70, 17)])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn"])
def test_mm_float32(kind, M, N, K, layout):
    """TF32 / 3xTF32: the plan names the kind, the packing's vector and element reads, tails in M, N and K."""
    use32(kind)
    assert f"wgmma {kind} " in pytorch_ocl.ops.gemm_plan(M, N, K), pytorch_ocl.ops.gemm_plan(M, N, K)
    g = torch.Generator().manual_seed(M + N * 3 + K)
    a = torch.randn(M, K, generator=g) if layout[0] == "n" else torch.randn(K, M, generator=g).t()
    b = torch.randn(K, N, generator=g) if layout[1] == "n" else torch.randn(N, K, generator=g).t()
    out, names = launches(lambda: a.to(DEV) @ b.to(DEV))
    assert "gemm_wgmma" in names, names
    check32(out, a, b, kind)


def test_float32_epilogue_batches_offsets():
    """3xTF32 through addmm's beta / alpha, bmm, a view starting at an odd element (vector reads at any offset)."""
    g = torch.Generator().manual_seed(4)
    x, w, bias = torch.randn(150, 80, generator=g), torch.randn(80, 140, generator=g), torch.randn(140, generator=g)
    out, names = launches(lambda: torch.addmm(bias.to(DEV), x.to(DEV), w.to(DEV), beta=0.5, alpha=2.0))
    assert "gemm_wgmma" in names, names
    check32(out / 2, x, w, "3xtf32", (0.5 * bias.double() + 2.0 * (x.double() @ w.double())) / 2)
    a, b = torch.randn(3, 70, 48, generator=g), torch.randn(3, 90, 48, generator=g).transpose(1, 2)
    out, names = launches(lambda: torch.bmm(a.to(DEV), b.to(DEV)))
    assert "gemm_wgmma" in names, names
    check32(out, a, b, "3xtf32")
    base = torch.randn(1 + 132 * 64, generator=g)
    c = torch.randn(64, 136, generator=g)
    out, names = launches(lambda: base.to(DEV)[1:].view(132, 64) @ c.to(DEV))
    assert "gemm_wgmma" in names, names
    check32(out, base[1:].view(132, 64), c, "3xtf32")


def test_tf32_rounds_and_3xtf32_does_not():
    """Low mantissa bits: TF32 rounds them to nearest (1 + 2^-11 + 2^-20 -> 1 + 2^-10), 3xTF32 keeps them."""
    a = torch.full((128, 64), 1 + 2.0**-11 + 2.0**-20)
    b = torch.eye(64)
    use32("tf32")
    out, names = launches(lambda: (a.to(DEV) @ b.to(DEV)).cpu())
    assert "gemm_wgmma" in names and (out == 1 + 2.0**-10).all(), (names, out[0, :4])
    use32("3xtf32")
    out, names = launches(lambda: (a.to(DEV) @ b.to(DEV)).cpu())
    assert "gemm_wgmma" in names and (out == a).all(), (names, out[0, :4])


def test_3xtf32_non_finite_inputs_like_fp32():
    """inf, NaN and values near FLT_MAX mark their row blocks; those work-groups sum in plain fp32, so inf * x stays
    inf (not inf * 0 = NaN in a cross term) and 3.4e38 * 1 is exact; the other blocks stay on the products."""
    use32("3xtf32")
    g = torch.Generator().manual_seed(6)
    a, b = torch.randn(300, 40, generator=g), torch.randn(40, 200, generator=g)
    plant_non_finite(a, b)
    b[11, 150] = float("inf")  # a marked block of B (columns 128..199)
    out, names = launches(lambda: (a.to(DEV) @ b.to(DEV)).cpu())
    assert "gemm_wgmma" in names, names
    assert_non_finite_like_fp32(out, a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("kernel", [1, 3])
def test_grouped_convolution_products(dtype, kernel):
    """Convolutions' GEMMs (1x1: the input read in place; 3x3: im2col columns) with 2 groups and a batch of 2, forward
    and the input gradient, on the wgmma kernel: the packing's group and batch strides against the CPU in float64."""
    g = torch.Generator().manual_seed(kernel)
    x = torch.randn(2, 64, 9, 9, generator=g).to(dtype)
    w = torch.randn(128, 32, kernel, kernel, generator=g).to(dtype)
    xd = x.to(DEV).requires_grad_()
    out, names = launches(lambda: torch.nn.functional.conv2d(xd, w.to(DEV), padding=kernel // 2, groups=2))
    assert "gemm_wgmma" in names, names
    xc = x.double().requires_grad_()
    ref = torch.nn.functional.conv2d(xc, w.double(), padding=kernel // 2, groups=2)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=2e-2, atol=0.1)
    torch.testing.assert_close(out.detach().cpu().double(), ref.detach(), **tol)
    gout = torch.randn(ref.shape, generator=g).to(dtype)
    (gx,), names = launches(lambda: torch.autograd.grad(out, (xd,), gout.to(DEV)))
    (rgx,) = torch.autograd.grad(ref, (xc,), gout.double())
    torch.testing.assert_close(gx.cpu().double(), rgx, **tol)


@pytest.mark.parametrize("tile", ["64,7", "256,3"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_tile_layouts(tile, dtype, monkeypatch):
    """PYTORCH_OCL_WGMMA_TILE's other layouts (64 or 256 columns, the stages that fit): tails in M, N and K, a
    transposed operand, both packings (16-bit; float32 as 3xTF32)."""
    monkeypatch.setenv("PYTORCH_OCL_WGMMA_TILE", tile)
    bn, stages = tile.split(",")
    plan = pytorch_ocl.ops.gemm_plan(200, 300, 70, dtype=dtype)
    assert f"x{bn}x" in plan and f"stages={stages}" in plan, plan
    g = torch.Generator().manual_seed(int(bn))
    a = torch.randn(200, 70, generator=g).to(dtype)
    b = torch.randn(300, 70, generator=g).to(dtype).t()
    out, names = launches(lambda: a.to(DEV) @ b.to(DEV))
    assert "gemm_wgmma" in names, names
    if dtype == torch.float32:
        check32(out, a, b, "3xtf32")
    else:
        check(out, a.double() @ b.double(), a.double().abs() @ b.double().abs(), dtype, 70)


@pytest.mark.parametrize("tile", ["100,3", "256,4", "128", "128,1"])
def test_tile_setting_errors(tile, monkeypatch):
    """A layout the kernel cannot take (columns other than 64 / 128 / 256, buffers over 46 KiB, one stage) is an
    error naming the setting."""
    monkeypatch.setenv("PYTORCH_OCL_WGMMA_TILE", tile)
    a = torch.randn(128, 64).to(torch.bfloat16).to(DEV)
    with pytest.raises(RuntimeError, match="PYTORCH_OCL_WGMMA_TILE"):
        (a @ a.t()).cpu()


@pytest.mark.parametrize("var,value", [("PYTORCH_OCL_WGMMA", None), ("PYTORCH_OCL_WGMMA", "0"),
                                       ("PYTORCH_OCL_MMA", "0"), ("PYTORCH_OCL_GEMM_CONFIG", "mma 128x128x32 w2x2 async3")])
@pytest.mark.skipif(not REAL, reason="the defaults of an sm_90 device")
def test_switches(monkeypatch, var, value):
    """On by default for products large on every side (those between are timed against the tiled kernels:
    test_gemm_engine_tuning.py); off with PYTORCH_OCL_WGMMA=0, the matrix engine off, or a forced tile config."""
    if value is None:
        monkeypatch.delenv(var)
    else:
        monkeypatch.setenv(var, value)
    a = torch.randn(2048, 2048).to(torch.bfloat16).to(DEV)
    _, names = launches(lambda: a @ a)
    assert ("gemm_wgmma" in names) == (value is None), names
    assert ("wgmma" in pytorch_ocl.ops.gemm_plan(2048, 2048, 1024, dtype=torch.bfloat16)) == (value is None)
    # by default, fewer output tiles than compute units, or a side under 128, stay on the tiled kernels
    assert "wgmma" not in pytorch_ocl.ops.gemm_plan(256, 256, 256, dtype=torch.bfloat16)
    assert "wgmma" not in pytorch_ocl.ops.gemm_plan(4096, 64, 512, dtype=torch.bfloat16)
    assert "wgmma" not in pytorch_ocl.ops.gemm_plan(2048, 2048, 64, dtype=torch.bfloat16)


def mlp_steps(device, activation, amp_dtype=None):
    """Three SGD steps of a small MLP (96 -> 130 -> 64, float32 weights, fixed data; under torch.autocast in
    `amp_dtype` if given): the losses and each parameter's update."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(96, 130), activation, torch.nn.Linear(130, 64)).to(device)
    start = [p.detach().cpu().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    g = torch.Generator().manual_seed(5)
    x, y = torch.randn(70, 96, generator=g).to(device), torch.randn(70, 64, generator=g).to(device)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        with torch.autocast(torch.device(device).type, dtype=amp_dtype, enabled=amp_dtype is not None):
            loss = torch.nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().cpu() - s for p, s in zip(model.parameters(), start)]


def test_mlp_training_steps_match_cpu():
    """The whole-network check: three SGD steps of a small MLP under bfloat16 autocast (float32 weights, every
    product on the wgmma kernel: forward, input and weight gradients) move the weights as the CPU's autocast does
    (the updates compared, relative to their size, and the losses)."""
    ref_losses, ref = mlp_steps("cpu", torch.nn.GELU(), torch.bfloat16)
    (losses, got), names = launches(lambda: mlp_steps(DEV, torch.nn.GELU(), torch.bfloat16))
    assert names.count("gemm_wgmma") >= 6, names
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(ref_losses), rtol=5e-3, atol=0)
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=0.02 * b.abs().max().item())


def test_mlp_float32_training_steps_match_cpu():
    """Three SGD steps of a float32 MLP at the default precision: every product (forward, both gradients) on the
    3xTF32 wgmma kernel, the weights' updates as the CPU's to fp32 accuracy."""
    _, ref = mlp_steps("cpu", torch.nn.Tanh())
    (_, got), names = launches(lambda: mlp_steps(DEV, torch.nn.Tanh()))
    assert names.count("gemm_wgmma") >= 6, names
    for a, b in zip(got, ref):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-4 * b.abs().max().item())
