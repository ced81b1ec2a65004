"""Does the OpenCL compiler build programs in parallel across processes? The sources a cold start built
(dumped by PYTORCH_OCL_TRACE_BUILDS=<directory>) are compiled by scripts/cl_binary.cpp, one process per
program: first one after another, then all at once with --procs at a time, in threads of one process too
when --threads is given (one process, several threads: what parallel_builds does today).

    python3 benchmarks/build_processes.py DIR [--count 16] [--procs 16]

NVIDIA's OpenCL compiler serializes concurrent builds inside one process; this measures whether separate
processes escape that (a pool of build processes would then make tuning's candidate builds parallel).
"""
import argparse
import concurrent.futures as cf
import os
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_tool(out_dir):
    exe = os.path.join(out_dir, "cl_binary")
    subprocess.run(["g++", "-O1", "-o", exe, os.path.join(ROOT, "scripts", "cl_binary.cpp"), "-lOpenCL"], check=True)
    return exe


def build(exe, path, out_dir, tag):
    with open(path) as f:
        text = f.read()
    first = text.split("\n", 1)[0]
    opts = first.split("options:", 1)[1].strip() if first.startswith("// options:") else ""
    # A define of its own per run: no compiler cache (PoCL's, NVIDIA's) can answer from an earlier build.
    path = os.path.join(out_dir, f"{tag}_{os.path.basename(path)}")
    with open(path, "w") as f:
        f.write(f"#define BUILD_PROBE_{tag} 1\n" + text)
    t0 = time.perf_counter()
    proc = subprocess.run([exe, path, os.path.join(out_dir, os.path.basename(path) + ".bin"), opts],
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{path}: build failed\n{proc.stderr[-2000:]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--count", type=int, default=16, help="the largest COUNT sources are built")
    ap.add_argument("--procs", type=int, default=16)
    args = ap.parse_args()
    files = sorted((os.path.join(args.dir, f) for f in os.listdir(args.dir) if f.endswith(".cl")),
                   key=os.path.getsize, reverse=True)[:args.count]
    with tempfile.TemporaryDirectory() as tmp:
        exe = compile_tool(tmp)
        build(exe, files[-1], tmp, "warmup")  # driver start-up paid once before timing
        t0 = time.perf_counter()
        each = [build(exe, f, tmp, "serial") for f in files]
        serial = time.perf_counter() - t0
        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(args.procs) as pool:
            list(pool.map(lambda f: build(exe, f, tmp, "parallel"), files))
        parallel = time.perf_counter() - t0
    print(f"{len(files)} programs ({sum(map(os.path.getsize, files)) // 1024} KiB of source): one process after another "
          f"{serial:.1f} s (each {min(each):.2f}-{max(each):.2f} s, process start included); {args.procs} processes at "
          f"once {parallel:.1f} s; speed-up {serial / parallel:.1f}x")


if __name__ == "__main__":
    main()
