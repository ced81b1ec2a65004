"""Elementwise bandwidth of `ocl` against a reference device, in the same process.

    python3 benchmarks/pointwise.py [--device ocl:0] [--ref cpu|cuda] [--quick] [--out results/pointwise.md]

Each case is one row of CASES: a name, a builder of the operands on a device, the op, and the
bytes it must move (inputs read once + output written once). GB/s = bytes / median time. The
ratio column is ocl's bandwidth over the reference's (> 1: ocl is better). Add a row to CASES
to benchmark another op (reductions add theirs here too).
"""
import argparse
import os
import sys

import torch

import common

common.import_backend()

M = 1 << 20


def _rand(device, *shape, dtype=torch.float32):
    return torch.rand(*shape, dtype=dtype).to(device)


def case(name, build, fn, nbytes):
    """A benchmark row: build(device, n) -> operands; fn(*operands); nbytes(n) -> bytes moved."""
    return {"name": name, "build": build, "fn": fn, "bytes": nbytes}


# n: the number of output elements (64M floats by default, 4M with --quick).
CASES = [
    case("add contiguous", lambda d, n: (_rand(d, n), _rand(d, n), torch.empty(n, device=d)),
         lambda a, b, out: torch.add(a, b, out=out), lambda n: 3 * 4 * n),
    case("add broadcast row", lambda d, n: (_rand(d, n // 1024, 1024), _rand(d, 1, 1024),
                                            torch.empty(n // 1024, 1024, device=d)),
         lambda a, b, out: torch.add(a, b, out=out), lambda n: 2 * 4 * n),
    case("add transposed", lambda d, n: (_rand(d, 1024, n // 1024).t(), _rand(d, n // 1024, 1024),
                                         torch.empty(n // 1024, 1024, device=d)),
         lambda a, b, out: torch.add(a, b, out=out), lambda n: 3 * 4 * n),
    case("add float16 contiguous", lambda d, n: (_rand(d, n, dtype=torch.float16), _rand(d, n, dtype=torch.float16),
                                                 torch.empty(n, device=d, dtype=torch.float16)),
         lambda a, b, out: torch.add(a, b, out=out), lambda n: 3 * 2 * n),
    case("mul scalar in-place", lambda d, n: (_rand(d, n),), lambda a: a.mul_(1.0001), lambda n: 2 * 4 * n),
    case("gelu", lambda d, n: (_rand(d, n), torch.empty(n, device=d)),
         lambda a, out: torch.ops.aten.gelu.out(a, out=out),
         lambda n: 2 * 4 * n),
]


def measure(c, device, n, iters):
    operands = c["build"](device, n)
    seconds = common.median_time(lambda: c["fn"](*operands), device, iters, warmup=2)
    return c["bytes"](n) / seconds / 1e9


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0", help="the ocl device (default: ocl:0)")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="reference device (default: cuda if available, else cpu)")
    parser.add_argument("--quick", action="store_true", help="4M elements instead of 64M (CI smoke run)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--only", default="", help="comma-separated substrings of case names to run")
    parser.add_argument("--out", default="results/pointwise.md", help="markdown output; the PNG goes next to it")
    args = parser.parse_args(argv)
    if not torch.ocl.is_available():
        import pytorch_ocl

        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1
    n = (4 if args.quick else 64) * M
    cases = [c for c in CASES if not args.only or any(s in c["name"] for s in args.only.split(","))]

    rows, labels, ratios = [], [], []
    for c in cases:
        o = measure(c, args.device, n, args.iters)
        r = measure(c, args.ref, n, args.iters)
        ratio = o / r if o and r else None
        rows.append([c["name"], o, r, ratio])
        labels.append(c["name"])
        ratios.append(ratio)
        print(f"{c['name']}: {o:.1f} vs {r:.1f} GB/s", file=sys.stderr)

    header = ["case (GB/s)", args.device, args.ref, "ratio (>1: ocl better)"]
    print(common.markdown_table(header, rows))
    preamble = [
        f"ocl: {common.device_description(args.device)}",
        f"ref: {common.device_description(args.ref)}",
        f"torch {torch.__version__}, {n // M}M elements, median of {args.iters} runs",
        "GB/s counts each input read once and the output written once",
    ]
    md = common.write_markdown(args.out, "Elementwise bandwidth", preamble, header, rows)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             "ocl / reference bandwidth", "ratio")
    print(f"wrote {md}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
