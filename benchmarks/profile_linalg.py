"""Where a factorization spends device time on ocl: kernels by total time and the idle gaps between them
(the device waiting for the host), for one call after a warm-up call.

    python3 benchmarks/profile_linalg.py [--n 4096] [--ops lu_factor,cholesky,qr,eigh,eigvalsh] [--top 15]
    python3 benchmarks/profile_linalg.py --count [--n 1024] [--ops lu_factor,qr]   # launches by kernel only

A kernel sum well below the wall time means the factorization is bound by launches and host work, not
by its kernels; a few kernels called once per column name the sequential part. --count: one call's
launches by kernel (all of them, most frequent first) and per panel step (min(m, n) / nb steps, nb the
block size: PYTORCH_OCL_LINALG_BLOCK or 64), no timing (for slow devices such as PoCL).
"""
import os
import argparse
import time

import torch

import common
from profile_model import report, report_gaps


def spd(n, device):
    a = torch.randn(n, n, device="cpu") / n ** 0.5
    return (a @ a.T + torch.eye(n)).to(device)


OPS = {
    "lu_factor": (lambda n, d: torch.randn(n, n).to(d), lambda a: torch.linalg.lu_factor(a)),
    "cholesky": (spd, lambda a: torch.linalg.cholesky(a)),
    "qr": (lambda n, d: torch.randn(n, n).to(d), lambda a: torch.linalg.qr(a)),
    "eigh": (spd, lambda a: torch.linalg.eigh(a)),
    "eigvalsh": (spd, lambda a: torch.linalg.eigvalsh(a)),
    "svd": (lambda n, d: torch.randn(n, n).to(d), lambda a: torch.linalg.svd(a)),
}


def count(name, n, call, a, device):
    import pytorch_ocl.profiler

    from pytorch_ocl import _C

    before = _C.host_counters()["launches"]  # kernels, buffer copies and fills
    with pytorch_ocl.profiler.profile() as prof:
        call(a)
        common.synchronize(device)
    total = _C.host_counters()["launches"] - before
    rows = sorted(prof.summary(), key=lambda r: -r["calls"])
    kernels = sum(r["calls"] for r in rows)
    steps = -(-n // int(os.environ.get("PYTORCH_OCL_LINALG_BLOCK") or 64))
    print(f"\n#### {name} n={n}: {total} launches, {total / steps:.1f} per panel step ({steps} steps)")
    for r in rows:
        print(f"  {r['calls']:6d}  {r['kernel'][:110]}")
    print(f"  {total - kernels:6d}  (buffer fills and copies)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--ops", default="lu_factor,cholesky,qr")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--count", action="store_true", help="launches by kernel of one call, no timing")
    args = parser.parse_args()
    import pytorch_ocl.profiler

    for name in args.ops.split(","):
        make, call = OPS[name]
        a = make(args.n, args.device)
        call(a)
        common.synchronize(args.device)
        if args.count:
            count(name, args.n, call, a, args.device)
            continue
        t = time.perf_counter()
        call(a)
        common.synchronize(args.device)
        wall = (time.perf_counter() - t) * 1e3
        with pytorch_ocl.profiler.profile() as prof:
            call(a)
            common.synchronize(args.device)
        rows = [(r["kernel"], r["calls"], r["total_us"]) for r in prof.summary()]
        print(f"\n#### {name} n={args.n}")
        report(f"ocl {name}", wall, rows, args.top)
        report_gaps(prof.records, 8)


if __name__ == "__main__":
    main()
