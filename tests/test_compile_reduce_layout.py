"""torch.compile on ocl: the launch layout of generated reductions (python/pytorch_ocl/inductor/kernel.py).

Column-like reductions (loads consecutive along the kept dim, strided along the reduced one, e.g.
a bias gradient summing the rows of [tokens, vocab]) must take the x-fast layout even where
Inductor's hint says DEFAULT (it does for >= 64 x compute-unit columns): the row layout reads one
column per work-group, uncoalesced (compiled BERT's decoder bias gradient, [8192, 30522]). On a GPU the
x-fast layout also needs enough work-items in flight (the H100 took 36 ms for that reduction with
128k). Checked on the generated wrapper's launch metadata and against the CPU, including on random
tuner shapes."""
import re

import pytest
import torch
import torch.nn.functional as F
from torch._inductor.utils import run_and_get_code

import pytorch_ocl

pytestmark = pytest.mark.usefixtures("fresh_inductor_cache")  # conftest.py


def _columns():
    """More columns than 64 x compute units: Inductor's reduction hint is DEFAULT, not OUTER."""
    return max(1000, 64 * pytorch_ocl.get_device_properties().multi_processor_count + 3)


def _layouts(code):
    """xfast flag of each generated reduction kernel in the wrapper source."""
    return [m == "True" for m in re.findall(r"'reduction': True, [^}]*'xfast': (True|False)", code)]


def _run(fn, *args):
    dev = [a.to("ocl") for a in args]
    out, codes = run_and_get_code(torch.compile(fn), *dev)
    return out, "\n".join(codes)


def _check(out, ref, atol, rtol):
    for o, r in zip(out if isinstance(out, (tuple, list)) else (out,), ref if isinstance(ref, (tuple, list)) else (ref,)):
        torch.testing.assert_close(o.cpu(), r, atol=atol, rtol=rtol)


def _column_fns(a, h):
    return (a.sum(0), (a * 2).amax(0), *torch.var_mean(a, 0), a.argmax(0), h.sum(0),
            a.view(3, -1, a.shape[1]).sum((0, 1)))


@pytest.mark.parametrize("tune", [None, "random:3"])
def test_column_reductions_take_x_fast_layout(monkeypatch, tune):
    from pytorch_ocl.inductor import tuning

    if tune:
        monkeypatch.setenv("PYTORCH_OCL_TUNE", tune)  # random (RBLOCK, XBLOCK) of the x-fast candidates
    tuning._chosen.clear()
    torch._dynamo.reset()
    a = torch.randn(96, _columns())
    h = torch.randn(40, 300).half()
    out, code = _run(_column_fns, a, h)
    _check(out, _column_fns(a, h), 1e-2, 1e-3)
    layouts = _layouts(code)
    assert layouts and all(layouts), code[-3000:]
    tuning._chosen.clear()


def test_row_reductions_keep_row_layout():
    a = torch.randn(_columns(), 96)
    fn = lambda a: (a.sum(-1), torch.softmax(a, -1))  # noqa: E731
    out, code = _run(fn, a)
    _check(out, fn(a), 1e-4, 1e-4)
    layouts = _layouts(code)
    assert layouts and not any(layouts)


def test_layer_norm_weight_gradient_is_x_fast():
    """Layer norm's weight / bias gradients sum [rows, hidden] over the rows, reading a per-row mean
    and rstd (no x stride) next to the column-strided inputs: still the x-fast layout."""
    rows, hidden = 96, _columns()
    x = torch.randn(rows, hidden, requires_grad=True)
    w = torch.randn(hidden, requires_grad=True)
    b = torch.randn(hidden, requires_grad=True)
    g = torch.randn(rows, hidden)

    def fn(x, w, b, g):
        return torch.autograd.grad(F.layer_norm(x, (hidden,), w, b), (x, w, b), g)

    dev = [t.detach().to("ocl").requires_grad_(t.requires_grad) for t in (x, w, b, g)]
    out, codes = run_and_get_code(torch.compile(fn), *dev)
    _check(out, fn(x, w, b, g), 1e-3, 1e-4)
    assert any(_layouts("\n".join(codes))), "no x-fast kernel for the weight / bias gradient"


def test_vocab_head_training_step_matches_eager():
    """The MLM head's pattern: logits = h @ W^T + b over a vocabulary, cross-entropy over the rows
    (bias gradient: a column sum of [tokens, vocab]); compiled gradients == eager ocl."""
    torch.manual_seed(0)
    tokens, hidden, vocab = 64, 32, _columns()
    h = torch.randn(tokens, hidden)
    lin = torch.nn.Linear(hidden, vocab)
    y = torch.randint(0, vocab, (tokens,))
    y[::5] = -100  # ignored tokens, as in masked-LM labels

    def loss_fn(m, h, y):
        return F.cross_entropy(m(F.gelu(h)), y, ignore_index=-100)

    grads = []
    for compiled in (False, True):
        m = torch.nn.Linear(hidden, vocab).to("ocl")
        m.load_state_dict(lin.state_dict())
        fn = torch.compile(loss_fn) if compiled else loss_fn
        loss = fn(m, h.to("ocl"), y.to("ocl"))
        loss.backward()
        grads.append((loss.detach().cpu(), m.weight.grad.cpu(), m.bias.grad.cpu()))
    for e, c in zip(*grads):
        torch.testing.assert_close(c, e, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kind, rblock", [("cpu", 4), ("gpu", 32)])
def test_x_fast_blocks_fill_the_device(monkeypatch, kind, rblock):
    """BERT's bias gradient, [8192, 30522] summed over rows: a CPU device keeps about 128k work-items
    (4 lanes per column), a GPU gets about a million (32 lanes per column, 8 columns per group)."""
    import sympy
    from types import SimpleNamespace

    from pytorch_ocl.inductor.kernel import OclKernel

    props = SimpleNamespace(type=kind, max_work_group_size=1024)
    monkeypatch.setattr(OclKernel, "_props", staticmethod(lambda: props))
    numels = {"x": sympy.Integer(30522), "r0_": sympy.Integer(8192)}
    stub = SimpleNamespace(is_reduction_kernel=True, xfast=True, _numel=numels.__getitem__,
                           _max_block=OclKernel._max_block, _xfast_work_items=OclKernel._xfast_work_items)
    rb, xb = OclKernel._choose_blocks(stub)
    assert (rb, xb) == (rblock, 256 // rblock)
