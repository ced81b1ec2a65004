"""Times the fused attention kernels on `ocl` under several tile layouts, in one process.

    python3 benchmarks/attention_layouts.py [--fwd "64,32,64,8;64,32,32,8;0"] [--bwd "32,16,128;..."]
                                            [--bwd-tiled "0;1;dkdv;dkdv=32,32,16;dkdv=16,64,8,split"]
                                            [--mma "default;0;8,16,0"] [--mma-bwd "dkdv=4,16,split"]
                                            [--onepass "1;0"] [--dtype bfloat16]
                                            [--cases "8,12,1024,64,1;8,12,2048,128,1"] [--out results/layouts.md]

The layouts are the values of PYTORCH_OCL_ATTN_TILED (the register-tiled forward: "BQ,BK,KC,NTC", or
"0" for the row kernel), PYTORCH_OCL_ATTN_BWD (the backward's row kernels: "ELEMS,BC,THREADS") and
PYTORCH_OCL_ATTN_BWD_TILED (the backward's passes on register tiles: "1" both, "BQ,BK,NTC" the dq
pass on that tile, or parts joined by '+': "dq", "dkdv", "dq=BQ,BK,NTC", "dkdv=BQ,BK,NTC[,split]";
"0" off; see dlprim/src/attention.cpp), read by the library on every call; --mma times fwd+bwd under values
of PYTORCH_OCL_ATTN_MMA (the matrix engine, "default" = unset: on where the device has it; "0" the FMA
kernels; "NW,BKT,PREFETCH"), --mma-bwd under values of PYTORCH_OCL_ATTN_MMA_BWD (the engine's backward passes'
layouts: dlprim/src/attention_mma.cpp), --onepass under values of PYTORCH_OCL_ATTN_BWD_ONEPASS (the engine's backward in
one kernel, "1", or two passes, "0"; the engine on), the other layouts run with it off. Prints the median
forward (and forward+backward) ms of each (case, layout) and each value's error against the default
layout's output, so a faster layout that is wrong shows up, and the device time of each attention
kernel of one call (pytorch_ocl.profiler, e.g. attention_backward_dkdv_tiled), so the dk/dv pass's
layouts can be compared without the rest of the backward.
"""
import argparse
import os

import torch
import torch.nn.functional as F
from tqdm import tqdm

import common
import pytorch_ocl

DEFAULT_CASES = "8,12,1024,64,1;8,12,1024,64,0;8,12,2048,128,1;4,16,4096,64,1"


def parse(spec, n):
    rows = [tuple(int(x) for x in part.split(",")) for part in spec.split(";") if part]
    for r in rows:
        assert len(r) == n, f"expected {n} numbers in {r}"
    return rows


def kernel_times(fn):
    """'name ms, ...' of the attention kernels one call of fn launches (device times, profiler events)."""
    with pytorch_ocl.profiler.profile() as prof:
        fn()
        torch.ocl.synchronize()
    rows = [r for r in prof.summary() if r["kernel"].startswith("attention_")]
    return ", ".join(f"{r['kernel'][len('attention_'):]} {r['total_us'] / 1e3:.3f}" for r in rows)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--fwd", default="default;0;64,32,64,8;64,64,16,8;32,32,64,8;64,32,32,8;128,32,32,16")
    p.add_argument("--bwd", default="", help="backward layouts (fwd+bwd is timed only when given)")
    p.add_argument("--bwd-tiled", default="",
                   help="tiled backward layouts, e.g. '0;1;dkdv;dkdv=32,32,16;dkdv=16,64,8,split' (fwd+bwd timed)")
    p.add_argument("--mma", default="", help="PYTORCH_OCL_ATTN_MMA values, fwd+bwd timed (default = unset)")
    p.add_argument("--mma-bwd", default="",
                   help="PYTORCH_OCL_ATTN_MMA_BWD values (engine on; the backward passes' layouts, e.g. "
                        "'dkdv=4,16,split+dq=8,16,split'), fwd+bwd timed")
    p.add_argument("--onepass", default="", help="PYTORCH_OCL_ATTN_BWD_ONEPASS values (engine on), fwd+bwd timed")
    p.add_argument("--dropout", type=float, default=0.0,
                   help="dropout_p of the timed calls (BERT / GPT-2 train with 0.1; the diff column is then noise)")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--cases", default=DEFAULT_CASES, help="B,H,L,D,causal;...")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", default="results/attention_layouts.md")
    args = p.parse_args()
    os.environ["PYTORCH_OCL_ATTN_MMA"] = "0"  # the layouts are the FMA kernels'; the engine would take the calls
    dev = args.device
    rows = ["| B | H | L | D | causal | variable | layout | ms | max abs diff vs default | attention kernels (ms) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for B, H, L, D, causal in tqdm(parse(args.cases, 5), desc="cases"):
        g = torch.Generator().manual_seed(0)
        dt = getattr(torch, args.dtype)
        q, k, v = (torch.randn(B, H, L, D, generator=g).to(dev, dt).requires_grad_() for _ in range(3))
        do = torch.randn(B, H, L, D, generator=g).to(dev, dt)

        def fwd():
            with torch.no_grad():
                return F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), dropout_p=args.dropout)

        def fwd_bwd():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal), dropout_p=args.dropout)
            return torch.autograd.grad(o, (q, k, v), do)

        jobs = [("PYTORCH_OCL_ATTN_TILED", lay, fwd) for lay in args.fwd.split(";") if lay]
        jobs += [("PYTORCH_OCL_ATTN_BWD", lay, fwd_bwd) for lay in args.bwd.split(";") if lay]
        jobs += [("PYTORCH_OCL_ATTN_BWD_TILED", lay, fwd_bwd) for lay in args.bwd_tiled.split(";") if lay]
        jobs += [("PYTORCH_OCL_ATTN_MMA", lay, fwd_bwd) for lay in args.mma.split(";") if lay]
        jobs += [("PYTORCH_OCL_ATTN_MMA_BWD", lay, fwd_bwd) for lay in args.mma_bwd.split(";") if lay]
        jobs += [("PYTORCH_OCL_ATTN_BWD_ONEPASS", lay, fwd_bwd) for lay in args.onepass.split(";") if lay]
        ref = {}
        for var, lay, fn in jobs:
            short = var[len("PYTORCH_OCL_ATTN_"):]
            if lay == "default":
                os.environ.pop(var, None)
            else:
                os.environ[var] = lay
            if var in ("PYTORCH_OCL_ATTN_BWD_ONEPASS", "PYTORCH_OCL_ATTN_MMA_BWD"):
                os.environ.pop("PYTORCH_OCL_ATTN_MMA", None)  # the engine's backward
            try:
                out = fn()
                got = out if isinstance(out, torch.Tensor) else torch.cat([t.flatten() for t in out])
                got = got.float().cpu()
                diff = (got - ref[fn]).abs().max().item() if fn in ref else 0.0
                ref.setdefault(fn, got)
                t = common.median_time(fn, dev, args.iters, warmup=2)
                kern = kernel_times(fn)
                line = (f"| {B} | {H} | {L} | {D} | {'yes' if causal else 'no'} | {short} | {lay} | {t * 1e3:.3f} "
                        f"| {diff:.2e} | {kern} |")
            except Exception as e:  # a layout the device cannot run: report it, go on
                line = f"| {B} | {H} | {L} | {D} | {'yes' if causal else 'no'} | {short} | {lay} | failed: {str(e)[:60]} | | |"
            finally:
                os.environ.pop(var, None)
                os.environ["PYTORCH_OCL_ATTN_MMA"] = "0"
            tqdm.write(line)
            rows.append(line)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
