"""One optimizer step (AdamW, SGD with momentum) over GPT-2 small's parameter shapes (148 tensors, 124M
float32 parameters) on ocl, foreach (the default path: one launch per tensor per op) against fused=True (the
fused kernels: one pass through memory), and the same on a reference device in a child process that does not
import pytorch_ocl.

    python3 benchmarks/optimizer_step.py [--device ocl:0] [--ref cuda|cpu|none] [--small] [--iters 20]

--small: the same 148 tensors at GPT-2's shapes scaled down (width 64, vocabulary 1000, 128 positions), for
a CPU OpenCL device. Prints ms per step, its host part (until step() returns), the ocl kernels' device time and
launches of one step, and the ratios fused / foreach and ref / ocl (> 1: ocl faster).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import torch

import common


def gpt2_shapes(small):
    """GPT-2 small's parameters in model order: embeddings, 12 blocks of 12 tensors, the final LayerNorm."""
    d, vocab, ctx = (64, 1000, 128) if small else (768, 50257, 1024)
    block = [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return [(vocab, d), (ctx, d)] + block * 12 + [(d,), (d,)]


OPTIMIZERS = {
    "AdamW": lambda params, **kw: torch.optim.AdamW(params, lr=1e-4, weight_decay=0.1, **kw),
    "SGD": lambda params, **kw: torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kw),
}


def make_step(device, name, fused, small):
    g = torch.Generator().manual_seed(0)
    params = []
    for shape in gpt2_shapes(small):
        p = torch.nn.Parameter(torch.randn(shape, generator=g).mul_(0.02).to(device))
        p.grad = torch.randn(shape, generator=g).mul_(1e-3).to(device)
        params.append(p)
    opt = OPTIMIZERS[name](params, fused=True) if fused else OPTIMIZERS[name](params, foreach=True)
    return opt.step


def host_and_wall(step, device, iters):
    """Median ms of one step's host part (until step() returns, before the synchronize) and of the whole step."""
    import time

    step()
    step()
    common.synchronize(device)
    host, wall = [], []
    for _ in range(iters):
        start = time.perf_counter()
        step()
        host.append(time.perf_counter() - start)
        common.synchronize(device)
        wall.append(time.perf_counter() - start)
    return statistics.median(host) * 1e3, statistics.median(wall) * 1e3


def measure(device, small, iters):
    """ms per step (and of its host part) of each (optimizer, path); None where the path fails."""
    out, host = {}, {}
    for name in OPTIMIZERS:
        for fused in (False, True):
            label = f"{name} {'fused' if fused else 'foreach'}"
            try:
                host[label], out[label] = host_and_wall(make_step(device, name, fused, small), device, iters)
            except (RuntimeError, NotImplementedError) as e:
                print(f"{device} {label}: {str(e).splitlines()[0]}", file=sys.stderr)
                out[label] = host[label] = None
    return out, host


def launches(device, name, fused, small):
    n, _, us = common.kernels_of_step(make_step(device, name, fused, small))
    return n, sum(us.values()) / 1e3, [(k, round(t / 1e3, 3)) for k, t in us.most_common(4)]


def ratio(a, b):
    return f"{a / b:.2f}" if a and b else "n/a"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--ref", default="cuda", help="cuda, cpu or none")
    p.add_argument("--small", action="store_true", help="scaled-down shapes (same 148 tensors) for a CPU device")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.ref, args.small, args.iters)))  # [wall, host]
        return
    ref, ref_host = {}, {}
    if args.ref != "none":
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--ref", args.ref, "--iters", str(args.iters)]
        out = subprocess.run(cmd + ["--small"] * args.small, env=env, stdout=subprocess.PIPE, text=True, check=True)
        ref, ref_host = json.loads(out.stdout.strip().splitlines()[-1])
    common.import_backend()
    import pytorch_ocl

    pytorch_ocl.set_strict(True)  # a missing kernel fails the case instead of timing the CPU fallback
    n_params = sum(torch.Size(s).numel() for s in gpt2_shapes(args.small))
    print(f"ocl: {common.device_description(args.device)}; ref: {args.ref}; torch {torch.__version__}")
    print(f"{len(gpt2_shapes(args.small))} tensors, {n_params / 1e6:.1f}M float32 parameters"
          f"{' (--small)' if args.small else ''}; median of {args.iters} steps")
    ours, host = measure(args.device, args.small, args.iters)
    rows = []
    for label, ms in ours.items():
        name, path = label.split()
        try:
            n, device_ms, top = launches(args.device, name, path == "fused", args.small)
        except (RuntimeError, NotImplementedError):
            n, device_ms, top = None, None, []
        rows.append([label, ms, host[label], device_ms, n, ref.get(label), ref_host.get(label),
                     ratio(ref.get(label), ms)])
        print(f"{label}: {common.fmt(ms)} ms on ocl ({n} launches; most device time, ms: {top}), "
              f"{common.fmt(ref.get(label))} ms on {args.ref}", file=sys.stderr)
    header = ["step", "ocl ms", "ocl host ms", "ocl kernels ms", "ocl launches", f"{args.ref} ms",
              f"{args.ref} host ms", f"{args.ref} ms / ocl ms (>1: ocl faster)"]
    print(common.markdown_table(header, rows))
    for name in OPTIMIZERS:
        print(f"{name}: fused / foreach time on ocl {ratio(ours[f'{name} fused'], ours[f'{name} foreach'])}"
              + (f", on {args.ref} {ratio(ref.get(f'{name} fused'), ref.get(f'{name} foreach'))}" if ref else ""))


if __name__ == "__main__":
    main()
