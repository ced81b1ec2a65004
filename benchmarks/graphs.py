"""Graph replay vs eager for a GPT-2-style decode step at batch 1 (where launch overhead dominates).

    python3 benchmarks/graphs.py [--layers 12 --dim 768 --heads 12 --ctx 256] [--quick] [--iters N] [--ref cuda]

The decode step is written the way graphs need it: a static KV cache of `ctx` positions, the
position as a device tensor (the new key/value land in the cache through a one-hot mask and the
attention masks positions > pos), so one capture serves every step. Reports the median ms per
step eager and replayed, the speedup, the number of recorded launches, and checks that replayed
logits match eager ones. --quick is a tiny model for CPU OpenCL (PoCL) smoke runs. --ref cuda
times the same step on CUDA, eager and as a CUDA graph, in a child process that does not load ocl
(torch #161129), and reports ratios (CUDA time / ocl time).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F


class DecodeLayer(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.h = h
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc, self.out = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)

    def forward(self, x, k_cache, v_cache, onehot, mask):
        d = x.shape[-1]
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)  # (1, d) each
        hd = d // self.h
        q, k, v = (z.view(self.h, 1, hd) for z in (q, k, v))
        # write position pos of the caches in place: cache = cache * (1 - onehot) + new * onehot
        k_cache.mul_(1 - onehot).add_(k * onehot)
        v_cache.mul_(1 - onehot).add_(v * onehot)
        att = (q @ k_cache.transpose(-1, -2)) / hd**0.5 + mask  # (h, 1, ctx)
        y = (torch.softmax(att, dim=-1) @ v_cache).reshape(1, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Decoder(torch.nn.Module):
    def __init__(self, layers, d, h, vocab, ctx):
        super().__init__()
        self.ctx = ctx
        self.wte, self.wpe = torch.nn.Embedding(vocab, d), torch.nn.Embedding(ctx, d)
        self.layers = torch.nn.ModuleList(DecodeLayer(d, h) for _ in range(layers))
        self.ln_f = torch.nn.LayerNorm(d)
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def step(self, token, pos, caches):
        """token, pos: int64 device tensors of shape (1,); caches: [(k, v)] of (h, ctx, hd)."""
        x = self.wte(token) + self.wpe(pos)
        positions = torch.arange(self.ctx, device=token.device)
        onehot = (positions == pos).to(x.dtype).view(1, self.ctx, 1)
        mask = torch.where(positions <= pos, 0.0, float("-inf")).view(1, 1, self.ctx)
        for layer, (k, v) in zip(self.layers, caches):
            x = layer(x, k, v, onehot, mask)
        return self.head(self.ln_f(x))


def synchronize(dev):
    (torch.cuda if dev == "cuda" else torch.ocl).synchronize()


def timed(fn, iters, dev):
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        synchronize(dev)
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def measure(a, dev):
    """(eager ms, replay ms, recorded launches or -1) of one decode step on `dev` ("ocl" or "cuda"); on ocl
    also checks that replayed logits match eager ones for 8 greedy steps."""
    torch.manual_seed(0)
    model = Decoder(a.layers, a.dim, a.heads, a.vocab, a.ctx).to(dev).eval()
    hd = a.dim // a.heads

    def fresh_caches():
        return [(torch.zeros(a.heads, a.ctx, hd, device=dev), torch.zeros(a.heads, a.ctx, hd, device=dev))
                for _ in range(a.layers)]

    token = torch.zeros(1, dtype=torch.long, device=dev)
    pos = torch.zeros(1, dtype=torch.long, device=dev)
    with torch.no_grad():
        # Eager: the same step, reading the same static tensors.
        eager_caches = fresh_caches()
        for _ in range(3):
            model.step(token, pos, eager_caches)  # warmup: program builds and tuning
        synchronize(dev)
        eager_ms = timed(lambda: model.step(token, pos, eager_caches), a.iters, dev)

        caches = fresh_caches()
        if dev == "cuda":
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                logits = model.step(token, pos, caches)
        else:
            g = torch.ocl.OCLGraph()
            with torch.ocl.graph(g):
                logits = model.step(token, pos, caches)
        replay_ms = timed(g.replay, a.iters, dev)
        if dev == "cuda":
            return eager_ms, replay_ms, -1

        # Correctness: a few steps of greedy decoding, replayed vs eager, from empty caches.
        caches_e = fresh_caches()
        for c, e in zip(caches, caches_e):
            c[0].zero_(), c[1].zero_()
        next_token = torch.zeros(1, dtype=torch.long, device=dev)
        for p in range(min(8, a.ctx)):
            token.copy_(next_token)
            pos.fill_(p)
            g.replay()
            ref = model.step(token, pos, caches_e)
            torch.testing.assert_close(logits.cpu(), ref.cpu(), atol=1e-3, rtol=1e-3)
            next_token = logits.argmax(-1)
    return eager_ms, replay_ms, g.num_items()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--heads", type=int, default=12)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="tiny model (2 layers, dim 64) for CPU OpenCL")
    ap.add_argument("--ref", default="none", choices=["none", "cuda"], help="also time the step on CUDA (child process)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.layers, a.dim, a.heads, a.vocab, a.ctx, a.iters = 2, 64, 4, 512, 32, 5
    if a.child:
        print(json.dumps(measure(a, "cuda")))
        return
    import pytorch_ocl  # noqa: F401

    eager_ms, replay_ms, launches = measure(a, "ocl")
    ref = None
    if a.ref == "cuda":
        cmd = [sys.executable, os.path.abspath(__file__), "--child"] + [
            f"--{k}={getattr(a, k)}" for k in ("layers", "dim", "heads", "vocab", "ctx", "iters")]
        proc = subprocess.run(cmd, env=dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0"), capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"cuda child failed: {proc.stderr.strip()[-500:]}")
        ref = json.loads(proc.stdout.strip().splitlines()[-1])
    name = torch.ocl.get_device_name()
    print(f"device: {name}")
    print(f"GPT-2-style decode step, batch 1: {a.layers} layers, dim {a.dim}, {a.heads} heads, ctx {a.ctx}, "
          f"vocab {a.vocab}; {launches} recorded launches")
    if ref is None:
        print("| mode | ms/step (median) |\n|---|---|")
        print(f"| eager | {eager_ms:.3f} |\n| graph replay | {replay_ms:.3f} |")
    else:
        print("| mode | ocl ms/step | cuda ms/step | ratio (cuda / ocl) |\n|---|---|---|---|")
        print(f"| eager | {eager_ms:.3f} | {ref[0]:.3f} | {ref[0] / eager_ms:.2f} |")
        print(f"| graph replay | {replay_ms:.3f} | {ref[1]:.3f} | {ref[1] / replay_ms:.2f} |")
        print(f"| ocl replay vs cuda eager | {replay_ms:.3f} | {ref[0]:.3f} | {ref[0] / replay_ms:.2f} |")
    print(f"speedup: {eager_ms / replay_ms:.2f}x; replayed logits match eager for 8 greedy steps")


if __name__ == "__main__":
    main()
