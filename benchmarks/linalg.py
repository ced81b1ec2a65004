"""torch.linalg on `ocl` against CUDA (cuSOLVER / MAGMA, as torch picks) and the CPU (LAPACK), each reference
in a child process.

    python3 benchmarks/linalg.py [--ref cuda,cpu|cpu|none] [--dtypes float32,float64] [--large] [--quick]
                                 [--seconds 45] [--per-call 2] [--only lu_factor] [--out results/linalg.md]

Cases: lu_factor, cholesky, qr (reduced: Q and R), solve (one right-hand side), inv, eigh (values and
vectors) and svd (reduced, U S Vh) of one n x n matrix at n = 64, 256, 1024, 4096 (--large adds 8192
for lu_factor / cholesky / qr), and of a batch of 1000 32x32 matrices. GFLOP/s from the nominal flop
counts below; the ratio reference time / ocl time. Issue 17's target: LU / Cholesky / QR at n = 4096
>= 0.5 of cuSOLVER's speed (cuda/ocl >= 0.5). See versus.py for the time limits.
"""
import argparse
import sys

import torch

import versus

SIZES, QUICK_SIZES, LARGE = [64, 256, 1024, 4096], [64, 256], 8192
BATCH, QUICK_BATCH = (1000, 32), (200, 32)
# op: (nominal flop count of one n x n matrix, exponent of its time in n, call). Counts as LAPACK's
# working notes / Golub & Van Loan give them: getrf 2/3 n^3, potrf 1/3 n^3, geqrf + orgqr 4/3 + 4/3 n^3,
# getrf + getrs 2/3 n^3 + 2 n^2, getrf + getri 2 n^3, symmetric QR with vectors 9 n^3, Golub-Reinsch SVD
# with U and V 21 n^3 (the Jacobi methods ocl uses do more).
OPS = {
    "lu_factor": (lambda n: 2 / 3 * n ** 3, lambda a, b: torch.linalg.lu_factor(a)),
    "cholesky": (lambda n: n ** 3 / 3, lambda a, b: torch.linalg.cholesky(a)),
    "qr": (lambda n: 8 / 3 * n ** 3, lambda a, b: torch.linalg.qr(a, mode="reduced")),
    "solve": (lambda n: 2 / 3 * n ** 3 + 2 * n ** 2, lambda a, b: torch.linalg.solve(a, b)),
    "inv": (lambda n: 2.0 * n ** 3, lambda a, b: torch.linalg.inv(a)),
    "eigh": (lambda n: 9.0 * n ** 3, lambda a, b: torch.linalg.eigh(a)),
    "svd": (lambda n: 21.0 * n ** 3, lambda a, b: torch.linalg.svd(a, full_matrices=False)),
}
SPD = {"cholesky", "eigh"}  # inputs made symmetric (positive definite)
LARGE_OPS = ("lu_factor", "cholesky", "qr")


def _maker(op, batch, n):
    def make(device, dtype):
        g = torch.Generator().manual_seed(0)  # the same matrices on every device
        shape = (batch, n, n) if batch else (n, n)
        a = torch.randn(shape, dtype=dtype, generator=g)
        if op in SPD:  # A A^T / n + I: symmetric, well conditioned
            a = a @ a.mT / n + torch.eye(n, dtype=dtype)
        a = a.to(device)
        b = torch.randn(shape[:-1] + (1,), dtype=dtype, generator=g).to(device)
        call = OPS[op][1]
        return lambda: call(a, b)
    return make


def cases(quick: bool, large: bool, dtypes):
    out = []
    batch, bn = QUICK_BATCH if quick else BATCH
    sizes = QUICK_SIZES if quick else SIZES
    for dt in dtypes:  # the batched cases first: cheap, and one call each
        for op, (flop, _) in OPS.items():
            out.append(versus.Case(f"{op} {batch}x{bn}x{bn} {dt}", f"{op} batched {dt}", batch, 1.0,
                                   batch * flop(bn), _maker(op, batch, bn), dt))
    for n in sizes + ([LARGE] if large and not quick else []):
        for dt in dtypes:
            for op, (flop, _) in OPS.items():
                if n == LARGE and op not in LARGE_OPS:
                    continue
                out.append(versus.Case(f"{op} {n} {dt}", f"{op} {dt}", n, 3.0, flop(n), _maker(op, 0, n), dt))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    versus.add_arguments(parser, seconds=45.0, per_call=2.0)
    parser.add_argument("--dtypes", default="float32", help="float32 and/or float64")
    parser.add_argument("--large", action="store_true", help="also n = 8192 for lu_factor, cholesky and qr")
    parser.add_argument("--out", default="results/linalg.md")
    args = parser.parse_args(argv)
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in ("float32", "float64"):
            parser.error(f"--dtypes: {d} is not float32 or float64")
    todo = versus.select(cases(args.quick, args.large, dtypes), args.only)
    notes = ["GFLOP/s from nominal counts (LAPACK working notes, Golub & Van Loan): lu_factor 2/3 n^3, "
             "cholesky 1/3 n^3, qr (reduced Q and R) 8/3 n^3, solve 2/3 n^3 + 2 n^2, inv 2 n^3, eigh (with "
             "vectors) 9 n^3, svd (U, S, Vh) 21 n^3; batched: times the batch",
             "inputs: randn (cholesky, eigh: A A^T / n + I), the same on every device; solve has one "
             "right-hand side [.., n, 1]"]
    return versus.main(args, todo, __file__, "torch.linalg: ocl vs references", "GFLOP/s", "nominal flop", notes)


if __name__ == "__main__":
    sys.exit(main())
