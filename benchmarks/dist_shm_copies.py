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
and while the reads run (the reader waiting for each piece by clFinish, clWaitForEvents, event polling, or not at
all), the reads' rate alone and during, then the same reads enqueued by the training thread itself. On NVIDIA's
OpenCL (H200, 2026-11-27) a non-blocking read into pinned memory returns only when the copy is done (64 reads:
25 ms to enqueue) and holds the other threads' launches meanwhile (9 -> 230-440 us each, whatever the wait), while
the GPU itself overlaps them with kernels (from one thread, matmuls 3.3 ms with or without the reads in flight).
The same held for clEnqueueCopyBuffer into the pinned block's own buffer, for a copy kernel writing that buffer
(24.4 ms to enqueue the 64), and for pinned memory made as CL_MEM_USE_HOST_PTR over our own pages: no OpenCL
route tried lets a device-to-host copy run while another thread launches.
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
    """The reader waits for each piece one of three ways: Stream.synchronize (clFinish), Event.synchronize
    (clWaitForEvents) or polling Event.query (clGetEventInfo) with a short sleep; "enqueue only" queues the 64
    reads and waits once. Which of them holds up the other thread's launches tells where the lock is."""
    piece, pieces = 4 << 20, 64
    src = (torch.arange(piece * pieces, dtype=torch.int32, device=dev) % 251).to(torch.uint8)
    pinned = torch.empty(piece, dtype=torch.uint8, pin_memory=True)
    small = torch.zeros(1024, device=dev)
    a = torch.randn(1024, 1024, device=dev)
    stop = threading.Event()
    read_rate = []

    def wait_finish(side):
        side.synchronize()

    def wait_event(side):
        side.record_event().synchronize()

    def wait_poll(side):
        ev = side.record_event()
        while not ev.query():
            time.sleep(2e-5)

    waits = {"Stream.synchronize": wait_finish, "Event.synchronize": wait_event, "Event.query poll": wait_poll,
             "enqueue only": None}

    def reader(wait):  # the all-reduce reader's pattern: one piece at a time, each waited for
        side = torch.ocl.Stream()
        with torch.ocl.stream(side):
            while not stop.is_set():
                start = time.perf_counter()
                for i in range(pieces):
                    pinned.copy_(src[i * piece:(i + 1) * piece], non_blocking=True)
                    if wait:
                        wait(side)
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

    def with_reader(wait, body, seconds=0.2):
        stop.clear()
        read_rate.clear()
        th = threading.Thread(target=reader, args=(wait,))
        th.start()
        time.sleep(seconds)
        out = body() if body else None
        stop.set()
        th.join()
        return out, (statistics.median(read_rate) if read_rate else float("nan"))

    launches(), matmuls()
    alone = (launches(), matmuls())
    print(f"{torch.ocl.get_device_properties(0).name}; reads of 4 MiB pieces on a side stream in another thread")
    print(f"alone: host us per small launch (add_ on 1024 floats) {alone[0]:.1f}, 200 matmuls 1024^2 {alone[1]:.1f} ms")
    print("| reader waits by | host us per small launch | 200 matmuls ms | reads GB/s alone | reads GB/s during | "
          "piece read right |")
    print("|---|---|---|---|---|---|")
    for name, wait in waits.items():
        during, rate_during = with_reader(wait, lambda: (launches(), matmuls()))
        _, rate_alone = with_reader(wait, None, 1.0)
        k = 37
        pinned.zero_()
        pinned.copy_(src[k * piece:(k + 1) * piece], non_blocking=True)
        sync()
        right = torch.equal(pinned, src[k * piece:(k + 1) * piece].cpu())
        print(f"| {name} | {during[0]:.1f} | {during[1]:.1f} | {rate_alone:.2f} | {rate_during:.2f} | {right} |")

    # One thread: the 64 reads enqueued on a side stream (nothing waits), then the launches / matmuls timed while
    # they run: a slow launch here is the driver holding launches behind the copies, not a lock between threads.
    side = torch.ocl.Stream()
    sync()
    for label, enqueue in (("64 reads in flight", True), ("no reads (control)", False)):
        pinned.zero_()
        start = time.perf_counter()
        if enqueue:
            with torch.ocl.stream(side):
                for i in range(pieces):
                    pinned.copy_(src[i * piece:(i + 1) * piece], non_blocking=True)
        enqueue_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        for _ in range(200):
            small.add_(1)
        host = (time.perf_counter() - start) / 200 * 1e6
        t0 = time.perf_counter()
        for _ in range(50):
            a.mm(a)
        torch.ocl.current_stream().synchronize()
        mm_ms = (time.perf_counter() - t0) * 1e3
        side.synchronize()
        right = not enqueue or torch.equal(pinned, src[(pieces - 1) * piece:].cpu())
        print(f"one thread, {label}: enqueueing them {enqueue_ms:.1f} ms, then host us per small launch {host:.1f}, "
              f"50 matmuls (to their end) {mm_ms:.1f} ms; last piece right {right}")


if __name__ == "__main__":
    main()
