"""Every path the autotuner or a heuristic can pick, inside whole-network training.

PYTORCH_OCL_TUNE=random:SEED makes every tunable choice (GEMM tile configs, the convolution paths:
im2col, implicit GEMM configs, Winograd for the forward and each gradient) take a seeded random
eligible candidate per shape class, and heuristics that ask for a variant (split-K) a random one;
on CPU devices it also draws the implicit-GEMM convolution configs that GPUs get. The networks of
tests/models.py and a transformer block are trained a few optimizer steps on ocl under several
seeds and compared with the CPU.

Comparisons run in float64: a float32 network with ReLU or max-pooling turns a rounding
difference at a value within ~1e-6 of zero into a different branch (a ReLU mask or max-pool
choice that flips), which changes a gradient by ~1% -- the CPU's own float32 training of the
repro ResNet differs from its float64 training by up to 2% of the updates after 10 steps on 4
of 12 data seeds. In float64 no branch flips, so any wrong path shows as an error far above
rounding. A float32 network without such branches (SiLU, average pooling) is checked against
the CPU's own float32-vs-float64 spread.
"""
import contextlib
import copy
import os
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import pytorch_ocl.ops as ocl_ops
from pytorch_ocl import _C

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

SEEDS = [1, 2, 3]


class TransformerNet(nn.Module):
    def __init__(self, vocab=40, dim=32, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.block = nn.TransformerEncoderLayer(dim, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        return self.head(self.block(self.emb(ids)).mean(1))


class ReluResNet(nn.Module):
    """The ResNet of the conv-tuning report: 3x3 conv-BN-ReLU blocks, a strided 1x1 shortcut, max-pool."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.MaxPool2d(2))
        self.layers = nn.Sequential(*(SmoothResNet.block(a, b, s, F.relu) for a, b, s in ((16, 16, 1), (16, 32, 2),
                                                                                         (32, 64, 2))))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))


class SmoothResNet(nn.Module):
    """The ResNet of the conv-tuning report with SiLU and average pooling: no branch to flip."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
                                  nn.AvgPool2d(2))
        self.layers = nn.Sequential(self.block(16, 16, 1), self.block(16, 32, 2), self.block(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    @staticmethod
    def block(cin, cout, stride, act=F.silu):
        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
                self.b1 = nn.BatchNorm2d(cout)
                self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
                self.b2 = nn.BatchNorm2d(cout)
                self.short = None if stride == 1 and cin == cout else nn.Sequential(
                    nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

            def forward(self, x):
                y = self.b2(self.c2(act(self.b1(self.c1(x)))))
                return act(y + (x if self.short is None else self.short(x)))

        return Block()

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1).flatten(1))


NETS = {
    "tiny_resnet": (models.TinyResNet, (4, 3, 32, 32)),
    "tiny_mobilenet_v3": (models.TinyMobileNetV3, (4, 3, 32, 32)),
    "tiny_densenet": (models.TinyDenseNet, (4, 3, 32, 32)),
    "tiny_convnext": (models.TinyConvNeXt, (4, 3, 32, 32)),
    "transformer_block": (TransformerNet, (4, 12)),
    "relu_resnet": (ReluResNet, (8, 3, 32, 32)),
}


def batches(shape, steps, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        if len(shape) == 2:
            x = torch.randint(0, 40, shape, generator=g)
        else:
            x = torch.randn(shape, generator=g)
        out.append((x, torch.randint(0, 10, (shape[0],), generator=g)))
    return out


def train(net, data, device, dtype, steps_kind="sgd"):
    m = copy.deepcopy(net).to(device, dtype).train()
    if steps_kind == "sgd":
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9, weight_decay=5e-4)
    else:
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    for x, y in data:
        opt.zero_grad()
        x = x.to(device) if x.dtype == torch.long else x.to(device, dtype)
        F.cross_entropy(m(x), y.to(device)).backward()
        opt.step()
    return torch.cat([p.detach().cpu().double().flatten() for p in m.parameters()])


def update_error(ref, other, start):
    """|other - ref| relative to the size of the reference's update."""
    return float((other - ref).norm() / (ref - start).norm())


def smooth_resnet_errors(shape, steps, ocl_context=contextlib.nullcontext):
    """SmoothResNet trained `steps` SGD steps on batches of `shape` in float32 on the CPU and on ocl (the latter
    inside `ocl_context()`): each one's update error against the CPU's float64 run (cpu_err, ocl_err)."""
    # float32 convolutions (this also runs in child processes, where conftest's TF32 switch is not set and
    # convolutions on a matrix engine would run TF32 by default, as CUDA's do). Set only where still on: in the
    # pytest process conftest has turned it off, and a set after torch.testing's disable_global_flags raises.
    if torch.backends.cudnn.allow_tf32:
        torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    net = SmoothResNet()
    data = batches(shape, steps, 4)
    start = torch.cat([p.detach().double().flatten() for p in net.parameters()])
    ref = train(net, data, "cpu", torch.float64)
    cpu = train(net, data, "cpu", torch.float32)
    with ocl_context():
        got = train(net, data, "ocl", torch.float32)
    return update_error(ref, cpu, start), update_error(ref, got, start)


@pytest.fixture
def random_tuning(monkeypatch):
    def use(seed):
        _C.autotune_reset_memory()  # autotune_decisions() then lists this seed's choices only
        monkeypatch.setenv("PYTORCH_OCL_TUNE", f"random:{seed}")
        monkeypatch.delenv("PYTORCH_OCL_AUTOTUNE", raising=False)
        monkeypatch.delenv("PYTORCH_OCL_CONV_WINOGRAD", raising=False)
        monkeypatch.delenv("PYTORCH_OCL_GEMM_CONFIG", raising=False)
        monkeypatch.delenv("PYTORCH_OCL_CONV_IMPLICIT", raising=False)

    return use


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("name", list(NETS))
def test_network_trains_like_cpu_under_random_tuning(name, seed, random_tuning):
    random_tuning(seed)
    make, shape = NETS[name]
    torch.manual_seed(seed)
    net = make()
    for mod in net.modules():  # random masks differ between devices
        if isinstance(mod, nn.Dropout):
            mod.p = 0.0
    data = batches(shape, 3, seed)
    start = torch.cat([p.detach().double().flatten() for p in net.parameters()])
    kind = "adamw" if name == "transformer_block" else "sgd"
    ref = train(net, data, "cpu", torch.float64, kind)
    got = train(net, data, "ocl", torch.float64, kind)
    err = update_error(ref, got, start)
    chosen = {k: v for k, v in ocl_ops.autotune_decisions().items()}
    assert err < 1e-8, f"{name} seed {seed}: update error {err:.2e}; decisions {chosen}"


def test_random_tuning_reaches_every_kind_of_path(random_tuning):
    """The seeds above draw different paths: conv forward im2col, implicit and Winograd, both
    gradient paths, several GEMM configs (else the tests above could not catch a wrong one)."""
    seen = {}
    x = torch.randn(4, 16, 12, 12, dtype=torch.float64)
    w = torch.randn(16, 16, 3, 3, dtype=torch.float64)
    for seed in range(1, 13):
        random_tuning(seed)
        xo = x.to("ocl").requires_grad_()
        wo = w.to("ocl").requires_grad_()
        F.conv2d(xo, wo, padding=1).sum().backward()
        torch.ocl.synchronize()
        for label, choice in ocl_ops.autotune_decisions().items():
            assert label.endswith("|random"), label
            family = label.split("|")[0]
            kind = choice if family != "conv_fwd" or choice in ("im2col", "winograd") else "implicit"
            seen.setdefault(family, set()).add(kind if family != "gemm" else choice)
    assert {"im2col", "implicit", "winograd"} <= seen["conv_fwd"], seen
    assert {"gemm", "winograd"} <= seen["conv_bwd_data"], seen
    assert {"gemm", "winograd"} <= seen["conv_bwd_weight"], seen
    assert len(seen["gemm"]) >= 3, seen


def test_random_choices_repeat_for_a_seed(random_tuning):
    x = torch.randn(2, 8, 10, 10)
    w = torch.randn(8, 8, 3, 3)
    picks = []
    for seed in (5, 6, 5):
        random_tuning(seed)
        F.conv2d(x.to("ocl"), w.to("ocl"), padding=1).cpu()
        picks.append({k: v for k, v in ocl_ops.autotune_decisions().items() if k.startswith("conv_fwd")})
    assert picks[0] == picks[2]


@pytest.mark.parametrize("seed", SEEDS)
def test_float32_network_without_branches_within_cpu_spread(seed, random_tuning):
    random_tuning(seed)
    cpu_err, ocl_err = smooth_resnet_errors((8, 3, 32, 32), 6)
    # Winograd's transforms round about 5x more than a direct convolution; the spread stays of the CPU's order.
    assert ocl_err < max(3 * cpu_err, 1e-5), (ocl_err, cpu_err)


def test_relu_resnet_trains_like_cpu_with_the_tuner_on(monkeypatch):
    """The report's run: 10 SGD steps (momentum, weight decay) with the tuner's own decisions (not
    random), compared in float64, where no ReLU or max-pool branch can flip."""
    monkeypatch.delenv("PYTORCH_OCL_TUNE", raising=False)
    monkeypatch.setenv("PYTORCH_OCL_AUTOTUNE", "1")
    torch.manual_seed(0)
    net = ReluResNet()
    data = batches((16, 3, 32, 32), 10, 4)
    start = torch.cat([p.detach().double().flatten() for p in net.parameters()])
    ref = train(net, data, "cpu", torch.float64)
    got = train(net, data, "ocl", torch.float64)
    assert update_error(ref, got, start) < 1e-8


GPU_MAPPED_TRAINING = """
import sys
sys.path.insert(0, TESTS)
import test_random_tuning as t
print("ERR", *t.smooth_resnet_errors((8, 3, 32, 32), 4))
"""


def test_network_on_the_gpu_patch_kernels():
    """The branch-free ResNet trained 4 SGD steps on the GPU mappings of im2col and col2im (PYTORCH_OCL_GPU_MAPPING=1;
    implicit GEMM and Winograd off, so every strided or 3x3 forward is im2col + GEMM, every input gradient GEMM +
    col2im, every weight gradient im2col + GEMM: the kernels' channel chunks and planes per item inside a network)
    stays within the CPU's float32 spread."""
    from conftest import run_python

    code = GPU_MAPPED_TRAINING.replace("TESTS", repr(os.path.dirname(os.path.abspath(__file__))))
    out = run_python(code, env={"PYTORCH_OCL_GPU_MAPPING": "1", "PYTORCH_OCL_AUTOTUNE": "0", "PYTORCH_OCL_TUNE": None,
                                "PYTORCH_OCL_CONV_IMPLICIT": "0", "PYTORCH_OCL_CONV_WINOGRAD": "0"}).stdout
    cpu_err, ocl_err = (float(v) for v in out.split("ERR")[1].split())
    assert ocl_err < max(3 * cpu_err, 1e-5), (ocl_err, cpu_err)
