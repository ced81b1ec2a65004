"""The process group behind the "ocl_gloo" c10d backend (registered by pytorch_ocl.distributed).

Each method stages ocl tensors into contiguous pinned host buffers and queues the rest on the group's
worker (_dist_async.py): the same collective of an inner ProcessGroupGloo on the host buffers, then the
copy of the results into the ocl tensors (any strides). It returns that job's Work, whose future holds
the caller's tensors (DDP's Reducer and comm hooks read that future). All-reduce and broadcast of one ocl
tensor are chunked and pipelined; the other collectives enqueue non-blocking reads of their ocl inputs
(Reads) that the worker waits for: no collective blocks the calling thread on the device (point-to-point
sends still read with a blocking copy, see send). The Work's wait() is stream-ordered (_dist_async.py).
CPU tensors are handed to gloo as they are. See distributed.py for why this is a Python ProcessGroup.
"""
import atexit
import sys
import time
import weakref

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d
from torch._C._distributed_c10d import _create_work_from_future

from . import _dist_async, _dist_lanes, _dist_nccl, _dist_peer, _dist_shm, _dist_shm_stages

_R = dist.ReduceOp.RedOpType
# Ops gloo runs itself; AVG and PREMUL_SUM become SUM plus a host-side step (gloo has neither).
_NATIVE_OPS = {_R.SUM, _R.PRODUCT, _R.MIN, _R.MAX, _R.BAND, _R.BOR, _R.BXOR}


def _is_ocl(t):
    return t.device.type == "ocl"


# gloo's worker thread drops its references to a work's tensors after marking the work complete. A tensor
# that has a Python object (every buffer made here) then hands its reference to that object back, which
# takes the GIL; a thread taking the GIL once the interpreter finalizes is ended by pthread_exit, whose
# unwinding through C++ noexcept frames aborts the process ("terminate called without an active
# exception": a rank of CI's torchrun test, 1 run in 15 under load; core dumps: ~AsyncAllreduceWork or
# ~AsyncBroadcastWork -> TensorImpl::decref_pyobject -> take_gil -> PyThread_exit_thread). So every host
# buffer is listed weakly here, and at exit (before finalization) we wait, with the GIL released, until
# no C++ owner holds one any more.
_staged = weakref.WeakSet()


def _wait_for_gloo_release(timeout_s=5.0):
    _dist_async._drain()  # first: jobs still queued stage (and hand gloo) buffers of their own
    deadline = time.monotonic() + timeout_s
    for t in list(_staged):
        # 3 = the list, the loop variable and getrefcount's argument; a C++ owner adds one
        while sys.getrefcount(t) > 3 and time.monotonic() < deadline:
            time.sleep(0.001)


atexit.register(_wait_for_gloo_release)


def _host_buffer(t):
    """An uninitialised contiguous host tensor shaped like `t`, pinned (from our caching pinned-memory
    allocator) when it stages an ocl tensor; a cpu tensor's scratch copy needs no device."""
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=_is_ocl(t))
    _staged.add(host)
    return host


def _stage(t, copy=False):
    """Host tensor holding `t`'s values: a pinned copy for ocl tensors (or when `copy`: the
    caller is about to modify it and must not touch the user's cpu tensor), else `t` itself."""
    if not (_is_ocl(t) or copy):
        return t
    host = _host_buffer(t)
    host.copy_(t)  # blocking device->host copy: the values are on the host when it returns
    return host


class Reads:
    """Host copies of a collective's inputs, read without blocking the calling thread: an ocl tensor's
    read into pinned memory is only enqueued (on the caller's current stream, so it sees everything the
    caller enqueued before), followed by an event; wait() waits for those events on the worker thread.
    The calling thread (FSDP's all-gathers and reduce-scatters, DDP's hooks) does not wait for the device
    to catch up."""

    def __init__(self):
        self._events = []

    def stage(self, t, copy=False):
        """As _stage (a cpu tensor is returned as it is unless `copy`), the read of an ocl one enqueued."""
        if not _is_ocl(t):
            return _stage(t, copy=copy)
        host = _host_buffer(t)
        host.copy_(t, non_blocking=True)  # strided: a contiguous device copy first, on the same stream
        self._mark(t)
        return host

    def pack(self, tensors, dtype):
        """The tensors' values one after another in one flat host buffer (gloo's all-to-all form)."""
        sizes = [t.numel() for t in tensors]
        host = _host_buffer(torch.empty(sum(sizes), dtype=dtype, device="meta"))
        for dst, t in zip(host.split(sizes), tensors):
            dst.copy_(t.reshape(-1), non_blocking=_is_ocl(t))
            if _is_ocl(t):
                self._mark(t)
        return host

    def _mark(self, t):
        event = torch.Event(device=t.device)
        event.record(torch.ocl.current_stream(t.device.index))
        self._events.append(event)

    def wait(self):
        for event in self._events:
            event.synchronize()


def _keep():
    """Where the worker lists the chunk views it hands gloo (weakly; see _staged)."""
    return _staged


def _opts(cls, opts, **fields):
    """A fresh options object for gloo carrying the caller's timeout (and root) plus `fields`."""
    new = cls()
    if opts is not None:
        new.timeout = opts.timeout
        for name in ("rootRank", "rootTensor"):
            if hasattr(opts, name):
                setattr(new, name, getattr(opts, name))
    for name, value in fields.items():
        setattr(new, name, value)
    return new


class _Reduction:
    """How a c10d ReduceOp runs on gloo: the op gloo gets, plus what to do before and after."""

    def __init__(self, reduce_op, world_size):
        op = reduce_op.op if isinstance(reduce_op, dist.ReduceOp) else reduce_op
        self.kind = op
        self.world_size = world_size
        self.factor = None
        if op == _R.PREMUL_SUM:
            self.factor = getattr(reduce_op, "factor", None)
            if self.factor is None and hasattr(reduce_op, "__getstate__"):
                state = reduce_op.__getstate__()  # (op, factor): torch versions without the attribute
                self.factor = state[1] if isinstance(state, tuple) and len(state) > 1 else None
            if self.factor is None:
                raise ValueError("ocl_gloo: this torch's PREMUL_SUM ReduceOp does not expose its factor")
            if isinstance(self.factor, torch.Tensor):
                self.factor = self.factor.to("cpu")
        elif op not in _NATIVE_OPS and op != _R.AVG:
            raise ValueError(f"ocl_gloo: unsupported reduce op {op}")
        self.gloo_op = dist.ReduceOp.SUM if op in (_R.AVG, _R.PREMUL_SUM) else reduce_op

    @property
    def modifies_input(self):
        return self.kind == _R.PREMUL_SUM

    def before(self, hosts):
        if self.kind == _R.PREMUL_SUM:
            for h in hosts:
                h.mul_(self.factor)

    def after(self, hosts):
        if self.kind != _R.AVG:
            return
        for h in hosts:
            if h.is_floating_point() or h.is_complex():
                h.div_(self.world_size)
            else:  # integer average truncates, as NCCL's ncclAvg does
                h.div_(self.world_size, rounding_mode="trunc")


class _RecvWork(dist.Work):
    """A receive in flight: wait() waits for gloo, then enqueues the copies of the host buffers into the ocl
    tensors on the current stream (the pinned buffers are kept until those have run)."""

    def __init__(self, gloo_work, tensors, hosts):
        super().__init__()
        self._gloo_work = gloo_work
        self._tensors = tensors
        self._hosts = hosts
        self._copied = False

    def wait(self, timeout=None):
        # c10d passes timedelta(0) for "no timeout", which gloo's Work.wait reads the same way.
        if timeout is None:
            self._gloo_work.wait()
        else:
            self._gloo_work.wait(timeout)
        if not self._copied:
            for t, h in zip(self._tensors, self._hosts):
                if t is not h:  # enqueued on the current stream, as NCCL's receive is ordered on it
                    t.copy_(h, non_blocking=True)
            self._copied = True
        return True

    def is_completed(self):
        return self._copied

    def get_future(self):
        self.wait()
        fut = torch.futures.Future()
        fut.set_result(self._tensors)
        return fut

    def _source_rank(self):
        return self._gloo_work._source_rank()


_c10d_impls = None


def _route_allgather_base():
    """Sends the ocl kernel of the dispatcher op c10d::_allgather_base_ to our group's method.

    PyProcessGroup forwards most of ProcessGroup's virtual methods to Python, but not all_gather_single:
    a C++ caller of it (_c10d_functional.all_gather_into_tensor_out, what compiled code emits) reaches
    torch's ocl kernel of c10d::_allgather_base_, which looks up a C++ backend for ocl and fails. The
    replacement unboxes the ProcessGroup argument (pybind gives back our Python object) and calls us.
    Once per process; torch warns when a kernel is replaced, which here is the point."""
    global _c10d_impls
    if _c10d_impls is not None:
        return
    import datetime
    import warnings

    def allgather_base(output, input, process_group, async_op=True, timeout=-1):
        pg = dist.ProcessGroup.unbox(process_group)
        if not isinstance(pg, OclGlooProcessGroup):
            raise RuntimeError(f"ocl_gloo: no ocl backend in process group {type(pg).__name__}")
        opts = c10d.AllgatherOptions()
        if timeout >= 0:
            opts.timeout = datetime.timedelta(milliseconds=timeout)
        work = pg.all_gather_single(output, input, opts)
        # A C++ Work over the future, not our Python Work boxed: C++ keeps the Work (wait_tensor's registry)
        # after our Python object is gone, and a trampoline without its Python half falls back to
        # c10d::Work::wait(), which waits forever.
        return output, _create_work_from_future(work.get_future()).boxed()

    lib = torch.library.Library("c10d", "IMPL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lib.impl("_allgather_base_", allgather_base, "PrivateUse1")
    _c10d_impls = lib


class _OclBackendView:
    """What `OclGlooProcessGroup._get_backend(ocl)` answers: gloo's methods without its capabilities."""

    supports_splitting = False
    supports_coalescing = False
    supports_time_estimate = False

    def __init__(self, gloo):
        self._gloo = gloo

    def __getattr__(self, name):
        return getattr(self._gloo, name)


class OclGlooProcessGroup(dist.ProcessGroup):
    def __init__(self, store, rank, world_size, timeout):
        super().__init__(rank, world_size)
        self._gloo = dist.ProcessGroupGloo(store, rank, world_size, timeout)
        # Our methods are what torch's Python API and C++ callers reach (they are overrides), but the
        # timeout and shutdown helpers look a backend up per device type in the C++ table: list gloo
        # for cpu. Never for ocl: torch's C++ kernels of the c10d ops that PyProcessGroup does not
        # forward to Python (e.g. _allgather_base_, used by functional collectives) would then hand
        # gloo an ocl tensor's device pointer as host memory and crash; unlisted, they raise
        # "No backend type associated with device type ocl".
        self._register_backend(torch.device("cpu"), dist.ProcessGroup.BackendType.GLOO, self._gloo)
        self._worker = _dist_async.Worker()  # runs every collective's gloo part, in order (_dist_async.py)
        # extra gloo groups for large all-reduces, made at the first one (_dist_lanes.py)
        self._lanes = _dist_lanes.Lanes(store, rank, world_size, timeout, self._gloo)
        # all-reduces of ocl tensors through shared memory when every rank is on this host (_dist_shm.py)
        self._shm = _dist_shm.setup(store, rank, world_size, timeout)
        # all-reduces of ocl tensors on the devices: each GPU reading the others' memory where every rank's can
        # (_dist_peer.py; its control words are the shared-memory segment's), else NCCL (_dist_nccl.py)
        self._device_link = (_dist_peer.setup(store, rank, world_size, timeout, self._shm)
                             or _dist_nccl.setup(store, rank, world_size, timeout, self._gloo))
        _route_allgather_base()

    def getBackendName(self):
        return "ocl_gloo"

    def transport(self):
        """What carries this group's all-reduces of ocl tensors: "peer" (_dist_peer.py), "nccl" (_dist_nccl.py),
        "shm" (_dist_shm.py) or "gloo"."""
        if self._device_link is not None:
            return self._device_link.name
        return "shm" if self._shm is not None else "gloo"

    def shutdown(self):  # destroy_process_group: the staging buffers and shared-memory segment go, then gloo's part
        self._worker.close(timeout=30)
        if self._device_link is not None:
            self._device_link.close()
        if self._shm is not None:
            self._shm.close()
        super().shutdown()

    def _get_backend(self, device):
        # torch's Python helpers look a backend up per device, e.g. init_process_group(device_id=ocl:N)
        # asks whether it supports splitting. The C++ table lists gloo for cpu only (see __init__), so
        # Python lookups for ocl get a view: no splitting, coalescing or time estimates; the rest
        # (timeouts, shutdown) is gloo's, which runs every collective's host part.
        if torch.device(device).type == "ocl":
            return _OclBackendView(self._gloo)
        return super()._get_backend(device)

    # ---- reductions -------------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        opts = opts or c10d.AllreduceOptions()
        if len(tensors) != 1:  # c10d's list form: one tensor per local device, summed together too
            return self._allreduce_unchunked(tensors, opts, c10d.AllreduceOptions, self._gloo.allreduce)
        return self._allreduce_each(tensors, opts)

    def allreduce_coalesced(self, tensors, opts=None):
        # Each tensor its own (chunked) all-reduce, in the same order on every rank: the same result as
        # gloo's coalesced form, which would need one host buffer of one dtype for all of them.
        return self._allreduce_each(tensors, opts or c10d.AllreduceCoalescedOptions())

    def _allreduce_each(self, tensors, opts):
        red = _Reduction(opts.reduceOp, self.size())
        if self.size() == 1 and all(_is_ocl(t) for t in tensors):
            return self._allreduce_alone(tensors, red)
        gloo_opts = _opts(c10d.AllreduceOptions, opts, reduceOp=red.gloo_op)
        keep = _keep()
        # on the devices (_dist_peer.py, _dist_nccl.py): NCCL's copies into its staging buffers enqueued here; the
        # rest below
        tensors_all = tensors
        nccl, tensors = _dist_nccl.stage_all(self._device_link, tensors, red.kind,
                                             _opts(c10d.AllreduceOptions, opts, reduceOp=opts.reduceOp))
        # shared memory's pieces, cut here: the chunk size the reads were cut with (every rank the same)
        shm = [self._shm.pieces(t.numel(), t.element_size(), _dist_async.CHUNK_BYTES)
               if self._shm is not None and _is_ocl(t) and self._shm.supports(t.dtype, red.gloo_op) else None
               for t in tensors]
        # ocl tensors: non-blocking chunked reads enqueued here (or, through shared memory with stage threads,
        # queued for its reader thread: _dist_shm_stages.py), the rest on the worker (_dist_async.py)
        staged = [_dist_shm_stages.StagedRead(self._shm.stages, t, _host_buffer, pieces)
                  if pieces is not None and self._shm.stages is not None
                  else _dist_async.StagedTensor(t, _host_buffer) if _is_ocl(t) else _stage(t, copy=red.modifies_input)
                  for t, pieces in zip(tensors, shm)]

        def reduce_chunk(h):
            red.before([h])
            self._gloo.allreduce([h], gloo_opts).wait()
            red.after([h])

        def start_chunk(h, gloo):
            red.before([h])
            work = gloo.allreduce([h], gloo_opts)

            def finish():
                work.wait()
                red.after([h])
            return finish

        def job(worker):
            _dist_nccl.run_all(self._device_link, worker, nccl)
            for t, st, pieces in zip(tensors, staged, shm):
                if isinstance(st, _dist_shm_stages.StagedRead):
                    _dist_shm_stages.run(self._shm, worker, st, red)
                elif pieces is not None:
                    _dist_shm.run_staged(self._shm, worker, st, red, keep, pieces)
                elif not isinstance(st, _dist_async.StagedTensor):
                    reduce_chunk(st)
                    _dist_async.copy_back(worker, [t], [st])
                elif len(st.chunks) > 1:  # the same decision on every rank: c10d's sizes agree (_dist_lanes.py)
                    # piece i on lane i mod K, up to K pieces in flight
                    flat = st.dense.view(-1)
                    st.run(worker, lambda h, i: start_chunk(h, self._lanes.lane(i)), keep, depth=self._lanes.count(),
                           pieces=self._lanes.pieces(flat.numel(), flat.element_size(), _dist_async.CHUNK_BYTES))
                else:
                    st.run(worker, lambda h, i: start_chunk(h, self._gloo), keep)
        return self._worker.submit(job, tensors_all)

    def _allreduce_alone(self, tensors, red):
        """A group of one: the reduction of one contribution is the tensor itself (times the factor for
        PREMUL_SUM, divided by 1 for AVG), done on the caller's stream with no trip through host memory, so a
        one-process DDP run costs what NCCL's does."""
        if red.kind == _R.PREMUL_SUM:
            for t in tensors:
                t.mul_(red.factor)
        work = _dist_async.AsyncWork(tensors)
        work._finish()  # the future's events are recorded on the caller's current streams
        return work

    def _allreduce_unchunked(self, tensors, opts, opts_class, gloo_fn):
        red = _Reduction(opts.reduceOp, self.size())
        reads = Reads()
        hosts = [reads.stage(t, copy=red.modifies_input) for t in tensors]

        def job(worker):
            reads.wait()
            red.before(hosts)
            gloo_fn(hosts, _opts(opts_class, opts, reduceOp=red.gloo_op)).wait()
            red.after(hosts)
            _dist_async.copy_back(worker, tensors, hosts)
        return self._worker.submit(job, tensors)

    def reduce(self, tensors, opts=None):
        if opts is None:
            opts = c10d.ReduceOptions()
        red = _Reduction(opts.reduceOp, self.size())
        root = self.rank() == opts.rootRank
        # Non-root ranks stage a copy even of cpu tensors: gloo uses the buffer as scratch, and
        # torch documents the input of a non-root rank as left alone.
        reads = Reads()
        hosts = [reads.stage(t, copy=red.modifies_input or not root) for t in tensors]

        def job(worker):
            reads.wait()
            red.before(hosts)
            self._gloo.reduce(hosts, _opts(c10d.ReduceOptions, opts, reduceOp=red.gloo_op)).wait()
            if root:
                red.after(hosts)
                _dist_async.copy_back(worker, tensors, hosts)
        return self._worker.submit(job, tensors)

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        if opts is None:
            opts = c10d.ReduceScatterOptions()
        red = _Reduction(opts.reduceOp, self.size())
        outs = [_host_buffer(t) if _is_ocl(t) else t for t in output_tensors]
        reads = Reads()
        ins = [[reads.stage(t, copy=red.modifies_input) for t in lst] for lst in input_lists]

        def job(worker):
            reads.wait()
            for lst in ins:
                red.before(lst)
            self._gloo.reduce_scatter(outs, ins, _opts(c10d.ReduceScatterOptions, opts, reduceOp=red.gloo_op)).wait()
            red.after(outs)
            _dist_async.copy_back(worker, output_tensors, outs)
        return self._worker.submit(job, output_tensors)

    def reduce_scatter_single(self, output, input, opts=None):
        if opts is None:
            opts = c10d.ReduceScatterOptions()
        red = _Reduction(opts.reduceOp, self.size())
        out = _host_buffer(output) if _is_ocl(output) else output
        reads = Reads()
        inp = reads.stage(input, copy=red.modifies_input)

        def job(worker):
            reads.wait()
            red.before([inp])
            self._gloo._reduce_scatter_base(out, inp, _opts(c10d.ReduceScatterOptions, opts,
                                                             reduceOp=red.gloo_op)).wait()
            red.after([out])
            _dist_async.copy_back(worker, [output], [out])
        return self._worker.submit(job, [output])

    _reduce_scatter_base = reduce_scatter_single  # the name before torch 2.10

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        # funcol.reduce_scatter_tensor's path from C++ (PyProcessGroup forwards this one, not the single
        # form): queued one by one, completed by the last one's Work (the worker runs them in order).
        works = [self.reduce_scatter_single(out, inp, opts) for out, inp in zip(outputs, inputs)]
        return self._worker.submit(lambda worker: [w.host_wait() for w in works], outputs)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced  # the name before torch 2.10

    # ---- data movement ----------------------------------------------------------------------------

    def broadcast(self, tensors, opts=None):
        if opts is None:
            opts = c10d.BroadcastOptions()
        root = self.rank() == opts.rootRank
        gloo_opts = _opts(c10d.BroadcastOptions, opts)
        keep = _keep()
        if len(tensors) == 1 and _is_ocl(tensors[0]):  # chunked and pipelined as all_reduce
            st = _dist_async.StagedTensor(tensors[0], _host_buffer)
            return self._worker.submit(
                lambda worker: st.run(worker, lambda h, i: self._gloo.broadcast([h], gloo_opts).wait, keep,
                                      write_back=not root), tensors)
        # c10d's list form (one tensor per local device): every tensor, the root's others included, gets
        # the root's tensor number rootTensor; only that one is read, the rest are outputs.
        src = opts.rootTensor if root else -1
        reads = Reads()
        hosts = [reads.stage(t) if i == src or not _is_ocl(t) else _host_buffer(t) for i, t in enumerate(tensors)]
        back = [i for i in range(len(tensors)) if i != src]

        def job(worker):
            reads.wait()
            self._gloo.broadcast(hosts, gloo_opts).wait()
            _dist_async.copy_back(worker, [tensors[i] for i in back], [hosts[i] for i in back])
        return self._worker.submit(job, tensors)

    def allgather(self, output_lists, input_tensors, opts=None):
        outs = [[_host_buffer(t) if _is_ocl(t) else t for t in lst] for lst in output_lists]
        reads = Reads()
        ins = [reads.stage(t) for t in input_tensors]

        def job(worker):
            reads.wait()
            self._gloo.allgather(outs, ins, _opts(c10d.AllgatherOptions, opts)).wait()
            _dist_async.copy_back(worker, [t for lst in output_lists for t in lst], [h for lst in outs for h in lst])
        return self._worker.submit(job, output_lists)

    def all_gather_single(self, output, input, opts=None):
        out = _host_buffer(output) if _is_ocl(output) else output
        reads = Reads()
        inp = reads.stage(input)

        def job(worker):
            reads.wait()
            self._gloo._allgather_base(out, inp, _opts(c10d.AllgatherOptions, opts)).wait()
            _dist_async.copy_back(worker, [output], [out])
        return self._worker.submit(job, [output])

    _allgather_base = all_gather_single  # the name before torch 2.10

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        # Functional collectives (DTensor.full_tensor, FSDP2's state dicts) reach all_gather_into_tensor
        # through this one from C++; PyProcessGroup forwards it (unlike all_gather_single).
        works = [self.all_gather_single(out, inp, opts) for out, inp in zip(outputs, inputs)]
        return self._worker.submit(lambda worker: [w.host_wait() for w in works], outputs)

    allgather_into_tensor_coalesced = all_gather_single_coalesced  # the name before torch 2.10

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        out = _host_buffer(output) if _is_ocl(output) else output
        reads = Reads()
        inp = reads.stage(input)

        def job(worker):
            reads.wait()
            self._gloo.alltoall_base(out, inp, output_split_sizes, input_split_sizes,
                                     _opts(c10d.AllToAllOptions, opts)).wait()
            _dist_async.copy_back(worker, [output], [out])
        return self._worker.submit(job, [output])

    alltoall_base = all_to_all_single  # the name before torch 2.10

    def alltoall(self, output_tensors, input_tensors, opts=None):
        # gloo has only the flat form: each list packed into one host buffer, split by the tensors' sizes.
        dtypes = {t.dtype for t in list(output_tensors) + list(input_tensors)}
        if len(dtypes) != 1:
            raise ValueError(f"ocl_gloo: all_to_all needs tensors of one dtype, got {sorted(map(str, dtypes))}")
        dtype = dtypes.pop()
        in_splits = [t.numel() for t in input_tensors]
        out_splits = [t.numel() for t in output_tensors]
        reads = Reads()
        inp = reads.pack(input_tensors, dtype)
        out = _host_buffer(torch.empty(sum(out_splits), dtype=dtype, device="meta"))

        def job(worker):
            reads.wait()
            self._gloo.alltoall_base(out, inp, out_splits, in_splits, _opts(c10d.AllToAllOptions, opts)).wait()
            views = [v.view(t.shape) for v, t in zip(out.split(out_splits), output_tensors)]
            _dist_async.copy_back(worker, output_tensors, views)
        return self._worker.submit(job, output_tensors)

    def gather(self, output_lists, input_tensors, opts=None):
        if opts is None:
            opts = c10d.GatherOptions()
        outs = [[_host_buffer(t) if _is_ocl(t) else t for t in lst] for lst in output_lists]
        reads = Reads()
        ins = [reads.stage(t) for t in input_tensors]

        def job(worker):
            reads.wait()
            self._gloo.gather(outs, ins, _opts(c10d.GatherOptions, opts)).wait()
            _dist_async.copy_back(worker, [t for lst in output_lists for t in lst], [h for lst in outs for h in lst])
        return self._worker.submit(job, output_lists)

    def scatter(self, output_tensors, input_lists, opts=None):
        if opts is None:
            opts = c10d.ScatterOptions()
        outs = [_host_buffer(t) if _is_ocl(t) else t for t in output_tensors]
        reads = Reads()
        ins = [[reads.stage(t) for t in lst] for lst in input_lists]

        def job(worker):
            reads.wait()
            self._gloo.scatter(outs, ins, _opts(c10d.ScatterOptions, opts)).wait()
            _dist_async.copy_back(worker, output_tensors, outs)
        return self._worker.submit(job, output_tensors)

    def barrier(self, opts=None):
        # Queued behind the group's pending collectives, as gloo's barrier is behind its own.
        return self._worker.submit(lambda worker: self._gloo.barrier(_opts(c10d.BarrierOptions, opts)).wait(), [])

    # ---- point to point: asynchronous, see the module comment -------------------------------------

    def send(self, tensors, dst, tag=0):
        # The staged copy is complete before gloo sees it, and gloo's Work keeps it alive. A blocking read
        # here: a send goes to gloo at once (not through the worker, see the module comment), so nothing
        # else could wait for a non-blocking one.
        return self._gloo.send([_stage(t) for t in tensors], dst, tag)

    def recv(self, tensors, src, tag=0):
        hosts = [_host_buffer(t) if _is_ocl(t) else t for t in tensors]
        return _RecvWork(self._gloo.recv(hosts, src, tag), tensors, hosts)

    def recv_anysource(self, tensors, tag=0):
        hosts = [_host_buffer(t) if _is_ocl(t) else t for t in tensors]
        return _RecvWork(self._gloo.recv_anysource(hosts, tag), tensors, hosts)

