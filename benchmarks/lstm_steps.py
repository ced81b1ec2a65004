"""The LSTM language model's training step (benchmarks/transformer_models.py's `lstm` row: Embedding
10000 x 512, nn.LSTM 512 x 2 layers, Linear, batch 32 x 128, AdamW, float32) on ocl with each of the
whole-layer LSTM's step paths (PYTORCH_OCL_LSTM_FUSED=1: one fused launch per step; 0: a GEMM and a
cell launch per step), with the kernel launches of one step and the kernels taking most device time, against a
reference device. --cell gru: the same model with nn.GRU layers (PYTORCH_OCL_GRU_FUSED).

    python3 benchmarks/lstm_steps.py [--cell lstm|gru] [--ref cuda|cpu|none] [--quick] [--iters 10] [--ksplit "1;2;4"]
                                     [--fused-only]

The reference runs in a child process without ocl, cuDNN/matmul TF32 off (like-for-like float32).
--quick: the tiny config of transformer.py --quick (hidden 64, vocab 1000, batch 4 x 16), for a CPU.
--ksplit: the fused steps once per PYTORCH_OCL_RNN_KSPLIT value (K-slices per group; "" : the default).
--fused-only: no GEMM + cell row.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import common
import transformer_models as tm


CELLS = {"lstm": nn.LSTM, "gru": nn.GRU}


def make_step(device, quick, cell):
    """transformer_models.lstm's step (its rnn layers nn.LSTM or nn.GRU), returned instead of timed."""
    s = tm.sizes(quick)["lstm"]
    torch.manual_seed(0)
    model = tm.LSTMLM(s["vocab"], s["hidden"], s["layers"], CELLS[cell]).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    seq = tm._tokens(s["vocab"], (s["batch"], s["seq"] + 1), 1).to(device)
    x, y = seq[:, :-1], seq[:, 1:]

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        opt.step()

    return step


def measure(device, quick, iters, cell):
    step = make_step(device, quick, cell)
    step()
    return common.median_time(step, device, iters, warmup=2) * 1e3


def launches(step):
    n, calls, us = common.kernels_of_step(step)
    return n, sum(us.values()) / 1e3, [(k, calls[k], round(t / 1e3, 2)) for k, t in us.most_common(6)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--cell", default="lstm", choices=sorted(CELLS))
    p.add_argument("--ref", default="cuda", help="cuda, cpu or none")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--ksplit", default="", help='PYTORCH_OCL_RNN_KSPLIT values for the fused rows, e.g. "1;2;4"')
    p.add_argument("--fused-only", action="store_true")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        print(json.dumps(measure(args.ref, args.quick, args.iters, args.cell)))
        return
    ref_ms = None
    if args.ref != "none":
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        cmd = [sys.executable, os.path.abspath(__file__), "--child", "--ref", args.ref, "--iters", str(args.iters),
               "--cell", args.cell]
        out = subprocess.run(cmd + ["--quick"] * args.quick, env=env, stdout=subprocess.PIPE, text=True, check=True)
        ref_ms = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{args.ref} (TF32 off): {ref_ms:.2f} ms per training step")
    common.import_backend()
    rows = [("1", ks, f"fused steps, KSPLIT {ks or 'default'}") for ks in args.ksplit.split(";")]
    if not args.fused_only:
        rows.append(("0", "", "GEMM + cell per step"))
    fused_var = f"PYTORCH_OCL_{args.cell.upper()}_FUSED"
    for fused, ks, label in rows:
        os.environ[fused_var] = fused  # both read per call
        os.environ["PYTORCH_OCL_RNN_KSPLIT"] = ks
        ms = measure(args.device, args.quick, args.iters, args.cell)
        n, device_ms, top = launches(make_step(args.device, args.quick, args.cell))
        ratio = f", {ref_ms / ms:.2f} of {args.ref}" if ref_ms else ""
        print(f"ocl {label} ({fused_var}={fused}): {ms:.2f} ms per training step{ratio}; "
              f"{n} launches per step, {device_ms:.2f} ms of kernels; most (kernel, launches, ms): {top}")


if __name__ == "__main__":
    main()
