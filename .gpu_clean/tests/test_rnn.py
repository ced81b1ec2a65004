"""Recurrent nets on ocl vs the CPU: nn.LSTM/GRU/RNN (tanh, relu) and LSTMCell/GRUCell/RNNCell,
forward and backward (every parameter gradient, the input's, h0's and c0's), multi-layer,
bidirectional, batch_first, no bias, LSTM proj_size, packed sequences (sorted and unsorted),
non-contiguous inputs, zero-size batch, float32/float64 (float16/bfloat16 against the CPU in
float32). Dropout between layers draws device masks, so it is checked on the device itself (same
seed, same result; p=1 against the CPU). The fused cells torch hands a non-CPU device
(_thnn_fused_lstm_cell, _thnn_fused_gru_cell and their backward ops) are also checked directly
against formulas, including CUDA's workspace layout. Strict mode: nothing may fall back to the CPU.
Ends with a small LSTM language model trained 3 SGD steps on both devices."""
import copy

import pytest
import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
from torch.testing import assert_close

OCL = torch.device("ocl:0")
T, B, I, H = 4, 3, 5, 6
TOL = {torch.float32: dict(rtol=2e-5, atol=2e-5), torch.float64: dict(rtol=1e-10, atol=1e-10),
       torch.float16: dict(rtol=2e-2, atol=2e-2), torch.bfloat16: dict(rtol=5e-2, atol=6e-2)}


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def randn(*shape, g, dtype=torch.float32):
    return torch.randn(*shape, generator=g, dtype=torch.float64).to(dtype)


def make_module(cls, dtype, seed=0, **kw):
    torch.manual_seed(seed)
    return cls(**kw).to(dtype)


def grads_of(module, tensors):
    out = {n: p.grad for n, p in module.named_parameters()}
    for i, t in enumerate(tensors):
        out[f"input{i}"] = t.grad
    return out


def run_pair(cpu_mod, inputs, forward, dtype, device_dtype=None, tol=None):
    """Runs forward(module, *inputs) on the CPU module and on its copy on ocl (inputs that
    require grad are leaves on both), backpropagates the same random weights of every output
    and compares outputs and gradients. device_dtype: the ocl copy's dtype (the CPU stays in
    `dtype`)."""
    device_dtype = device_dtype or dtype
    tol = tol or TOL[device_dtype]
    ocl_mod = copy.deepcopy(cpu_mod).to(OCL, device_dtype)

    def leaves(device, dt):
        res = []
        for t in inputs:
            if t is None:
                res.append(None)
                continue
            d = t.detach().to(device, dt) if t.is_floating_point() else t
            res.append(d.requires_grad_(t.requires_grad) if d.is_floating_point() else d)
        return res

    ins_c, ins_o = leaves("cpu", dtype), leaves(OCL, device_dtype)
    outs_c, outs_o = forward(cpu_mod, *ins_c), forward(ocl_mod, *ins_o)
    g = gen(99)
    loss_c = loss_o = 0
    for oc, oo in zip(outs_c, outs_o):
        assert oo.device.type == "ocl"
        assert_close(oo.cpu().to(dtype), oc.detach(), **tol)
        w = randn(*oc.shape, g=g)
        loss_c = loss_c + (oc * w.to(dtype)).sum()
        loss_o = loss_o + (oo * w.to(OCL, device_dtype)).sum()
    loss_c.backward()
    loss_o.backward()
    gc = grads_of(cpu_mod, [t for t in ins_c if t is not None])
    go = grads_of(ocl_mod, [t for t in ins_o if t is not None])
    assert gc.keys() == go.keys()
    for k in gc:
        if gc[k] is None:
            assert go[k] is None, k
            continue
        assert go[k] is not None, k
        assert_close(go[k].cpu().to(dtype), gc[k], **tol, msg=lambda m: f"grad of {k}: {m}")


def flat(res):
    """Outputs of an RNN module as a flat list: output, h_n (and c_n)."""
    out, hidden = res
    if isinstance(out, nn.utils.rnn.PackedSequence):
        out = out.data
    return [out] + (list(hidden) if isinstance(hidden, tuple) else [hidden])


RNN_CASES = [
    # (class, extra kwargs, id)
    (nn.LSTM, {}, "lstm"),
    (nn.LSTM, dict(num_layers=2, bidirectional=True), "lstm_2layer_bidir"),
    (nn.LSTM, dict(bias=False, batch_first=True), "lstm_nobias_batchfirst"),
    (nn.LSTM, dict(num_layers=2, proj_size=4, bidirectional=True), "lstm_proj_bidir"),
    (nn.GRU, {}, "gru"),
    (nn.GRU, dict(num_layers=2, bidirectional=True, batch_first=True), "gru_2layer_bidir_bf"),
    (nn.GRU, dict(bias=False), "gru_nobias"),
    (nn.RNN, dict(num_layers=2, nonlinearity="tanh", bidirectional=True), "rnn_tanh"),
    (nn.RNN, dict(nonlinearity="relu", batch_first=True), "rnn_relu"),
]


def state_shapes(cls, kw, batch):
    layers = kw.get("num_layers", 1) * (2 if kw.get("bidirectional") else 1)
    proj = kw.get("proj_size", 0)
    h = (layers, batch, proj or H)
    return [h, (layers, batch, H)] if cls is nn.LSTM else [h]


def call_rnn(cls):
    if cls is nn.LSTM:
        return lambda m, x, h0, c0: flat(m(x, (h0, c0)))
    return lambda m, x, h0: flat(m(x, h0))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("cls,kw,name", RNN_CASES, ids=[c[2] for c in RNN_CASES])
def test_rnn_module(cls, kw, name, dtype):
    m = make_module(cls, dtype, input_size=I, hidden_size=H, **kw)
    g = gen(1)
    x = randn(*((B, T, I) if kw.get("batch_first") else (T, B, I)), g=g, dtype=dtype).requires_grad_()
    states = [randn(*s, g=g, dtype=dtype).requires_grad_() for s in state_shapes(cls, kw, B)]
    run_pair(m, [x] + states, call_rnn(cls), dtype)


@pytest.mark.parametrize("cls,kw,name", RNN_CASES[:1] + RNN_CASES[4:5] + RNN_CASES[7:8], ids=["lstm", "gru", "rnn"])
def test_rnn_module_default_state(cls, kw, name):
    """No h0/c0 given: torch builds zeros on the device; only the output feeds the loss (the
    backward then gets no gradient for h_n / c_n)."""
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H, **kw)
    x = randn(T, B, I, g=gen(2)).requires_grad_()
    run_pair(m, [x], lambda mod, x: [mod(x)[0]], torch.float32)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN], ids=["lstm", "gru", "rnn"])
def test_rnn_unbatched(cls):
    """2-D input [T, I] with 2-D states (torch adds and removes the batch dim)."""
    kw = dict(num_layers=2, bidirectional=True)
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H, **kw)
    g = gen(13)
    x = randn(T, I, g=g).requires_grad_()
    states = [randn(s[0], s[2], g=g).requires_grad_() for s in state_shapes(cls, kw, 1)]
    run_pair(m, [x] + states, call_rnn(cls), torch.float32)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_rnn_noncontiguous(cls):
    """Input and states as transposed / sliced views on the device."""
    kw = dict(num_layers=2)
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H, **kw)
    g = gen(3)
    base_x = randn(B, I, T * 2, g=g)  # x = base_x.permute(2, 0, 1)[::2]: [T, B, I], no unit stride
    shapes = state_shapes(cls, kw, B)
    base_states = [randn(s[0], s[2], s[1], g=g) for s in shapes]  # state = base.transpose(1, 2)
    m_ocl = copy.deepcopy(m).to(OCL)

    def views(dev):
        bx = base_x.to(dev, copy=True).requires_grad_()
        bs = [b.to(dev, copy=True).requires_grad_() for b in base_states]
        x = bx.permute(2, 0, 1)[::2]
        st = [b.transpose(1, 2) for b in bs]
        assert not x.is_contiguous() and not any(s.is_contiguous() for s in st)
        return [bx] + bs, x, st

    leaves_c, xc, sc = views("cpu")
    leaves_o, xo, so = views(OCL)
    outs_c = call_rnn(cls)(m, xc, *sc)
    outs_o = call_rnn(cls)(m_ocl, xo, *so)
    for oc, oo in zip(outs_c, outs_o):
        assert_close(oo.cpu(), oc, **TOL[torch.float32])
    sum(o.square().sum() for o in outs_c).backward()
    sum(o.square().sum() for o in outs_o).backward()
    for lc, lo in zip(leaves_c, leaves_o):
        assert_close(lo.grad.cpu(), lc.grad, **TOL[torch.float32])
    for (n, pc), po in zip(m.named_parameters(), m_ocl.parameters()):
        assert_close(po.grad.cpu(), pc.grad, **TOL[torch.float32], msg=lambda s: f"{n}: {s}")


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_rnn_module_16bit(cls, dtype):
    """16-bit storage, float math in the cells: against the CPU in float32 on the same
    (16-bit-rounded) weights and inputs."""
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H).to(dtype).float()
    g = gen(4)
    x = randn(T, B, I, g=g, dtype=dtype).float().requires_grad_()
    states = [randn(*s, g=g, dtype=dtype).float().requires_grad_() for s in state_shapes(cls, {}, B)]
    run_pair(m, [x] + states, call_rnn(cls), torch.float32, device_dtype=dtype)


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU, nn.RNN], ids=["lstm", "gru", "rnn"])
def test_rnn_zero_batch(cls):
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H, num_layers=2)
    x = torch.zeros(T, 0, I, requires_grad=True)
    run_pair(m, [x], lambda mod, x: flat(mod(x)), torch.float32)


@pytest.mark.parametrize("enforce_sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("cls,kw", [(nn.LSTM, dict(num_layers=2, bidirectional=True)),
                                    (nn.GRU, dict(bidirectional=True)),
                                    (nn.LSTM, dict(proj_size=3)),
                                    (nn.RNN, dict(num_layers=2))], ids=["lstm", "gru", "lstm_proj", "rnn"])
@pytest.mark.parametrize("batch_first", [False, True], ids=["seq_first", "batch_first"])
def test_packed_sequence(cls, kw, enforce_sorted, batch_first):
    """pack_padded_sequence -> module -> pad_packed_sequence, lengths on the CPU (as torch
    requires); gradients flow back into the padded input and the states."""
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H, batch_first=batch_first, **kw)
    lengths = torch.tensor([5, 4, 2, 1] if enforce_sorted else [2, 5, 1, 4])
    g = gen(5)
    x = randn(*((4, 5, I) if batch_first else (5, 4, I)), g=g).requires_grad_()
    states = [randn(*s, g=g).requires_grad_() for s in state_shapes(cls, kw, 4)]

    def fwd(mod, x, *st):
        packed = pack_padded_sequence(x, lengths, batch_first=batch_first, enforce_sorted=enforce_sorted)
        out, hidden = mod(packed, tuple(st) if cls is nn.LSTM else st[0])
        padded, lens = pad_packed_sequence(out, batch_first=batch_first, total_length=5)
        assert torch.equal(lens, lengths)
        return [padded] + (list(hidden) if isinstance(hidden, tuple) else [hidden])

    run_pair(m, [x] + states, fwd, torch.float32)


CELL_CASES = [(nn.LSTMCell, {}), (nn.LSTMCell, dict(bias=False)), (nn.GRUCell, {}), (nn.GRUCell, dict(bias=False)),
              (nn.RNNCell, dict(nonlinearity="tanh")), (nn.RNNCell, dict(nonlinearity="relu", bias=False))]
CELL_IDS = ["lstm", "lstm_nobias", "gru", "gru_nobias", "rnn_tanh", "rnn_relu_nobias"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("cls,kw", CELL_CASES, ids=CELL_IDS)
def test_cell(cls, kw, dtype):
    """Three steps of a cell (the state of one feeds the next), batched."""
    m = make_module(cls, dtype, input_size=I, hidden_size=H, **kw)
    g = gen(6)
    xs = randn(3, B, I, g=g, dtype=dtype).requires_grad_()
    h0 = randn(B, H, g=g, dtype=dtype).requires_grad_()
    c0 = randn(B, H, g=g, dtype=dtype).requires_grad_()
    if cls is nn.LSTMCell:
        def fwd(mod, xs, h, c):
            outs = []
            for t in range(xs.shape[0]):
                h, c = mod(xs[t], (h, c))
                outs += [h, c]
            return outs
        run_pair(m, [xs, h0, c0], fwd, dtype)
    else:
        def fwd(mod, xs, h):
            outs = []
            for t in range(xs.shape[0]):
                h = mod(xs[t], h)
                outs.append(h)
            return outs
        run_pair(m, [xs, h0], fwd, dtype)


@pytest.mark.parametrize("cls", [nn.LSTMCell, nn.GRUCell, nn.RNNCell], ids=["lstm", "gru", "rnn"])
def test_cell_unbatched_no_state(cls):
    """1-D input and no state given (torch makes zeros), a single step."""
    m = make_module(cls, torch.float32, input_size=I, hidden_size=H)
    x = randn(I, g=gen(7)).requires_grad_()
    run_pair(m, [x], lambda mod, x: list(mod(x)) if cls is nn.LSTMCell else [mod(x)], torch.float32)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_lstm_cell_16bit(dtype):
    m = make_module(nn.LSTMCell, torch.float32, input_size=I, hidden_size=H).to(dtype).float()
    g = gen(8)
    x, h, c = (randn(B, n, g=g, dtype=dtype).float().requires_grad_() for n in (I, H, H))
    run_pair(m, [x, h, c], lambda mod, x, h, c: list(mod(x, (h, c))), torch.float32, device_dtype=dtype)


# ---------------------------------------------------------------- the fused cells themselves

def lstm_reference(ig, hg, cx, ib, hb):
    gates = ig + hg + (ib + hb if ib is not None else 0)
    i, f, c, o = gates.chunk(4, 1)
    i, f, c, o = i.sigmoid(), f.sigmoid(), c.tanh(), o.sigmoid()
    cy = f * cx + i * c
    return o * cy.tanh(), cy, torch.cat([i, f, c, o], 1)


def gru_reference(ig, hg, hx, ib, hb):
    if ib is not None:
        ig, hg = ig + ib, hg + hb
    ir, iz, i_n = ig.chunk(3, 1)
    hr, hz, h_n = hg.chunk(3, 1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n), torch.cat([r, z, n, hx, h_n], 1)


def maybe_t(t, transposed):
    return t.t().contiguous().t() if transposed else t


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_fused_lstm_cell_direct(bias, transposed):
    """Outputs, the [i, f, g, o] workspace, and the backward (grad_hy only, grad_cy only, both)
    against autograd through the formula, in float64."""
    g = gen(9)
    dt = torch.float64
    ig, hg = randn(B, 4 * H, g=g, dtype=dt), randn(B, 4 * H, g=g, dtype=dt)
    cx = randn(B, H, g=g, dtype=dt)
    ib, hb = (randn(4 * H, g=g, dtype=dt), randn(4 * H, g=g, dtype=dt)) if bias else (None, None)
    dev = [None if t is None else maybe_t(t.to(OCL), transposed) for t in (ig, hg, cx, ib, hb)]
    hy, cy, ws = torch.ops.aten._thnn_fused_lstm_cell(*dev[:3], dev[3], dev[4])
    rhy, rcy, rws = lstm_reference(ig, hg, cx, ib, hb)
    assert ws.shape == (B, 4 * H) and ws.is_contiguous()
    for a, b in ((hy, rhy), (cy, rcy), (ws, rws)):
        assert_close(a.cpu(), b, rtol=1e-12, atol=1e-12)

    ghy, gcy = randn(B, H, g=g, dtype=dt), randn(B, H, g=g, dtype=dt)
    for use_hy, use_cy in ((True, True), (True, False), (False, True)):
        leaves = [t.clone().requires_grad_() for t in (ig, hg, cx)]
        rhy, rcy, _ = lstm_reference(*leaves, ib, hb)
        loss = (rhy * ghy).sum() * use_hy + (rcy * gcy).sum() * use_cy
        loss.backward()
        grad_gates, grad_cx, grad_bias = torch.ops.aten._thnn_fused_lstm_cell_backward_impl(
            ghy.to(OCL) if use_hy else None, gcy.to(OCL) if use_cy else None, dev[2], cy, ws, bias)
        assert_close(grad_gates.cpu(), leaves[0].grad, rtol=1e-12, atol=1e-12)
        assert_close(grad_cx.cpu(), leaves[2].grad, rtol=1e-12, atol=1e-12)
        if bias:
            assert_close(grad_bias.cpu(), leaves[0].grad.sum(0), rtol=1e-12, atol=1e-12)
        else:
            assert grad_bias is None
    assert torch.ops.aten._thnn_fused_lstm_cell_backward_impl(None, None, dev[2], cy, ws, bias) == (None,) * 3


@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
def test_fused_gru_cell_direct(bias, transposed):
    """Output, the [r, z, n, hx, hn + b_hn] workspace and the backward against autograd through
    the formula, in float64."""
    g = gen(10)
    dt = torch.float64
    ig, hg = randn(B, 3 * H, g=g, dtype=dt), randn(B, 3 * H, g=g, dtype=dt)
    hx = randn(B, H, g=g, dtype=dt)
    ib, hb = (randn(3 * H, g=g, dtype=dt), randn(3 * H, g=g, dtype=dt)) if bias else (None, None)
    dev = [None if t is None else maybe_t(t.to(OCL), transposed) for t in (ig, hg, hx, ib, hb)]
    hy, ws = torch.ops.aten._thnn_fused_gru_cell(*dev[:3], dev[3], dev[4])
    rhy, rws = gru_reference(ig, hg, hx, ib, hb)
    assert ws.shape == (B, 5 * H)
    assert_close(hy.cpu(), rhy, rtol=1e-12, atol=1e-12)
    assert_close(ws.cpu(), rws, rtol=1e-12, atol=1e-12)

    ghy = randn(B, H, g=g, dtype=dt)
    leaves = [t.clone().requires_grad_() for t in (ig, hg, hx)]
    (gru_reference(*leaves, ib, hb)[0] * ghy).sum().backward()
    gi, gh, ghx, gib, ghb = torch.ops.aten._thnn_fused_gru_cell_backward(maybe_t(ghy.to(OCL), transposed), ws, bias)
    assert_close(gi.cpu(), leaves[0].grad, rtol=1e-12, atol=1e-12)
    assert_close(gh.cpu(), leaves[1].grad, rtol=1e-12, atol=1e-12)
    assert_close(ghx.cpu(), leaves[2].grad, rtol=1e-12, atol=1e-12)
    if bias:
        assert_close(gib.cpu(), leaves[0].grad.sum(0), rtol=1e-12, atol=1e-12)
        assert_close(ghb.cpu(), leaves[1].grad.sum(0), rtol=1e-12, atol=1e-12)
    else:
        assert gib is None and ghb is None


def test_fused_cell_errors():
    x = torch.zeros(B, 4 * H, device=OCL)
    with pytest.raises(RuntimeError, match="prev_hidden"):
        torch.ops.aten._thnn_fused_lstm_cell(x, x, torch.zeros(B, H + 1, device=OCL))
    with pytest.raises(RuntimeError, match="hidden_gates"):
        torch.ops.aten._thnn_fused_lstm_cell(x, x[:, :-4], torch.zeros(B, H, device=OCL))
    with pytest.raises(NotImplementedError, match="Int"):
        xi = x.int()
        torch.ops.aten._thnn_fused_gru_cell(xi[:, :3 * H], xi[:, :3 * H], xi[:, :H])


# ---------------------------------------------------------------- dropout between layers

def test_dropout_between_layers():
    """Same seed, same masks (forward and gradients); another seed, other masks; p=1 zeroes the
    second layer's input, which makes the run deterministic and comparable with the CPU; eval
    mode is dropout-free and equals the CPU."""
    m = make_module(nn.LSTM, torch.float32, input_size=I, hidden_size=H, num_layers=3, dropout=0.5)
    mo = copy.deepcopy(m).to(OCL)
    x = randn(T, B, I, g=gen(11)).to(OCL)

    def run(seed):
        torch.manual_seed(seed)
        mo.zero_grad()
        out = mo(x)[0]
        out.sum().backward()
        return out.detach().cpu(), mo.weight_hh_l1.grad.cpu()

    a, b, c = run(1), run(1), run(2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])
    mo.eval()
    m.eval()
    assert_close(mo(x)[0].cpu(), m(x.cpu())[0], **TOL[torch.float32])
    m.train()
    m.dropout = 1.0
    run_pair(m, [x.cpu().requires_grad_()], lambda mod, x: flat(mod(x)), torch.float32)


# ---------------------------------------------------------------- whole-layer LSTM / GRU (RnnLayer.cpp)

LAYER_CASES = [
    dict(),
    dict(num_layers=2, bidirectional=True, batch_first=True),
    dict(num_layers=3, bias=False),
    dict(bidirectional=True),
]


def outputs_and_grads(cls, mod, x, states, use):
    """Runs mod on ocl; the loss weighs the outputs named in `use` (a subset of out, hn, cn)."""
    xs = x.detach().clone().requires_grad_()
    ss = [t.detach().clone().requires_grad_() for t in states]
    mod.zero_grad()
    out, hidden = mod(xs, tuple(ss) if cls is nn.LSTM else ss[0])
    named = [("out", out)] + list(zip(("hn", "cn"), hidden if cls is nn.LSTM else (hidden,)))
    g = gen(5)
    loss = sum((t * randn(*t.shape, g=g, dtype=t.dtype).to(OCL)).sum() for name, t in named if name in use)
    loss.backward()
    return [t for _, t in named] + [xs.grad] + [t.grad for t in ss] + [p.grad for p in mod.parameters()]


@pytest.mark.parametrize("use", [("out", "hn", "cn"), ("out",), ("hn",), ("cn",)], ids="+".join)
@pytest.mark.parametrize("kw", LAYER_CASES, ids=["plain", "2layer_bidir_bf", "3layer_nobias", "bidir"])
@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_whole_layers_equal_the_step_path(cls, kw, use, monkeypatch):
    """The layer path (one input GEMM per layer, a GEMM + cell per step) against torch's step
    path on the device, float64, any subset of outputs feeding the loss (undefined gradients)."""
    if cls is nn.GRU and use == ("cn",):
        pytest.skip("a GRU has no cell state")
    m = make_module(cls, torch.float64, input_size=I, hidden_size=H, **kw).to(OCL)
    g = gen(3)
    x = randn(*((B, T, I) if kw.get("batch_first") else (T, B, I)), g=g, dtype=torch.float64).to(OCL)
    states = [randn(*s, g=g, dtype=torch.float64).to(OCL) for s in state_shapes(cls, kw, B)]
    got = outputs_and_grads(cls, m, x, states, use)
    monkeypatch.setenv("PYTORCH_OCL_RNN", "steps")
    ref = outputs_and_grads(cls, m, x, states, use)
    for i, (a, b) in enumerate(zip(got, ref)):
        assert (a is None) == (b is None), i
        if a is not None:
            assert_close(a.cpu(), b.cpu(), rtol=1e-12, atol=1e-12, msg=lambda s: f"tensor {i}: {s}")


@pytest.mark.parametrize("cls,node", [(nn.LSTM, "LstmLayer"), (nn.GRU, "GruLayer")], ids=["lstm", "gru"])
def test_runs_whole_layers(cls, node):
    m = cls(I, H).to(OCL)
    x = torch.randn(T, B, I, device=OCL, requires_grad=True)
    assert node in m(x)[0].grad_fn.name()
    with torch.inference_mode():  # no autograd keys: the PrivateUse1 registration
        m_cpu = copy.deepcopy(m).cpu()
        assert_close(m(x)[0].cpu(), m_cpu(x.detach().cpu())[0], **TOL[torch.float32])


@pytest.mark.parametrize("cls", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])
def test_single_step_and_long_sequence(cls):
    kw = dict(num_layers=2, bidirectional=True)
    for steps in (1, 40):
        m = make_module(cls, torch.float64, input_size=I, hidden_size=H, **kw)
        g = gen(steps)
        x = randn(steps, B, I, g=g, dtype=torch.float64).requires_grad_()
        states = [randn(*s, g=g, dtype=torch.float64).requires_grad_() for s in state_shapes(cls, kw, B)]
        run_pair(m, [x] + states, call_rnn(cls), torch.float64)


# ---------------------------------------------------------------- a tiny language model

class TinyLM(nn.Module):
    def __init__(self, vocab=11, emb=6, hidden=8, cell=nn.LSTM):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = cell(emb, hidden, num_layers=2, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        out, _ = self.rnn(self.emb(tokens))
        return self.head(out)


@pytest.mark.parametrize("cell", [nn.LSTM, nn.GRU], ids=["lstm", "gru"])  # whole-layer paths (RnnLayer.cpp)
def test_language_model_sgd(cell):
    torch.manual_seed(0)
    cpu = TinyLM(cell=cell)
    dev = copy.deepcopy(cpu).to(OCL)
    g = gen(12)
    data = torch.randint(0, 11, (4, 7), generator=g)
    opt_c = torch.optim.SGD(cpu.parameters(), lr=0.5)
    opt_o = torch.optim.SGD(dev.parameters(), lr=0.5)
    losses = []
    for _ in range(3):
        for model, opt, d in ((cpu, opt_c, data), (dev, opt_o, data.to(OCL))):
            opt.zero_grad()
            logits = model(d[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 11), d[:, 1:].reshape(-1))
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert_close(torch.tensor(losses[1::2]), torch.tensor(losses[0::2]), rtol=1e-5, atol=1e-5)
    assert losses[-2] < losses[0]  # it learns
    for (n, pc), po in zip(cpu.named_parameters(), dev.parameters()):
        assert_close(po.detach().cpu(), pc.detach(), rtol=1e-4, atol=1e-5, msg=lambda s: f"{n}: {s}")
