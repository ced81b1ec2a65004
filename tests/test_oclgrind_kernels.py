"""One tiny forward (+ backward) per kernel family, compared with the CPU.

scripts/oclgrind.sh runs this file under Oclgrind (an OpenCL simulator that reports
out-of-bounds accesses, data races and reads of uninitialized memory); Oclgrind is an
interpreter, so every shape here is small, yet each still reaches the launch shape it is named
for (tails, several work-groups, two-pass reductions, split K, local-memory GEMM tiles). In the
normal suite it is a cheap smoke test of the same paths on PoCL.

Under Oclgrind the device reports itself as a GPU: the GPU work mappings run (local-memory
tiles, barriers), which are the ones a race checker is for.
"""

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl  # noqa: F401

DEV = "ocl:0"


@pytest.fixture(autouse=True)
def _no_tuning(monkeypatch):
    # Timing every candidate would run each of them under Oclgrind; the tests force the choices.
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "0")
    monkeypatch.delenv("PYTORCH_OCL_GEMM_CONFIG", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_CONV_IMPLICIT", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_CONV_WINOGRAD", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_TUNE", raising=False)
    torch.manual_seed(0)


def rand(*shape, dtype=torch.float32, grad=False):
    return torch.randn(*shape, dtype=dtype).requires_grad_(grad)


def check(fn, *inputs, atol=1e-4, rtol=1e-4, backward=True):
    """fn on CPU and on ocl (inputs copied, grads compared for float inputs that require them)."""
    dev_inputs = [x.detach().to(DEV).requires_grad_(x.requires_grad) if isinstance(x, torch.Tensor) else x
                  for x in inputs]
    ref = fn(*inputs)
    out = fn(*dev_inputs)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for r, o in zip(refs, outs):
        torch.testing.assert_close(o.detach().cpu(), r.detach(), atol=atol, rtol=rtol)
    leaves = [(x, d) for x, d in zip(inputs, dev_inputs) if isinstance(x, torch.Tensor) and x.requires_grad]
    if backward and leaves:
        gens = [torch.randn(r.shape, dtype=r.dtype) for r in refs if r.requires_grad]
        torch.autograd.backward([r for r in refs if r.requires_grad], gens)
        torch.autograd.backward([o for o in outs if o.requires_grad], [g.to(DEV) for g in gens])
        for x, d in leaves:
            torch.testing.assert_close(d.grad.cpu(), x.grad, atol=atol, rtol=rtol)


# ------------------------------------------------------------------ elementwise / copies
def test_pointwise_forms():
    a, b = rand(37, grad=True), rand(37, grad=True)
    check(lambda a, b: torch.sigmoid(a) * b + torch.tanh(b) - a / (b.abs() + 1), a, b)  # ew_vec4 + tail
    check(lambda a: F.gelu(a) + a.exp().log1p(), rand(5, 9, grad=True))
    m, r = rand(6, 8, grad=True), rand(8, grad=True)
    check(lambda m, r: m * r + 1, m, r)  # broadcast rows (ew_rows)
    t = rand(8, 6, grad=True)
    check(lambda t, c: t.t() * c, t, rand(6, 1))  # strided operands
    x = rand(3, 4, 5)
    check(lambda x: torch.where(x > 0, x, x * 0.1).permute(2, 0, 1).contiguous(), x)
    check(lambda x, y: torch.addcmul(x, x, y, value=0.5).clamp(-1, 1), rand(11), rand(11))


def test_complex():
    """The complex rows (components + kernels/complex.cl), the complex GEMM, a complex64 gather,
    a pad on the real planes."""
    z = torch.randn(5, 7, dtype=torch.complex64)
    w = torch.randn(7, 3, dtype=torch.complex64)
    check(lambda z: torch.tanh(z).sqrt() + torch.pow(z, 1.5 - 0.5j) / z.conj().exp(), z, backward=False)
    check(lambda z, w: torch.addmm(z[:, :3], z, w, alpha=1j), z, w, backward=False)
    check(lambda z: torch.where(z.real > 0, z, z.flip(0)).index_select(1, torch.tensor([6, 0, 3])), z,
          backward=False)
    # the 4-operand cross row, the logaddexp row, a pad backward on the real planes
    check(lambda z: torch.linalg.cross(z[:, :3], z[:, 4:]) + torch.logaddexp(z[:, :3], z[:, 1:4]), z, backward=False)
    zg = z.clone().requires_grad_()
    check(lambda z: F.pad(z, (2, 1), mode="reflect"), zg)


def test_pointwise_dtypes_and_inplace():
    i = torch.randint(-50, 50, (13,), dtype=torch.int64)
    check(lambda i: (i * 3 + 7) // 5 % 4, i)
    check(lambda i: i.to(torch.int32).bitwise_xor(5) << 1, i)
    check(lambda x: x.half().float() + x.bfloat16().float(), rand(21), atol=1e-2, rtol=1e-2)
    check(lambda x: (x > 0).logical_and(x < 1).sum(), rand(17))
    check(lambda x: x.clone().mul_(2).add_(1).sqrt_(), rand(19).abs())


def test_foreach_and_copies():
    xs = [rand(n) for n in (3, 17, 1, 40)]
    ys = [rand(n) for n in (3, 17, 1, 40)]
    check(lambda *t: torch._foreach_add(list(t[:4]), list(t[4:]), alpha=2.0), *xs, *ys)
    x = rand(4, 6, 5)
    check(lambda x: torch.cat([x[:, ::2], x.narrow(1, 1, 2)], 1), x)
    check(lambda x: x.transpose(0, 2).contiguous().view(-1)[3:17], x)
    check(lambda x: x.to(torch.float64).sum(0), x)
    check(lambda x: x.expand(3, 4, 6, 5).flip(0).contiguous(), x)



def test_fused_optimizers():
    """The fused optimizer kernels: several params per multi-tensor launch (device step counts, tensor lr,
    grad_scale and found_inf read as broadcast operands) and a sliced param (the strided kernel)."""
    for op, n_states in (("_fused_adamw_", 3), ("_fused_sgd_", 1), ("_fused_adagrad_", 1)):
        big = rand(4, 6)
        params = [rand(n) for n in (3, 17, 40)] + [big[:, ::2].contiguous()]
        cpu = [params] + [[rand(*t.shape).abs() for t in params] for _ in range(n_states + 1)]
        ocl = [[t.to(DEV) for t in lst] for lst in cpu]
        ocl[0][-1] = big.to(DEV)[:, ::2]  # the CPU kernels assume dense params: the sliced one is ocl's only
        for device, ls in (("cpu", cpu), (DEV, ocl)):
            extra = dict(grad_scale=torch.tensor(4.0, device=device), found_inf=torch.tensor(0.0, device=device))
            lr = torch.tensor(0.01, device=device)
            steps = [torch.tensor(2.0, device=device) for _ in ls[0]]
            if op == "_fused_adamw_":
                torch._fused_adamw_(*ls, steps, lr=lr, beta1=0.9, beta2=0.99, weight_decay=0.1, eps=1e-8,
                                    amsgrad=True, maximize=False, **extra)
            elif op == "_fused_sgd_":
                torch._fused_sgd_(*ls, weight_decay=0.1, momentum=0.9, lr=lr, dampening=0.1, nesterov=True,
                                  maximize=False, is_first_step=False, **extra)
            else:
                torch._fused_adagrad_(*ls, steps, lr=lr, lr_decay=0.1, weight_decay=0.1, eps=1e-10, maximize=True,
                                      **extra)
        for o_list, c_list in zip(ocl, cpu):
            for o, c in zip(o_list, c_list):
                torch.testing.assert_close(o.cpu(), c, atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------ reductions, softmax, scans
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "argmax", "var", "norm", "prod", "logsumexp"])
def test_reductions(op):
    x = rand(6, 7, 33)
    f = {
        "sum": lambda t: (t.sum(-1), t.sum((0, 2)), t.sum(0)),
        "mean": lambda t: (t.mean(1), t.mean()),
        "amax": lambda t: (t.amax(-1), t.amin(0)),
        "argmax": lambda t: (t.argmax(-1), t.argmin(1)),
        "var": lambda t: (t.var(-1), t.std(0, correction=0)),
        "norm": lambda t: (t.norm(dim=-1), t.abs().max()),
        "prod": lambda t: ((t * 0.1 + 1).prod(1),),
        "logsumexp": lambda t: (t.logsumexp(-1),),
    }[op]
    check(f, x)


def test_two_pass_reductions():
    # Enough elements for a split (chunked) reduction and its merge pass on the GPU mappings.
    # (Rows up to 16 loads per thread of one group stay one pass: reduce.cpp's short_r.)
    x = rand(16385)
    check(lambda t: (t.sum(), t.amax(), t.argmin()), x, atol=1e-3)
    c = rand(4096, 16)
    check(lambda t: (t.sum(0), t.max(0).values), c, atol=1e-3)
    check(lambda t: t.sum(1), rand(2, 16385), atol=1e-3)
    check(lambda t: t.sum(1), rand(3, 5000), atol=1e-3)


def test_reduction_backward():
    check(lambda t: t.sum(1).sum() + t.max(-1).values.sum() + t.var(0).sum(), rand(5, 9, grad=True))


@pytest.mark.parametrize("cols", [7, 300, 1500])
def test_softmax(cols):
    x = rand(3, cols, grad=True)
    check(lambda t: t.softmax(-1), x)
    check(lambda t: t.log_softmax(-1), rand(3, cols, grad=True))
    check(lambda t: t.softmax(0), rand(5, cols, grad=True))


def test_scans():
    check(lambda t: (t.cumsum(-1), t.cumprod(0)), rand(4, 300) * 0.5 + 1, atol=1e-3, rtol=1e-3)
    check(lambda t: t.cumsum(0), rand(37, 3, grad=True))
    check(lambda t: torch.cummax(t, 1).values, rand(3, 40))


# ------------------------------------------------------------------ GEMM
GEMM_CONFIGS = [
    # GPU candidates (dlprim/src/gemm_tiles.cpp tile_candidates, non-CPU list) and the defaults.
    "128x128x16 t16x16 v4x4 local", "128x128x8 t16x16 v4x4 local", "128x128x16 t16x16 v1x1 local",
    "128x128x32 t16x16 v4x4 local", "128x64x16 t16x16 v4x4 local", "64x128x16 t16x16 v4x4 local",
    "64x64x16 t16x16 v4x4 local", "64x64x16 t16x16 v1x1 local", "64x64x32 t8x8 v8x8 local",
    "32x32x16 t8x8 v4x4 local", "128x256x16 t8x32 v4x4 local", "128x128x16 t8x16 v4x4 local",
    "256x128x8 t16x16 v4x4 local2", "128x128x8 t8x16 v4x4 local2", "128x256x8 t8x32 v4x4 local2",
    "64x64x16 t16x16 v4x4 local2", "32x32x8 t8x8 v1x1 local", "16x16x8 t4x4 v1x1 local",
    # CPU candidates (global staging, 16-wide vectors) and the smallest defaults.
    "32x64x16 t4x2 v1x16 global", "8x32x16 t1x1 v1x16 global", "8x64x64 t1x2 v1x16 global",
    "6x64x16 t1x1 v1x16 global", "8x8x8 t2x2 v1x1 global", "4x4x4 t1x1 v1x1 global",
]


@pytest.mark.parametrize("config", GEMM_CONFIGS)
def test_gemm_tiles(config, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    # Tails in M, N and K (work above the small-GEMM path's 32^3); both operands transposed and a
    # broadcast bias (beta) in the second. Forward only: Oclgrind takes ~10 s per large tile.
    check(lambda a, b: a @ b, rand(33, 37), rand(37, 35), atol=1e-3)
    check(lambda c, a, b: torch.addmm(c, a.t(), b.t(), beta=0.5), rand(35), rand(37, 33), rand(35, 37), atol=1e-3)


@pytest.mark.parametrize("config", ["64x64x16 t16x16 v4x4 local", "64x64x16 t16x16 v4x4 local2",
                                    "32x64x16 t4x2 v1x16 global"])
def test_gemm_whole_tiles_batched(config, monkeypatch):
    # M, N, K multiples of the tile: the unchecked vector loads (VEC4_FULL); batched.
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    check(lambda a, b: torch.bmm(a, b), rand(2, 64, 32), rand(2, 32, 64), atol=1e-3)


@pytest.mark.parametrize("config", ["32x32x8 t8x8 v1x1 local", "32x32x16 t8x8 v4x4 local2",
                                    "8x32x16 t1x1 v1x16 global"])
def test_gemm_split_k(config, monkeypatch):
    # One output tile and >= 16 K steps: split K into partial sums and a merge pass.
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", config)
    check(lambda a, b, c: F.linear(a, b, c), rand(20, 300, grad=True), rand(20, 300, grad=True), rand(20, grad=True),
          atol=1e-3)


def test_gemm_wgmma_emulated(monkeypatch):
    # The 16-bit GEMM on Hopper's wgmma (gemm_wgmma.cl) in its emulation: the packing (tails in M, N and K), one
    # stage copied and read through the descriptors' offsets, the epilogue with a bias. One work-group.
    monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
    monkeypatch.setenv("PYTORCH_OCL_WGMMA", "1")
    bf = torch.bfloat16
    check(lambda c, a, b: torch.addmm(c, a, b, beta=0.5), rand(65, dtype=bf), rand(70, 12, dtype=bf),
          rand(12, 65, dtype=bf), atol=2e-2, rtol=2e-2, backward=False)


def test_gemm_wgmma_3xtf32_emulated(monkeypatch):
    # float32 on the wgmma kernel's emulation as 3xTF32: the three packed parts per K stage, the row-block marks,
    # and (an infinity in A) the marked work-group's plain fp32 sums. One work-group each.
    monkeypatch.setenv("PYTORCH_OCL_MMA", "emulate")
    monkeypatch.setenv("PYTORCH_OCL_WGMMA", "1")
    a = rand(70, 12)
    check(lambda c, a, b: torch.addmm(c, a, b, beta=0.5), rand(65), a, rand(12, 65), backward=False)
    a[0, 3] = float("inf")
    check(lambda a, b: a @ b, a, rand(12, 65), backward=False)


def test_conv_implicit_mma_emulated(monkeypatch):
    # The implicit-GEMM convolution on gemm_mma.cl's emulation: patch gathering per staged unit (stride 2,
    # padding, partial tiles), TF32, then 3xTF32 with an infinity (the plain-fp32 recomputation's gathers).
    for k, v in (("PYTORCH_OCL_MMA", "emulate"), ("PYTORCH_OCL_CONV_IMPLICIT", "1"), ("PYTORCH_OCL_CONV_WINOGRAD", "0"),
                 ("PYTORCH_OCL_CONV_IMPLICIT_MMA", "1"), ("PYTORCH_OCL_GEMM_CONFIG", "mma 32x32x16 w1x2 local2")):
        monkeypatch.setenv(k, v)
    x, w = rand(2, 6, 9, 8), rand(5, 6, 3, 3)
    with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=True):
        check(lambda x, w: F.conv2d(x, w, stride=2, padding=1), x, w, atol=1e-2, backward=False)
    x[1, 2, 3, 4] = float("inf")
    with torch.backends.cudnn.flags(enabled=torch.backends.cudnn.enabled, allow_tf32=False):
        check(lambda x, w: F.conv2d(x, w.abs(), stride=2, padding=1), x, w, backward=False)


def test_gemm_small_and_dot_paths():
    check(lambda a, b: a @ b, rand(5, 7, grad=True), rand(7, 3, grad=True))  # small
    check(lambda a, b: a @ b, rand(3, 200), rand(200, 2))  # dot (min(M, N) <= 4, long K)
    check(lambda a, b: torch.baddbmm(b[:, :1, :1], a, b, beta=0.5), rand(3, 4, 6), rand(3, 6, 5))


def test_integer_gemm_and_pooling():
    # Integer products (the small-GEMM kernel built for long / uchar) and integer max / int64 average pooling.
    a, b = torch.randint(-9, 9, (3, 5, 20)), torch.randint(-9, 9, (3, 20, 4))
    check(lambda a, b: torch.baddbmm(b[:, :1, :1], a, b, beta=2, alpha=-3), a, b)
    check(lambda a, b: a @ b, a.to(torch.uint8), b.to(torch.uint8))
    x = torch.randint(-50, 50, (2, 3, 7, 8))
    check(lambda t: F.max_pool2d(t, 3, 2, 1), x.to(torch.int32))
    check(lambda t: F.avg_pool2d(t, 2, 2, ceil_mode=True), x)


# ------------------------------------------------------------------ convolution
CONV_CASES = {
    "3x3": dict(c=3, k=5, ks=3, stride=1, pad=1, groups=1, hw=(7, 9)),
    "3x3s2": dict(c=4, k=6, ks=3, stride=2, pad=1, groups=1, hw=(9, 8)),
    "1x1": dict(c=6, k=7, ks=1, stride=1, pad=0, groups=1, hw=(5, 6)),
    "5x5dil": dict(c=2, k=3, ks=5, stride=1, pad=3, groups=1, hw=(8, 8), dilation=2),
    "grouped": dict(c=4, k=6, ks=3, stride=1, pad=1, groups=2, hw=(6, 5)),
    "depthwise": dict(c=5, k=5, ks=3, stride=1, pad=1, groups=5, hw=(7, 11)),
    "depthwise_s2": dict(c=4, k=8, ks=3, stride=2, pad=1, groups=4, hw=(9, 9)),
}


def _conv(case):
    p = CONV_CASES[case]
    x = rand(2, p["c"], *p["hw"], grad=True)
    w = rand(p["k"], p["c"] // p["groups"], p["ks"], p["ks"], grad=True)
    b = rand(p["k"], grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, stride=p["stride"], padding=p["pad"], dilation=p.get("dilation", 1),
                                  groups=p["groups"])
    return fn, x, w, b


@pytest.mark.parametrize("case", list(CONV_CASES))
@pytest.mark.parametrize("algo", ["im2col", "implicit"])
def test_conv(case, algo, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT", "1" if algo == "implicit" else "0")
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "0")
    fn, x, w, b = _conv(case)
    check(fn, x, w, b, atol=1e-3, rtol=1e-3)


def test_conv_winograd(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "1")
    fn, x, w, b = _conv("3x3")
    check(fn, x, w, b, atol=1e-3, rtol=1e-3)


def test_conv_implicit_local_config(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_CONV_IMPLICIT", "1")
    monkeypatch.setenv("PYTORCH_OCL_CONV_WINOGRAD", "0")
    monkeypatch.setenv("PYTORCH_OCL_GEMM_CONFIG", "32x32x16 t8x8 v4x4 local")
    fn, x, w, b = _conv("3x3s2")
    check(fn, x, w, b, atol=1e-3, rtol=1e-3)


def test_conv_transpose():
    check(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), rand(1, 3, 4, 5, grad=True),
          rand(3, 2, 3, 3, grad=True), atol=1e-3)


# ------------------------------------------------------------------ pooling, norms, upsample, pad
def test_pooling():
    x = rand(2, 3, 9, 10, grad=True)
    check(lambda t: F.max_pool2d(t, 3, 2, 1), x)
    check(lambda t: F.avg_pool2d(t, 2, 2, ceil_mode=True, count_include_pad=False), rand(2, 3, 9, 10, grad=True))
    check(lambda t: F.adaptive_avg_pool2d(t, (3, 4)), rand(2, 3, 9, 10, grad=True))
    check(lambda t: F.adaptive_max_pool2d(t, 1), rand(2, 3, 5, 6, grad=True))


def test_batch_norm():
    x, w, b = rand(4, 3, 5, 6, grad=True), rand(3, grad=True), rand(3, grad=True)
    rm, rv = torch.zeros(3), torch.ones(3)
    check(lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True), x, w, b, rm, rv, atol=1e-3)
    check(lambda x, rm, rv: F.batch_norm(x, rm, rv, training=False), rand(2, 3, 4, grad=True), rand(3),
          rand(3).abs() + 0.5)


def test_layer_and_group_norm():
    check(lambda x, w, b: F.layer_norm(x, (37,), w, b), rand(5, 37, grad=True), rand(37, grad=True),
          rand(37, grad=True), atol=1e-3)
    check(lambda x: F.layer_norm(x, (3, 300)), rand(2, 3, 300, grad=True), atol=1e-3)
    check(lambda x, w, b: F.group_norm(x, 2, w, b), rand(3, 4, 5, 3, grad=True), rand(4, grad=True),
          rand(4, grad=True), atol=1e-3)


def test_upsample_and_pad():
    x = rand(1, 2, 5, 7, grad=True)
    check(lambda t: F.interpolate(t, scale_factor=2, mode="nearest"), x)
    check(lambda t: F.interpolate(t, size=(9, 4), mode="bilinear", align_corners=False), rand(1, 2, 5, 7, grad=True))
    check(lambda t: F.pad(t, (1, 2, 2, 1), mode="reflect"), rand(1, 2, 5, 7, grad=True))
    check(lambda t: F.pad(t, (3, 1, 0, 2), mode="replicate"), rand(1, 2, 5, 7, grad=True))
    check(lambda t: F.pad(t, (1, 1, 2, 0), value=0.5), rand(2, 5, 7, grad=True))


# ------------------------------------------------------------------ indexing, sort, embedding
def test_index_gather_scatter():
    x = rand(7, 5, grad=True)
    idx = torch.tensor([3, 0, 6, 3])
    check(lambda t, i: t.index_select(0, i) * 2, x, idx)
    check(lambda t, i: t[i, 1:4], rand(7, 5, grad=True), idx)
    g = torch.randint(0, 5, (7, 3))
    check(lambda t, g: torch.gather(t, 1, g), rand(7, 5, grad=True), g)
    check(lambda t, g, s: t.scatter_add(1, g, s), rand(7, 5), g, rand(7, 3))
    check(lambda t, i, s: t.scatter(0, i, s), rand(7, 5), torch.randperm(7)[:2].view(2, 1).expand(2, 5), rand(2, 5))
    check(lambda t, i, v: t.index_put((i,), v, accumulate=True), rand(7, 5), idx, rand(4, 5))
    check(lambda t: t[t > 0.3], rand(6, 5))
    check(lambda t: t.nonzero(), (rand(4, 6) > 0).float())
    check(lambda t, i, v, o: t.masked_fill(t < 0, 2.0) + v.index_add(0, i, o), rand(7, 5), idx, rand(7, 5),
          torch.ones(4, 5))


def test_embedding():
    w = rand(10, 6, grad=True)
    ids = torch.tensor([[1, 4, 9], [4, 4, 0]])
    check(lambda w, i: F.embedding(i, w, padding_idx=0), w, ids)
    # 300 tokens over 3 rows: runs past 256 rows are summed in chunks of 64 (dl_index_reduce_chunks)
    check(lambda w, i: F.embedding(i, w, padding_idx=2), rand(4, 3, grad=True), torch.arange(300) % 3)


def test_sort_topk():
    x = rand(5, 37)
    check(lambda t: torch.sort(t, -1), x)
    check(lambda t: torch.sort(t, dim=0, descending=True, stable=True), rand(37, 3))
    check(lambda t: torch.topk(t, 4, -1), rand(3, 300))
    check(lambda t: t.argsort(), rand(1100))
    check(lambda t: torch.unique(t, return_counts=True), torch.randint(0, 9, (40,)))


# ------------------------------------------------------------------ losses
def test_losses():
    logits, tgt = rand(6, 5, grad=True), torch.randint(0, 5, (6,))
    check(lambda t, y: F.cross_entropy(t, y), logits, tgt)
    check(lambda t, y: F.nll_loss(t.log_softmax(-1), y, ignore_index=2, reduction="sum"), rand(6, 5, grad=True), tgt)
    check(lambda t, y: F.mse_loss(t, y), rand(4, 7, grad=True), rand(4, 7))
    check(lambda t, y: F.binary_cross_entropy_with_logits(t, y), rand(4, 7, grad=True), torch.rand(4, 7))
    check(lambda t, y: F.smooth_l1_loss(t, y, beta=0.5), rand(4, 7, grad=True), rand(4, 7))
    check(lambda t, y: F.kl_div(t.log_softmax(-1), y.softmax(-1), reduction="batchmean"), rand(3, 5, grad=True),
          rand(3, 5))


# ------------------------------------------------------------------ random
def test_random_ops():
    # Only properties: the values are the device generator's own.
    g = torch.Generator(device=DEV).manual_seed(3)
    u = torch.rand(37, 5, device=DEV, generator=g)
    n = torch.randn(1001, device=DEV)
    assert 0 <= u.min().item() and u.max().item() < 1
    assert abs(n.mean().item()) < 0.2
    x = torch.ones(8, 33, device=DEV, requires_grad=True)
    y = F.dropout(x, 0.5, training=True)
    y.sum().backward()
    assert set(torch.unique(y.detach().cpu()).tolist()) <= {0.0, 2.0}
    assert torch.equal(x.grad.cpu(), y.detach().cpu())
    assert set(torch.bernoulli(torch.full((50,), 0.3, device=DEV)).unique().cpu().tolist()) <= {0.0, 1.0}
    m = torch.multinomial(torch.tensor([0.1, 0.0, 0.5, 0.4], device=DEV), 20, replacement=True).cpu()
    assert (m != 1).all() and m.max() <= 3
    p = torch.randperm(23, device=DEV).cpu()
    assert torch.equal(p.sort().values, torch.arange(23))
    assert (torch.randint(3, 9, (40,), device=DEV).cpu() >= 3).all()
    torch.empty(30, device=DEV).normal_(2.0, 0.5).uniform_(-1, 1).exponential_()
    # rejection samplers (random_rejection.cl): both gamma branches, both Poisson methods, a strided input
    alpha = torch.tensor([0.3, 2.5, 0.0, 7.0, 1.0], device=DEV)
    assert (torch._standard_gamma(alpha).cpu() > 0).all()
    counts = torch.poisson(torch.tensor([[0.5, 30.0], [4.0, 0.0]], device=DEV).t()).cpu()
    assert torch.equal(counts, counts.round()) and counts[1, 1] == 0
    assert torch.allclose(torch._sample_dirichlet(alpha[None, :2].expand(3, 2)).sum(-1).cpu(), torch.ones(3))
    b = torch.binomial(torch.tensor([5.0, 40.0, 60.0], device=DEV), torch.tensor([0.3, 0.5, 0.9], device=DEV)).cpu()
    assert torch.equal(b, b.round()) and (b <= torch.tensor([5.0, 40.0, 60.0])).all()  # inversion, BTRS, flipped


# ------------------------------------------------------------------ RNN cells / isin (attention: test_oclgrind_attention.py)
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_rnn_cells(cell):
    x, h = rand(3, 5, grad=True), rand(3, 4, grad=True)
    mod = (torch.nn.LSTMCell if cell == "lstm" else torch.nn.GRUCell)(5, 4)
    dev_mod = __import__("copy").deepcopy(mod).to(DEV)
    if cell == "lstm":
        c = rand(3, 4, grad=True)
        check(lambda x, h, c: (mod if x.device.type == "cpu" else dev_mod)(x, (h, c)), x, h, c)
    else:
        check(lambda x, h: (mod if x.device.type == "cpu" else dev_mod)(x, h), x, h)


@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_rnn_whole_layers(cls):
    # RnnLayer.cpp: gates written through views of one [T, B, G*H] buffer, cells in place, both directions.
    mod = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True)
    dev_mod = __import__("copy").deepcopy(mod).to(DEV)
    check(lambda x: (mod if x.device.type == "cpu" else dev_mod)(x)[0], rand(5, 2, 3, grad=True))


@pytest.mark.parametrize("fused,ks", [("1", "1"), ("1", "2"), ("0", "1")], ids=["fused", "fused_2slices", "0"])
def test_lstm_step_paths(fused, ks, monkeypatch):
    # RnnLayer.cpp's two LSTM step paths: lstm.cl's fused steps (GEMM + cell in one launch; hidden
    # 6: two groups of 4 units, the second a tail; batch 3 of a 32-row group; K split over 2 slices
    # of the group at hidden 40, the backward's second round with one tile for two slices, meeting in local memory) and a GEMM + cell
    # launch per step (test_rnn_whole_layers takes the fused steps by the shape heuristic).
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", fused)
    monkeypatch.setenv("PYTORCH_OCL_RNN_KSPLIT", ks)
    mod = torch.nn.LSTM(3, 6 if ks == "1" else 40)
    dev_mod = __import__("copy").deepcopy(mod).to(DEV)
    check(lambda x: (mod if x.device.type == "cpu" else dev_mod)(x)[0], rand(2, 3, 3, grad=True))


@pytest.mark.parametrize("fused,ks", [("1", "1"), ("1", "2"), ("0", "1")], ids=["fused", "fused_2slices", "0"])
def test_gru_step_paths(fused, ks, monkeypatch):
    # RnnLayer.cpp's two GRU step paths, as test_lstm_step_paths: gru.cl's fused steps (hidden 6: a unit tail;
    # batch 3 of a 32-row group; hidden 40 at 2 slices: the forward's two tiles one a slice, the backward's
    # (K = 120) two tiles one a slice, met in local memory; with biases, and the backward's carried h gradient
    # over three steps) and a GEMM + cell launch per step.
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", fused)
    monkeypatch.setenv("PYTORCH_OCL_RNN_KSPLIT", ks)
    mod = torch.nn.GRU(3, 6 if ks == "1" else 40)
    dev_mod = __import__("copy").deepcopy(mod).to(DEV)
    check(lambda x: (mod if x.device.type == "cpu" else dev_mod)(x)[0], rand(3, 3, 3, grad=True))


def test_isin():
    elements = torch.randint(0, 50, (37,))
    check(lambda e, t: torch.isin(e, t), elements, torch.tensor([3, 7, 11]))
    check(lambda e, t: torch.isin(e, t, invert=True), elements, torch.randint(0, 50, (100,)))


# ------------------------------------------------------------------ slice rows, frexp, histc, selection
def test_pointwise_slices_and_two_outputs():
    x = rand(5, 7)
    check(lambda t: torch.frexp(t), x)
    check(lambda t, v: torch.heaviside(t, v), torch.tensor([0.0, -1.5, 2.0, 0.0, float("nan")]), rand(5))
    check(lambda a, b: torch.linalg.cross(a, b, dim=0), rand(3, 5, grad=True), rand(3, 1, grad=True))
    check(lambda a, b: torch.linalg.cross(a.t(), b, dim=1), rand(3, 6), rand(6, 3))
    check(lambda t: torch.renorm(t, 2, 1, 0.8), rand(4, 6, 3, grad=True))


def test_fake_quantize():
    """The fake-quantization rows: per channel (qparams broadcast along the axis, two outputs), learnable per
    tensor (device qparams, three outputs in the backward), and the int8 weight matmul's dequantize + GEMM."""
    scale, zp = torch.rand(7) * 0.3 + 0.05, torch.randint(-3, 4, (7,), dtype=torch.int32)
    check(lambda t, s, z: torch.fake_quantize_per_channel_affine(t * 5, s, z, 1, -8, 7), rand(5, 7, grad=True), scale, zp)
    check(lambda t, s, z: torch._fake_quantize_learnable_per_tensor_affine(t * 5, s, z, -8, 7, 1.0),
          rand(6, 5, grad=True), torch.tensor([0.3], requires_grad=True), torch.tensor([0.6], requires_grad=True))
    w = torch.randint(-128, 128, (9, 13), dtype=torch.int8)
    check(lambda a, b, s: torch.ops.aten._weight_int8pack_mm(a, b, s), rand(3, 13), w, torch.rand(9), backward=False)


def test_histc():
    x = rand(9, 40)
    check(lambda t: torch.histc(t.t(), 7, -1, 1), x)  # strided, values outside the range
    check(lambda t: torch.histc(t, 300), x)  # the data's range, more bins than a work-group
    check(lambda t: torch.histc(t, 5), x.to(torch.bfloat16))


def test_kthvalue_median():
    x = torch.randint(-4, 4, (5, 37)).float()  # ties: the quickselect's swaps
    x[1, 3] = float("nan")
    check(lambda t: torch.kthvalue(t, 9, 1), x)
    check(lambda t: torch.kthvalue(t, 2, 0), x)
    check(lambda t: torch.median(t, 1), x.nan_to_num())  # (check() compares without equal_nan)
    check(lambda t: torch.nanmedian(t.t(), 0), x)
    check(lambda t: torch.kthvalue(t, 3, 1).values, rand(4, 9, grad=True))


def test_grid_sample():
    for mode, pad in (("bilinear", "zeros"), ("bicubic", "reflection"), ("nearest", "border")):
        grid2 = (torch.rand(2, 3, 5, 2) * 2.4 - 1.2).requires_grad_()  # some points outside: zeros / clipped taps
        check(lambda t, g: F.grid_sample(t, g, mode=mode, padding_mode=pad, align_corners=False),
              rand(2, 3, 4, 6, grad=True), grid2)
    grid3 = (torch.rand(1, 2, 3, 2, 3) * 2.4 - 1.2).requires_grad_()
    check(lambda t, g: F.grid_sample(t, g, padding_mode="reflection", align_corners=True), rand(1, 2, 3, 4, 5, grad=True),
          grid3)


def test_conv3d():
    check(lambda t, w: F.conv3d(t, w, stride=(2, 1, 1), padding=1, groups=2), rand(1, 4, 5, 4, 4, grad=True),
          rand(4, 2, 3, 2, 3, grad=True))
    check(lambda t, w: F.conv_transpose3d(t, w, stride=2, padding=1, output_padding=1), rand(1, 2, 3, 3, 2, grad=True),
          rand(2, 3, 3, 3, 3, grad=True))


def test_unfold_fold():
    check(lambda t: F.unfold(t, (2, 3), dilation=(2, 1), padding=1, stride=(2, 1)), rand(2, 3, 7, 6, grad=True))
    check(lambda t: F.fold(t, (7, 6), (2, 3), padding=1), rand(2, 18, 48, grad=True))


def test_special_functions():
    # one row per special-function prelude (special_*.cl): the Chebyshev tables in __constant memory
    # (bessel, normal), the series / continued fractions (gamma), the recurrences (poly)
    x = torch.linspace(-9, 60, 11)
    check(lambda x: torch.special.bessel_y1(x.abs()) + torch.special.modified_bessel_k0(x.abs()), x, backward=False)
    check(lambda x: torch.special.airy_ai(x) + torch.special.erfcx(x), x, backward=False)
    a = torch.linspace(0.1, 40, 11)
    check(lambda a, x: torch.igamma(a, x) + torch.special.zeta(a + 1, x.abs()), a, x.abs(), backward=False)
    check(lambda x: torch.special.chebyshev_polynomial_u(x / 60, 12.0) + torch.special.legendre_polynomial_p(x / 9, 5.0),
          x, backward=False)


def test_linalg():
    # One group per matrix, steps wider than the group (n * n > 64 items at n = 9), odd sizes:
    # Cholesky, LU + pivots, triangular solves, laswp, QR, Jacobi eigh and SVD (float32).
    a = rand(2, 9, 9)
    s = a @ a.mT + 9 * torch.eye(9)
    b = rand(2, 9, 3)
    check(lambda s, b: torch.cholesky_solve(b, torch.linalg.cholesky(s)), s, b, backward=False)
    check(lambda a, b: torch.linalg.solve(a, b), a, b, atol=1e-3, rtol=1e-3, backward=False)
    check(lambda a: torch.linalg.lu_factor(a), a, backward=False)
    check(lambda a: torch.linalg.qr(a[:, :, :5]), a, backward=False)
    check(lambda s: torch.linalg.eigvalsh(s), s, atol=1e-3, backward=False)
    check(lambda a: torch.linalg.svdvals(a[:, :7]), a, backward=False)


def test_linalg_eig():
    # linalg_eig.cl (complex T): Hessenberg, shifted QR, back-substitution and normalisation, with
    # vectors and without (n = 9: a group of 16, n * n elements strided over it).
    a = rand(2, 9, 9)

    def residual(a):  # order- and phase-free: |A V - V diag(w)| is ~0 on both devices
        w, v = torch.linalg.eig(a)
        return (a.to(v.dtype) @ v - v * w.unsqueeze(-2)).abs().amax(), torch.linalg.vector_norm(v, dim=-2)

    check(residual, a, atol=1e-4, backward=False)
    check(lambda a: torch.linalg.eigvals(a).abs().sort().values, a, atol=1e-4, backward=False)


# ------------------------------------------------------------------ torch.compile (Inductor's OpenCL C)
def test_inductor_generated_kernels(tmp_path, monkeypatch):
    # Pointwise (tail work-group), row reductions with a __local tree (softmax: max, sum, store loops),
    # Welford (layer norm), argmax, an outer reduction (one work-item per row), and column reductions on
    # x-fast work-groups (8 columns x 32 lanes, a tail work-group; sum and Welford trees).
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))

    def fn(x, w, z):
        y = torch.softmax(x * 2, -1) + F.layer_norm(x, (x.shape[-1],), w)
        return y, x.argmax(-1), x.sum(0), torch.sigmoid(x) * w, z.sum(0), *torch.var_mean(z, 0)

    torch._dynamo.reset()
    x, w, z = rand(3, 260), rand(260), rand(40, 70)
    out = torch.compile(fn)(x.to(DEV), w.to(DEV), z.to(DEV))
    for o, r in zip(out, fn(x, w, z)):
        torch.testing.assert_close(o.cpu(), r, atol=1e-4, rtol=1e-4)
    torch._dynamo.reset()
