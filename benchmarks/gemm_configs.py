"""Which GEMM tile config wins: each config forced (PYTORCH_OCL_GEMM_CONFIG) in its own child process, timed
on the same shapes, against the reference device in the same run.

    python3 benchmarks/gemm_configs.py --dtype bfloat16 --configs "mma 128x128x32 w2x2 async2;mma 128x128x64 w2x4 local" \
        [--shapes 4096x4096x4096,8192x3072x1024t] [--math exact|tf32] [--ref cuda] [--out results/gemm_configs.md]

A shape is MxNxK, with a trailing `t` for B transposed (nn.Linear's x @ W^T). Cells are TFLOP/s (median of
up to 20 runs after a warm-up) and, in parentheses, reference time / config time. A config that does not fit
the product's kind is ignored by the library, so its row repeats the default's kernel: the `kernel` column shows
what ran.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

import common

CHILD = r"""
import json, statistics, sys, time, torch
args = json.loads(sys.argv[1])
dev = args["device"]
if dev.startswith("ocl"):
    import pytorch_ocl
dtype = getattr(torch, args["dtype"])
if args["math"] == "tf32":
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.matmul.allow_tf32 = True
else:
    torch.backends.cuda.matmul.allow_tf32 = False
def sync():
    (torch.ocl.synchronize() if dev.startswith("ocl") else torch.cuda.synchronize() if dev.startswith("cuda") else None)
out = {}
for shape in args["shapes"]:
    t = shape.endswith("t")
    M, N, K = (int(v) for v in shape.rstrip("t").split("x"))
    a = torch.randn(M, K, dtype=dtype, device=dev)
    b = torch.randn(N, K, dtype=dtype, device=dev).t() if t else torch.randn(K, N, dtype=dtype, device=dev)
    torch.mm(a, b); sync()
    times = []
    for _ in range(20):
        s = time.perf_counter(); torch.mm(a, b); sync(); times.append(time.perf_counter() - s)
        if sum(times) > 2.0:
            break
    kernel = pytorch_ocl.ops.gemm_plan(M, N, K, dtype=dtype, trans_b=t) if dev.startswith("ocl") else ""
    out[shape] = (statistics.median(times), kernel)
print("RESULT " + json.dumps(out))
"""


def run_child(device, dtype, math, shapes, config=None):
    env = dict(os.environ)
    env.pop("PYTORCH_OCL_GEMM_CONFIG", None)
    if config:
        env["PYTORCH_OCL_GEMM_CONFIG"] = config
    if not device.startswith("ocl"):
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # a cuda reference must not load ocl (torch #161129)
    args = json.dumps({"device": device, "dtype": dtype, "math": math, "shapes": shapes})
    p = subprocess.run([sys.executable, "-c", CHILD, args], env=env, capture_output=True, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"child for {config or device} failed:\n{p.stderr[-2000:]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", required=True, help="';'-separated tile configs, '' = the library's choice")
    parser.add_argument("--shapes", default="4096x4096x4096,8192x3072x1024t")
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "float16", "bfloat16"])
    parser.add_argument("--math", default="exact", choices=["exact", "tf32"])
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda")
    parser.add_argument("--out", default="results/gemm_configs.md")
    args = parser.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s]
    flops = {s: 2.0 * eval(s.rstrip("t").replace("x", "*")) for s in shapes}
    ref = run_child(args.ref, args.dtype, args.math, shapes) if args.ref else {}
    rows = []
    for config in args.configs.split(";"):
        try:
            res = run_child(args.device, args.dtype, args.math, shapes, config.strip())
        except RuntimeError as e:
            print(e, file=sys.stderr)
            rows.append([config or "(default)"] + ["failed"] * len(shapes) + [""])
            continue
        cells = []
        for s in shapes:
            t, _ = res[s]
            ratio = f" ({ref[s][0] / t:.2f})" if s in ref else ""
            cells.append(f"{flops[s] / t / 1e12:.1f}{ratio}")
        kernels = sorted({res[s][1] for s in shapes})
        rows.append([config or "(default)"] + cells + ["; ".join(kernels)])
        print(rows[-1], flush=True)
    pre = [f"{args.dtype}, math {args.math}, device {args.device}; reference {args.ref}: "
           + ", ".join(f"{s} {flops[s] / ref[s][0] / 1e12:.1f} TFLOP/s" for s in shapes if s in ref)]
    print(common.write_markdown(args.out, "GEMM tile configs", pre, ["config"] + shapes + ["kernel"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
