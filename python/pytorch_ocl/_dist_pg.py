"""The process group behind the "ocl_gloo" c10d backend (registered by pytorch_ocl.distributed).

Each method: stage ocl tensors into contiguous pinned host buffers, run the same collective of an inner
ProcessGroupGloo on them, wait, copy the results back into the ocl tensors (any strides), and return a
completed Work whose future holds the caller's tensors (DDP's Reducer and comm hooks read that future).
CPU tensors are handed to gloo as they are. See distributed.py for why this is a Python ProcessGroup and
what overlapping the copies with computation would need.
"""
import collections
import functools
import threading

import torch
import torch.distributed as dist
from torch._C import _distributed_c10d as c10d
from torch._C._distributed_c10d import _create_work_from_future

_R = dist.ReduceOp.RedOpType
# Ops gloo runs itself; AVG and PREMUL_SUM become SUM plus a host-side step (gloo has neither).
_NATIVE_OPS = {_R.SUM, _R.PRODUCT, _R.MIN, _R.MAX, _R.BAND, _R.BOR, _R.BXOR}


def _is_ocl(t):
    return t.device.type == "ocl"


# The host buffers of the last two collectives stay referenced from here. gloo's worker thread drops its
# references to a work's tensors just after marking the work complete; had it dropped the last one, the
# tensor's Python object would be freed on that thread, which takes the GIL, and a thread that takes the
# GIL while the interpreter finalizes (the main thread already past its last wait()) is ended by
# pthread_exit, whose unwinding through C++ noexcept frames aborts the process ("terminate called
# without an active exception"). Held here, the last reference drops on a Python thread, a collective
# later or at exit.
_recent_staging = collections.deque(maxlen=2)
_tls = threading.local()


def _holds_staging(method):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        bufs = []
        _recent_staging.append(bufs)
        _tls.bufs = bufs
        try:
            return method(*args, **kwargs)
        finally:
            _tls.bufs = None
    return wrapper


def _host_buffer(t):
    """An uninitialised contiguous host tensor shaped like `t`, pinned (from our caching pinned-memory
    allocator) when it stages an ocl tensor; a cpu tensor's scratch copy needs no device."""
    host = torch.empty(t.shape, dtype=t.dtype, pin_memory=_is_ocl(t))
    bufs = getattr(_tls, "bufs", None)
    if bufs is not None:
        bufs.append(host)
    return host


def _stage(t, copy=False):
    """Host tensor holding `t`'s values: a pinned copy for ocl tensors (or when `copy`: the
    caller is about to modify it and must not touch the user's cpu tensor), else `t` itself."""
    if not (_is_ocl(t) or copy):
        return t
    host = _host_buffer(t)
    host.copy_(t)  # blocking device->host copy: the values are on the host when it returns
    return host


def _copy_back(tensors, hosts):
    for t, h in zip(tensors, hosts):
        if t is not h:
            t.copy_(h)


def _done(result):
    """A completed Work whose future's value is `result` (a list of tensors, as c10d's own Works)."""
    fut = torch.futures.Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


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
    """A receive in flight: wait() waits for gloo, then copies the host buffers into the ocl tensors."""

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
            _copy_back(self._tensors, self._hosts)
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

    def getBackendName(self):
        return "ocl_gloo"

    # ---- reductions -------------------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        return self._allreduce(tensors, opts or c10d.AllreduceOptions(), c10d.AllreduceOptions,
                               self._gloo.allreduce)

    def allreduce_coalesced(self, tensors, opts=None):
        # Not allreduce on the list: c10d's list form means one same-shaped tensor per local device.
        return self._allreduce(tensors, opts or c10d.AllreduceCoalescedOptions(), c10d.AllreduceCoalescedOptions,
                               self._gloo.allreduce_coalesced)

    def _allreduce(self, tensors, opts, opts_class, gloo_fn):
        red = _Reduction(opts.reduceOp, self.size())
        hosts = [_stage(t, copy=red.modifies_input) for t in tensors]
        red.before(hosts)
        gloo_fn(hosts, _opts(opts_class, opts, reduceOp=red.gloo_op)).wait()
        red.after(hosts)
        _copy_back(tensors, hosts)
        return _done(tensors)

    def reduce(self, tensors, opts=None):
        if opts is None:
            opts = c10d.ReduceOptions()
        red = _Reduction(opts.reduceOp, self.size())
        root = self.rank() == opts.rootRank
        # Non-root ranks stage a copy even of cpu tensors: gloo uses the buffer as scratch, and
        # torch documents the input of a non-root rank as left alone.
        hosts = [_stage(t, copy=red.modifies_input or not root) for t in tensors]
        red.before(hosts)
        self._gloo.reduce(hosts, _opts(c10d.ReduceOptions, opts, reduceOp=red.gloo_op)).wait()
        if root:
            red.after(hosts)
            _copy_back(tensors, hosts)
        return _done(tensors)

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        if opts is None:
            opts = c10d.ReduceScatterOptions()
        red = _Reduction(opts.reduceOp, self.size())
        outs = [_host_buffer(t) if _is_ocl(t) else t for t in output_tensors]
        ins = [[_stage(t, copy=red.modifies_input) for t in lst] for lst in input_lists]
        for lst in ins:
            red.before(lst)
        self._gloo.reduce_scatter(outs, ins, _opts(c10d.ReduceScatterOptions, opts, reduceOp=red.gloo_op)).wait()
        red.after(outs)
        _copy_back(output_tensors, outs)
        return _done(output_tensors)

    def reduce_scatter_single(self, output, input, opts=None):
        if opts is None:
            opts = c10d.ReduceScatterOptions()
        red = _Reduction(opts.reduceOp, self.size())
        out = _host_buffer(output) if _is_ocl(output) else output
        inp = _stage(input, copy=red.modifies_input)
        red.before([inp])
        self._gloo._reduce_scatter_base(out, inp, _opts(c10d.ReduceScatterOptions, opts, reduceOp=red.gloo_op)).wait()
        red.after([out])
        _copy_back([output], [out])
        return _done([output])

    _reduce_scatter_base = reduce_scatter_single  # the name before torch 2.10

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        # funcol.reduce_scatter_tensor's path from C++, as all_gather_single_coalesced.
        for out, inp in zip(outputs, inputs):
            self.reduce_scatter_single(out, inp, opts)
        return _done(outputs)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced  # the name before torch 2.10

    # ---- data movement ----------------------------------------------------------------------------

    def broadcast(self, tensors, opts=None):
        if opts is None:
            opts = c10d.BroadcastOptions()
        hosts = [_stage(t) for t in tensors]
        self._gloo.broadcast(hosts, _opts(c10d.BroadcastOptions, opts)).wait()
        if self.rank() != opts.rootRank:
            _copy_back(tensors, hosts)
        return _done(tensors)

    def allgather(self, output_lists, input_tensors, opts=None):
        outs = [[_host_buffer(t) if _is_ocl(t) else t for t in lst] for lst in output_lists]
        ins = [_stage(t) for t in input_tensors]
        self._gloo.allgather(outs, ins, _opts(c10d.AllgatherOptions, opts)).wait()
        for lst, hlst in zip(output_lists, outs):
            _copy_back(lst, hlst)
        return _done(output_lists)

    def all_gather_single(self, output, input, opts=None):
        out = _host_buffer(output) if _is_ocl(output) else output
        self._gloo._allgather_base(out, _stage(input), _opts(c10d.AllgatherOptions, opts)).wait()
        _copy_back([output], [out])
        return _done([output])

    _allgather_base = all_gather_single  # the name before torch 2.10

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        # Functional collectives (DTensor.full_tensor, FSDP2's state dict) reach all_gather_into_tensor
        # through this one from C++; PyProcessGroup forwards it (unlike all_gather_single).
        for out, inp in zip(outputs, inputs):
            self.all_gather_single(out, inp, opts)
        return _done(outputs)

    allgather_into_tensor_coalesced = all_gather_single_coalesced  # the name before torch 2.10

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        out = _host_buffer(output) if _is_ocl(output) else output
        self._gloo.alltoall_base(
            out, _stage(input), output_split_sizes, input_split_sizes, _opts(c10d.AllToAllOptions, opts)
        ).wait()
        _copy_back([output], [out])
        return _done([output])

    alltoall_base = all_to_all_single  # the name before torch 2.10

    def gather(self, output_lists, input_tensors, opts=None):
        if opts is None:
            opts = c10d.GatherOptions()
        outs = [[_host_buffer(t) if _is_ocl(t) else t for t in lst] for lst in output_lists]
        self._gloo.gather(outs, [_stage(t) for t in input_tensors], _opts(c10d.GatherOptions, opts)).wait()
        for lst, hlst in zip(output_lists, outs):
            _copy_back(lst, hlst)
        return _done(output_lists)

    def scatter(self, output_tensors, input_lists, opts=None):
        if opts is None:
            opts = c10d.ScatterOptions()
        outs = [_host_buffer(t) if _is_ocl(t) else t for t in output_tensors]
        ins = [[_stage(t) for t in lst] for lst in input_lists]
        self._gloo.scatter(outs, ins, _opts(c10d.ScatterOptions, opts)).wait()
        _copy_back(output_tensors, outs)
        return _done(output_tensors)

    def barrier(self, opts=None):
        self._gloo.barrier(_opts(c10d.BarrierOptions, opts)).wait()
        return _done([])

    # ---- point to point: asynchronous, see the module comment -------------------------------------

    def send(self, tensors, dst, tag=0):
        # The staged copy is complete before gloo sees it, and gloo's Work keeps it alive.
        return self._gloo.send([_stage(t) for t in tensors], dst, tag)

    def recv(self, tensors, src, tag=0):
        hosts = [_host_buffer(t) if _is_ocl(t) else t for t in tensors]
        return _RecvWork(self._gloo.recv(hosts, src, tag), tensors, hosts)

    def recv_anysource(self, tensors, tag=0):
        hosts = [_host_buffer(t) if _is_ocl(t) else t for t in tensors]
        return _RecvWork(self._gloo.recv_anysource(hosts, tag), tensors, hosts)


for _name in ("allreduce", "allreduce_coalesced", "reduce", "reduce_scatter", "reduce_scatter_single",
              "broadcast", "allgather", "all_gather_single", "all_to_all_single", "gather", "scatter",
              "send", "recv", "recv_anysource"):
    setattr(OclGlooProcessGroup, _name, _holds_staging(getattr(OclGlooProcessGroup, _name)))
