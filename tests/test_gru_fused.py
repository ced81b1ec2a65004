"""The whole-layer nn.GRU's two step paths (csrc/aten/RnnLayer.cpp): the fused steps (one launch per time step
for h W_hh^T + b_hh and the cell, forward and backward; dlprim/kernels/gru.cl) and the GEMM + cell launches per
step. PYTORCH_OCL_GRU_FUSED=1 / 0 forces either; unset, the heuristic (a GPU, hidden <= 1024, batch <= 64)
picks. Both paths against the CPU, forward and every gradient: uni/bidirectional, 1-2 layers, batch_first,
with/without biases, batch 1 / 3 / 20 / 35 (the kernels' groups cover 32 rows and 4 units, split over 1-8
K-slices: PYTORCH_OCL_RNN_KSPLIT), hidden 7 to 130 (unit tails, one to five K tiles), float32/float64; the paths
against each other with some outputs left out of the loss (absent gradients) and with stride-0 gradients; the
fused backward writes the input-gate gradients without a copy.
Packed sequences and 16-bit dtypes take torch's generic recurrence (tests/test_rnn.py covers them)."""
import copy

import pytest
import torch
import torch.nn as nn
from torch.testing import assert_close

import pytorch_ocl
from rnn_lm_steps import assert_lm_steps_match

OCL = torch.device("ocl:0")
TOL = {torch.float32: dict(rtol=3e-5, atol=3e-5), torch.float64: dict(rtol=1e-10, atol=1e-10)}

# (input, hidden, batch, steps, kwargs)
CASES = [
    (5, 7, 3, 4, dict()),
    (4, 17, 1, 5, dict(num_layers=2, bidirectional=True)),
    (6, 33, 3, 3, dict(batch_first=True, bias=False)),
    (3, 40, 20, 3, dict(num_layers=2, batch_first=True, bidirectional=True)),
    (5, 70, 35, 3, dict(bidirectional=True)),  # two row groups, unit tail, several K tiles both ways
]
IDS = ["plain", "2layer_bidir_b1", "bf_nobias_h33", "2layer_bidir_bf_b20", "bidir_h70_b35"]


def state(kw, batch, hidden, g, dtype):
    n = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    return torch.randn(n, batch, hidden, generator=g, dtype=dtype)


def make(case, dtype):
    """The CPU module, input and h0 of a case."""
    inp, hidden, batch, steps, kw = case
    torch.manual_seed(0)
    m = nn.GRU(inp, hidden, **kw).to(dtype)
    g = torch.Generator().manual_seed(1)
    shape = (batch, steps, inp) if kw.get("batch_first") else (steps, batch, inp)
    return m, torch.randn(*shape, generator=g, dtype=dtype), state(kw, batch, hidden, g, dtype)


def run(mod, x, h0, use=("out", "hn"), seed=7):
    """Outputs, input / state gradients and parameter gradients of a loss over the outputs in `use`."""
    x, h0 = (t.detach().clone().requires_grad_() for t in (x, h0))
    mod.zero_grad()
    out, hn = mod(x, h0)
    g = torch.Generator().manual_seed(seed)
    named = {"out": out, "hn": hn}
    loss = sum((t * torch.randn(t.shape, generator=g, dtype=t.dtype).to(t.device)).sum()
               for name, t in named.items() if name in use)
    loss.backward()
    return [out, hn, x.grad, h0.grad] + [p.grad for p in mod.parameters()]


def on_ocl(m, x, h0, use=("out", "hn")):
    return run(copy.deepcopy(m).to(OCL), x.to(OCL), h0.to(OCL), use)


def compare(got, ref, tol):
    for i, (a, b) in enumerate(zip(got, ref)):
        assert (a is None) == (b is None), i
        if a is not None:
            assert_close(a.detach().cpu(), b.detach().cpu(), **tol, msg=lambda s: f"tensor {i}: {s}")


def launched(fn):
    """Kernel names launched by fn()."""
    with pytorch_ocl.profiler.profile() as prof:
        fn()
        torch.ocl.synchronize()
    return {r[0] for r in prof.records}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "gemm_cell"])
def test_against_cpu(fused, case, dtype, monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", fused)
    m, x, h0 = make(case, dtype)
    compare(on_ocl(m, x, h0), run(m, x, h0), TOL[dtype])
    names = launched(lambda: on_ocl(m, x, h0))
    assert ({"gru_step_fwd", "gru_step_bwd"} <= names) == (fused == "1"), names
    assert ("gru_cell_sum" in names) == (fused == "0"), names


@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "gemm_cell"])
def test_backward_writes_input_gate_gradients(fused, monkeypatch):
    """The fused backward writes the input gates' r and z gradients (the hidden gates') itself: no copy kernel
    in its launches, where the GEMM + cell path copies them after its loop (contiguous output gradients, one
    layer: nothing else copies). Their values: every test here checks x's, W_ih's and b_ih's gradients."""
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", fused)
    m, x, h0 = make((4, 9, 3, 3, dict()), torch.float32)
    md = copy.deepcopy(m).to(OCL)
    xs, hs = (t.to(OCL).requires_grad_() for t in (x, h0))
    out, hn = md(xs, hs)
    loss = (out * torch.randn_like(out)).sum() + (hn * torch.randn_like(hn)).sum()
    torch.ocl.synchronize()
    names = launched(loss.backward)
    assert ("gru_step_bwd" if fused == "1" else "gru_cell_backward_sum") in names, names
    assert ("copy" in names) == (fused == "0"), names


@pytest.mark.parametrize("ks", ["2", "4", "8"])
@pytest.mark.parametrize("case", [CASES[1], CASES[4], (6, 130, 33, 3, dict(num_layers=2))],
                         ids=["2layer_bidir_b1", "bidir_h70_b35", "2layer_h130_b33"])
def test_k_slices_against_cpu(case, ks, monkeypatch):
    """The fused steps with their K loops split over 2, 4 and 8 slices of the group (GPUs pick the most that fit;
    PoCL runs one unless asked; never more than K tiles: hidden 17 keeps one both ways), last rounds with slices
    past K, unit and row tails: float64 against the CPU, float32 against the GEMM + cell path, forward and every
    gradient."""
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", "1")
    monkeypatch.setenv("PYTORCH_OCL_RNN_KSPLIT", ks)
    m, x, h0 = make(case, torch.float64)
    compare(on_ocl(m, x, h0), run(m, x, h0), TOL[torch.float64])
    got = on_ocl(m.float(), x.float(), h0.float())
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", "0")
    compare(got, on_ocl(m, x.float(), h0.float()), TOL[torch.float32])


@pytest.mark.parametrize("use", [("out",), ("hn",)], ids="+".join)
def test_paths_agree_with_absent_gradients(use, monkeypatch):
    """Losses over one of the outputs leave dy or dh_n undefined: each branch of the fused backward against the
    GEMM + cell path, float64."""
    m, x, h0 = make((5, 18, 3, 4, dict(num_layers=2, bidirectional=True)), torch.float64)
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", "1")
    got = on_ocl(m, x, h0, use)
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", "0")
    compare(got, on_ocl(m, x, h0, use), dict(rtol=1e-12, atol=1e-12))


@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "gemm_cell"])
def test_expanded_output_gradients(fused, monkeypatch):
    """out.sum() + h_n.sum() hands the layer stride-0 gradients (and batch_first a strided dy); one step."""
    monkeypatch.setenv("PYTORCH_OCL_GRU_FUSED", fused)
    torch.manual_seed(0)
    m = nn.GRU(4, 9, batch_first=True)
    res = []
    for steps in (5, 1):
        x = torch.randn(3, steps, 4)
        for mod, xs in ((m, x), (copy.deepcopy(m).to(OCL), x.to(OCL))):
            xs = xs.detach().requires_grad_()
            out, hn = mod(xs)
            (out.sum() + 2 * hn.sum()).backward()
            res.append([out, xs.grad] + [p.grad for p in mod.parameters()])
            mod.zero_grad()
        compare(res[-1], res[-2], TOL[torch.float32])


@pytest.mark.parametrize("hidden,batch,fused", [(17, 3, True), (1025, 2, False), (8, 65, False)],
                         ids=["small", "wide", "large_batch"])
def test_heuristic(hidden, batch, fused, monkeypatch):
    """Unset, small recurrences on a GPU take the fused steps; hidden > 1024, batch > 64 or a CPU device (PoCL)
    the GEMM path. Forward only under no_grad (the PrivateUse1 registration), against the CPU."""
    fused = fused and torch.ocl.get_device_properties(0).type == "gpu"
    monkeypatch.delenv("PYTORCH_OCL_GRU_FUSED", raising=False)
    torch.manual_seed(0)
    m = nn.GRU(3, hidden)
    x = torch.randn(2, batch, 3)
    md = copy.deepcopy(m).to(OCL)
    with torch.no_grad():
        ref = m(x)[0]
        names = launched(lambda: md(x.to(OCL)))
        assert_close(md(x.to(OCL))[0].cpu(), ref, **TOL[torch.float32])
    assert ("gru_step_fwd" in names) == fused, names


def test_random_tuning_draws_both_paths(monkeypatch):
    """PYTORCH_OCL_TUNE=random:SEED draws a path per layer shape (and K-slices per step shape): over a few seeds
    and shapes both paths run, each matching the CPU."""
    monkeypatch.delenv("PYTORCH_OCL_GRU_FUSED", raising=False)
    monkeypatch.delenv("PYTORCH_OCL_RNN_KSPLIT", raising=False)
    seen = set()
    for seed in range(1, 5):
        monkeypatch.setenv("PYTORCH_OCL_TUNE", f"random:{seed}")
        for hidden in (5, 40):
            m, x, h0 = make((3, hidden, 2, 2, dict()), torch.float32)
            names = launched(lambda: compare(on_ocl(m, x, h0), run(m, x, h0), TOL[torch.float32]))
            seen.add("gru_step_fwd" in names)
    assert seen == {True, False}


@pytest.mark.parametrize("hidden,ks", [(20, ""), (100, "4")], ids=["h20", "h100_4slices"])
def test_language_model_steps_match(hidden, ks, monkeypatch):
    """Three SGD steps of a small GRU language model end in the CPU's weights on either path; hidden 100 with
    K split over 4 slices forced (the GPUs' default there)."""
    assert_lm_steps_match(nn.GRU, "PYTORCH_OCL_GRU_FUSED", hidden, ks, monkeypatch, OCL)
