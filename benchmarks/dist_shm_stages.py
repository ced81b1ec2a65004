"""The shared-memory all-reduce with a thread per stage (reader, worker, writer: pytorch_ocl/_dist_shm_stages.py)
against the one-thread path (PYTORCH_OCL_DIST_SHM_STAGE_THREADS=0), interleaved in one run:

    python3 benchmarks/dist_shm_stages.py [--world 2] [--mib 16 64 256] [--buckets 20] [--iters 7] [--trace]

Two groups of the same ranks, one per path; every iteration times both, alternating which goes first, so
machine load (a shared CI box) hits both alike. Per size: median ms of one all_reduce (SUM, float32, waited
for and synchronized), and of a DDP-like burst: --buckets async all_reduces of 25 MiB (DDP's bucket size; 20 are
GPT-2 small's 500 MB of gradients) issued back to back, then waited for. With --trace, rank 0 prints the stage
trace (_dist_shm_trace.py, per-thread busy time included) of one more all_reduce per size and path.
Every rank runs on ocl:LOCAL_RANK modulo the device count.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def timed(fn, dev):
    dist.barrier()
    torch.ocl.synchronize(dev)
    start = time.perf_counter()
    fn()
    torch.ocl.synchronize(dev)
    return time.perf_counter() - start


def worker(rank, world, port, args, queue):
    common.import_backend()
    from pytorch_ocl import _dist_shm_stages
    from pytorch_ocl.distributed import shm_trace

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    dev = f"ocl:{rank % torch.ocl.device_count()}"
    torch.ocl.set_device(dev)
    dist.init_process_group(timeout=datetime.timedelta(seconds=300))
    groups = {}
    for value in ("1", "0"):
        os.environ[_dist_shm_stages.ENV] = value
        groups[value] = dist.new_group(list(range(world)))
        assert groups[value].transport() == "shm", "every rank must be on this host"
    lines, traces = [], []

    def one(x, g):
        return lambda: dist.all_reduce(x, group=g)

    def burst(xs, g):
        return lambda: [w.wait() for w in [dist.all_reduce(x, group=g, async_op=True) for x in xs]]

    cases = [(f"{mib} MiB", lambda mib=mib: [torch.ones(mib << 18, device=dev)], one) for mib in args.mib]
    if args.buckets:
        cases.append((f"{args.buckets} x 25 MiB async",
                      lambda: [torch.ones(25 << 18, device=dev) for _ in range(args.buckets)], burst))
    for label, make, kind in cases:
        xs = make()
        fns = {v: (kind(xs[0], g) if kind is one else kind(xs, g)) for v, g in groups.items()}
        for fn in fns.values():
            timed(fn, dev)  # warm up
        times = {v: [] for v in groups}
        for i in range(args.iters):
            for v in (("1", "0") if i % 2 == 0 else ("0", "1")):
                times[v].append(timed(fns[v], dev))
        t1, t0 = statistics.median(times["1"]), statistics.median(times["0"])
        lines.append(f"| {label} | {t0 * 1e3:.1f} | {t1 * 1e3:.1f} | {t0 / t1:.2f} |")
        if args.trace:
            for v, g in groups.items():
                trace = shm_trace(g)
                trace.reset(on=True)
                timed(fns[v], dev)
                traces.append(f"stage threads {v}, {label}:\n" + trace.summary())
                trace.reset(on=False)
        del xs, fns
    if rank == 0:
        queue.put((lines, traces))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--mib", type=int, nargs="*", default=[16, 64, 256])
    p.add_argument("--buckets", type=int, default=20, help="25 MiB all_reduces per burst (0: none)")
    p.add_argument("--iters", type=int, default=7)
    p.add_argument("--trace", action="store_true")
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    queue = mp.get_context("spawn").Queue()
    mp.spawn(worker, args=(args.world, port, args, queue), nprocs=args.world)
    lines, traces = queue.get()
    print(f"shared-memory all_reduce, {args.world} ranks, median of {args.iters} (ms), stage threads "
          f"(PYTORCH_OCL_DIST_SHM_STAGE_THREADS) 0 vs 1\n\n| size | one thread ms | stage threads ms | 0 / 1 |\n"
          "|---|---|---|---|")
    for line in lines:
        print(line)
    for trace in traces:
        print(trace)


if __name__ == "__main__":
    main()
