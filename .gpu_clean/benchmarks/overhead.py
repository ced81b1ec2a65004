"""Per-op host overhead and copy bandwidth of `ocl` against a reference device, in the same process.

    python3 benchmarks/overhead.py [--device ocl:0] [--ref cpu|cuda] [--quick] [--out results/overhead.md]

(a) overhead: N x `x.add_(1)` on a 1000-element float32 tensor, synchronized before and after,
    in microseconds per op, median of 5 repeats after a warm-up repeat;
(b) bandwidth: host-to-device, device-to-host (pageable and pinned) and device-to-device copies
    of a 64 MiB float32 tensor in GB/s, median over the iterations, the two devices timed in alternating rounds.
The ratio column is ocl's speedup over the reference: > 1 means ocl is better
(ref/ocl for times, ocl/ref for bandwidths).
"""
import argparse
import os
import statistics
import sys

import torch
from tqdm import tqdm

import common

common.import_backend()


def overhead_us(device, ops: int, repeats: int) -> float:
    x = torch.zeros(1000, dtype=torch.float32, device=device)

    def run():
        for _ in range(ops):
            x.add_(1)

    return common.median_time(run, device, repeats, warmup=1) / ops * 1e6


def copy_setup(kind: str, device, nbytes: int, pinned: bool):
    """(copy function, synchronize-able device) for one direction, or None when pinned host memory cannot be had."""
    numel = nbytes // 4
    on_device = torch.device(device).type != "cpu"
    if pinned:
        host = common.pinned_empty(numel, device)
        if host is None:
            return None
    else:
        host = torch.empty(numel, dtype=torch.float32)
    host.fill_(1.0)
    dev = torch.empty(numel, dtype=torch.float32, device=device)
    dev.fill_(2.0)
    if kind == "H2D":
        dst, src = dev, host
    elif kind == "D2H":
        dst, src = host, dev
    else:  # D2D
        dst, src = torch.empty_like(dev), dev
    non_blocking = pinned and on_device
    return lambda: dst.copy_(src, non_blocking=non_blocking)


def copy_gbs(kind: str, devices, nbytes: int, iters: int, pinned: bool) -> dict:
    """GB/s of one copy direction on each device (None where pinned memory cannot be had).

    The devices are timed in alternating rounds of `per_round` copies: the host's memory bandwidth
    (which bounds pageable copies) drifts by up to 2x between runs on shared machines, and
    alternating exposes both devices to the same drift. Each round starts with an untimed copy:
    when both devices are one GPU, switching between their contexts costs tens of µs, which would
    swamp a device-to-device copy of ~50 µs if it were timed."""
    fns = {d: copy_setup(kind, d, nbytes, pinned) for d in devices}
    times = {d: [] for d in devices}
    per_round = 5
    for _ in range(max(1, iters // per_round)):
        for d, fn in fns.items():
            if fn:
                times[d] += common.time_it(fn, d, per_round, warmup=1)
    return {d: nbytes / statistics.median(ts) / 1e9 if ts else None for d, ts in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="ocl:0", help="the ocl device (default: ocl:0)")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu",
                        help="reference device (default: cuda if available, else cpu)")
    parser.add_argument("--quick", action="store_true", help="small sizes for a CI smoke run")
    parser.add_argument("--out", default="results/overhead.md", help="markdown output; the PNG goes next to it")
    args = parser.parse_args(argv)

    if torch.device(args.device).type != "ocl":
        parser.error(f"--device must be an ocl device, got {args.device}")
    if not torch.ocl.is_available():
        import pytorch_ocl

        print(f"no OpenCL device: {pytorch_ocl._C.enumeration_error()}")
        return 1

    ops, repeats = (200, 5) if args.quick else (1000, 5)
    mib, iters = (4, 30) if args.quick else (64, 25)
    nbytes = mib << 20
    ref_is_cpu = torch.device(args.ref).type == "cpu"

    devices = (args.device, args.ref)
    # (metric label, function() -> {device: value}, "time" | "bandwidth")
    metrics = [(f"add_ overhead (µs/op, {ops} ops)", lambda: {d: overhead_us(d, ops, repeats) for d in devices},
                "time")]
    for kind in ("H2D", "D2H"):
        for pinned in (False, True):
            label = f"{kind} {'pinned' if pinned else 'pageable'} (GB/s, {mib} MiB)"
            metrics.append((label, lambda k=kind, p=pinned: copy_gbs(k, devices, nbytes, iters, p), "bandwidth"))
    metrics.append((f"D2D (GB/s, {mib} MiB)", lambda: copy_gbs("D2D", devices, nbytes, iters, False), "bandwidth"))

    results = {}
    for label, fn, _ in tqdm(metrics, desc="measuring", unit="metric", file=sys.stderr):
        for device, value in fn().items():
            results[(label, device)] = value

    rows, labels, ratios = [], [], []
    for label, _, kind in metrics:
        o, r = results[(label, args.device)], results[(label, args.ref)]
        ratio = None
        if o and r:
            ratio = r / o if kind == "time" else o / r
        rows.append([label, o, r, ratio])
        labels.append(label.split(" (")[0])
        ratios.append(ratio)

    header = ["metric", args.device, args.ref, "ratio (>1: ocl better)"]
    table = common.markdown_table(header, rows)
    print(table)

    preamble = [
        f"ocl: {common.device_description(args.device)}",
        f"ref: {common.device_description(args.ref)}",
        f"torch {torch.__version__}{', --quick' if args.quick else ''}",
        "ratio = ocl's speedup over the reference (ref/ocl for µs/op, ocl/ref for GB/s): > 1 means ocl is better",
    ]
    notes = [f"overhead: median of {repeats} repeats of {ops} × `x.add_(1)` (1000 float32), after one warm-up repeat",
             f"bandwidth: median of {iters} copies per device, the devices timed in alternating rounds of 5 "
             "(each after an untimed copy); synchronized before each timer stops; pinned copies use "
             "`non_blocking=True`"]
    if ref_is_cpu:
        notes.append("ref is the cpu: its H2D/D2H/D2D rows are plain host-to-host copies (pinned buffers for "
                     "the pinned rows)")
    md = common.write_markdown(args.out, "Host overhead and copy bandwidth", preamble, header, rows, notes)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             f"{args.device} vs {args.ref} (>1: ocl better)", "speedup of ocl")
    print(f"\nwrote {md}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
