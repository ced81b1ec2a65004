"""The shared-memory all-reduce (pytorch_ocl/_dist_shm.py) on CPU tensors: the hand-offs without the device.

    python3 benchmarks/dist_shm_probe.py [--world 2] [--mib 16 64 256] [--iters 5] [--threads N]

Spawns `--world` processes that make the transport directly over a TCP store (no process group, no OpenCL
copies) and all-reduce (SUM) float32 CPU tensors through it, piece by piece, as run_staged does for the
staged pieces of an ocl tensor. Prints the median time and bus bandwidth 2 (n - 1) / n * bytes / time per
size (and of the best iteration), rank 0's CPU time (every thread) and per-stage trace (_dist_shm_trace.py) of the last iteration: where the time goes.
"""
import argparse
import datetime
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, world, port, mibs, iters, queue):
    from pytorch_ocl import _dist_shm

    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=datetime.timedelta(seconds=60))
    tr = _dist_shm.setup(store, rank, world, datetime.timedelta(seconds=60))
    assert tr is not None, "no shared-memory transport"
    rows = []
    for mib in mibs:
        t = torch.ones((mib << 20) // 4)
        times, cpu = [], []
        for _ in range(iters + 1):
            t.fill_(1.0)
            if hasattr(tr, "trace"):
                tr.trace.reset(on=True)
            store.set(f"go/{mib}/{len(times)}/{rank}", "1")  # a rough start line: every rank is here
            for r in range(world):
                store.get(f"go/{mib}/{len(times)}/{r}")
            start, cstart = time.perf_counter(), time.process_time()
            _dist_shm.allreduce_host(tr, t, dist.ReduceOp.SUM)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - cstart)
        assert t[0].item() == world and t[-1].item() == world
        trace = tr.trace.summary() if hasattr(tr, "trace") else None
        rows.append((mib, statistics.median(times[1:]), min(times[1:]), statistics.median(cpu[1:]), trace))
    if rank == 0:
        queue.put(rows)
    store.set(f"done/{rank}", "1")
    for r in range(world):
        store.get(f"done/{r}")
    tr.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--mib", type=int, nargs="+", default=[16, 64, 256])
    p.add_argument("--iters", type=int, default=5)
    args = p.parse_args()
    queue = mp.get_context("spawn").Queue()
    mp.spawn(worker, args=(args.world, free_port(), args.mib, args.iters, queue), nprocs=args.world)
    rows = queue.get()
    w = args.world
    for mib, t, best, cpu, trace in rows:
        bus = 2 * (w - 1) / w * (mib << 20) / 1e9
        print(f"{mib:4d} MiB: median {t * 1e3:8.1f} ms  bus {bus / t:6.2f} GB/s;  best {best * 1e3:8.1f} ms  "
              f"bus {bus / best:6.2f} GB/s;  rank 0 CPU {cpu * 1e3:8.1f} ms")
        if trace:
            print(trace)


if __name__ == "__main__":
    main()
