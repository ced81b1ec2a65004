"""Where a factorization spends device time on ocl: kernels by total time and the idle gaps between them
(the device waiting for the host), for one call after a warm-up call.

    python3 benchmarks/profile_linalg.py [--n 4096] [--ops lu_factor,cholesky,qr,eigh,eigvalsh] [--top 15]

A kernel sum well below the wall time means the factorization is bound by launches and host work, not
by its kernels; a few kernels called once per column name the sequential part.
"""
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


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--n", type=int, default=4096)
    parser.add_argument("--ops", default="lu_factor,cholesky,qr")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    import pytorch_ocl.profiler

    for name in args.ops.split(","):
        make, call = OPS[name]
        a = make(args.n, args.device)
        call(a)
        common.synchronize(args.device)
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
