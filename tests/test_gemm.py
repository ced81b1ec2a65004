"""Matrix products on the ocl device against float64 CPU references.

Tolerance (documented in the README): with reference `ref` computed in float64 from the same
(already rounded) inputs, every element must satisfy

    |out - ref| <= 8 * eps_acc * sqrt(K) * (|A| @ |B|) + 2 * eps_out * |ref|

where K is the reduction length, eps_acc the epsilon of the accumulation type (float32 for
float16/bfloat16/float32 inputs, float64 for float64) and eps_out that of the output dtype.
The first term is the usual statistical (sqrt(K)) growth of rounding errors in a sum of K
products; the second is the final rounding to the output dtype.
"""
import itertools
import math

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl
from conftest import run_python

DEV = "ocl:0"
EPS = {torch.float16: 2.0**-11, torch.bfloat16: 2.0**-8, torch.float32: 2.0**-24, torch.float64: 2.0**-53}
ACC = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.float32: torch.float32,
       torch.float64: torch.float64}


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    """Default configs keep the suite fast; test_autotune_* turn tuning on explicitly."""
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")
    monkeypatch.delenv("PYTORCH_OCL_GEMM_CONFIG", raising=False)


def bound(a, b, ref, dtype, alpha=1.0):
    k = max(a.shape[-1], 1)
    mag = abs(alpha) * (a.double().abs() @ b.double().abs())
    return 8 * EPS[ACC[dtype]] * math.sqrt(k) * mag + 2 * EPS[dtype] * ref.abs() + 1e-300


def assert_product(out, ref, a, b, dtype, alpha=1.0):
    out = out.cpu().double()
    assert out.shape == ref.shape, (out.shape, ref.shape)
    err = (out - ref).abs()
    tol = bound(a, b, ref, dtype, alpha)
    nan_same = torch.isnan(out) == torch.isnan(ref)
    assert nan_same.all(), "NaN pattern differs"
    ok = (err <= tol) | torch.isnan(ref)
    assert ok.all(), f"max err {err.max().item():.3e}, worst ratio {(err / tol).max().item():.2f}"


def make(shape, dtype, transposed=False):
    if transposed:
        return torch.randn(*shape[:-2], shape[-1], shape[-2]).to(dtype).transpose(-1, -2)
    return torch.randn(*shape).to(dtype)


SIZES = [(1, 1, 1), (1, 7, 5), (7, 1, 5), (5, 7, 1), (3, 5, 7), (16, 16, 16), (33, 17, 65), (64, 64, 64),
         (129, 65, 257), (100, 1, 300), (1, 100, 300), (257, 255, 33), (40, 50, 700)]


@pytest.mark.parametrize("M,N,K", SIZES)
@pytest.mark.parametrize("ta,tb", list(itertools.product((False, True), repeat=2)))
def test_mm_sizes_and_transposes(M, N, K, ta, tb):
    a, b = make((M, K), torch.float32, ta), make((K, N), torch.float32, tb)
    out = torch.mm(a.to(DEV), b.to(DEV))
    assert_product(out, a.double() @ b.double(), a, b, torch.float32)


@pytest.mark.parametrize("ta,tb", list(itertools.product((False, True), repeat=2)))
def test_mm_large_odd(ta, tb):
    M, N, K = 1031, 517, 2053
    a, b = make((M, K), torch.float32, ta), make((K, N), torch.float32, tb)
    out = a.to(DEV) @ b.to(DEV)
    assert_product(out, a.double() @ b.double(), a, b, torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (3, 5, 7), (129, 65, 257), (100, 1, 300)])
@pytest.mark.parametrize("ta,tb", [(False, False), (True, True)])
def test_mm_dtypes(dtype, M, N, K, ta, tb):
    if dtype == torch.float64 and not torch.ocl.get_device_properties(0).fp64:
        pytest.skip("device without fp64")
    a, b = make((M, K), dtype, ta), make((K, N), dtype, tb)
    out = a.to(DEV) @ b.to(DEV)
    assert out.dtype == dtype
    ref = (a.double() @ b.double())
    assert_product(out, ref, a, b, dtype)


def test_split_waves_setting():
    """PYTORCH_OCL_SPLIT_WAVES aims split-K at more groups per compute unit: a one-tile product over a long K takes
    more splits, and the product stays right."""
    # K long enough that 8 groups a compute unit stay within the split cap (8 steps of 16 a split) on any device:
    # at 4000 a 132-SM GPU's default target already hit it (28 splits both ways).
    code = """
        import torch, pytorch_ocl
        k = 128 * 10 * torch.ocl.get_device_properties(0).multi_processor_count
        a, b = torch.randn(20, k), torch.randn(k, 30)
        c = (a.to("ocl") @ b.to("ocl")).cpu().double()
        # against float64: at 132 compute units K is 168960, where float32 on the CPU is itself ~6e-4 off (values
        # ~400): the bound catches a wrong split sum, not rounding (the H200 failed the old atol of 1e-3)
        torch.testing.assert_close(c, a.double() @ b.double(), atol=1e-2, rtol=1e-4)
        print("PLAN", pytorch_ocl.ops.gemm_plan(20, 30, k))
    """
    env = {"PYTORCH_OCL_AUTOTUNE": "0", "PYTORCH_OCL_TUNE": None, "PYTORCH_OCL_GEMM_CONFIG": "32x32x16 t8x8 v4x4 local"}
    splits = []
    for waves in (None, "8"):
        out = run_python(code, env=dict(env, PYTORCH_OCL_SPLIT_WAVES=waves)).stdout
        assert "splits=" in out, out  # a plan without split-K says which path took the product
        splits.append(int(out.split("splits=")[1].split()[0]))
    assert splits[1] > splits[0] >= 1, splits


def test_split_k_path():
    # One output tile and a long K: the tiled kernel splits K and reduces partial sums.
    plan = pytorch_ocl.ops.gemm_plan(20, 30, 700)
    assert plan.startswith("tiled") and "splits=1" not in plan, plan
    a, b = make((20, 700), torch.float32), make((700, 30), torch.float32)
    bias = torch.randn(30)
    out = torch.addmm(bias.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2.0)
    assert_product(out, 0.5 * bias.double() + 2.0 * (a.double() @ b.double()), a, b, torch.float32, alpha=2.0)


def test_plans(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_WGMMA", "0")  # sm_90 takes this float32 product to wgmma (test_gemm_wgmma.py)
    assert pytorch_ocl.ops.gemm_plan(512, 1, 512).startswith("dot")
    assert pytorch_ocl.ops.gemm_plan(512, 1, 512, trans_a=True).startswith("small")
    assert pytorch_ocl.ops.gemm_plan(3, 5, 7).startswith("small")
    assert pytorch_ocl.ops.gemm_plan(256, 256, 256).startswith("tiled")
    assert pytorch_ocl.ops.gemm_plan(0, 5, 7) == "empty"


# Configs of both families (GPU-style local-memory tiles, CPU-style vector tiles), forced.
FORCED = ["128x128x16 t16x16 v4x4 local", "64x64x32 t8x8 v8x8 local", "32x32x16 t8x8 v4x4 local",
          "128x128x16 t16x16 v1x1 local", "8x32x16 t1x1 v1x16 global", "64x64x16 t8x8 v1x1 global"]


@pytest.mark.parametrize("config", FORCED)
def test_forced_configs(config, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_3XTF32", "0")  # FMA configs: float32 on the FMA kernel where an engine is
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    assert config in pytorch_ocl.ops.gemm_plan(129, 131, 67)
    # Each (A_KCONTIG, B_NCONTIG) pair is a separate program build (seconds each on PoCL). In
    # gemm.cl / gemm_tiled.cl A's addressing, staging order and padding depend on A_KCONTIG only
    # and B's on B_NCONTIG only, so the two mixed layouts take every branch of both: (1, 0) with
    # both paddings, (0, 1) with neither. The float16 bmm below adds (1, 1) (and 16-bit loads).
    # All four layouts with the default configs: test_mm_sizes_and_transposes.
    for ta, tb in [(True, False), (False, True)]:
        a, b = make((129, 67), torch.float32, ta), make((67, 131), torch.float32, tb)
        assert_product(a.to(DEV) @ b.to(DEV), a.double() @ b.double(), a, b, torch.float32)
    a, b = make((3, 70, 300), torch.float16), make((3, 300, 90), torch.float16)
    out = torch.bmm(a.to(DEV), b.to(DEV))
    assert_product(out, a.double() @ b.double(), a, b, torch.float16)


def test_plans_follow_the_environment(monkeypatch):
    """Plans are remembered per problem (choosing one costs more host time than the launch): a
    forced config set or removed later in the process still takes effect at once."""
    monkeypatch.setenv("PYTORCH_OCL_3XTF32", "0")
    default = pytorch_ocl.ops.gemm_plan(129, 131, 67)
    for config in FORCED[:2]:
        monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
        assert config in pytorch_ocl.ops.gemm_plan(129, 131, 67)
    monkeypatch.delenv("PYTORCH_OCL_GEMM_CONFIG")
    assert pytorch_ocl.ops.gemm_plan(129, 131, 67) == default


# Two alternating local buffers (one barrier per K step) with 4-wide staging loads.
LOCAL2 = ["128x128x8 t8x16 v4x4 local2", "32x32x16 t8x8 v4x4 local2"]


@pytest.mark.parametrize("config", LOCAL2)
def test_double_buffered_vector_staging(config, monkeypatch):
    """float32 / float64 operands whose tile slices all start at multiples of 4 elements are staged
    with unchecked 4-wide loads; edge tiles (M, N, K not multiples of the tile) and misaligned
    operands take the checked element loads of the same kernel. Every layout, a batch, an
    offset (misaligned) view, and split-K partial sums."""
    monkeypatch.setenv("PYTORCH_OCL_3XTF32", "0")
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    assert "vec4=AB" in pytorch_ocl.ops.gemm_plan(260, 132, 96)
    assert "vec4=AB" in pytorch_ocl.ops.gemm_plan(260, 132, 96, trans_a=True, trans_b=True)
    assert "vec4" not in pytorch_ocl.ops.gemm_plan(260, 131, 97)
    assert "vec4" not in pytorch_ocl.ops.gemm_plan(130, 131, 97, dtype=torch.float16)
    assert "whole-tiles" in pytorch_ocl.ops.gemm_plan(256, 256, 96)
    assert "whole-tiles" not in pytorch_ocl.ops.gemm_plan(260, 132, 96)
    for ta, tb in itertools.product([False, True], repeat=2):
        for m, n, k in [(260, 132, 96), (131, 133, 67), (256, 256, 96)]:
            a, b = make((m, k), torch.float32, ta), make((k, n), torch.float32, tb)
            assert_product(a.to(DEV) @ b.to(DEV), a.double() @ b.double(), a, b, torch.float32)
    # Batched, and float64.
    a, b = make((3, 136, 40), torch.float64), make((3, 40, 68), torch.float64, True)
    assert_product(torch.bmm(a.to(DEV), b.to(DEV)), a @ b, a, b, torch.float64)
    # A view starting one element in: aligned leading dim, misaligned offset.
    base = torch.randn(1 + 132 * 64)
    a = base[1:].view(132, 64)
    b = torch.randn(64, 136)
    assert_product(a.to(DEV) @ b.to(DEV), a.double() @ b.double(), a, b, torch.float32)
    ad = base.to(DEV)[1:].view(132, 64)
    assert_product(ad @ b.to(DEV), a.double() @ b.double(), a, b, torch.float32)
    # One output tile and a long K: split-K, each split's steps staged 4-wide.
    a, b = make((32, 2048), torch.float32), make((2048, 32), torch.float32)
    assert "splits=1 " not in pytorch_ocl.ops.gemm_plan(32, 32, 2048) + " "
    assert_product(a.to(DEV) @ b.to(DEV), a.double() @ b.double(), a, b, torch.float32)
    # addbmm sums 5 products into one output (slices o of the K steps): with one tile and split
    # K, a split starts and crosses slices mid-way. K = 70 misaligns A's rows; 72 aligns both.
    for k in (70, 72):
        a, b = make((5, 32, k), torch.float32), make((5, k, 32), torch.float32)
        s = torch.randn(32, 32)
        out = torch.addbmm(s.to(DEV), a.to(DEV), b.to(DEV))
        ref = s.double() + (a.double() @ b.double()).sum(0)
        assert_product(out, ref, a.transpose(0, 1).reshape(32, -1), b.reshape(-1, 32), torch.float32)


def test_bmm_batch_strides():
    base_a = torch.randn(37, 4, 23)          # [M, Z, K]: batch stride smaller than the row stride
    a = base_a.permute(1, 0, 2)
    b = torch.randn(4, 19, 23).transpose(1, 2)  # [Z, K, N] with k contiguous
    out = torch.bmm(a.to(DEV), b.to(DEV))
    assert_product(out, a.double() @ b.double(), a, b, torch.float32)
    # Expanded batch (stride 0) and a sliced batch (step 2).
    a2 = torch.randn(1, 9, 11).expand(5, 9, 11)
    b2 = torch.randn(10, 11, 6)[::2]
    out = torch.bmm(a2.to(DEV), b2.to(DEV))
    assert_product(out, a2.double() @ b2.double(), a2, b2, torch.float32)


@pytest.mark.parametrize("self_shape", [(50,), (1, 50), (40, 1), (40, 50), ()])
def test_addmm_bias_shapes(self_shape):
    a, b, s = torch.randn(40, 30), torch.randn(30, 50), torch.randn(self_shape)
    out = torch.addmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0.7, alpha=-1.5)
    ref = 0.7 * s.double() + -1.5 * (a.double() @ b.double())
    assert_product(out, ref, a, b, torch.float32, alpha=1.5)


def test_addmm_beta_zero_ignores_nan_and_alpha_zero():
    a, b = torch.randn(20, 30), torch.randn(30, 10)
    s = torch.full((20, 10), float("nan"))
    out = torch.addmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0)
    assert not torch.isnan(out.cpu()).any()
    a_nan = a.clone()
    a_nan[0, 0] = float("nan")
    s = torch.randn(20, 10)
    out = torch.addmm(s.to(DEV), a_nan.to(DEV), b.to(DEV), beta=2, alpha=0).cpu()
    torch.testing.assert_close(out, torch.addmm(s, a_nan, b, beta=2, alpha=0))


def test_addmm_inplace_and_out_aliasing():
    a, b, s = torch.randn(16, 16), torch.randn(16, 16), torch.randn(16, 16)
    sd = s.to(DEV)
    sd.addmm_(a.to(DEV), b.to(DEV), alpha=0.5)
    torch.testing.assert_close(sd.cpu(), s.addmm(a, b, alpha=0.5), atol=1e-5, rtol=1e-5)
    ad, bd = a.to(DEV), b.to(DEV)
    torch.mm(ad, bd, out=ad)  # out aliases an input: computed into a temporary
    torch.testing.assert_close(ad.cpu(), a @ b, atol=1e-5, rtol=1e-5)
    out = torch.empty(3, device=DEV)  # wrong size: resized
    torch.mm(a.to(DEV), b.to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), a @ b, atol=1e-5, rtol=1e-5)
    # A non-contiguous out.
    out = torch.zeros(16, 32, device=DEV)[:, ::2]
    torch.mm(a.to(DEV), b.to(DEV), out=out)
    torch.testing.assert_close(out.cpu(), a @ b, atol=1e-5, rtol=1e-5)
    # The bias is a row of out itself, broadcast: read before written, through a temporary.
    base = torch.randn(16, 16)
    outd = base.to(DEV)
    torch.addmm(outd[3], a.to(DEV), b.to(DEV), out=outd)
    torch.testing.assert_close(outd.cpu(), torch.addmm(base[3], a, b), atol=1e-5, rtol=1e-5)


def test_linear_bias_needs_no_copy():
    """A broadcast bias in its own storage is read in the GEMM epilogue: no temporary, no copy."""
    import pytorch_ocl.profiler

    x, w, bias = torch.randn(64, 32), torch.randn(48, 32), torch.randn(48)
    xd, wd, bd = x.to(DEV), w.to(DEV), bias.to(DEV)
    torch.nn.functional.linear(xd, wd, bd)
    with pytorch_ocl.profiler.profile() as prof:
        out = torch.nn.functional.linear(xd, wd, bd)
        torch.ocl.synchronize()
    assert "copy" not in [r["kernel"] for r in prof.summary()], prof.table()
    assert_product(out, x.double() @ w.double().t() + bias.double(), x, w.t(), torch.float32)


def test_zero_sizes():
    d = DEV
    assert torch.mm(torch.randn(0, 5, device=d), torch.randn(5, 3, device=d)).shape == (0, 3)
    assert torch.mm(torch.randn(4, 5, device=d), torch.randn(5, 0, device=d)).shape == (4, 0)
    out = torch.mm(torch.randn(4, 0, device=d), torch.randn(0, 3, device=d)).cpu()
    assert torch.equal(out, torch.zeros(4, 3))
    s = torch.randn(4, 3)
    out = torch.addmm(s.to(d), torch.randn(4, 0, device=d), torch.randn(0, 3, device=d), beta=2).cpu()
    torch.testing.assert_close(out, 2 * s)
    out = torch.addbmm(s.to(d), torch.randn(0, 4, 5, device=d), torch.randn(0, 5, 3, device=d)).cpu()
    torch.testing.assert_close(out, s)
    assert torch.bmm(torch.randn(0, 4, 5, device=d), torch.randn(0, 5, 3, device=d)).shape == (0, 4, 3)
    assert torch.dot(torch.randn(0, device=d), torch.randn(0, device=d)).item() == 0


def test_operands_without_unit_stride():
    a = torch.randn(40, 60)[::2, ::3]
    b = torch.randn(40, 30)[::2, ::2]
    out = a.to(DEV) @ b.to(DEV)
    assert_product(out, a.double() @ b.double(), a, b, torch.float32)


def test_baddbmm_addbmm():
    a, b = torch.randn(4, 20, 30), torch.randn(4, 30, 10)
    s = torch.randn(20, 10)
    out = torch.baddbmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2)
    assert_product(out, 0.5 * s.double() + 2 * (a.double() @ b.double()), a, b, torch.float32, alpha=2)
    out = torch.addbmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2)
    ref = 0.5 * s.double() + 2 * (a.double() @ b.double()).sum(0)
    torch.testing.assert_close(out.cpu().double(), ref, atol=1e-4, rtol=1e-5)
    sd = s.to(DEV)
    sd.addbmm_(a.to(DEV), b.to(DEV))
    torch.testing.assert_close(sd.cpu().double(), s.double() + (a.double() @ b.double()).sum(0), atol=1e-4, rtol=1e-5)


def test_vector_products():
    m, v = torch.randn(30, 20), torch.randn(40)[::2]
    torch.testing.assert_close(torch.mv(m.to(DEV), v.to(DEV)).cpu(), m @ v, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.mv(m.t().to(DEV), torch.randn(30).to(DEV)).shape, torch.Size([20]))
    s = torch.randn(30)
    out = torch.addmv(s.to(DEV), m.to(DEV), v.to(DEV), beta=0.5, alpha=3).cpu()
    torch.testing.assert_close(out, torch.addmv(s, m, v, beta=0.5, alpha=3), atol=1e-4, rtol=1e-5)
    x, y = torch.randn(100)[::3], torch.randn(34)
    torch.testing.assert_close(torch.dot(x.to(DEV), y.to(DEV)).cpu(), torch.dot(x, y), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.vdot(x.to(DEV), y.to(DEV)).cpu(), torch.vdot(x, y), atol=1e-5, rtol=1e-5)
    u, w, s2 = torch.randn(7), torch.randn(9), torch.randn(7, 9)
    torch.testing.assert_close(torch.outer(u.to(DEV), w.to(DEV)).cpu(), torch.outer(u, w))
    torch.testing.assert_close(torch.addr(s2.to(DEV), u.to(DEV), w.to(DEV), beta=2, alpha=0.5).cpu(),
                               torch.addr(s2, u, w, beta=2, alpha=0.5), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(torch.inner(m.to(DEV), m.to(DEV)).cpu(), torch.inner(m, m), atol=1e-4, rtol=1e-5)


@pytest.mark.parametrize("sa,sb", [((5,), (5,)), ((5,), (5, 3)), ((4, 5), (5,)), ((2, 4, 5), (5, 3)),
                                   ((2, 4, 5), (2, 5, 3)), ((3, 1, 4, 5), (2, 5, 6)), ((2, 3, 4, 5), (2, 3, 5, 2)),
                                   ((5,), (2, 5, 3)), ((2, 4, 5), (5,))])
def test_matmul_shapes(sa, sb):
    a, b = torch.randn(*sa, requires_grad=True), torch.randn(*sb, requires_grad=True)
    ad, bd = a.detach().to(DEV).requires_grad_(), b.detach().to(DEV).requires_grad_()
    out, ref = ad @ bd, a @ b
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    g = torch.randn_like(ref)
    ref.backward(g)
    out.backward(g.to(DEV))
    torch.testing.assert_close(ad.grad.cpu(), a.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bd.grad.cpu(), b.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("shape", [(8, 20), (3, 8, 20), (2, 3, 4, 20)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_forward_backward(shape, bias):
    lin = torch.nn.Linear(20, 13, bias=bias)
    lin_d = torch.nn.Linear(20, 13, bias=bias).to(DEV)
    lin_d.load_state_dict(lin.state_dict())
    x = torch.randn(*shape, requires_grad=True)
    xd = x.detach().to(DEV).requires_grad_()
    y, yd = lin(x), lin_d(xd)
    torch.testing.assert_close(yd.cpu(), y, atol=1e-5, rtol=1e-5)
    g = torch.randn_like(y)
    y.backward(g)
    yd.backward(g.to(DEV))
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lin_d.weight.grad.cpu(), lin.weight.grad, atol=1e-4, rtol=1e-5)
    if bias:
        torch.testing.assert_close(lin_d.bias.grad.cpu(), lin.bias.grad, atol=1e-4, rtol=1e-5)


def test_mm_bmm_addmm_backward():
    a, b, s = torch.randn(6, 7, requires_grad=True), torch.randn(7, 5, requires_grad=True), torch.randn(5, requires_grad=True)
    p, q, r = (t.detach().to(DEV).requires_grad_() for t in (a, b, s))
    torch.addmm(s, a, b, beta=0.5, alpha=2).sum().backward()
    torch.addmm(r, p, q, beta=0.5, alpha=2).sum().backward()
    for x, y in ((a, p), (b, q), (s, r)):
        torch.testing.assert_close(y.grad.cpu(), x.grad, atol=1e-5, rtol=1e-5)
    a, b = torch.randn(3, 6, 7, requires_grad=True), torch.randn(3, 7, 5, requires_grad=True)
    p, q = (t.detach().to(DEV).requires_grad_() for t in (a, b))
    g = torch.randn(3, 6, 5)
    torch.bmm(a, b).backward(g)
    torch.bmm(p, q).backward(g.to(DEV))
    torch.testing.assert_close(p.grad.cpu(), a.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(q.grad.cpu(), b.grad, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", [(4, 5), (5, 6)]), ("bij,bjk->bik", [(2, 4, 5), (2, 5, 6)]),
                                       ("i,i->", [(7,), (7,)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
                                       ("ij,kj->ik", [(4, 5), (6, 5)])])
def test_einsum(eq, shapes):
    ts = [torch.randn(*s) for s in shapes]
    out = torch.einsum(eq, *[t.to(DEV) for t in ts])
    torch.testing.assert_close(out.cpu(), torch.einsum(eq, *ts), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("use_gelu", [False, True])
def test_addmm_activation(use_gelu):
    a, b, s = torch.randn(12, 9), torch.randn(9, 11), torch.randn(11)
    out = torch._addmm_activation(s.to(DEV), a.to(DEV), b.to(DEV), use_gelu=use_gelu).cpu()
    torch.testing.assert_close(out, torch._addmm_activation(s, a, b, use_gelu=use_gelu), atol=1e-5, rtol=1e-5)


def test_errors_name_the_op():
    a = torch.ones(3, 3, dtype=torch.bool, device=DEV)  # integers multiply (test_dtype_opinfo.py); bool not
    with pytest.raises(TypeError, match="mm"):
        torch.mm(a, a)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        torch.mm(torch.ones(2, 3, device=DEV), torch.ones(2, 3, device=DEV))
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.mm(torch.ones(2, 3, device=DEV), torch.ones(3, 2, device=DEV, dtype=torch.float64))


def test_ops_matmul():
    a = torch.randn(5, 7, 3, requires_grad=True)
    b = torch.randn(3, 4, requires_grad=True)
    ad, bd = a.detach().to(DEV).requires_grad_(), b.detach().to(DEV).requires_grad_()
    out = pytorch_ocl.ops.matmul(ad, bd.t().contiguous().t())
    torch.testing.assert_close(out.cpu(), a @ b, atol=1e-5, rtol=1e-5)
    out.sum().backward()
    (a @ b).sum().backward()
    torch.testing.assert_close(ad.grad.cpu(), a.grad, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bd.grad.cpu(), b.grad, atol=1e-5, rtol=1e-5)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        pytorch_ocl.ops.matmul(ad, ad)


OPINFO_NAMES = ["mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "addr", "outer", "matmul",
                "inner", "einsum", "nn.functional.linear", "linalg.multi_dot", "tensordot"]


def test_opinfo_samples():
    """PyTorch's OpInfo samples for the matrix-product family, float32, forward: all must match the CPU."""
    from torch.testing._internal.common_methods_invocations import op_db

    total = passed = 0
    failures = []
    for op in op_db:
        if op.name not in OPINFO_NAMES or op.variant_test_name not in ("", "default"):
            continue
        for sample in op.sample_inputs("cpu", torch.float32):
            total += 1
            args = [sample.input] + list(sample.args)
            mv = lambda t: t.to(DEV) if isinstance(t, torch.Tensor) else (type(t)(mv(x) for x in t) if isinstance(t, (list, tuple)) else t)  # noqa: E731
            try:
                ref = op(*args, **sample.kwargs)
                out = op(*mv(args), **mv(sample.kwargs))
                torch.testing.assert_close(out.cpu() if isinstance(out, torch.Tensor) else out, ref, atol=1e-4, rtol=1e-4,
                                           equal_nan=True)
                passed += 1
            except Exception as e:  # noqa: BLE001
                failures.append(f"{op.name}: {type(e).__name__}: {str(e)[:200]}")
    assert total > 50
    assert not failures, f"{passed}/{total} passed; failures:\n" + "\n".join(failures[:20])


def test_autotune_persists(tmp_path):
    code = """
        import torch, pytorch_ocl
        a = torch.randn(300, 200, device="ocl"); b = torch.randn(200, 250, device="ocl")
        c = (a @ b).cpu()
        torch.testing.assert_close(c, a.cpu() @ b.cpu(), atol=1e-4, rtol=1e-5)
        print(pytorch_ocl.ops.autotune_stats(), pytorch_ocl.ops.autotune_decisions())
    """
    # (the tiled kernel's tuning alone: PYTORCH_OCL_WGMMA=0 keeps sm_90 from adding its engine decision)
    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path), "PYTORCH_OCL_AUTOTUNE": "1", "PYTORCH_OCL_WGMMA": "0"}
    first = run_python(code, env=env, timeout=300).stdout
    # The tuning class names the dtype (and the matrix-engine kind where the device has one) and layouts.
    assert "'timed': 1" in first and "gemm|float32|" in first and "|kn|" in first, first
    second = run_python(code, env=env, timeout=300).stdout
    assert "'timed': 0" in second and "'loaded': 1" in second, second
    off = run_python(code, env=dict(env, PYTORCH_OCL_AUTOTUNE="0"), timeout=300).stdout
    assert "'timed': 0" in off and "'loaded': 0" in off and "{}" in off, off
