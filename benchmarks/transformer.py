"""Scaled-dot-product attention on `ocl` against a reference device (cuda), in one run.

    python3 benchmarks/transformer.py [--ref cuda] [--quick] [--out results/transformer.md]

Per case (B, H, L, D, causal): median forward and forward+backward time on each device, the
ratio ref/ocl (> 1: ocl faster) and the peak memory beyond q/k/v/o and their gradients. The cuda
reference runs in a child process that does not load ocl (torch #161129: CUDA autograd breaks
once a PrivateUse1 backend is registered), with TF32 off, float32. Writes markdown and a PNG plot.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
import torch.nn.functional as F
from tqdm import tqdm

import common

CASES = [  # B, H, L, D, causal
    (8, 12, 1024, 64, True),
    (8, 12, 1024, 64, False),
    (8, 12, 2048, 128, True),
    (4, 16, 4096, 64, True),
    (1, 8, 8192, 64, True),
]
QUICK = [(2, 4, 512, 64, True), (1, 4, 1024, 128, False)]


def measure(device, case, iters):
    B, H, L, D, causal = case
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, L, D, generator=g).to(device).requires_grad_() for _ in range(3))
    do = torch.randn(B, H, L, D, generator=g).to(device)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.autograd.grad(o, (q, k, v), do)

    mem = torch.cuda if torch.device(device).type == "cuda" else torch.ocl
    t_f = common.median_time(fwd, device, iters, warmup=2)
    t_fb = common.median_time(fwd_bwd, device, iters, warmup=2)
    common.synchronize(device)
    base = mem.memory_allocated()
    mem.reset_peak_memory_stats()
    fwd_bwd()
    common.synchronize(device)
    tensors = 7 * B * H * L * D * 4  # o, do, and the q/k/v grads beyond the inputs... counted with them
    extra = max(0, mem.max_memory_allocated() - base - tensors)
    return t_f, t_fb, extra


def child(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out = [measure("cuda", tuple(c), args.iters) for c in json.loads(args.child)]
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--ref", default="cuda")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default="results/transformer.md")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return child(args)
    common.import_backend()
    cases = QUICK if args.quick else CASES
    ref = None
    if args.ref == "cuda":
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(cases), "--iters", str(args.iters)]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1200)
        if proc.returncode != 0:
            sys.exit(f"cuda child failed: {proc.stderr.strip()[-2000:]}")
        ref = json.loads(proc.stdout.strip().splitlines()[-1])
    rows = []
    for i, case in enumerate(tqdm(cases, desc="sdpa", unit="case")):
        try:
            got = measure(args.device, case, args.iters)
        except RuntimeError as e:  # e.g. out of memory on a small device
            print(f"{case}: {e}", file=sys.stderr)
            continue
        r = ref[i] if ref else None
        rows.append((case, got, r))
        B, H, L, D, causal = case
        line = f"B{B} H{H} L{L} D{D} {'causal' if causal else 'full'}: ocl fwd {got[0]*1e3:.2f} ms fwd+bwd {got[1]*1e3:.2f} ms extra {got[2]/2**20:.0f} MiB"
        if r:
            line += f" | {args.ref} fwd {r[0]*1e3:.2f} fwd+bwd {r[1]*1e3:.2f} extra {r[2]/2**20:.0f} MiB | ratio fwd {r[0]/got[0]:.2f} fwd+bwd {r[1]/got[1]:.2f}"
        print(line, flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(f"# scaled_dot_product_attention, float32: {common.device_description(args.device)} vs {args.ref}\n\n")
        f.write("| B | H | L | D | causal | ocl fwd ms | ocl fwd+bwd ms | ocl extra MiB | ref fwd ms | ref fwd+bwd ms | ref extra MiB | ratio fwd | ratio fwd+bwd |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for (B, H, L, D, causal), got, r in rows:
            rr = r or (float("nan"),) * 3
            f.write(f"| {B} | {H} | {L} | {D} | {causal} | {got[0]*1e3:.2f} | {got[1]*1e3:.2f} | {got[2]/2**20:.0f} | "
                    f"{rr[0]*1e3:.2f} | {rr[1]*1e3:.2f} | {rr[2]/2**20:.0f} | {rr[0]/got[0]:.2f} | {rr[1]/got[1]:.2f} |\n")
    try:
        import matplotlib.pyplot as plt

        labels = [f"L{c[2]} D{c[3]}{' c' if c[4] else ''}" for c, _, _ in rows]
        fig, ax = plt.subplots(figsize=(7, 3.5))
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [r[0] / g[0] if r else 0 for _, g, r in rows], 0.4, label="forward")
        ax.bar([i + 0.2 for i in x], [r[1] / g[1] if r else 0 for _, g, r in rows], 0.4, label="forward+backward")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(list(x), labels)
        ax.set_ylabel(f"{args.ref} time / ocl time")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.splitext(args.out)[0] + ".png", dpi=120)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
