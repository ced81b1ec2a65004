"""Asynchronous collectives for the "ocl_gloo" process group (_dist_pg.py): a worker thread per group and
the Work objects it completes.

Why a thread of ours: gloo runs a collective on host memory as soon as it is called, so the device->host
staging of an ocl tensor must be complete before gloo sees the buffer. Waiting for it on the calling
thread would block that thread (DDP's autograd hooks) until the device has caught up with everything
enqueued so far, which is the stall overlap is meant to avoid. Instead the calling thread only enqueues
non-blocking reads into pinned memory, one per chunk, each followed by an event on its stream, and hands
the rest to the worker: per chunk, wait for the chunk's event (GIL released), run gloo on it (GIL
released), enqueue the non-blocking write back on a side stream. Chunk k's reduction overlaps the read of
chunk k+1 and the write back of chunk k-1, and all of it overlaps whatever the caller enqueues meanwhile.

Every gloo call of a group goes through its one worker, in submission order: gloo matches collectives
across ranks by the order they are called, so a collective called directly while the worker runs
another would pair with a different one on another rank.

A Work completes (and its future, which DDP's Reducer chains on, gets its value) only once the write back
has finished on the device, so a consumer on any stream or thread reads the results; `wait()` blocks the
calling thread until then. An error (gloo's timeout, a dead peer) completes the Work with that error,
which `wait()` raises.
"""
import atexit
import datetime
import queue
import threading
import weakref

import torch
import torch.distributed as dist

CHUNK_BYTES = 4 << 20  # per gloo call: big enough for gloo's bandwidth, small enough to pipeline
SYNCHRONOUS = False  # True: every collective call waits for its Work (benchmarks/distributed.py compares)


class AsyncWork(dist.Work):
    """A collective queued on a group's worker; `result` is what its future holds (the caller's tensors)."""

    def __init__(self, result):
        super().__init__()
        self._result = result
        self._future = torch.futures.Future()
        self._done = threading.Event()
        self._error = None

    def _finish(self, error=None):
        self._error = error
        self._done.set()
        if error is None:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(error)

    def wait(self, timeout=None):
        # c10d passes timedelta(0) for "no timeout"; gloo's own timeout bounds every job anyway.
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        if not self._done.wait(seconds or None):
            raise RuntimeError(f"ocl_gloo: Work.wait timed out after {seconds} s")
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        return self._done.is_set()

    def is_success(self):
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error

    def get_future(self):
        return self._future


class Worker:
    """One thread running a group's jobs in submission order."""

    def __init__(self):
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self._side = {}  # device index -> the stream the write backs run on
        _workers.add(self)

    def submit(self, job, result):
        work = AsyncWork(result)
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ocl_gloo", daemon=True)
                self._thread.start()
        self._queue.put((job, work))
        if SYNCHRONOUS:
            work.wait()
        return work

    def side_stream(self, device):
        """The worker's stream on `device` (called on the worker thread)."""
        index = device.index if device.index is not None else torch.ocl.current_device()
        if index not in self._side:
            self._side[index] = torch.ocl.Stream(index)
        return self._side[index]

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            job, work = item
            try:
                job(self)
            except BaseException as e:  # noqa: BLE001  (handed to whoever waits on the Work)
                work._finish(e)
            else:
                work._finish()
            del job, work, item  # the staging buffers go on this (Python) thread, not with the next job

    def close(self, timeout=None):
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)


_workers = weakref.WeakSet()


@atexit.register
def _drain():
    # Jobs still queued at exit finish before the interpreter finalizes: a worker blocked inside gloo
    # while the interpreter shuts down would be ended mid C++ frame (see _dist_pg._staged).
    for worker in list(_workers):
        worker.close(timeout=30)


def _chunks(numel, itemsize):
    step = max(1, CHUNK_BYTES // itemsize)
    return [(a, min(a + step, numel)) for a in range(0, numel, step)]


class StagedTensor:
    """An ocl tensor's values being read into pinned host memory chunk by chunk (enqueued on the current
    stream at construction, on the calling thread), and written back after the worker reduced each chunk."""

    def __init__(self, t, host_buffer):
        self.tensor = t
        self.dense = t if t.is_contiguous() else t.contiguous()  # a device copy when strided
        flat = self.dense.view(-1)
        self.host = host_buffer(flat)
        stream = torch.ocl.current_stream(t.device.index)
        self.chunks = []
        for a, b in _chunks(flat.numel(), flat.element_size()):
            self.host[a:b].copy_(flat[a:b], non_blocking=True)
            event = torch.Event(device=t.device)
            event.record(stream)
            self.chunks.append((a, b, event))

    def run(self, worker, per_chunk, keep, write_back=True):
        """On the worker: per chunk, wait for its read, per_chunk(host view) (gloo), write it back."""
        side = worker.side_stream(self.tensor.device)
        flat = self.dense.view(-1)
        with torch.ocl.stream(side):
            for a, b, event in self.chunks:
                event.synchronize()
                h = self.host[a:b]
                keep.add(h)  # gloo's thread holds it too: waited for at exit (_dist_pg._staged)
                per_chunk(h)
                if write_back:
                    flat[a:b].copy_(h, non_blocking=True)
            if write_back and self.dense is not self.tensor:
                self.tensor.copy_(self.dense)
        side.synchronize()


def copy_back(worker, tensors, hosts):
    """On the worker: the host results into the caller's tensors (ocl ones on the side stream, any
    strides), finished on the device when this returns."""
    pairs = [(t, h) for t, h in zip(tensors, hosts) if t is not h]
    ocl = [t for t, _ in pairs if t.device.type == "ocl"]
    if not ocl:
        for t, h in pairs:
            t.copy_(h)
        return
    side = worker.side_stream(ocl[0].device)
    with torch.ocl.stream(side):
        for t, h in pairs:
            t.copy_(h, non_blocking=True)
    side.synchronize()
