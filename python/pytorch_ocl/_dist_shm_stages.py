"""A thread per stage for the shared-memory all-reduce of ocl tensors (_dist_shm.py).

Why: NVIDIA's OpenCL runs a host<->device copy inside the enqueue call, at 8-13 GB/s, pinned memory or not, on
any queue (benchmarks/dist_shm_copies.py). On one thread the device read of a piece, its copy into the
segment and reduction, and the write back of an earlier piece then run one after another: on 2x H200 a 4 MiB
piece took 0.15 ms to copy in, 0.12 to reduce, 0.15 to copy out and 0.53 to *enqueue* its write back, ~150 ms
per GPT-2 step (500 MB), and the reads ran inside DDP's hooks on the backward's thread. Here each stage has its
own thread, connected by queues, so piece i + 2's read, piece i + 1's reduction and piece i's write run at once:
  reader  ("ocl_shm_read", one per group): on its own stream, which first waits for an event the caller's
          stream recorded when the all-reduce was called (the read sees everything enqueued before it, as
          NCCL's), reads the pieces into the pinned staging buffer in order, each waited for (its event) before
          it is handed on. Tasks are queued by the calling thread, so the reader reads ahead of the worker
          across all-reduces queued behind the one it is reducing;
  worker  (the group's _dist_async.Worker, as before): the transport's protocol (copy in, reduce, copy out,
          up to `depth` pieces in flight) on pieces as the reader delivers them; finished ones go to the writer;
  writer  ("ocl_shm_write", one per group): on its own stream (waiting for the caller's event first, too)
          enqueues each piece's host->device write back.
At the end of a tensor the worker waits until the writer has enqueued its last write and makes its side stream
wait for an event recorded after it; the Work's completion event is recorded on the side stream (_dist_async),
so waiters are ordered after the writes, as with the one-thread path. The tensor is recorded on the writer's
and the side stream for the caching allocator; the reads are complete (waited for) before a piece moves on.

Errors: a failed read reaches the worker, which raises it (the transport is abandoned when pieces are in
flight: Transport.abandon, as before). A failed write stops that tensor's writes; the worker still takes its
remaining pieces through the protocol (the peers are not left waiting) and then raises it, so the Work's wait()
raises and the group stays usable. Transport.close (the group's shutdown) stops and joins both threads; a worker
waiting for them gives up then (within _POLL_S). At exit they are joined after the workers have drained.

PYTORCH_OCL_DIST_SHM_STAGE_THREADS: 1 (default) these threads, 0 the one-thread path (_dist_shm.run_staged: the
reads enqueued by the caller, the write backs by the worker); read when a group is made, per rank (the protocol
between the ranks is the same either way).
"""
import atexit
import queue
import threading
import traceback
import weakref
from collections import deque
from time import perf_counter

import torch
import torch.distributed as dist

from . import _dist_lanes

ENV = "PYTORCH_OCL_DIST_SHM_STAGE_THREADS"
READER, WRITER = "ocl_shm_read", "ocl_shm_write"
_POLL_S = 0.1  # how often a waiting worker checks that the group is not being shut down
_JOIN_S = 5.0  # how long close() waits for a stage thread to finish what it is doing


def wanted():
    """This process's PYTORCH_OCL_DIST_SHM_STAGE_THREADS: True (default, "1") or False ("0")."""
    return _dist_lanes.switch_env(ENV, True, "one thread for every stage of the shared-memory all-reduce",
                                  "a reader, the worker and a writer thread")


def _read(dst, src):
    """One piece's device read (enqueued on the reader's current stream); tests replace it to fail."""
    dst.copy_(src, non_blocking=True)


def _write(dst, src):
    """One piece's write back (enqueued on the writer's current stream); tests replace it to fail."""
    dst.copy_(src, non_blocking=True)


class _StageThread:
    """A daemon thread running tasks (callables taking it) in order; its stream per device is made on it."""

    def __init__(self, name):
        self.name = name
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()
        self._closed = False
        self._streams = {}

    def put(self, task):
        with self._lock:
            if self._closed:
                raise dist.DistBackendError("ocl_gloo: the process group was shut down")
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
        self._queue.put(task)

    def stream(self, device):
        """This thread's stream on `device` (called on the thread)."""
        if device.index not in self._streams:
            self._streams[device.index] = torch.ocl.Stream(device.index)
        return self._streams[device.index]

    def _run(self):
        while True:
            task = self._queue.get()
            if task is None:
                return
            task(self)  # tasks hand their own errors on
            del task  # staging buffers go here, not with the next task

    def close(self):
        with self._lock:
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(_JOIN_S)


class Stages:
    """The reader and writer threads of one group's transport (started at their first task)."""

    def __init__(self):
        self.reader, self.writer = _StageThread(READER), _StageThread(WRITER)
        self.closing = False
        _all.add(self)

    def close(self):
        self.closing = True
        self.reader.close()
        self.writer.close()


_all = weakref.WeakSet()


@atexit.register
def _join_all():
    from . import _dist_async

    _dist_async._drain()  # jobs still queued need the stage threads; idempotent
    for stages in list(_all):
        stages.close()


def _get(ready, stages):
    """The next item of `ready` (a SimpleQueue), waiting until it comes or the group shuts down."""
    while True:
        try:
            return ready.get(timeout=_POLL_S)
        except queue.Empty:
            if stages.closing:
                raise dist.DistBackendError("ocl_gloo: the process group was shut down during a shared-memory "
                                            "all_reduce") from None


class StagedRead:
    """An ocl tensor to all-reduce with a thread per stage: made on the calling thread (its dense copy, the
    pinned staging buffer, an event on the caller's current stream), read piece by piece on the reader."""

    def __init__(self, stages, t, host_buffer, pieces):
        self.tensor = t
        self.dense = t if t.is_contiguous() else t.contiguous()  # a device copy when strided (caller's stream)
        self.flat = self.dense.view(-1)
        self.host = host_buffer(self.flat)
        self.pieces = pieces
        self.event = torch.Event(device=t.device)
        self.event.record(torch.ocl.current_stream(t.device.index))
        self.ready = queue.SimpleQueue()  # per piece (start, end) of its read, or the read's error
        self.cancelled = False
        if pieces:
            stages.reader.put(self._read)

    def _read(self, thread):
        try:
            stream = thread.stream(self.tensor.device)
            with torch.ocl.stream(stream):
                stream.wait_event(self.event)
                for a, b in self.pieces:
                    if self.cancelled:
                        return
                    t = perf_counter()
                    _read(self.host[a:b], self.flat[a:b])
                    done = torch.Event(device=self.tensor.device)
                    done.record(stream)
                    done.synchronize()  # the worker may use the piece once it is here
                    self.ready.put((t, perf_counter()))
        except BaseException as e:  # noqa: BLE001  (the worker raises it)
            traceback.clear_frames(e.__traceback__)
            self.ready.put(e)


class _Writes:
    """One tensor's write backs on the writer thread; the first error stops them and is kept for the worker."""

    def __init__(self, st, call, trace):
        self.st, self.call, self.trace = st, call, trace
        self.error = None
        self.started = False
        self.done = queue.SimpleQueue()  # the event after the last write, or an error

    def piece(self, i, a, b, h):
        def write(thread):
            if self.error is not None:
                return
            try:
                stream = thread.stream(self.st.tensor.device)
                with torch.ocl.stream(stream):
                    if not self.started:  # after what the caller enqueued before the all-reduce (as the side stream)
                        stream.wait_event(self.st.event)
                        self.st.dense.record_stream(stream)  # written here: not reused before that has run
                        self.started = True
                    t = perf_counter()
                    _write(self.st.flat[a:b], h)
                    self.trace.add((self.call, i), "write", t)
            except BaseException as e:  # noqa: BLE001  (the worker raises it at the tensor's end)
                traceback.clear_frames(e.__traceback__)
                self.error = e
        return write

    def end(self, thread):
        try:
            event = torch.Event(device=self.st.tensor.device)
            event.record(thread.stream(self.st.tensor.device))
            self.done.put(event)
        except BaseException as e:  # noqa: BLE001
            traceback.clear_frames(e.__traceback__)
            self.done.put(e)


def run(transport, worker, st, red):
    """On the worker: the StagedRead `st` all-reduced through `transport` with the reduction's host steps
    (AVG, PREMUL_SUM: _dist_pg._Reduction) around each piece, read and written back on the stage threads."""
    stages, trace = transport.stages, transport.trace
    call = transport.begin()
    writes = _Writes(st, call, trace)
    pending = deque()

    def finish():
        i, a, b, h, piece = pending.popleft()
        transport.finish(piece)
        red.after([h])
        stages.writer.put(writes.piece(i, a, b, h))

    try:
        for i, (a, b) in enumerate(st.pieces):
            t = perf_counter()
            got = _get(st.ready, stages)
            if isinstance(got, BaseException):
                raise got
            trace.add((call, i), "wait_read", t)
            trace.add((call, i), "read", got[0], got[1], READER)
            h = st.host[a:b]
            red.before([h])
            pending.append((i, a, b, h, transport.stage_in(h, red.gloo_op, call, a, i)))
            if len(pending) >= transport.depth:
                finish()
        while pending:
            finish()
        if st.pieces:
            _complete(stages, worker, st, writes, trace, (call, len(st.pieces) - 1))
    except BaseException as e:
        st.cancelled = True  # the reader stops reading this tensor
        writes.error = writes.error or e  # and the writer skips the writes still queued (the Work fails)
        transport.abandon(e)  # a no-op once every piece is through the protocol (a failed write)
        traceback.clear_frames(e.__traceback__)  # its frames would hold the staging buffers (_dist_shm.run_staged)
        st.host = None
        raise


def _complete(stages, worker, st, writes, trace, key):
    """Once every piece went to the writer: waits until it has enqueued them, then orders the worker's side
    stream (the Work's) after the writes and copies a strided tensor's result from its dense copy there."""
    t = perf_counter()
    stages.writer.put(writes.end)
    done = _get(writes.done, stages)
    trace.add(key, "wait_write", t)
    if writes.error is not None:
        raise dist.DistBackendError(f"ocl_gloo: the write back of a shared-memory all_reduce failed: "
                                    f"{writes.error!r}")
    if isinstance(done, BaseException):
        raise done
    side = worker.side_stream(st.tensor.device)
    side.wait_event(done)  # the Work's event (recorded on side) comes after the writes
    st.dense.record_stream(side)
    if st.dense is not st.tensor:
        with torch.ocl.stream(side):
            st.tensor.copy_(st.dense)
        st.tensor.record_stream(side)
    if trace.on:  # how long the device takes to finish the writes after the last enqueue
        t = perf_counter()
        side.synchronize()
        trace.add(key, "write_tail", t)
