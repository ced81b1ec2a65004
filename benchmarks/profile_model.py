"""Where a network's training step spends device time: kernels on ocl (OpenCL event profiling) and,
with --ref cuda, CUDA kernels from torch.profiler in a child process that does not load ocl.

    python3 benchmarks/profile_model.py --net mobilenet_v2 [--batch 32] [--ref cuda] [--top 25] [--infer] [--math default]
    python3 benchmarks/profile_model.py --net gpt2|bert [--amp bf16] [--compile] [--quick] [--ref cuda]

Prints the top kernels by total device time for one training step (forward, cross-entropy,
backward, SGD; with --infer one eval-mode forward under no_grad) after warm-up steps, with the sum of all kernel times next to the step's wall time:
a sum well below the wall time means the step is bound by host overhead or idle gaps, not kernels.
For ocl it also names the kernels the device sat idle before (the host was late to launch them:
what ran on the host just before is the suspect) and the aten ops with the most host time.
"""
import argparse
import os
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import common


def constructors(names):
    """benchmarks/models.py's network table, loaded under another name: tests/models.py is `models` there."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models.py")
    spec = importlib.util.spec_from_file_location("bench_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.constructors(names)


TRANSFORMERS = ("gpt2", "bert")  # transformer.py's training steps (GPT-2 small, BERT-base MLM; AdamW)


def transformer_step(args, device):
    """transformer_models.py's GPT-2 / BERT training step at transformer.py's sizes (--quick: its tiny ones),
    under --amp and --compile as there; warmed up like the CNN steps."""
    import transformer_models as tm

    if args.amp:
        tm.set_amp({"bf16": torch.bfloat16, "fp16": torch.float16}[args.amp])
    s = tm.sizes(args.quick)[args.net]
    step = (tm.gpt2_train if args.net == "gpt2" else tm.bert_train)(device, s, args.compile)[2]
    for _ in range(3):
        step()
    common.synchronize(device)
    return step


def make_step(name, device, batch, infer=False, args=None):
    if name in TRANSFORMERS:
        return transformer_step(args, device)
    ctor, size, _ = constructors([name])[name]
    torch.manual_seed(0)
    model = ctor().to(device).train()
    x = torch.randn(batch, 3, size, size, device=device)
    if infer:
        model.eval()

        def forward():
            with torch.no_grad():
                model(x)

        for _ in range(3):
            forward()
        common.synchronize(device)
        return forward
    with torch.no_grad():
        classes = model(x[:2]).shape[1]
    y = torch.randint(0, classes, (batch,), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):  # warm-up: program builds, tuning and optimizer state happen here, not in the profile
        step()
    common.synchronize(device)
    return step


def wall_ms(step, device):
    common.synchronize(device)
    t0 = time.perf_counter()
    step()
    common.synchronize(device)
    return (time.perf_counter() - t0) * 1e3


def profile_ocl(args):
    import pytorch_ocl.profiler

    step = make_step(args.net, args.device, args.batch, args.infer, args)
    wall = wall_ms(step, args.device)
    with pytorch_ocl.profiler.profile() as prof:
        step()
        common.synchronize(args.device)
    rows = prof.summary()
    report(f"ocl ({args.device})", wall, [(r["kernel"], r["calls"], r["total_us"]) for r in rows], args.top)
    report_gaps(prof.records, args.top)
    report_host(step, args.device, args.top)


def report_gaps(records, top):
    """Idle device time before each launch, summed by (previous kernel -> delayed kernel)."""
    idle, end, prev = {}, None, None
    for name, start, dur in sorted(records, key=lambda r: r[1]):
        if end is not None and start > end:
            key = f"{prev} -> {name}"
            n, us = idle.get(key, (0, 0.0))
            idle[key] = (n + 1, us + start - end)
        if end is None or start + dur > end:
            end = start + dur
        prev = name
    rows = sorted(((k, n, us) for k, (n, us) in idle.items()), key=lambda r: -r[2])
    total = sum(r[2] for r in rows)
    print(f"\n== ocl idle gaps: {total / 1e3:.2f} ms in {sum(r[1] for r in rows)} gaps, largest by kernel pair")
    for key, n, us in rows[:top]:
        print(f"  {us / 1e3:8.3f} ms  {n:5d}x  {key[:110]}")


def report_host(step, device, top):
    """Host (CPU) time of the aten ops of one step: long ones are blocking or slow to launch."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
        common.synchronize(device)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    print(f"\n== ocl host time by op (self, one step)")
    for e in rows[:top]:
        print(f"  {e.self_cpu_time_total / 1e3:8.3f} ms  {e.count:5d}x  {e.key[:110]}")


def set_math(args):
    """The same float32 switches on both devices: TF32 off (--math fp32) or torch's defaults (--math default:
    convolutions in TF32 on cuDNN and on ocl's matrix engine, matmul in float32)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = args.math == "default"


def profile_cuda(args):
    set_math(args)
    torch.backends.cudnn.benchmark = True
    step = make_step(args.net, "cuda", args.batch, args.infer, args)
    step()
    wall = wall_ms(step, "cuda")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        us = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if us and e.device_type == torch.autograd.DeviceType.CUDA:
            rows.append((e.key, e.count, us))
    rows.sort(key=lambda r: -r[2])
    report("cuda TF32 off" if args.math == "fp32" else "cuda default (TF32 convolutions)", wall, rows, args.top)


def report(label, wall, rows, top):
    total = sum(r[2] for r in rows)
    print(f"\n== {label}: step wall {wall:.2f} ms, kernels {total / 1e3:.2f} ms in {sum(r[1] for r in rows)} launches")
    for name, calls, us in rows[:top]:
        print(f"  {us / 1e3:8.3f} ms {100 * us / max(total, 1e-9):5.1f}%  {calls:5d}x  {name[:110]}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--net", default="mobilenet_v2")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default=None, help="cuda: also profile CUDA PyTorch (same --math)")
    parser.add_argument("--math", default="fp32", choices=["fp32", "default"],
                        help="fp32: TF32 off on both devices; default: torch's defaults (TF32 convolutions)")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--infer", action="store_true", help="profile eval-mode inference instead of a training step")
    parser.add_argument("--amp", choices=["bf16", "fp16"], help="gpt2/bert: forward under torch.autocast")
    parser.add_argument("--compile", action="store_true", help="gpt2/bert: the model under torch.compile")
    parser.add_argument("--quick", action="store_true", help="gpt2/bert: transformer.py's tiny sizes")
    parser.add_argument("--child-cuda", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_cuda:
        return profile_cuda(args)
    common.import_backend()
    set_math(args)
    profile_ocl(args)
    if args.ref == "cuda":
        env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
        cmd = [sys.executable, os.path.abspath(__file__), "--child-cuda", "--net", args.net, "--batch",
               str(args.batch), "--top", str(args.top), "--math", args.math] + (["--infer"] if args.infer else [])
        cmd += (["--amp", args.amp] if args.amp else []) + ["--compile"] * args.compile + ["--quick"] * args.quick
        sys.stdout.flush()
        subprocess.run(cmd, env=env, check=False)


if __name__ == "__main__":
    main()
