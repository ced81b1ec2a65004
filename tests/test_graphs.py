"""torch.ocl graphs: capture on a side stream, replay against eager results, the private memory pool,
errors inside a capture, make_graphed_callables (forward and backward)."""
import copy

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl  # noqa: F401

torch.manual_seed(0)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8)).to("ocl")


class Block(torch.nn.Module):
    """A transformer-style block: layer norm, attention through matmul + softmax, GELU MLP."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def capture(fn, static_input, warmup=2):
    s = torch.ocl.Stream()
    s.wait_stream(torch.ocl.current_stream())
    with torch.ocl.stream(s):
        for _ in range(warmup):  # program builds and tuning before the capture
            fn(static_input)
    torch.ocl.current_stream().wait_stream(s)
    g = torch.ocl.OCLGraph()
    with torch.ocl.graph(g):
        out = fn(static_input)
    return g, out


@pytest.mark.parametrize("make,shape", [(mlp, (4, 16)), (lambda: Block().to("ocl"), (2, 5, 16))], ids=["mlp", "block"])
def test_replay_matches_eager_for_new_inputs(make, shape):
    model = make()
    # A CPU copy for the reference: moving `model` itself would free the parameter buffers the graph reads
    # (as on CUDA, what a graph uses must stay alive while it is replayed).
    ref = copy.deepcopy(model).cpu()
    static_in = torch.randn(shape, device="ocl")
    with torch.no_grad():
        g, static_out = capture(model, static_in)
        assert g.num_items() > 0
        for _ in range(3):
            x = torch.randn(shape)
            static_in.copy_(x.to("ocl"))
            g.replay()
            torch.testing.assert_close(static_out.cpu(), ref(x), atol=1e-4, rtol=1e-4)


def test_capture_does_not_run_the_work():
    x = torch.zeros(8, device="ocl")
    g = torch.ocl.OCLGraph()
    with torch.ocl.graph(g):
        x.add_(1)
    assert x.sum().item() == 0  # as on CUDA: recorded, not executed
    for _ in range(50):
        g.replay()
    assert x.sum().item() == 8 * 50


def test_pool_keeps_outputs_valid_and_reset_releases_it():
    torch.ocl.empty_cache()
    base = torch.ocl.memory_reserved()
    a = torch.randn(256, 256, device="ocl")
    g = torch.ocl.OCLGraph()
    with torch.ocl.graph(g):
        tmp = a * 2  # freed inside the capture: its block stays in the graph's pool
        out = tmp + 1
        del tmp
    g.replay()
    # Other allocations (and empty_cache) must not take the pool's memory.
    junk = [torch.full((256, 256), 7.0, device="ocl") for _ in range(4)]
    torch.ocl.empty_cache()
    g.replay()
    torch.testing.assert_close(out.cpu(), a.cpu() * 2 + 1)
    assert all(j.min().item() == 7.0 for j in junk)
    del junk
    assert torch.ocl.memory_reserved() > base
    g.reset()
    with pytest.raises(RuntimeError, match="nothing was captured"):
        g.replay()
    del out, a
    torch.ocl.empty_cache()
    assert torch.ocl.memory_reserved() == base


def test_shared_pool_between_graphs():
    x = torch.ones(64, device="ocl")
    g1, g2 = torch.ocl.OCLGraph(), torch.ocl.OCLGraph()
    with torch.ocl.graph(g1):
        y = x * 3
    with torch.ocl.graph(g2, pool=g1.pool()):
        z = y + 1
    g1.replay()
    g2.replay()
    assert z.sum().item() == 64 * 4
    g1.reset()
    g2.replay()  # the pool lives while a graph uses it
    assert z.sum().item() == 64 * 4
    g2.reset()


@pytest.mark.parametrize(
    "op,match",
    [
        (lambda x: x.sum().item(), "copy from ocl to the host"),
        (lambda x: print(x), "copy from ocl to the host"),
        (lambda x: torch.ocl.synchronize(), "synchronizing the device"),
        (lambda x: x[torch.tensor([0, 1], device="ocl")], "copy from the host to ocl"),
    ],
    ids=["item", "print", "synchronize", "host_tensor"],
)
def test_host_sync_inside_capture_raises(op, match):
    x = torch.ones(4, device="ocl")
    g = torch.ocl.OCLGraph()
    with pytest.raises(RuntimeError, match=match + ".*not permitted while the stream is capturing"):
        with torch.ocl.graph(g):
            y = x * 2
            op(y)
    assert not torch.ocl.is_current_stream_capturing()
    # The failed capture left nothing behind: the stream works and a new capture succeeds.
    assert (x * 2).sum().item() == 8
    with torch.ocl.graph(g):
        y = x * 2
    g.replay()
    assert y.sum().item() == 8


def test_capture_on_default_stream_raises():
    g = torch.ocl.OCLGraph()
    with pytest.raises(RuntimeError, match="non-default stream"):
        g.capture_begin()
    s = torch.ocl.Stream()
    with torch.ocl.stream(s):
        g.capture_begin()
        assert torch.ocl.is_current_stream_capturing()
        y = torch.ones(3, device="ocl") + 1
        g.capture_end()
    assert not torch.ocl.is_current_stream_capturing()
    g.replay()  # replays on the current (default) stream
    assert y.sum().item() == 6
    with pytest.raises(RuntimeError, match="already captured"):
        with torch.ocl.stream(s):
            g.capture_begin()


def test_debug_dump(tmp_path):
    x = torch.ones(4, device="ocl")
    g = torch.ocl.OCLGraph()
    with torch.ocl.graph(g):
        x.mul_(2).fill_(3)
    g.debug_dump(str(tmp_path / "g.txt"))
    lines = (tmp_path / "g.txt").read_text().splitlines()
    assert len(lines) == g.num_items() == 2
    assert lines[0].startswith("kernel") and lines[1].startswith("fill")


def test_make_graphed_callables_forward_and_backward():
    model = mlp()
    ref = mlp()
    ref.load_state_dict(model.state_dict())
    sample = torch.randn(4, 16, device="ocl", requires_grad=True)
    graphed = torch.ocl.make_graphed_callables(model, (sample,))
    for _ in range(3):
        x = torch.randn(4, 16, device="ocl", requires_grad=True)
        x_ref = x.detach().clone().requires_grad_()
        out, out_ref = graphed(x), ref(x_ref)
        torch.testing.assert_close(out.cpu(), out_ref.detach().cpu(), atol=1e-5, rtol=1e-5)
        for p in list(model.parameters()) + list(ref.parameters()):
            p.grad = None
        (out * out).sum().backward()
        (out_ref * out_ref).sum().backward()
        torch.testing.assert_close(x.grad.cpu(), x_ref.grad.cpu(), atol=1e-5, rtol=1e-5)
        for p, q in zip(model.parameters(), ref.parameters()):
            torch.testing.assert_close(p.grad.cpu(), q.grad.cpu(), atol=1e-5, rtol=1e-5)


def test_make_graphed_callables_function_without_grad():
    w = torch.randn(8, 8, device="ocl")
    fn = torch.ocl.make_graphed_callables(lambda a: torch.tanh(a @ w), (torch.randn(3, 8, device="ocl"),))
    x = torch.randn(3, 8, device="ocl")
    torch.testing.assert_close(fn(x).cpu(), torch.tanh(x.cpu() @ w.cpu()), atol=1e-5, rtol=1e-5)


def test_embedding_and_index_inside_capture():
    # Index bounds are checked on the device and read back eagerly; inside a capture the read-back is
    # skipped (bad rows are skipped by the kernels), so embedding lookups with device tokens can be captured.
    emb = torch.nn.Embedding(50, 8).to("ocl")
    tokens = torch.tensor([3, 7], device="ocl")
    g = torch.ocl.OCLGraph()
    with torch.no_grad(), torch.ocl.graph(g):
        out = emb(tokens) * 2
    for t in ([1, 2], [49, 0], [5, 5]):
        tokens.copy_(torch.tensor(t))
        g.replay()
        torch.testing.assert_close(out.cpu(), emb.weight.detach().cpu()[t] * 2)


def test_decode_benchmark_runs():
    # benchmarks/graphs.py at its tiny size: replayed GPT-2-style decode steps match eager ones.
    import pathlib
    import subprocess
    import sys

    script = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "graphs.py"
    r = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "replayed logits match eager" in r.stdout


@pytest.mark.parametrize(
    "op,match",
    [(lambda x: torch.fft.fft(x), "fft"),
     (lambda x: F.scaled_dot_product_attention(*(x.view(1, 1, 2, 4),) * 3, dropout_p=0.5), "attention with dropout")],
    ids=["fft", "sdpa_dropout"],
)
def test_uncapturable_ops_raise(op, match):
    x = torch.ones(8, device="ocl")
    g = torch.ocl.OCLGraph()
    with pytest.raises(RuntimeError, match=match + ".*not permitted while the stream is capturing"):
        with torch.ocl.graph(g):
            op(x * 2)
    assert op(x).numel() == 8  # works again after the failed capture


def test_random_ops_draw_new_numbers_each_replay():
    # As CUDA's graph-safe RNG: each replay takes a fresh Philox offset from the generator, so a replay
    # gives what the same eager call would give at that point of the generator's sequence.
    x = torch.ones(1000, device="ocl")
    g = torch.ocl.OCLGraph()
    with torch.ocl.graph(g):
        r = torch.rand_like(x)
        d = F.dropout(x, 0.5, training=True)
    torch.manual_seed(123)
    g.replay()
    r1, d1 = r.cpu().clone(), d.cpu().clone()
    g.replay()
    assert not torch.equal(r1, r.cpu()) and not torch.equal(d1, d.cpu())
    torch.manual_seed(123)
    torch.testing.assert_close(torch.rand_like(x).cpu(), r1)
    torch.testing.assert_close(F.dropout(x, 0.5, training=True).cpu(), d1)
    assert 300 < int((d1 == 0).sum()) < 700
