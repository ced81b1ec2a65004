"""GEMM throughput of `ocl` against a reference device, in the same process.

    python3 benchmarks/gemm.py [--device ocl:0] [--ref cuda|cpu] [--dtype float32] [--quick]
                               [--math exact|tf32|3xtf32] [--peak-tflops 67] [--out results/gemm.md]

Square sizes (64 .. 8192) and typical network shapes (transformer projections and MLPs,
classifier heads, attention batched products), all in GFLOP/s (2*M*N*K*batch / time), median
of several runs after a warm-up that also triggers the one-time autotuning of each shape class.
The `kernel` column is the config the ocl GEMM picked (pytorch_ocl.ops.gemm_plan). float32 --math:
exact (default) compares full fp32 with full fp32 (cuda TF32 off); tf32 sets
torch.set_float32_matmul_precision('high') for both (TF32 on the matrix engines); 3xtf32 runs ocl's
fp32-accurate three-product TF32 kernel (PYTORCH_OCL_3XTF32=1) against cuda with TF32 off.
float16/bfloat16 run on the matrix engines on both sides where the devices have them. Sizes whose reference run would exceed --max-seconds
are skipped (useful with a CPU reference).
"""
import argparse
import math
import os
import statistics
import sys
import time

import torch

import common

common.import_backend()

import pytorch_ocl  # noqa: E402

SQUARE = [64, 128, 256, 512, 1024, 2048, 4096, 8192]
# (label, batch, M, N, K, transpose B) — B transposed is the x @ W^T of nn.Linear.
NETWORK = [
    ("bert qkv proj 8192x3072x1024", 1, 8192, 3072, 1024, True),
    ("bert mlp up 8192x4096x1024", 1, 8192, 4096, 1024, True),
    ("bert mlp down 8192x1024x4096", 1, 8192, 1024, 4096, True),
    ("bert wgrad 1024x4096x8192", 1, 1024, 4096, 8192, False),
    ("attn scores 96x(512x512x64)", 96, 512, 512, 64, True),
    ("attn values 96x(512x64x512)", 96, 512, 64, 512, False),
    ("resnet fc 32x1000x2048", 1, 32, 1000, 2048, True),
    ("lstm gates 64x4096x1024", 1, 64, 4096, 1024, True),
    ("linear batch1 1x4096x4096", 1, 1, 4096, 4096, True),
    ("skinny 4096x64x4096", 1, 4096, 64, 4096, False),
]
QUICK_SQUARE = [64, 128, 256, 512, 1024]
QUICK_NETWORK = [
    ("mlp 1024x1024x512", 1, 1024, 1024, 512, True),
    ("attn 16x(128x128x64)", 16, 128, 128, 64, True),
    ("fc 32x1000x512", 1, 32, 1000, 512, True),
    ("linear batch1 1x1024x1024", 1, 1, 1024, 1024, True),
]


def operands(batch, M, N, K, trans_b, dtype, device):
    a = torch.randn(batch, M, K, dtype=dtype, device=device)
    b = torch.randn(batch, N, K, dtype=dtype, device=device).transpose(1, 2) if trans_b else \
        torch.randn(batch, K, N, dtype=dtype, device=device)
    if batch == 1:
        a, b = a[0], b[0]
    return a, b


def measure(batch, M, N, K, trans_b, dtype, device, budget_s):
    """Median seconds per product, or None when one run alone exceeds the budget."""
    a, b = operands(batch, M, N, K, trans_b, dtype, device)
    f = (lambda: torch.bmm(a, b)) if batch > 1 else (lambda: torch.mm(a, b))
    f()  # first call: program build and autotuning
    common.synchronize(device)
    start = time.perf_counter()
    f()
    common.synchronize(device)
    once = time.perf_counter() - start
    if once > budget_s:
        return None
    iters = max(3, min(50, int(0.5 / max(once, 1e-6))))
    return statistics.median(common.time_it(f, device, iters, warmup=1))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16", "float64"])
    parser.add_argument("--quick", action="store_true", help="small sizes for a CI smoke run")
    parser.add_argument("--only", default="",
                        help="comma-separated label substrings: run only the shapes whose label contains one")
    parser.add_argument("--math", default="exact", choices=["exact", "tf32", "3xtf32"],
                        help="how float32 products may use matrix engines (see above)")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the ocl device's fp32 peak, for a %% of peak column (H100/H200 SXM: 67)")
    parser.add_argument("--max-seconds", type=float, default=5.0, help="skip sizes slower than this per run")
    parser.add_argument("--out", default="results/gemm.md")
    args = parser.parse_args(argv)
    if not torch.ocl.is_available():
        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1
    if args.math == "tf32":
        torch.set_float32_matmul_precision("high")  # TF32 on both devices
    else:
        torch.set_float32_matmul_precision("highest")  # the reference in full fp32
    if args.math == "3xtf32":
        os.environ["PYTORCH_OCL_3XTF32"] = "1"
    dtype = getattr(torch, args.dtype)
    square = QUICK_SQUARE if args.quick else SQUARE
    network = QUICK_NETWORK if args.quick else NETWORK
    cases = [(f"square {n}", 1, n, n, n, False) for n in square] + list(network)
    if args.only:
        cases = [c for c in cases if any(w and (w == c[0] or w in c[0] and not w.startswith("square"))
                                         for w in args.only.split(","))]

    rows, labels, ratios = [], [], []
    skip_ref = skip_ocl = False
    for label, batch, M, N, K, tb in cases:
        flop = 2.0 * batch * M * N * K
        # Square sizes grow: once one is too slow the larger ones are too (network shapes are each tried).
        square = label.startswith("square")
        t_ocl = None if square and skip_ocl else measure(batch, M, N, K, tb, dtype, args.device, args.max_seconds)
        t_ref = None if square and skip_ref else measure(batch, M, N, K, tb, dtype, args.ref, args.max_seconds)
        if square:
            skip_ocl, skip_ref = skip_ocl or t_ocl is None, skip_ref or t_ref is None
        g_ocl = flop / t_ocl / 1e9 if t_ocl else None
        g_ref = flop / t_ref / 1e9 if t_ref else None
        ratio = g_ocl / g_ref if g_ocl and g_ref else None
        plan = pytorch_ocl.ops.gemm_plan(M, N, K, trans_b=tb, batch=batch, dtype=dtype, device=args.device)
        row = [label, g_ocl, g_ref, ratio]
        if args.peak_tflops:
            row.append(100.0 * g_ocl / (args.peak_tflops * 1e3) if g_ocl else None)
        rows.append(row + [plan])
        labels.append(label.split(" ")[0] + " " + label.split(" ")[-1])
        ratios.append(ratio)
        print(" | ".join(common.fmt(c) for c in rows[-1]), file=sys.stderr)

    header = ["shape", f"{args.device} GFLOP/s", f"{args.ref} GFLOP/s", "ocl/ref"]
    if args.peak_tflops:
        header.append("% of peak")
    header.append("ocl kernel")
    geo = [r for r in ratios if r]
    summary = f"geomean ocl/ref over {len(geo)} shapes: {math.exp(sum(map(math.log, geo)) / len(geo)):.3f}" if geo else ""
    print(common.markdown_table(header, rows))
    print(summary)
    preamble = [
        f"ocl: {common.device_description(args.device)}",
        f"ref: {common.device_description(args.ref)}"
        + (f" (TF32 {'on' if args.math == 'tf32' else 'off'})" if torch.device(args.ref).type == "cuda" else ""),
        f"torch {torch.__version__}, dtype {args.dtype}, math {args.math}{', --quick' if args.quick else ''}, "
        f"PYTORCH_OCL_AUTOTUNE={os.environ.get('PYTORCH_OCL_AUTOTUNE', '1')}",
        summary,
    ]
    notes = ["GFLOP/s = 2*M*N*K*batch / median time; the first call of each shape (build + autotune) is not timed",
             "ocl kernel: the path/config chosen for the shape (tiled tile MxNxK, work-group, vector widths, "
             "local or global staging, split-K count; small / dot paths for skinny shapes)"]
    md = common.write_markdown(args.out, f"GEMM throughput ({args.dtype}, {args.math})", preamble, header, rows, notes)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             f"GEMM {args.device} vs {args.ref} (>1: ocl faster)", "GFLOP/s ratio")
    print(f"\nwrote {md}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
