"""torch.compile on ocl with the default (Inductor) backend: the OpenCL C codegen in
python/pytorch_ocl/inductor against eager ocl and the CPU; the Dynamo device interface.

Strict mode (conftest) makes any CPU fallback inside a compiled graph an error. Inductor's
cache goes to a temporary directory so every run really generates and builds kernels."""
import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import pytorch_ocl

pytestmark = pytest.mark.usefixtures("fresh_inductor_cache")  # conftest.py


def compare(fn, *args, atol=1e-5, rtol=1e-5, **compile_kw):
    """fn compiled on ocl == fn eager on the CPU (inputs moved to ocl keep their strides)."""
    cpu = [a.detach().clone() if isinstance(a, torch.Tensor) else a for a in args]
    dev = [a.detach().to("ocl") if isinstance(a, torch.Tensor) else a for a in args]
    out = torch.compile(fn, **compile_kw)(*dev)
    ref = fn(*cpu)
    if isinstance(ref, torch.Tensor):
        out, ref = (out,), (ref,)
    for o, r in zip(out, ref):
        assert o.device.type == "ocl"
        torch.testing.assert_close(o.cpu(), r, atol=atol, rtol=rtol, equal_nan=True)
    return out


X = torch.randn(37, 65)
# One compiled graph per table (each compile costs seconds on 2 CPU cores); each entry is checked
# on its own. Entries: name -> (fn, args).
POINTWISE = {
    "chain": (lambda a, b: ((a * 2 + b).relu() - 0.5).sin() / (1 + b.abs()), (X, X.flip(0))),
    "broadcast_row": (lambda a, b: torch.tanh(a + b) * b, (X, torch.randn(65))),
    "broadcast_col": (lambda a, b: torch.sigmoid(a) - b, (X, torch.randn(37, 1))),
    "transposed": (lambda a, b: (a.t() * b).exp(), (torch.randn(65, 37), torch.randn(65))),
    "sliced": (lambda a: a[::3, 1::2].pow(2) + 1, (X,)),
    "where_max": (lambda a, b: torch.where(a > 0, torch.maximum(a, b), torch.minimum(a, b) * 0.1), (X, X.t().t())),
    "gelu_silu": (lambda a: F.gelu(a) + F.silu(a), (X,)),
    "int_math": (lambda a: (a * 3 + 1) // 4 % 5 - a.abs(), (torch.randint(-100, 100, (50, 3)),)),
    "scalar_0d": (lambda a, s: a * s + s.exp(), (X, torch.tensor(0.5))),
    "nan_inf": (lambda a: torch.maximum(a, torch.zeros_like(a)) + torch.isnan(a).float(),
                (torch.tensor([float("nan"), -1.0, float("inf"), 2.0]),)),
    "zero_size": (lambda a: a * 2 + 1, (torch.randn(0, 5),)),
    "index_put_accumulate": (lambda a, i, v: a.index_put((i,), v * 2, accumulate=True),  # atomic adds
                             (torch.zeros(7, 5), torch.tensor([0, 2, 2, 6, 6, 6]), torch.randn(6, 5))),
}

REDUCTIONS = {
    "sum_inner": lambda a: a.sum(-1),
    "sum_outer": lambda a: a.sum(0),
    "sum_all": lambda a: a.sum(),
    "mean": lambda a: a.mean(-1, keepdim=True) * 2,
    "amax_inner": lambda a: a.amax(-1),
    "amin_outer": lambda a: a.amin(0),
    "argmax_inner": lambda a: a.argmax(-1),
    "argmin_outer": lambda a: a.argmin(0),
    "var_inner": lambda a: a.var(-1),
    "var_mean_outer": lambda a: torch.var_mean(a, 0, correction=0),
    "any": lambda a: (a > 2).any(-1),
    "prod": lambda a: a[:, :8].prod(-1),
    "softmax": lambda a: torch.softmax(a, -1),
    "log_softmax_outer": lambda a: torch.log_softmax(a, 0),
    "norm": lambda a: a / a.norm(dim=-1, keepdim=True),
}


def compare_table(table, atol, rtol):
    names = sorted(table)
    fns = [table[n] if callable(table[n]) else table[n][0] for n in names]
    args = [(X,) if callable(table[n]) else table[n][1] for n in names]

    def all_fns(*flat):
        outs, i = [], 0
        for fn, a in zip(fns, args):
            outs.append(fn(*flat[i:i + len(a)]))
            i += len(a)
        return outs

    flat = [t for a in args for t in a]
    got = torch.compile(all_fns)(*[t.to("ocl") for t in flat])
    ref = all_fns(*flat)
    for name, g, r in zip(names, got, ref):
        for gi, ri in zip(g if isinstance(g, tuple) else (g,), r if isinstance(r, tuple) else (r,)):
            torch.testing.assert_close(gi.cpu(), ri, atol=atol, rtol=rtol, equal_nan=True, msg=lambda m: f"{name}: {m}")


def test_pointwise_table():
    compare_table(POINTWISE, 1e-5, 1e-5)


def test_reduction_table():
    compare_table(REDUCTIONS, 1e-4, 1e-4)


@pytest.mark.parametrize("seed", ["1", "2"])
def test_reductions_on_tuner_launch_shapes(monkeypatch, seed):
    """PYTORCH_OCL_TUNE=random:SEED: each reduction kernel launches with a random (RBLOCK, XBLOCK) the
    tuner may pick (one lane per row up to 256-lane trees), so every shape is tested."""
    from pytorch_ocl.inductor import tuning

    monkeypatch.setenv("PYTORCH_OCL_TUNE", f"random:{seed}")
    tuning._chosen.clear()
    compare_table(REDUCTIONS, 1e-4, 1e-4)
    tuning._chosen.clear()


def test_tuner_times_and_keeps_a_shape(monkeypatch):
    from pytorch_ocl.inductor import tuning

    monkeypatch.setenv("PYTORCH_OCL_INDUCTOR_TUNE", "1")
    monkeypatch.delenv("PYTORCH_OCL_TUNE", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_AUTOTUNE", raising=False)
    tuning._chosen.clear()
    compare(lambda a: (torch.softmax(a, -1), a.sum(0)), torch.randn(33, 300), atol=1e-4, rtol=1e-4)
    cands = tuning.candidates(10**9, 256) + tuning.candidates(10**9, 256, xfast=True)  # a.sum(0): x-fast
    assert tuning._chosen and all(c in cands for c in tuning._chosen.values())
    tuning._chosen.clear()


def test_pointwise_dtypes():
    a = torch.randn(333)
    fp64 = pytorch_ocl.get_device_properties().fp64
    compare(lambda h, b, f, d: ((h * 2).sigmoid() + 1, (b * 2).tanh() - b, h.float() * 3, (f > 0) & (f < 1),
                                (d * 2).exp().log1p() if fp64 else d),
            a.half(), a.bfloat16(), a, a.double(), atol=1e-2, rtol=1e-2)
    compare(lambda h: (h * 2).sigmoid() + 1, a.half(), atol=1e-3, rtol=1e-3)
    i, v = torch.tensor([0, 2, 2, 6, 6, 6]), torch.randn(6, 5)
    compare(lambda a, b, i, v, w: (a.index_put((i,), v, accumulate=True), b.index_put((i,), w, accumulate=True)),
            torch.zeros(7, 5).half(), torch.zeros(7, 5).bfloat16(), i, v.half(), v.bfloat16(), atol=1e-2, rtol=1e-2)


def test_reduction_large_and_strided():
    # 100k elements: Inductor splits the sum and the Welford variance in two kernels (welford_combine).
    compare(lambda a, b, c, d: (a.sum(), *torch.var_mean(a), a.argmax(), b.t().amax(-1), c.sum(-1), d.sum(-1)),
            torch.randn(100_000), torch.randn(300, 7), torch.randn(3, 5, 7).permute(2, 0, 1),
            torch.randn(4, 1000).half(), atol=1e-2, rtol=1e-3)


def test_argmax_nan_and_ties():
    a = torch.tensor([[1.0, 3.0, 3.0, 0.0], [float("nan"), 5.0, float("nan"), 1.0]])
    compare(lambda x: (x.argmax(-1), x.argmin(-1), x.amax(-1)), a)


def test_layer_norm_forward_backward():
    ln = nn.LayerNorm(65)
    lnd = copy.deepcopy(ln).to("ocl")
    x = torch.randn(9, 65, requires_grad=True)
    xd = x.detach().to("ocl").requires_grad_()
    out = torch.compile(lnd)(xd)
    ref = ln(x)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)
    g = torch.randn_like(ref)
    out.backward(g.to("ocl"))
    ref.backward(g)
    torch.testing.assert_close(xd.grad.cpu(), x.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(lnd.weight.grad.cpu(), ln.weight.grad, atol=1e-4, rtol=1e-4)


def test_mlp_training_step_matches_eager_ocl_and_cpu():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    eager, comp = copy.deepcopy(m).to("ocl"), copy.deepcopy(m).to("ocl")
    opts = [torch.optim.SGD(p.parameters(), lr=0.1, momentum=0.9) for p in (m, eager, comp)]
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))

    def step(model, opt, x, y):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    cstep = torch.compile(step)
    for _ in range(3):
        l_cpu = step(m, opts[0], x, y)
        l_eager = step(eager, opts[1], x.to("ocl"), y.to("ocl"))
        l_comp = cstep(comp, opts[2], x.to("ocl"), y.to("ocl"))
        torch.testing.assert_close(l_comp.cpu(), l_cpu, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(l_comp.cpu(), l_eager.cpu(), atol=1e-5, rtol=1e-5)
    for p, pe, pc in zip(m.parameters(), eager.parameters(), comp.parameters()):
        torch.testing.assert_close(pc.cpu(), p.detach(), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(pc.cpu(), pe.detach().cpu(), atol=1e-5, rtol=1e-5)


def test_small_cnn_training_forward_backward():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(8, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    md = copy.deepcopy(m).to("ocl")
    x = torch.randn(2, 3, 12, 12)
    out = torch.compile(md, dynamic=False)(x.to("ocl"))
    ref = m(x)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)
    out.sum().backward()
    ref.sum().backward()
    for p, pd in zip(m.parameters(), md.parameters()):
        torch.testing.assert_close(pd.grad.cpu(), p.grad, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(md[1].running_mean.cpu(), m[1].running_mean, atol=1e-5, rtol=1e-5)


class GPT2Block(nn.Module):
    """A tiny GPT-2 block (pre-LN, causal SDPA, tanh-GELU MLP)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


def test_gpt2_block_fullgraph_forward_backward():
    torch.manual_seed(0)
    m = GPT2Block()
    md = copy.deepcopy(m).to("ocl")
    x = torch.randn(2, 8, 32)
    out = torch.compile(md, fullgraph=True)(x.to("ocl"))
    ref = m(x)
    torch.testing.assert_close(out.cpu(), ref, atol=1e-4, rtol=1e-4)
    out.square().mean().backward()
    ref.square().mean().backward()
    for (name, p), pd in zip(m.named_parameters(), md.parameters()):
        torch.testing.assert_close(pd.grad.cpu(), p.grad, atol=1e-4, rtol=1e-3, msg=name)


def test_gpt2_block_dynamic_sequence_length():
    torch.manual_seed(0)
    m = GPT2Block()
    cm = torch.compile(copy.deepcopy(m).to("ocl"), fullgraph=True, dynamic=True)
    for T in (5, 8, 13):
        x = torch.randn(2, T, 32)
        torch.testing.assert_close(cm(x.to("ocl")).cpu(), m(x), atol=1e-4, rtol=1e-4)


def test_dropout_is_random_and_scaled():
    x = torch.ones(4000, device="ocl")
    fn = torch.compile(lambda t: F.dropout(t, 0.5, training=True))
    a, b = fn(x).cpu(), fn(x).cpu()
    assert 0.4 < (a == 0).float().mean().item() < 0.6
    assert set(a.unique().tolist()) <= {0.0, 2.0}
    assert not torch.equal(a, b)


def test_output_code_is_opencl_and_no_fallback():
    from torch._inductor.utils import run_and_get_code

    pytorch_ocl.reset_fallback_stats()
    x = torch.randn(10, 17, device="ocl")
    fn = torch.compile(lambda t: torch.softmax(t * 2, -1) + 1)
    out, codes = run_and_get_code(fn, x)
    src = "\n".join(codes)
    assert "__kernel void ocl_red_" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    torch.testing.assert_close(out.cpu(), torch.softmax(x.cpu() * 2, -1) + 1)
    assert pytorch_ocl.fallback_stats() == {}


def test_dynamo_device_interface():
    from torch._dynamo.device_interface import get_interface_for_device

    iface = get_interface_for_device("ocl")
    assert iface is get_interface_for_device(torch.device("ocl:0"))
    assert iface.is_available() and iface.device_count() == pytorch_ocl.device_count()
    assert iface.current_device() == torch.ocl.current_device()
    s = iface.Stream()
    with iface.stream(s):
        assert iface.current_stream() == s
        y = torch.ones(3, device="ocl") * 2
    e = iface.Event()
    e.record(s)
    e.synchronize()
    iface.synchronize()
    assert y.cpu().tolist() == [2.0, 2.0, 2.0]
    assert iface.get_device_properties().max_work_group_size > 0
    with iface.device(0):
        assert iface.current_device() == 0


def test_import_torch_stays_light(run_py):
    proc = run_py("""
        import sys, torch
        assert "pytorch_ocl" in sys.modules
        print(sorted(m for m in ("torch._dynamo", "torch._inductor", "pytorch_ocl.inductor.scheduling")
                     if m in sys.modules))
    """)
    assert proc.stdout.strip() == "[]", proc.stdout


def test_contended_atomic_add():
    """Thousands of rows adding into two (a token-type embedding's gradient: every token has type 0), fused
    by Inductor into a reduction kernel with atomic adds (NVIDIA: the prelude's red.global.add.f32, else a
    compare-and-swap loop): no update lost, gradients equal the CPU's."""
    torch._dynamo.reset()

    def step(w, t, ids, types):
        y = F.layer_norm(F.embedding(ids, w) + F.embedding(types, t), (64,))
        return (y * y.detach().sin()).sum()

    g = torch.Generator().manual_seed(5)
    w, t = torch.randn(50, 64, generator=g), torch.randn(2, 64, generator=g)
    ids, types = torch.randint(0, 50, (8, 512), generator=g), torch.zeros(8, 512, dtype=torch.long)
    grads = []
    for dev, fn in (("cpu", step), ("ocl", torch.compile(step))):
        wd, td = w.to(dev, copy=True).requires_grad_(), t.to(dev, copy=True).requires_grad_()
        fn(wd, td, ids.to(dev), types.to(dev)).backward()
        grads.append((wd.grad.cpu(), td.grad.cpu()))
    for a, b in zip(*grads):
        torch.testing.assert_close(b, a, atol=2e-3, rtol=1e-4)


def test_accumulating_stores_of_64_bit_types():
    """index_put(accumulate=True) and scatter_add of int64 and float64 fuse with 64-bit atomics
    (cl_khr_int64_base_atomics: atom_add, a compare-and-swap loop for double); repeated indices lose no update."""
    props = pytorch_ocl.get_device_properties()
    if "cl_khr_int64_base_atomics" not in props.extensions or not props.fp64:
        pytest.skip("no 64-bit atomics or no float64 on this device")
    torch._dynamo.reset()
    i = torch.tensor([0, 2, 2, 6, 6, 6, 6, 1])
    g = torch.Generator().manual_seed(3)
    v, n = torch.randn(8, 5, generator=g, dtype=torch.float64), torch.randint(-9, 9, (8, 5), generator=g)
    src, idx = torch.randn(4, 9, generator=g, dtype=torch.float64), torch.randint(0, 3, (4, 9), generator=g)
    compare(lambda a, b, i, v, n, s, j: (a.index_put((i,), v * 2, accumulate=True),
                                         b.index_put((i,), n + 1, accumulate=True),
                                         torch.zeros(3, 9, dtype=torch.float64, device=s.device).scatter_add(0, j, s)),
            torch.zeros(7, 5, dtype=torch.float64), torch.zeros(7, 5, dtype=torch.long), i, v, n, src, idx,
            atol=1e-12, rtol=1e-12)


TUNED_REDUCTION = """
import json, os, torch, pytorch_ocl
from pytorch_ocl.inductor import tuning
f = torch.compile(lambda a: (torch.softmax(a, -1), a.sum(0)), mode=os.environ["MODE"] or None)
a = torch.randn(33, 300)
out = f(a.to("ocl"))
torch.testing.assert_close(out[0].cpu(), torch.softmax(a, -1), atol=1e-5, rtol=1e-4)
torch.testing.assert_close(out[1].cpu(), a.sum(0), atol=1e-4, rtol=1e-4)
stats = pytorch_ocl.ops.autotune_stats()
decisions = {k: v for k, v in pytorch_ocl.ops.autotune_decisions().items() if k.startswith("inductor_reduction|")}
print(json.dumps({"timed": stats["timed"], "loaded": stats["loaded"], "decisions": decisions}))
"""


@pytest.mark.parametrize("how", ["max-autotune-no-cudagraphs", "PYTORCH_OCL_INDUCTOR_TUNE"])
def test_reduction_tunings_are_timed_once_and_kept_in_the_kernel_cache(run_py, tmp_path, how):
    """mode="max-autotune-no-cudagraphs" (or PYTORCH_OCL_INDUCTOR_TUNE=1) times a reduction kernel's launch shapes
    through the project's tuner; the decisions land in the kernel cache, so the next process loads them instead of
    timing (the same graph, its own Inductor cache)."""
    import json

    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "kernels"), "PYTORCH_OCL_TUNE": None, "PYTORCH_OCL_AUTOTUNE": None,
           "MODE": how if how.startswith("max") else "", "PYTORCH_OCL_INDUCTOR_TUNE": "1" if how[0] == "P" else None}
    runs = []
    for k in range(2):
        proc = run_py(TUNED_REDUCTION, env={**env, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor{k}")})
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert len(first["decisions"]) == 2 and first["timed"] >= 2, first  # softmax's and sum(0)'s kernels
    assert second["decisions"] == first["decisions"] and second["timed"] == 0 and second["loaded"] >= 2, second
