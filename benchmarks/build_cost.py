"""What a cold start's program builds cost on this device's OpenCL compiler, per program and per kernel: would
building only the kernel an op needs first (a program holds several: an elementwise op's contiguous, 4-wide,
32-bit and 64-bit strided variants) make the builds on a first step's critical path cheaper?

    python3 benchmarks/build_cost.py [--net gpt2] [--device ocl:0] [--limit 40] [--out results/build_cost.md]

1. A child process runs the network's training step (cold_start.py's networks) on an empty kernel cache with
   PYTORCH_OCL_TRACE_BUILDS pointing at a directory: every program it builds is written there with its options.
2. Another child, on another empty kernel cache and with the NVIDIA driver's own cache off (CUDA_CACHE_DISABLE=1),
   builds each program whole, then each of its kernels alone (the other kernels' text removed), one after another
   (as the ops' own builds run), timing each build with `pytorch_ocl.Kernel.build`.

Prints one row per program (its kernels, the whole build, each kernel alone) and totals per program family. A
kernel alone that builds in a fraction of the whole program's time says the builds on the critical path could
shrink by building the variant that is used and the rest later in the background.
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

import common
from tqdm import tqdm

STEP = """
import sys, torch
sys.path.insert(0, {bench!r})
from cold_start import make_step
step = make_step({net!r}, {device!r})
step(); step()
torch.ocl.synchronize()
"""

MEASURE = """
import json, sys, time, torch, pytorch_ocl

def build(src, name, options):
    # seconds of the build, and whether the program has the kernel (one under a false #if is compiled out: the
    # program still built, so its time counts for the whole program; a kernel alone that is absent is left out)
    t = time.perf_counter()
    try:
        pytorch_ocl.Kernel(src, name, options).build({device!r})
        return time.perf_counter() - t, True
    except RuntimeError as e:
        if "CL_INVALID_KERNEL_NAME" not in str(e):
            raise
        return time.perf_counter() - t, False

jobs = json.load(open(sys.argv[1]))
# the compiler's one-time start-up goes to a trivial program, not to the first one measured
build("__kernel void warm(__global float* x) {{ x[0] = 1; }}", "warm", "")
for job in jobs:
    row = dict(label=job["label"], kernels=[], single=[])
    try:
        row["whole"] = build(job["source"], job["name"], job["options"])[0]
        for name, src in job["singles"]:
            # another option: a program whose text differs only in comments may be a driver cache hit (PoCL)
            t, present = build(src, name, job["options"] + " -DBUILD_COST_ALONE")
            if present:
                row["kernels"].append(name)
                row["single"].append(t)
    except RuntimeError as e:
        row["error"] = str(e).splitlines()[0][:120]
    print(json.dumps(row), flush=True)
"""


def kernel_spans(src):
    """(name, start, end) of every `__kernel` function: from the keyword to its closing brace. Names given by a
    macro (`#define KERNEL_NAME gemm_tiled_...`) are resolved; end None where a directive sits inside a signature."""
    spans = []
    for m in re.finditer(r"__kernel\b", src):
        v = src.find("void", m.end())
        name = re.match(r"\s*([A-Za-z_]\w*)", src[v + 4:]).group(1)
        d = re.search(r"#define\s+" + re.escape(name) + r"\s+(\w+)", src)
        brace = src.find("{", v)
        if 0 <= src.find("\n#", v) < brace:  # #if / #else inside the signature (gemm_tiled.cl): extent unknown
            spans.append((d.group(1) if d else name, m.start(), None))
            continue
        depth, i = 0, brace
        while i < len(src):
            depth += {"{": 1, "}": -1}.get(src[i], 0)
            if depth == 0:
                break
            i += 1
        spans.append((d.group(1) if d else name, m.start(), i + 1))
    return spans


def jobs_from(dump_dir, limit):
    jobs = []
    for path in sorted(glob.glob(os.path.join(dump_dir, "*.cl")), key=lambda p: int(os.path.basename(p)[:-3])):
        text = open(path).read()
        first, _, src = text.partition("\n")
        options = first.replace("// options:", "").strip()
        spans = kernel_spans(src)
        if not spans:
            continue
        singles = []  # none for a one-kernel program, or one whose kernels' extents are not all known
        splittable = len(spans) > 1 and all(end is not None for _, _, end in spans)
        for name, start, end in spans if splittable else []:
            keep = src
            for other, s, e in reversed(spans):
                if other != name:
                    keep = keep[:s] + keep[e:]
            singles.append((name, keep))
        label = spans[-1][0] + (f" +{len(spans) - 1}" if len(spans) > 1 else "")  # program_label's name
        jobs.append(dict(label=label, name=spans[-1][0], source=src, options=options, singles=singles))
    return jobs[:limit]


def family(label):
    name = label.split()[0]
    for prefix in ("ew_", "red_", "gemm", "attn", "softmax", "layer_norm", "dl_index", "conv"):
        if name.startswith(prefix):
            return prefix.rstrip("_")
    return "other"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--net", default="gpt2", help="a network of benchmarks/cold_start.py (default gpt2)")
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--limit", type=int, default=40, help="programs measured, in build order (default 40)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    bench = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "dump")
        os.makedirs(dump)
        env = dict(os.environ, PYTORCH_OCL_TRACE_BUILDS=dump, PYTORCH_OCL_CACHE_DIR=os.path.join(tmp, "c1"),
                   POCL_CACHE_DIR=os.path.join(tmp, "p1"))
        subprocess.run([sys.executable, "-c", STEP.format(bench=bench, net=args.net, device=args.device)], env=env,
                       check=True, stderr=subprocess.DEVNULL)
        jobs = jobs_from(dump, args.limit)
        with open(os.path.join(tmp, "jobs.json"), "w") as f:
            json.dump(jobs, f)
        env = dict(os.environ, PYTORCH_OCL_CACHE_DIR=os.path.join(tmp, "c2"), POCL_CACHE_DIR=os.path.join(tmp, "p2"),
                   CUDA_CACHE_DISABLE="1")
        env.pop("PYTORCH_OCL_TRACE_BUILDS", None)
        rows = []
        proc = subprocess.Popen([sys.executable, "-c", MEASURE.format(device=args.device),
                                 os.path.join(tmp, "jobs.json")], env=env, stdout=subprocess.PIPE, text=True)
        for line in tqdm(proc.stdout, total=len(jobs), desc="builds", unit="program"):
            rows.append(json.loads(line))
        proc.wait()
    lines = [f"# Program builds of `{args.net}`'s training step, whole and kernel by kernel ({common.device_description(args.device)})",
             "", "| program | kernels built alone | whole s | each kernel alone s | fastest alone / whole |", "|---|---:|---:|---|---:|"]
    fam = {}
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['label']} | {len(r['kernels'])} | error: {r['error']} | | |")
            continue
        single = r["single"] or [r["whole"]]  # not cut: the program is its own one kernel
        each = ", ".join(f"{k} {t:.3f}" for k, t in zip(r["kernels"], r["single"])) or "(not cut)"
        lines.append(f"| {r['label']} | {len(r['kernels']) or '-'} | {r['whole']:.3f} | {each} | "
                     f"{min(single) / r['whole']:.2f} |")
        f = fam.setdefault(family(r["label"]), [0, 0.0, 0.0, 0.0])
        f[0] += 1
        f[1] += r["whole"]
        f[2] += min(single)
        f[3] += max(single)
    lines += ["", "| family | programs | whole s | fastest kernel alone s | slowest kernel alone s |", "|---|---:|---:|---:|---:|"]
    for name, (n, whole, lo, hi) in sorted(fam.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {name} | {n} | {whole:.2f} | {lo:.2f} | {hi:.2f} |")
    common.emit("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
