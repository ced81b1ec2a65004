"""Could the device reads and writes of the shared-memory all-reduce (pytorch_ocl/_dist_shm.py) use the segment
itself? Bandwidth of the copies each way of staging, on one device, in one process:

    python3 benchmarks/dist_shm_copies.py [--mib 4 16 64] [--iters 5] [--threads N]

  d2h pinned    ocl -> pinned host buffer (non_blocking, then waited for): today's read
  d2h shm       ocl -> a mapping of a /dev/shm file (unpinned: a blocking copy): a read straight into the slot
  copy in       pinned buffer -> the mapping (torch's copy with --threads intra-op threads): today's copy-in
  h2d pinned    pinned -> ocl (non_blocking, then waited for): today's write back
  h2d shm       the mapping -> ocl (blocking): a write back straight from the result area
Today's path costs d2h pinned + copy in (and copy out + h2d pinned); reading into the segment would cost d2h
shm alone, which pays only where unpinned copies are not much slower (on NVIDIA they are 3-6x slower: the
segment would have to be made pinned for the OpenCL runtime, e.g. a CL_MEM_USE_HOST_PTR buffer over it).

--overlap: do device reads on another thread (4 MiB pieces into pinned memory on a side stream, as the all-reduce's
reader) overlap the training thread's work? Host time per small launch and device time of 1024^2 matmuls, alone
and while the reads run, and the reads' rate alone and during the matmuls (DDP's copies ran at 4.6 GB/s and seemed
to add to the step rather than hide under the backward).
"""
import argparse
import mmap
import os
import statistics
import tempfile
import threading
import time

import torch


def timed(fn, sync, iters):
    fn()
    sync()
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mib", type=int, nargs="+", default=[4, 16, 64])
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--threads", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--overlap", action="store_true", help="only the overlap probe (see the module doc)")
    args = p.parse_args()
    import pytorch_ocl  # noqa: F401

    torch.set_num_threads(args.threads)
    dev = "ocl:0"
    sync = torch.ocl.synchronize
    if args.overlap:
        overlap_probe(dev, sync)
        return
    biggest = max(args.mib) << 20
    fd, path = tempfile.mkstemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        os.posix_fallocate(fd, 0, biggest)
        mm = mmap.mmap(fd, biggest)
    finally:
        os.close(fd)
        os.unlink(path)
    seg = torch.frombuffer(mm, dtype=torch.uint8)
    print(f"{torch.ocl.get_device_properties(0).name}; {args.threads} threads; GB/s, median of {args.iters}")
    print(f"{'size':>8} {'d2h pinned':>11} {'d2h shm':>9} {'copy in':>9} {'h2d pinned':>11} {'h2d shm':>9}")
    for mib in args.mib:
        n = mib << 20
        d = torch.ones(n, dtype=torch.uint8, device=dev)
        pinned = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        shm = seg[:n]
        cases = [lambda: pinned.copy_(d, non_blocking=True), lambda: shm.copy_(d), lambda: shm.copy_(pinned),
                 lambda: d.copy_(pinned, non_blocking=True), lambda: d.copy_(shm)]
        rates = [n / 1e9 / timed(fn, sync, args.iters) for fn in cases]
        print(f"{mib:>4} MiB " + " ".join(f"{r:>{w}.2f}" for r, w in zip(rates, (11, 9, 9, 11, 9))))
        # How long the asynchronous write back's enqueue itself takes (the all-reduce's worker pays it per piece;
        # an asynchronous copy should return at once), from an offset into the pinned buffer as the pieces are,
        # on this thread and on a worker thread with a side stream as _dist_async does.
        half = n // 2
        enq = {}

        def enqueue(label):
            times = []
            for _ in range(args.iters):
                sync()
                start = time.perf_counter()
                d[half:].copy_(pinned[half:], non_blocking=True)
                times.append(time.perf_counter() - start)
            sync()
            enq[label] = statistics.median(times) * 1e3

        enqueue("main thread")

        def worker():
            with torch.ocl.stream(torch.ocl.Stream()):
                enqueue("worker, side stream")

        th = threading.Thread(target=worker)
        th.start()
        th.join()
        print("         h2d enqueue of the second half (ms): " + ", ".join(f"{k} {v:.3f}" for k, v in enq.items()))
        del d, pinned, shm
    del seg
    mm.close()


def overlap_probe(dev, sync):
    piece, pieces = 4 << 20, 64
    src = torch.ones(piece * pieces, dtype=torch.uint8, device=dev)
    pinned = torch.empty(piece, dtype=torch.uint8, pin_memory=True)
    small = torch.zeros(1024, device=dev)
    a = torch.randn(1024, 1024, device=dev)
    stop = threading.Event()
    read_rate = []

    def reader():  # the all-reduce reader's pattern: one piece at a time, each waited for
        side = torch.ocl.Stream()
        with torch.ocl.stream(side):
            while not stop.is_set():
                start = time.perf_counter()
                for i in range(pieces):
                    pinned.copy_(src[i * piece:(i + 1) * piece], non_blocking=True)
                    side.synchronize()
                read_rate.append(piece * pieces / 1e9 / (time.perf_counter() - start))

    def launches():
        sync()
        start = time.perf_counter()
        for _ in range(2000):
            small.add_(1)
        host = (time.perf_counter() - start) / 2000 * 1e6
        sync()
        return host

    def matmuls():
        sync()
        start = time.perf_counter()
        for _ in range(200):
            a.mm(a)
        sync()
        return (time.perf_counter() - start) * 1e3

    launches(), matmuls()
    alone = (launches(), matmuls())
    th = threading.Thread(target=reader)
    th.start()
    time.sleep(0.2)
    during = (launches(), matmuls())
    stop.set()
    th.join()
    rate_during = statistics.median(read_rate) if read_rate else float("nan")
    read_rate.clear()
    stop.clear()
    th = threading.Thread(target=reader)
    th.start()
    time.sleep(1.0)
    stop.set()
    th.join()
    rate_alone = statistics.median(read_rate) if read_rate else float("nan")
    print(f"{torch.ocl.get_device_properties(0).name}; reads of 4 MiB pieces on a side stream in another thread")
    print("| | alone | during the reads |\n|---|---|---|")
    print(f"| host us per small launch (add_ on 1024 floats) | {alone[0]:.1f} | {during[0]:.1f} |")
    print(f"| 200 matmuls 1024^2, ms | {alone[1]:.1f} | {during[1]:.1f} |")
    print(f"| reads GB/s (alone / during the launches and matmuls) | {rate_alone:.2f} | {rate_during:.2f} |")


if __name__ == "__main__":
    main()
