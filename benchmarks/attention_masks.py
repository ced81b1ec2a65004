"""Times SDPA on `ocl` with no mask, an all-ones bool mask and a padding mask, mask block flags on and off.

    python3 benchmarks/attention_masks.py [--shape 8,12,1024,64] [--dtype float32] [--iters 10]
                                          [--out results/attention_masks.md]

Masks ([B, 1, 1, S] bool, as transformers passes a padding mask): "ones" (every key visible: what compiled BERT
hands SDPA for an unpadded batch), "padding" (the last half of the keys masked in the second half of the batch).
"flags on" is the default (dlprim/kernels/attention_mask_blocks.cl: all-masked tiles skipped, no mask read in
all-visible ones); "flags off" sets PYTORCH_OCL_ATTN_MASK_BLOCKS=0 (every block mixed: the kernels read the
mask everywhere, as before the flags), read by the library on every call. Prints the median forward and
forward+backward ms and each run's largest difference from the flags-on output (0: bit-identical).
"""
import argparse
import os

import torch
import torch.nn.functional as F

import common

common.import_backend()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--shape", default="8,12,1024,64", help="B,H,L,D")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", default="results/attention_masks.md")
    args = p.parse_args()
    B, H, L, D = (int(x) for x in args.shape.split(","))
    dev, dt = args.device, getattr(torch, args.dtype)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(B, H, L, D, generator=g).to(dev, dt).requires_grad_() for _ in range(3))
    do = torch.randn(B, H, L, D, generator=g).to(dev, dt)
    ones = torch.ones(B, 1, 1, L, dtype=torch.bool, device=dev)
    pad = torch.ones(B, 1, 1, L, dtype=torch.bool)
    pad[B // 2:, ..., L // 2:] = False
    masks = {"none": None, "ones": ones, "padding": pad.to(dev)}
    rows = [f"SDPA B{B} H{H} L{L} D{D} {args.dtype} on {common.device_description(dev)}", "",
            "| mask | flags | fwd ms | fwd+bwd ms | max diff vs flags on |", "|---|---|---|---|---|"]
    for name, m in masks.items():
        ref = None
        for flags in (["on", "off"] if m is not None else ["-"]):
            os.environ.pop("PYTORCH_OCL_ATTN_MASK_BLOCKS", None)
            if flags == "off":
                os.environ["PYTORCH_OCL_ATTN_MASK_BLOCKS"] = "0"

            def fwd():
                with torch.no_grad():
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

            def fwd_bwd():
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=m)
                return (o,) + torch.autograd.grad(o, (q, k, v), do)

            out = torch.cat([t.detach().float().flatten() for t in fwd_bwd()]).cpu()
            diff = 0.0 if ref is None else (out - ref).abs().max().item()
            ref = out if ref is None else ref
            tf = common.median_time(fwd, dev, args.iters, warmup=2)
            tb = common.median_time(fwd_bwd, dev, args.iters, warmup=2)
            line = f"| {name} | {flags} | {tf * 1e3:.3f} | {tb * 1e3:.3f} | {diff:.2e} |"
            print(line, flush=True)
            rows.append(line)
    os.environ.pop("PYTORCH_OCL_ATTN_MASK_BLOCKS", None)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
