"""Cold and warm start: the first training step of a network with an empty kernel cache, then in a new
process on the cache that run filled, against the steady-state step.

    python3 benchmarks/cold_start.py [--nets resnet18,gpt,gpt2] [--device ocl:0] [--out results/cold_start.md]

Each run is its own process (the in-memory caches are per process) with PYTORCH_OCL_CACHE_DIR (and, on PoCL,
POCL_CACHE_DIR, PoCL's own kernel cache) pointing into a fresh temporary directory: "cold" builds and tunes
everything, "warm" is a second process on the same directory. Per run: the first step's seconds, the median
of 3 later steps, program builds (and the seconds inside clBuildProgram, summed over the build threads), of them
those on the critical path (on the thread of the op that needed the program, or its tuning's build threads) and
those in the background (speculative builds of programs needed soon; "used": of the programs built or loaded in
the background, those an op then asked for), binaries loaded from disk (and their seconds), shape classes timed
by the tuner (of them, in the first step), and deferred tunings (PYTORCH_OCL_TUNE_DEFERRED: shape classes that
ran on the default config while their candidates built in the background; in parentheses those tuned by the end
of the later steps). The first step's counts are also given alone ("step crit/bg"): builds of model setup excluded; "step waited": the
seconds the step's own thread waited for single programs (built, loaded or built meanwhile by another thread) and
for tunings' candidates built side by side (its critical path in builds; the rest of the first step is running,
tunings' timings and host work).
Networks: resnet18 and gpt (pytorch_ocl._warmup_models: torch.nn only), gpt2 (transformers' GPT2LMHeadModel,
2 layers, hidden 64, batch 2 x 64, when transformers imports), gpt2small (GPT-2 small, batch 8 x 1024).
With PYTORCH_OCL_TRACE_BUILDS=1 each run also lists its slowest program builds and tunings and its build seconds by
kernel (in process or a tuning's, against in the background); with
COLD_START_PROFILE=1 the first step runs under torch.profiler and its busiest ops are printed. "model setup s": making
the model and moving it to the device; "first step s" is the step alone. PYTORCH_OCL_BUILD_THREADS sets the build
threads of the runs (unset: the default).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import common


def make_step(name, device):
    from pytorch_ocl import _warmup_models as wm

    if name == "resnet18":
        return wm.resnet18_step(device)
    if name == "gpt":
        return wm.gpt_step(device)
    if name in ("gpt2", "gpt2small"):
        import torch
        from transformers import GPT2Config, GPT2LMHeadModel

        if name == "gpt2":
            cfg = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=1000, n_positions=1024, attn_implementation="sdpa")
            shape = (2, 64)
        else:  # GPT-2 small as transformer.py trains it: 12 layers, hidden 768, batch 8 x 1024
            cfg = GPT2Config(attn_implementation="sdpa")
            shape = (8, 1024)
        torch.manual_seed(0)
        model = GPT2LMHeadModel(cfg).to(device).train()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        ids = torch.randint(3, 1000, shape, generator=torch.Generator().manual_seed(1)).to(device)

        def step():
            opt.zero_grad(set_to_none=True)
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()

        return step
    raise SystemExit(f"unknown network {name!r}")


def child(name, device):
    import torch

    common.import_backend()
    import pytorch_ocl

    if name.startswith("gpt2"):
        import transformers  # noqa: F401  (its import, seconds, is not the backend's cold start)
    t0 = time.perf_counter()
    step = make_step(name, device)
    common.synchronize(device)
    setup = time.perf_counter() - t0
    before = pytorch_ocl.program_cache_stats()
    tune_before = pytorch_ocl.ops.autotune_stats()
    t0 = time.perf_counter()
    if os.environ.get("COLD_START_PROFILE"):  # where a first step's host time goes, by op (stderr)
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step()
            common.synchronize(device)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20), file=sys.stderr)
    else:
        step()
        common.synchronize(device)
    first = time.perf_counter() - t0
    after = pytorch_ocl.program_cache_stats()
    tune_after = pytorch_ocl.ops.autotune_stats()
    step_counts = {f"step_{k}": after[k] - before[k] for k in ("critical_builds", "background_builds",
                                                               "wait_program_seconds", "wait_parallel_seconds")}
    step_counts["step_tuned"] = tune_after.get("timed", 0) - tune_before.get("timed", 0)
    steady = statistics.median(common.time_it(step, device, 3, warmup=0))
    out = dict(first_s=first, setup_s=setup, steady_s=steady, **step_counts,
               **pytorch_ocl.program_cache_stats())
    tune = pytorch_ocl.ops.autotune_stats()
    out["tuned"] = tune.get("timed", 0)
    # Deferred tunings (PYTORCH_OCL_TUNE_DEFERRED): classes that ran on the default config while their candidates
    # built in the background, and of those, the ones tuned by the end of the 3 later steps.
    out["deferred"], out["deferred_tuned"] = tune.get("deferred", 0), tune.get("deferred_tuned", 0)
    print(json.dumps(out))


def run(name, device, cache, threads):
    env = dict(os.environ, PYTORCH_OCL_CACHE_DIR=os.path.join(cache, "ocl"), POCL_CACHE_DIR=os.path.join(cache, "pocl"))
    if threads:
        env["PYTORCH_OCL_BUILD_THREADS"] = threads
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--device", device], env=env,
                          capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{name}: child failed\n{proc.stderr[-3000:]}")
    if os.environ.get("COLD_START_PROFILE"):
        print("\n".join(line for line in proc.stderr.splitlines() if not line.startswith("[pytorch_ocl ")))
    trace = [line for line in proc.stderr.splitlines() if line.startswith("[pytorch_ocl ")]
    if trace:  # PYTORCH_OCL_TRACE_BUILDS=1: the slowest builds and tunings of this run
        def seconds(line):
            return float(line.split("]", 1)[1].split()[0])
        bg = sum("in the background" in line for line in trace)
        print(f"{len(trace)} traced builds/tunings ({bg} builds in the background), {sum(map(seconds, trace)):.1f} s in all; "
              "the slowest:")
        for line in sorted(trace, key=seconds, reverse=True)[:25]:
            print("   ", line[:300])
        # by the program's kernel (build traces name it): where a cold step's build seconds go; "in process or
        # tuning" builds are on the step's path (a tuning's candidates build side by side in the build processes)
        by_kernel = {}
        for line in trace:
            if line.startswith("[pytorch_ocl build]"):
                kernel = line.split(" s ", 1)[1].split()[0]
                row = by_kernel.setdefault(kernel, [0, 0.0, 0, 0.0])
                bg = 2 if "in the background" in line else 0
                row[bg] += 1
                row[bg + 1] += seconds(line)
        print("builds by kernel, in process or tuning (count, s) / in the background (count, s):")
        for kernel, (n, s, nb, sb) in sorted(by_kernel.items(), key=lambda kv: -kv[1][1])[:20]:
            print(f"    {kernel}: {n}, {s:.2f} s / {nb}, {sb:.2f} s")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nets", default="resnet18,gpt,gpt2")
    ap.add_argument("--device", default="ocl:0")
    ap.add_argument("--out", default=None)
    ap.add_argument("--threads", default="",
                    help="comma-separated PYTORCH_OCL_BUILD_THREADS values to compare, e.g. 1,16 (default: as set)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.child, args.device)
    lines = ["| network | build threads | run | model setup s | first step s | steady step s | first - steady s | builds | critical | background (used) "
             "| step crit/bg | step waited: programs / tunings' builds s | build s (all threads) | disk hits | load s "
             "| tuned (in step) | deferred (tuned later) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    settings = args.threads.split(",") if args.threads else [os.environ.get("PYTORCH_OCL_BUILD_THREADS", "")]
    for name in args.nets.split(","):
        for threads in settings:  # alternated per network: a shared machine's load hits each setting alike
            with tempfile.TemporaryDirectory(prefix="ocl_cold_") as cache:
                for label in ("cold", "warm"):
                    r = run(name, args.device, cache, threads)
                    lines.append(f"| {name} | {threads or 'default'} | {label} | {r['setup_s']:.2f} | {r['first_s']:.2f} | {r['steady_s']:.3f} | "
                                 f"{r['first_s'] - r['steady_s']:.2f} | {r['builds']} | {r['critical_builds']} | "
                                 f"{r['background_builds']} ({r['background_used']}) | "
                                 f"{r['step_critical_builds']}/{r['step_background_builds']} | "
                                 f"{r['step_wait_program_seconds']:.2f} / {r['step_wait_parallel_seconds']:.2f} | "
                                 f"{r['build_seconds']:.1f} | "
                                 f"{r['disk_hits']} | {r['load_seconds']:.2f} | {r['tuned']} ({r['step_tuned']}) | "
                                 f"{r['deferred']} ({r['deferred_tuned']}) |")
                    print(lines[-1], flush=True)
    common.emit("\n".join(lines) + "\n", args.out)


if __name__ == "__main__":
    main()
