"""Host time per call of single layer ops (conv, batch norm, GEMM, reduction, an optimizer's foreach ops) on `ocl` against a
reference device, in one process: the time the Python thread spends issuing one call when the
device keeps up, which bounds networks of many small layers (efficientnet, densenet training).

    python3 benchmarks/op_host_time.py [--device ocl:0] [--ref cuda|cpu] [--out results/op_host_time.md]

Each op runs 50 times back to back after a warm-up; "host us" is the loop time before the final
synchronize divided by 50, "wall us" includes it. Shapes are efficientnet-like (32 x 96 x 28 x 28).
"""
import argparse
import time

import torch

import common


def layer_ops(d):
    x = torch.randn(32, 96, 28, 28, device=d)
    w1 = torch.randn(24, 96, 1, 1, device=d)
    g1 = torch.randn(32, 24, 28, 28, device=d)
    wdw = torch.randn(96, 1, 3, 3, device=d)
    bnw, bnb = torch.randn(96, device=d), torch.randn(96, device=d)
    rm, rv = torch.zeros(96, device=d), torch.ones(96, device=d)
    _, mean, inv = torch.ops.aten.native_batch_norm(x, bnw, bnb, rm, rv, True, 0.1, 1e-5)
    a = torch.randn(1000, device=d)
    m = torch.randn(512, 512, device=d)
    ts = [torch.randn(1024, device=d) for _ in range(148)]  # an optimizer's 148 parameters (GPT-2 small's count)
    steps = [0.9 + 1e-4 * i for i in range(148)]
    conv, conv_bwd = torch.ops.aten.convolution, torch.ops.aten.convolution_backward
    one = ([1, 1], [0, 0], [1, 1], False, [0, 0])
    pad1 = ([1, 1], [1, 1], [1, 1], False, [0, 0])
    return {
        "add_ (1k)": lambda: a.add_(1),
        "mm 512": lambda: torch.mm(m, m),
        "conv 1x1 fwd": lambda: conv(x, w1, None, *one, 1),
        "conv 1x1 bwd input": lambda: conv_bwd(g1, x, w1, None, *one, 1, [True, False, False]),
        "conv 1x1 bwd weight": lambda: conv_bwd(g1, x, w1, None, *one, 1, [False, True, False]),
        "depthwise 3x3 fwd": lambda: conv(x, wdw, None, *pad1, 96),
        "depthwise 3x3 bwd": lambda: conv_bwd(x, x, wdw, None, *pad1, 96, [True, True, False]),
        "batch_norm fwd": lambda: torch.ops.aten.native_batch_norm(x, bnw, bnb, rm, rv, True, 0.1, 1e-5),
        "batch_norm bwd": lambda: torch.ops.aten.native_batch_norm_backward(x, x, bnw, rm, rv, mean, inv, True, 1e-5,
                                                                            [True, True, True]),
        "sum over H, W": lambda: x.sum((2, 3)),
        "_foreach_mul_ (148 x 1k, scalar)": lambda: torch._foreach_mul_(ts, 0.999),
        "_foreach_div_ (148 x 1k, scalar list)": lambda: torch._foreach_div_(ts, steps),
        "_foreach_addcdiv_ (148 x 1k)": lambda: torch._foreach_addcdiv_(ts, ts, ts, -1e-6),
        "_foreach_sqrt (148 x 1k, new tensors)": lambda: torch._foreach_sqrt(ts),
    }


def host_and_wall_us(f, device, n=50):
    for _ in range(3):
        f()
    common.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    t1 = time.perf_counter()
    common.synchronize(device)
    t2 = time.perf_counter()
    return (t1 - t0) / n * 1e6, (t2 - t0) / n * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="ocl:0")
    parser.add_argument("--ref", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--out", default="results/op_host_time.md")
    args = parser.parse_args(argv)
    common.import_backend()
    ops = {dev: layer_ops(dev) for dev in (args.device, args.ref)}
    rows = []
    for name in ops[args.device]:
        (h, w), (rh, rw) = (host_and_wall_us(ops[dev][name], dev) for dev in (args.device, args.ref))
        rows.append([name, h, w, rh, rw, h / rh])
        print(f"{name}: ocl host {h:.1f} us (wall {w:.1f}), {args.ref} host {rh:.1f} us (wall {rw:.1f})", flush=True)
    header = ["op", "ocl host us", "ocl wall us", f"{args.ref} host us", f"{args.ref} wall us", "host ocl/ref"]
    common.write_markdown(args.out, "Host time per op call", [f"ocl: {common.device_description(args.device)}  ",
                                                              f"ref: {common.device_description(args.ref)}  "],
                          header, rows, ["host ocl/ref > 1: ocl spends longer issuing the call"])
    return 0


if __name__ == "__main__":
    main()
