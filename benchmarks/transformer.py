"""Scaled-dot-product attention and GPT-2 on `ocl` against a reference device (cuda), in one run.

    python3 benchmarks/transformer.py [--ref cuda] [--quick] [--models] [--out results/transformer.md]

--models adds a GPT-2 small training step (batch 8 x 1024, AdamW, its default dropout) and greedy
decoding of 64 tokens at batch 1 (random weights, transformers' GPT2LMHeadModel, sdpa attention).

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


def gpt2_measures(device, quick):
    """(train step s, first step s, peak GiB, decode tokens/s) for GPT-2 small on `device`."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=2 if quick else 12, attn_implementation="sdpa")
    model = GPT2LMHeadModel(cfg).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    B, T = (2, 256) if quick else (8, 1024)
    ids = torch.randint(0, cfg.vocab_size, (B, T)).to(device)

    def step():
        opt.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()

    first = common.median_time(step, device, 1, warmup=0)
    mem = torch.cuda if torch.device(device).type == "cuda" else torch.ocl
    mem.reset_peak_memory_stats()
    t = common.median_time(step, device, 3 if quick else 5, warmup=1)
    peak = mem.max_memory_allocated() / 2**30
    model.eval()
    prompt = torch.randint(0, cfg.vocab_size, (1, 16)).to(device)
    gen = lambda: model.generate(prompt, max_new_tokens=64, min_new_tokens=64, do_sample=False,  # noqa: E731
                                 pad_token_id=0)
    with torch.no_grad():
        t_gen = common.median_time(gen, device, 3, warmup=1)
    return t, first, peak, 64 / t_gen


def child(args):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    out = [measure("cuda", tuple(c), args.iters) for c in json.loads(args.child)]
    if args.models:
        out.append(gpt2_measures("cuda", args.quick))
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--ref", default="cuda")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--models", action="store_true", help="also GPT-2 small training and decoding")
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
        cmd += ["--models"] * args.models + ["--quick"] * args.quick
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
    gpt2 = None
    if args.models:
        gpt2 = gpt2_measures(args.device, args.quick)
        r = ref[-1] if ref else None
        line = (f"GPT-2: ocl train step {gpt2[0]*1e3:.1f} ms (first {gpt2[1]:.1f} s), peak {gpt2[2]:.2f} GiB, "
                f"decode {gpt2[3]:.1f} tok/s")
        if r:
            line += (f" | {args.ref} train {r[0]*1e3:.1f} ms, peak {r[2]:.2f} GiB, decode {r[3]:.1f} tok/s | "
                     f"ratio train {r[0]/gpt2[0]:.2f} decode {gpt2[3]/r[3]:.2f}")
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
        if gpt2:
            r = ref[-1] if ref else (float("nan"),) * 4
            f.write("\n| GPT-2 small | ocl | ref | ratio |\n|---|---|---|---|\n")
            f.write(f"| train step ms | {gpt2[0]*1e3:.1f} | {r[0]*1e3:.1f} | {r[0]/gpt2[0]:.2f} |\n")
            f.write(f"| first step s | {gpt2[1]:.1f} | {r[1]:.1f} | |\n")
            f.write(f"| peak GiB | {gpt2[2]:.2f} | {r[2]:.2f} | {gpt2[2]/r[2]:.2f}x |\n")
            f.write(f"| decode tok/s (batch 1) | {gpt2[3]:.1f} | {r[3]:.1f} | {gpt2[3]/r[3]:.2f} |\n")
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
