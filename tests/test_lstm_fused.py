"""The whole-layer nn.LSTM's two step paths (csrc/aten/RnnLayer.cpp): the fused steps (one
launch per time step for h W_hh^T and the cell, forward and backward; dlprim/kernels/lstm.cl) and
the GEMM + cell launches per step. PYTORCH_OCL_LSTM_FUSED=1 / 0 forces either; unset, the
heuristic (a GPU, hidden <= 1024, batch <= 64) picks. Both paths against the CPU, forward and every
gradient: uni/bidirectional, 1-2 layers, batch_first, with/without biases, batch 1 / 3 / 20 / 35
(the kernels' groups cover 32 rows and 4 units, split over 1-8 K-slices: PYTORCH_OCL_RNN_KSPLIT), hidden 7 to 70 (unit tails, one to five K tiles), float32/float64; the paths against each
other with any subset of the outputs in the loss (absent gradients) and with dropout between
layers (same seed, same masks). proj_size, packed sequences and 16-bit dtypes take torch's generic
recurrence on either setting (tests/test_rnn.py covers them)."""
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
    (3, 40, 20, 3, dict(num_layers=2, batch_first=True, bidirectional=True, dropout=0.0)),
    (8, 16, 3, 2, dict(num_layers=2, bias=False, bidirectional=True)),
    (5, 70, 35, 3, dict(bidirectional=True)),  # two row groups, unit tail, several K tiles both ways
]
IDS = ["plain", "2layer_bidir_b1", "bf_nobias_h33", "2layer_bidir_bf_b20", "2layer_nobias_h16", "bidir_h70_b35"]


def states(kw, batch, hidden, g, dtype):
    n = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    return [torch.randn(n, batch, hidden, generator=g, dtype=dtype) for _ in range(2)]


def run(mod, x, h0, c0, use=("out", "hn", "cn"), seed=7):
    """Outputs, input / state gradients and parameter gradients of a loss over the outputs in `use`."""
    x, h0, c0 = (t.detach().clone().requires_grad_() for t in (x, h0, c0))
    mod.zero_grad()
    out, (hn, cn) = mod(x, (h0, c0))
    g = torch.Generator().manual_seed(seed)
    named = {"out": out, "hn": hn, "cn": cn}
    loss = sum((t * torch.randn(t.shape, generator=g, dtype=t.dtype).to(t.device)).sum()
               for name, t in named.items() if name in use)
    loss.backward()
    return [out, hn, cn, x.grad, h0.grad, c0.grad] + [p.grad for p in mod.parameters()]


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
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", fused)
    inp, hidden, batch, steps, kw = case
    torch.manual_seed(0)
    m = nn.LSTM(inp, hidden, **kw).to(dtype)
    g = torch.Generator().manual_seed(1)
    shape = (batch, steps, inp) if kw.get("batch_first") else (steps, batch, inp)
    x = torch.randn(*shape, generator=g, dtype=dtype)
    h0, c0 = states(kw, batch, hidden, g, dtype)
    ref = run(m, x, h0, c0)
    md = copy.deepcopy(m).to(OCL)
    got = run(md, x.to(OCL), h0.to(OCL), c0.to(OCL))
    compare(got, ref, TOL[dtype])
    names = launched(lambda: run(md, x.to(OCL), h0.to(OCL), c0.to(OCL)))
    assert ({"lstm_step_fwd", "lstm_step_bwd"} <= names) == (fused == "1"), names
    assert ("lstm_cell" in names) == (fused == "0"), names


@pytest.mark.parametrize("ks", ["2", "4", "8"])
@pytest.mark.parametrize("case", [CASES[1], CASES[5], (6, 130, 33, 3, dict(num_layers=2))],
                         ids=["2layer_bidir_b1", "bidir_h70_b35", "2layer_h130_b33"])
def test_k_slices_against_cpu(case, ks, monkeypatch):
    """The fused steps with their K loops split over 2, 4 and 8 slices of the group (GPUs pick the most that fit;
    PoCL runs one unless asked; never more than K tiles: hidden 17's forward keeps one), last rounds with
    slices past K, unit and row tails,
    float64 against the CPU, forward and every gradient."""
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", "1")
    monkeypatch.setenv("PYTORCH_OCL_RNN_KSPLIT", ks)
    inp, hidden, batch, steps, kw = case
    torch.manual_seed(0)
    m = nn.LSTM(inp, hidden, **kw).double()
    g = torch.Generator().manual_seed(1)
    shape = (batch, steps, inp) if kw.get("batch_first") else (steps, batch, inp)
    x = torch.randn(*shape, generator=g, dtype=torch.float64)
    h0, c0 = states(kw, batch, hidden, g, torch.float64)
    md = copy.deepcopy(m).to(OCL)
    compare(run(md, x.to(OCL), h0.to(OCL), c0.to(OCL)), run(m, x, h0, c0), TOL[torch.float64])
    for fused in ("1", "0"):  # float32: against the GEMM + cell path
        monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", fused)
        res = run(copy.deepcopy(m).float().to(OCL), x.float().to(OCL), h0.float().to(OCL), c0.float().to(OCL))
        if fused == "1":
            got = res
    compare(got, res, TOL[torch.float32])


@pytest.mark.parametrize("use", [("out",), ("hn",), ("cn",), ("hn", "cn")], ids="+".join)
def test_paths_agree_with_absent_gradients(use, monkeypatch):
    """Losses over some of the outputs leave dy, dh_n or dc_n undefined: each branch of the
    fused backward against the GEMM + cell path, float64."""
    kw = dict(num_layers=2, bidirectional=True)
    m = nn.LSTM(5, 18, **kw).double().to(OCL)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(4, 3, 5, generator=g, dtype=torch.float64).to(OCL)
    h0, c0 = (t.to(OCL) for t in states(kw, 3, 18, g, torch.float64))
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", "1")
    got = run(m, x, h0, c0, use)
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", "0")
    ref = run(m, x, h0, c0, use)
    compare(got, ref, dict(rtol=1e-12, atol=1e-12))


def test_dropout_between_layers_same_masks(monkeypatch):
    """Train-mode dropout 0.5 between layers: the same seed draws the same masks on either path,
    so the paths agree; the masks do act (the result differs from eval mode)."""
    torch.manual_seed(0)
    m = nn.LSTM(4, 10, num_layers=3, dropout=0.5).to(OCL)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5, 2, 4, generator=g).to(OCL)
    h0, c0 = (t.to(OCL) for t in states(dict(num_layers=3), 2, 10, g, torch.float32))
    res = {}
    for fused in ("1", "0"):
        monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", fused)
        torch.manual_seed(5)
        res[fused] = run(m, x, h0, c0)
    compare(res["1"], res["0"], TOL[torch.float32])
    m.eval()
    with torch.no_grad():
        assert not torch.allclose(m(x, (h0, c0))[0].cpu(), res["1"][0].cpu())


@pytest.mark.parametrize("hidden,batch,fused", [(17, 3, True), (1025, 2, False), (8, 65, False)],
                         ids=["small", "wide", "large_batch"])
def test_heuristic(hidden, batch, fused, monkeypatch):
    """Unset, small recurrences on a GPU take the fused steps; hidden > 1024, batch > 64 or a CPU
    device (PoCL) the GEMM path. Forward only under no_grad (the PrivateUse1 registration), against
    the CPU."""
    fused = fused and torch.ocl.get_device_properties(0).type == "gpu"
    monkeypatch.delenv("PYTORCH_OCL_LSTM_FUSED", raising=False)
    torch.manual_seed(0)
    m = nn.LSTM(3, hidden)
    x = torch.randn(2, batch, 3)
    md = copy.deepcopy(m).to(OCL)
    with torch.no_grad():
        ref = m(x)[0]
        names = launched(lambda: md(x.to(OCL)))
        assert_close(md(x.to(OCL))[0].cpu(), ref, **TOL[torch.float32])
    assert ("lstm_step_fwd" in names) == fused, names


def test_random_tuning_draws_both_paths(monkeypatch):
    """PYTORCH_OCL_TUNE=random:SEED draws a path per layer shape (the heuristic's choices are
    tested like the tuners'): over a few seeds and shapes both run, each matching the CPU."""
    monkeypatch.delenv("PYTORCH_OCL_LSTM_FUSED", raising=False)
    seen = set()
    for seed in range(1, 5):
        monkeypatch.setenv("PYTORCH_OCL_TUNE", f"random:{seed}")
        for hidden in (5, 9):
            torch.manual_seed(0)
            m = nn.LSTM(3, hidden)
            x, h0, c0 = torch.randn(2, 2, 3), torch.randn(1, 2, hidden), torch.randn(1, 2, hidden)
            md = copy.deepcopy(m).to(OCL)
            names = launched(lambda: compare(run(md, x.to(OCL), h0.to(OCL), c0.to(OCL)), run(m, x, h0, c0),
                                             TOL[torch.float32]))
            seen.add("lstm_step_fwd" in names)
    assert seen == {True, False}


@pytest.mark.parametrize("hidden,ks", [(20, ""), (100, "4")], ids=["h20", "h100_4slices"])
def test_language_model_steps_match(hidden, ks, monkeypatch):
    """Three SGD steps of a small LSTM language model end in the CPU's weights on either path; hidden 100 with
    K split over 4 slices forced (the GPUs' default there)."""
    assert_lm_steps_match(nn.LSTM, "PYTORCH_OCL_LSTM_FUSED", hidden, ks, monkeypatch, OCL)


@pytest.mark.parametrize("fused", ["1", "0"], ids=["fused", "gemm_cell"])
def test_expanded_output_gradients(fused, monkeypatch):
    """out.sum() + h_n.sum() hands the layer stride-0 gradients (and batch_first a strided dy)."""
    monkeypatch.setenv("PYTORCH_OCL_LSTM_FUSED", fused)
    torch.manual_seed(0)
    m = nn.LSTM(4, 9, batch_first=True)
    x = torch.randn(3, 5, 4)
    res = []
    for mod, xs in ((m, x), (copy.deepcopy(m).to(OCL), x.to(OCL))):
        xs = xs.detach().requires_grad_()
        out, (hn, cn) = mod(xs)
        (out.sum() + 2 * hn.sum()).backward()
        res.append([out, xs.grad] + [p.grad for p in mod.parameters()])
    compare(res[1], res[0], TOL[torch.float32])
