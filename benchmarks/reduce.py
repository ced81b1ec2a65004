"""Reduction, scan and softmax bandwidth of `ocl` against a reference device, in the same process.

    python3 benchmarks/reduce.py [--device ocl:0] [--ref cuda|cpu] [--quick] [--out results/reduce.md]

Each case reports effective GB/s = (bytes read + bytes written) / median time; float32.
  sum all     : x.sum() of N floats
  sum last    : x.view(R, C).sum(1)   (reduce the contiguous dim)
  sum first   : x.view(R, C).sum(0)   (reduce the strided dim: column plan)
  softmax     : torch.softmax(y, 1) over rows of [4096, 4096] (reads once, writes once)
and a few more (amax, argmax, var, logsumexp, cumsum, log_softmax backward), and log_softmax forward / backward
over [8192, 50257] (GPT-2's loss over batch 8 x 1024 tokens: rows too long for the register kernels).
N = 64M (R = C = 8192); --quick uses N = 4M for a smoke run.
The ratio column is ocl/ref: > 1 means ocl is faster.
"""
import argparse
import os
import sys

import torch

import common

common.import_backend()
import pytorch_ocl  # noqa: E402

pytorch_ocl.set_strict(True)  # a missing op shows as n/a instead of timing the CPU fallback


def cases(n_side: int, sm_side: int, lm_rows: int, lm_vocab: int):
    """(label, make inputs(device) -> tuple, fn(*inputs), bytes moved)."""
    n = n_side * n_side
    f = 4
    lm_n = lm_rows * lm_vocab

    def lm(device):  # a language model's logits: rows too long for the register kernels
        return (torch.randn(lm_rows, lm_vocab).to(device),)

    def lm_bwd(device):
        y = torch.log_softmax(torch.randn(lm_rows, lm_vocab), 1).to(device)
        return (torch.randn(lm_rows, lm_vocab).to(device), y)

    def vec(device):
        return (torch.randn(n, device="cpu").to(device),)

    def mat(device):
        return (torch.randn(n_side, n_side).to(device),)

    def sm(device):
        return (torch.randn(sm_side, sm_side).to(device),)

    def sm_bwd(device):
        y = torch.log_softmax(torch.randn(sm_side, sm_side), 1).to(device)
        return (torch.randn(sm_side, sm_side).to(device), y)

    def grads(cols):  # a linear layer's output gradient over batch 8 x 1024 tokens (its bias gradient: sum(0))
        return lambda device: (torch.randn(lm_rows, cols).to(device),)

    big = f"{n >> 20}M"
    m = f"[{n_side}, {n_side}]"
    s = f"[{sm_side}, {sm_side}]"
    return [
        (f"sum all ({big})", vec, lambda x: x.sum(), n * f),
        (f"sum last {m}", mat, lambda x: x.sum(1), n * f + n_side * f),
        (f"sum first {m}", mat, lambda x: x.sum(0), n * f + n_side * f),
        (f"sum first (bias grad) [{lm_rows}, 768]", grads(768), lambda x: x.sum(0), (lm_rows + 1) * 768 * f),
        (f"sum first (bias grad) [{lm_rows}, 3072]", grads(3072), lambda x: x.sum(0), (lm_rows + 1) * 3072 * f),
        (f"softmax rows {s}", sm, lambda x: torch.softmax(x, 1), 2 * sm_side * sm_side * f),
        (f"amax all ({big})", vec, lambda x: x.amax(), n * f),
        (f"max last (values+indices) {m}", mat, lambda x: x.max(1), n * f + n_side * (f + 8)),
        (f"argmax first {m}", mat, lambda x: x.argmax(0), n * f + n_side * 8),
        (f"var last {m}", mat, lambda x: x.var(1), n * f + n_side * f),
        (f"logsumexp last {m}", mat, lambda x: x.logsumexp(1), n * f + n_side * f),
        (f"norm all ({big})", vec, lambda x: torch.linalg.vector_norm(x), n * f),
        (f"cumsum last {m}", mat, lambda x: x.cumsum(1), 2 * n * f),
        (f"log_softmax backward rows {s}", sm_bwd,
         lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, 1, torch.float32), 3 * sm_side * sm_side * f),
        (f"log_softmax rows [{lm_rows}, {lm_vocab}]", lm, lambda x: torch.log_softmax(x, 1), 2 * lm_n * f),
        (f"log_softmax backward rows [{lm_rows}, {lm_vocab}]", lm_bwd,
         lambda g, y: torch.ops.aten._log_softmax_backward_data(g, y, 1, torch.float32), 3 * lm_n * f),
    ]


def measure(make, fn, nbytes, device, iters):
    try:
        inputs = make(device)
        seconds = common.median_time(lambda: fn(*inputs), device, iters, warmup=2)
    except (RuntimeError, NotImplementedError) as e:
        print(f"{device}: {str(e).splitlines()[0]}", file=sys.stderr)
        return None
    return nbytes / seconds / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0", help="the ocl device (default: ocl:0)")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="reference device (default: cuda if available, else cpu)")
    parser.add_argument("--quick", action="store_true", help="small sizes for a CI smoke run")
    parser.add_argument("--iters", type=int, default=None, help="timed iterations per case")
    parser.add_argument("--only", default=None, help="run only cases whose label contains this text")
    parser.add_argument("--out", default="results/reduce.md", help="markdown output; the PNG goes next to it")
    args = parser.parse_args(argv)

    if torch.device(args.device).type != "ocl":
        parser.error(f"--device must be an ocl device, got {args.device}")
    if not torch.ocl.is_available():
        import pytorch_ocl

        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1

    n_side, sm_side = (2048, 1024) if args.quick else (8192, 4096)
    lm_rows, lm_vocab = (64, 50257) if args.quick else (8192, 50257)  # GPT-2's loss: batch 8 x 1024 tokens
    iters = args.iters or (5 if args.quick else 20)
    rows, labels, ratios = [], [], []
    for label, make, fn, nbytes in cases(n_side, sm_side, lm_rows, lm_vocab):
        if args.only and args.only not in label:
            continue
        o = measure(make, fn, nbytes, args.device, iters)
        r = measure(make, fn, nbytes, args.ref, iters)
        ratio = o / r if o and r else None
        rows.append([label, o, r, ratio])
        labels.append(label.split(" [")[0].split(" (")[0])
        ratios.append(ratio)
        print(f"{label}: {common.fmt(o)} vs {common.fmt(r)} GB/s", file=sys.stderr)

    header = ["case (float32)", f"{args.device} GB/s", f"{args.ref} GB/s", "ratio (>1: ocl faster)"]
    print(common.markdown_table(header, rows))
    preamble = [
        f"ocl: {common.device_description(args.device)}",
        f"ref: {common.device_description(args.ref)}",
        f"torch {torch.__version__}{', --quick' if args.quick else ''}",
        "GB/s = (bytes read + bytes written) / median time",
    ]
    notes = [f"median of {iters} runs after 2 warm-up runs, synchronized before each timer stops"]
    md = common.write_markdown(args.out, "Reductions, scans and softmax", preamble, header, rows, notes)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             f"{args.device} vs {args.ref} (>1: ocl faster)", "ocl GB/s / ref GB/s")
    print(f"\nwrote {md}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
