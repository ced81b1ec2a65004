"""Asynchronous collectives for the "ocl_gloo" process group (_dist_pg.py): a worker thread per group and
the Work objects it completes.

Why a thread of ours: gloo runs a collective on host memory as soon as it is called, so the device->host
staging of an ocl tensor must be complete before gloo sees the buffer. Waiting for it on the calling
thread would block that thread (DDP's autograd hooks) until the device has caught up with everything
enqueued so far, which is the stall overlap is meant to avoid. Instead the calling thread only enqueues
non-blocking reads into pinned memory, each followed by an event on its stream (StagedTensor per chunk,
_dist_pg.Reads per tensor), and hands the rest to the worker: wait for the reads' events (GIL released),
run gloo (GIL released), enqueue the non-blocking write back. Chunk k's reduction overlaps the read of
chunk k+1 and the write back of chunk k-1, and all of it overlaps whatever the caller enqueues meanwhile.

Every gloo call of a group goes through its one worker, in submission order: gloo matches collectives
across ranks by the order they are called, so a collective called directly while the worker runs
another would pair with a different one on another rank.

Stream order, as NCCL's: the worker's current stream on each device is its side stream, which first waits
(on the device) for an event the caller's current stream recorded when the collective was called, so the
write back lands after everything the caller enqueued before. A Work completes once the write back is
*enqueued*, not finished: its future is device-aware (torch.futures.Future(devices=[ocl...])), so
completing it records an event on the side stream, and `wait()` (the Work's or the future's, which DDP's
Reducer calls in C++) blocks the host only until then and makes the waiting thread's current stream wait
for that event; callbacks chained with then() run on streams that wait for it. Kernels queued after
wait() read the results without the host waiting for the device. Every ocl tensor written on the side
stream is recorded on it (Tensor.record_stream), so the caching allocator does not hand its memory to
another stream before the write back has run; pinned host buffers are kept by the host allocator until
the copies from them finish. An error (gloo's timeout, a dead peer) completes the Work with that error,
which `wait()` raises.
"""
import atexit
import collections
import datetime
import queue
import threading
import weakref
from time import perf_counter

import torch
import torch.distributed as dist

CHUNK_BYTES = 4 << 20  # per gloo call: big enough for gloo's bandwidth, small enough to pipeline
SYNCHRONOUS = False  # True: every collective call waits for its Work (benchmarks/distributed.py compares)


def _ocl_devices(result):
    """The ocl devices of the tensors in `result` (a list of tensors or of lists of them)."""
    devices = set()
    for item in result:
        for t in (item if isinstance(item, (list, tuple)) else [item]):
            if isinstance(t, torch.Tensor) and t.device.type == "ocl":
                devices.add(t.device)
    return sorted(devices, key=lambda d: d.index)


class AsyncWork(dist.Work):
    """A collective queued on a group's worker; `result` is what its future holds (the caller's tensors)."""

    def __init__(self, result):
        super().__init__()
        self._result = result
        self.devices = _ocl_devices(result)
        # Device-aware when ocl tensors are in it: completing it records an event on the worker's
        # current (side) streams, and waiting makes the waiter's current streams wait for it.
        self._future = torch.futures.Future(devices=self.devices) if self.devices else torch.futures.Future()
        self._done = threading.Event()
        self._error = None
        self._events = []  # recorded after the write back: is_completed() asks the device

    def _finish(self, error=None, events=()):
        self._error = error
        self._events = list(events)
        try:
            if error is None:
                self._future.set_result(self._result)
            else:
                self._future.set_exception(error)
        except BaseException as e:  # noqa: BLE001  (a waiter gets it rather than waiting forever)
            self._error = self._error or e
        finally:
            self._done.set()

    def host_wait(self, timeout=None):
        """Blocks until the worker has run gloo and enqueued the write back; raises its error."""
        # c10d passes timedelta(0) for "no timeout"; gloo's own timeout bounds every job anyway.
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        if not self._done.wait(seconds or None):
            raise RuntimeError(f"ocl_gloo: Work.wait timed out after {seconds} s")
        if self._error is not None:
            raise self._error

    def wait(self, timeout=None):
        self.host_wait(timeout)
        self._future.wait()  # the current streams wait for the write back (no host wait on the device)
        return True

    def synchronize(self):
        self.wait()

    def is_completed(self):
        # As NCCL's: True once the results are on the device, not merely enqueued.
        return self._done.is_set() and all(e.query() for e in self._events)

    def is_success(self):
        return self._done.is_set() and self._error is None

    def exception(self):
        return self._error

    def get_future(self):
        return self._future


def _job_label(job):
    """"ocl_gloo::allreduce_each" for the job closure of OclGlooProcessGroup._allreduce_each."""
    parts = getattr(job, "__qualname__", "job").split(".")
    method = parts[-3] if len(parts) >= 3 and parts[-2] == "<locals>" else parts[-1]
    return "ocl_gloo::" + method.lstrip("_")


class Worker:
    """One thread running a group's jobs in submission order."""

    def __init__(self):
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self._side = {}  # device index -> the worker's stream there (its current stream on that device)
        _workers.add(self)

    def submit(self, job, result):
        work = AsyncWork(result)
        # The caller's current streams as of this call: the worker's side streams wait for these events
        # before writing back, so the write back follows what the caller enqueued on the outputs before.
        entry = []
        for device in work.devices:
            event = torch.Event(device=device)
            event.record(torch.ocl.current_stream(device.index))
            entry.append((device, event))
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="ocl_gloo", daemon=True)
                self._thread.start()
        self._queue.put((job, work, entry))
        if SYNCHRONOUS:
            work.wait()
            for device in work.devices:
                torch.ocl.current_stream(device.index).synchronize()
        return work

    def side_stream(self, device):
        """The worker's stream on `device`, made its current stream there (called on the worker thread)."""
        index = device.index if device.index is not None else torch.ocl.current_device()
        if index not in self._side:
            self._side[index] = torch.ocl.Stream(index)
            torch.ocl.set_stream(self._side[index])
        return self._side[index]

    def _run(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            job, work, entry = item
            try:
                for device, event in entry:
                    self.side_stream(device).wait_event(event)
                # A named range on this thread for torch.profiler traces (with profile_all_threads): the
                # collective's staging and gloo work next to the backward pass that it overlaps.
                with torch.autograd.profiler.record_function(_job_label(job)):
                    job(self)
            except BaseException as e:  # noqa: BLE001  (handed to whoever waits on the Work)
                work._finish(e)
            else:
                events = []
                for device in work.devices:
                    event = torch.Event(device=device)
                    event.record(self.side_stream(device))
                    events.append(event)
                work._finish(events=events)  # the future's events go on the side streams (current here)
            del job, work, item, entry  # the staging buffers go on this (Python) thread, not with the next job

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

    def run(self, worker, start, keep, write_back=True, depth=1, pieces=None, timing=None):
        """On the worker: per piece (by default the read chunks; else `pieces`, (begin, end) element ranges
        covering the tensor in order), wait for the reads it covers, start(host view, piece number) its
        collective (which returns a callable waiting for it), and once that is done write the piece back.
        Up to `depth` pieces are in flight at once (one per gloo lane, _dist_lanes.py), finished and
        written back in order; with depth 1 each is done before the next starts. `timing(i, stage, start)`,
        when given, is told when piece i's "read" wait and its "write" (enqueue) started (perf_counter)."""
        side = worker.side_stream(self.tensor.device)
        flat = self.dense.view(-1)
        pending = collections.deque()
        ranges = pieces if pieces is not None else [(a, b) for a, b, _ in self.chunks]
        read = 0  # chunks whose reads have been waited for

        def finish():
            a, b, h, wait, i = pending.popleft()
            wait()
            if write_back:
                t = perf_counter()
                flat[a:b].copy_(h, non_blocking=True)
                if timing:
                    timing(i, "write", t)

        with torch.ocl.stream(side):
            for i, (a, b) in enumerate(ranges):
                t = perf_counter()
                while read < len(self.chunks) and self.chunks[read][0] < b:
                    self.chunks[read][2].synchronize()
                    read += 1
                if timing:
                    timing(i, "read", t)
                h = self.host[a:b]
                keep.add(h)  # gloo's thread holds it too: waited for at exit (_dist_pg._staged)
                pending.append((a, b, h, start(h, i), i))
                if len(pending) >= depth:
                    finish()
            while pending:
                finish()
            if write_back:
                self.dense.record_stream(side)  # written on side: not reused before that has run
                if self.dense is not self.tensor:
                    self.tensor.copy_(self.dense)
                    self.tensor.record_stream(side)


def copy_back(worker, tensors, hosts):
    """On the worker: the host results into the caller's tensors (ocl ones enqueued on the side stream,
    any strides; the Work's future orders the waiter after them), cpu ones copied at once."""
    for t, h in zip(tensors, hosts):
        if t is h:
            continue
        if t.device.type != "ocl":
            t.copy_(h)
            continue
        side = worker.side_stream(t.device)
        with torch.ocl.stream(side):
            t.copy_(h, non_blocking=True)
        t.record_stream(side)
