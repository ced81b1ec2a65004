"""Scaled-dot-product attention and whole transformer/RNN models on `ocl` against a reference device, in one run.

    python3 benchmarks/transformer.py [--ref cuda|cpu|none] [--quick] [--models [--compile] [--amp bf16|fp16]]
        [--out results/transformer.md]

--models adds GPT-2 small (training step, batch-1 greedy decode), BERT-base MLM (training step, inference),
a 2-layer Llama slice (greedy decode at batch 1 and 16) and an LSTM language model (training step): median
ms or tokens/s, ratio, peak memory, and ocl's first iteration (program builds) apart; see transformer_models.py.
--amp bf16|fp16 runs the models under torch.autocast in that dtype on both devices (as CUDA users train) and the
SDPA cases in it.

Per SDPA case (B, H, L, D, causal): median forward and forward+backward time on each device, the
ratio ref/ocl (> 1: ocl faster) and the peak memory beyond q/k/v/o and their gradients. The
reference runs in a child process that does not load ocl (torch #161129: CUDA autograd breaks
once a PrivateUse1 backend is registered), float32; cuda's SDPA cases with TF32 off, its model rows
twice: TF32 off and torch's defaults (cuDNN TF32 on). Writes markdown, a PNG plot of the SDPA ratios
and one of the model ratios (<out>_models.png) when matplotlib is installed.
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
import transformer_models as tm

CASES = [  # B, H, L, D, causal
    (8, 12, 1024, 64, True),
    (8, 12, 1024, 64, False),
    (8, 12, 2048, 128, True),
    (4, 16, 4096, 64, True),
    (1, 8, 8192, 64, True),
]
QUICK = [(2, 4, 512, 64, True), (1, 4, 1024, 128, False)]
AMP_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def measure(device, case, iters):
    B, H, L, D, causal = case
    g = torch.Generator().manual_seed(0)
    dt = tm.AMP[0] if tm.AMP else torch.float32
    q, k, v = (torch.randn(B, H, L, D, generator=g).to(device, dt).requires_grad_() for _ in range(3))
    do = torch.randn(B, H, L, D, generator=g).to(device, dt)

    def fwd():
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fwd_bwd():
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        torch.autograd.grad(o, (q, k, v), do)

    mem = tm.mem_module(device)
    t_f = common.median_time(fwd, device, iters, warmup=2)
    t_fb = common.median_time(fwd_bwd, device, iters, warmup=2)
    if mem is None:  # the cpu keeps no memory statistics
        return t_f, t_fb, float("nan")
    common.synchronize(device)
    base = mem.memory_allocated()
    mem.reset_peak_memory_stats()
    fwd_bwd()
    common.synchronize(device)
    tensors = 7 * B * H * L * D * q.element_size()  # o, do, and the q/k/v grads beyond the inputs... counted with them
    extra = max(0, mem.max_memory_allocated() - base - tensors)
    return t_f, t_fb, extra


def child(args):
    """The reference side: SDPA cases with TF32 off, then the models under each reference variant; JSON on stdout."""
    variants = tm.ref_variants(args.ref)  # before any flag changes: the defaults
    variants[0][1]()
    out = {"sdpa": [measure(args.ref, tuple(c), args.iters) for c in json.loads(args.child)], "models": {}}
    if args.models:
        for label, setup in variants:
            setup()
            out["models"][label] = dict(tm.measure_all(args.ref, args.quick, desc=f"{label} models"))
    print(json.dumps(out))


def run_reference(args, cases):
    """The child's JSON (SDPA cases, models per reference variant), or None with --ref none."""
    if args.ref == "none":
        return None
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    cmd = ([sys.executable, os.path.abspath(__file__), "--child", json.dumps(cases), "--ref", args.ref,
            "--iters", str(args.iters)] + ["--models"] * args.models + ["--quick"] * args.quick
           + ["--compile"] * args.compile + (["--amp", args.amp] if args.amp else []))
    # stderr goes through: the child's progress bars and any traceback show as they come
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, timeout=1200)
    if proc.returncode != 0:
        sys.exit(f"{args.ref} reference child failed (exit {proc.returncode}; its stderr is above)")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--ref", default="cuda", help="cuda, cpu or none; measured in a child process without ocl")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="small SDPA cases and tiny models (a CPU can run it)")
    p.add_argument("--models", action="store_true", help="also GPT-2, BERT, a 2-layer Llama and an LSTM LM")
    p.add_argument("--compile", action="store_true",
                   help="with --models: GPT-2 and BERT training steps again under torch.compile, on ocl and the ref")
    p.add_argument("--amp", choices=["bf16", "fp16"],
                   help="with --models: torch.autocast in this dtype around the models' forward passes on both "
                        "devices (the SDPA cases run q/k/v in it)")
    p.add_argument("--out", default="results/transformer.md")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.compile:
        tm.enable_compile()
    if args.amp:
        tm.set_amp(AMP_DTYPES[args.amp])
    if args.child:
        return child(args)
    common.import_backend()
    cases = QUICK if args.quick else CASES
    ref = run_reference(args, cases)
    rows, models, model_lines = [], {}, []
    refs = list(ref["models"].items()) if ref else []
    try:
        measure_ocl(args, cases, ref, refs, rows, models, model_lines)
    except KeyboardInterrupt:  # a time limit (timeout -s INT): keep what was measured
        print("interrupted: writing the rows measured so far", file=sys.stderr)
    write_report(args, rows, refs, models, model_lines)


def measure_ocl(args, cases, ref, refs, rows, models, model_lines):
    """The ocl side; appends to rows (SDPA), models and model_lines (markdown) as each result lands."""
    for i, case in enumerate(tqdm(cases, desc="sdpa", unit="case")):
        try:
            got = measure(args.device, case, args.iters)
        except RuntimeError as e:  # e.g. out of memory on a small device
            print(f"{case}: {e}", file=sys.stderr)
            continue
        r = ref["sdpa"][i] if ref else None
        rows.append((case, got, r))
        B, H, L, D, causal = case
        line = f"B{B} H{H} L{L} D{D} {'causal' if causal else 'full'}: ocl fwd {got[0]*1e3:.2f} ms fwd+bwd {got[1]*1e3:.2f} ms extra {got[2]/2**20:.0f} MiB"
        if r:
            line += f" | {args.ref} fwd {r[0]*1e3:.2f} fwd+bwd {r[1]*1e3:.2f} extra {r[2]/2**20:.0f} MiB | ratio fwd {r[0]/got[0]:.2f} fwd+bwd {r[1]/got[1]:.2f}"
        print(line, flush=True)
    if args.models:
        tqdm.write("\n".join(tm.table_header(refs)))
        for name, got in tm.measure_all(args.device, args.quick, desc="ocl models"):
            models[name] = got
            lines = tm.table_rows(name, got, [(label, r.get(name)) for label, r in refs], args.quick)
            model_lines += lines
            tqdm.write("\n".join(lines))  # each model as it lands: a run cut short still reports it


def write_report(args, rows, refs, models, model_lines):
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        dtype = args.amp or "float32"
        f.write(f"# scaled_dot_product_attention, {dtype}: {common.device_description(args.device)} vs {args.ref}\n\n")
        f.write("| B | H | L | D | causal | ocl fwd ms | ocl fwd+bwd ms | ocl extra MiB | ref fwd ms | ref fwd+bwd ms | ref extra MiB | ratio fwd | ratio fwd+bwd |\n")
        f.write("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
        for (B, H, L, D, causal), got, r in rows:
            rr = r or (float("nan"),) * 3
            f.write(f"| {B} | {H} | {L} | {D} | {causal} | {got[0]*1e3:.2f} | {got[1]*1e3:.2f} | {got[2]/2**20:.0f} | "
                    f"{rr[0]*1e3:.2f} | {rr[1]*1e3:.2f} | {rr[2]/2**20:.0f} | {rr[0]/got[0]:.2f} | {rr[1]/got[1]:.2f} |\n")
        if models:
            math_label = f"torch.autocast({args.amp})" if args.amp else "float32"
            f.write(f"\n## Models, {math_label}{' (--quick: tiny configs)' if args.quick else ''}\n\n")
            f.write("\n".join(tm.table_header(refs) + model_lines) + "\n\n")
            f.write("".join(f"- {n}\n" for n in tm.notes(models, refs)))
    print(f"wrote {args.out}")
    if models and refs:
        png = tm.plot(os.path.splitext(args.out)[0] + "_models.png", models, refs, args.quick)
        if png:
            print(f"wrote {png}")
    try:
        import matplotlib

        matplotlib.use("Agg")
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
