"""torch.fft on `ocl` (VkFFT) against CUDA (cuFFT) and the CPU (pocketfft / MKL), each reference in a child process.

    python3 benchmarks/fft.py [--ref cuda,cpu|cpu|none] [--dtypes complex64,complex128] [--quick]
                              [--seconds 25] [--per-call 2] [--only fft2] [--out results/fft.md]

Cases: fft and ifft of one 1-D complex signal of 2^10 .. 2^22 points; rfft and irfft of a batch of
1000 real signals of 4096 points; fft2 of [64, 512, 512]; fft of one signal of the prime length
1048573 (2^20 - 3, Bluestein's algorithm on every device). Each in complex64 and complex128 (float32 /
float64 for the real side). Median times, GB/s (bytes read + written once: the least any transform
moves) and the ratio reference time / ocl time. Issue 17's targets: c2c 2^20 and the batched r2c
>= 0.8 of cuFFT's speed on the H200 (cuda/ocl >= 0.8). See versus.py for the time limits.
"""
import argparse
import sys

import torch

import versus

C2C_LOG2 = [10, 12, 14, 16, 18, 20, 22]
QUICK_C2C_LOG2 = [10, 12, 14, 16]
REAL_BATCH, REAL_N = (1000, 4096), (100, 4096)
FFT2, QUICK_FFT2 = (64, 512, 512), (4, 128, 128)
PRIME, QUICK_PRIME = 1048573, 10007
REAL_OF = {"complex64": "float32", "complex128": "float64"}


def _randn(shape, dtype, device):
    g = torch.Generator().manual_seed(0)  # the same input on every device
    return torch.randn(shape, dtype=dtype, generator=g).to(device)


def _maker(fn_name, shape, input_complex=True, **kw):
    """make(device, dtype) for torch.fft.<fn_name> of a random input of `shape`."""
    def make(device, dtype):
        f = getattr(torch.fft, fn_name)
        x = _randn(shape, dtype, device)
        return lambda: f(x, **kw)
    return make


def cases(quick: bool, dtypes):
    out = []
    (rb, rn) = REAL_N if quick else REAL_BATCH
    for cdt in dtypes:
        rdt, csize = REAL_OF[cdt], torch.empty(0, dtype=getattr(torch, cdt)).element_size()
        for name in ("fft", "ifft"):
            for k in QUICK_C2C_LOG2 if quick else C2C_LOG2:
                n = 2 ** k
                out.append(versus.Case(f"{name} 2^{k} {cdt}", f"{name} {cdt}", n, 1.0, 2.0 * n * csize,
                                       _maker(name, (n,)), cdt))
        bins = rn // 2 + 1
        moved = rb * (rn * csize / 2 + bins * csize)
        out.append(versus.Case(f"rfft {rb}x{rn} {rdt}", f"rfft {rdt}", rb * rn, 1.0, moved,
                               _maker("rfft", (rb, rn)), rdt))
        out.append(versus.Case(f"irfft {rb}x{rn} {cdt}", f"irfft {cdt}", rb * rn, 1.0, moved,
                               _maker("irfft", (rb, bins), n=rn), cdt))
        shape = QUICK_FFT2 if quick else FFT2
        numel = shape[0] * shape[1] * shape[2]
        out.append(versus.Case(f"fft2 {'x'.join(map(str, shape))} {cdt}", f"fft2 {cdt}", numel, 1.0,
                               2.0 * numel * csize, _maker("fft2", shape), cdt))
        p = QUICK_PRIME if quick else PRIME
        out.append(versus.Case(f"fft prime {p} {cdt}", f"prime {cdt}", p, 1.0, 2.0 * p * csize,
                               _maker("fft", (p,)), cdt))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    versus.add_arguments(parser, seconds=25.0, per_call=2.0)
    parser.add_argument("--dtypes", default="complex64,complex128", help="complex64 and/or complex128")
    parser.add_argument("--out", default="results/fft.md")
    args = parser.parse_args(argv)
    dtypes = [d for d in args.dtypes.split(",") if d]
    for d in dtypes:
        if d not in REAL_OF:
            parser.error(f"--dtypes: {d} is not complex64 or complex128")
    todo = versus.select(cases(args.quick, dtypes), args.only)
    notes = ["GB/s counts each input and output element once (complex: 8 or 16 bytes; the real side of "
             "rfft / irfft 4 or 8); a transform making several passes over memory moves more",
             "fft / ifft: torch.fft.fft / ifft of one 1-D signal (norm 'backward'); rfft: a [batch, n] real input "
             "along its last dim; irfft: its [batch, n/2+1] half spectrum back to n points; prime: Bluestein"]
    return versus.main(args, todo, __file__, "torch.fft: ocl vs references", "GB/s", "bytes moved", notes)


if __name__ == "__main__":
    sys.exit(main())
