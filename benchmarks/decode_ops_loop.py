"""One decode op in a loop, for profilers: the ops batch-1 GPT-2 decoding issues per token, at GPT-2
small's decode shapes (hidden 768, 12 heads, a KV cache of 64 positions), called back to back.

    python3 benchmarks/decode_ops_loop.py [--ops addmm,add,...] [--iters 2000] [--device ocl:0]

Prints host us per call (thread CPU time of the loop / iters, the device kept up with a synchronize
every 100 calls). Meant to run under `perf record` or `valgrind --tool=callgrind`: `--iters 0` runs
the setup and warm-up only, so (cost at N iters - cost at 0) / N is one call's cost. With
--perf-ctl FIFO the timed loops only are profiled:
    mkfifo /tmp/ctl; perf record -D -1 --control fifo:/tmp/ctl ... decode_ops_loop.py --perf-ctl /tmp/ctl
(a reader of the fifo may also run `callgrind_control -i on PID` on "enable": the loop starts 3 s later).
"""
import argparse
import time

import torch

import common


def decode_ops(d):
    f = dict(device=d)
    x = torch.randn(1, 1, 768, **f)
    x2 = x.view(1, 768)
    w = torch.randn(768, 2304, **f)
    b = torch.randn(2304, **f)
    h = torch.randn(1, 1, 3072, **f)
    lnw, lnb = torch.randn(768, **f), torch.randn(768, **f)
    q = torch.randn(1, 12, 1, 64, **f)
    k = torch.randn(1, 12, 64, 64, **f)
    knew = torch.randn(1, 12, 1, 64, **f)
    emb = torch.randn(1000, 768, **f)
    ids = torch.tensor([[3]], device=d)
    qkv = torch.randn(1, 1, 2304, **f)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    return {
        "addmm": lambda: torch.addmm(b, x2, w),
        "add": lambda: torch.add(x, x),
        "mul": lambda: torch.mul(h, 0.5),
        "pow": lambda: torch.pow(h, 3.0),
        "tanh": lambda: torch.tanh(h),
        "layer_norm": lambda: torch.nn.functional.layer_norm(x, (768,), lnw, lnb),
        "cat": lambda: torch.cat([k, knew], dim=-2),
        "sdpa": lambda: sdpa(q, k, k),
        "embedding": lambda: torch.nn.functional.embedding(ids, emb),
        "view": lambda: x.view(1, 1, 12, 64),
        "transpose": lambda: q.transpose(1, 2),
        "split": lambda: qkv.split(768, dim=2),
        "contiguous": lambda: q.transpose(1, 2).contiguous(),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="ocl:0")
    p.add_argument("--ops", default=None, help="comma-separated names (default: all)")
    p.add_argument("--iters", type=int, default=2000)
    p.add_argument("--perf-ctl", default=None, help="perf's --control fifo: enabled around the timed loops only")
    args = p.parse_args()
    common.import_backend()
    d = torch.device(args.device)
    ops = decode_ops(d)
    names = args.ops.split(",") if args.ops else list(ops)
    ctl = open(args.perf_ctl, "w", buffering=1) if args.perf_ctl else None
    with torch.no_grad():
        for name in names:
            f = ops[name]
            for _ in range(5):
                f()
            common.synchronize(d)
            t = 0.0
            if ctl:
                ctl.write("enable\n")
                time.sleep(3)  # callgrind_control takes a moment to switch instrumentation on
            for i in range(0, args.iters, 100):
                t0 = time.thread_time()
                for _ in range(min(100, args.iters - i)):
                    f()
                t += time.thread_time() - t0
                common.synchronize(d)
            if ctl:
                ctl.write("disable\n")
            if args.iters:
                print(f"{name:<12} host {t / args.iters * 1e6:8.1f} us/call", flush=True)


if __name__ == "__main__":
    main()
