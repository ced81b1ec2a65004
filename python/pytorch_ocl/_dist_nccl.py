"""All-reduces of ocl tensors through NCCL on NVIDIA GPUs, the bytes never leaving the devices.

Why: on NVIDIA's OpenCL every device-to-host copy holds the other threads' launches, so an all-reduce staged
through host memory (gloo, or our shared-memory transport) adds its whole time to a DDP step: GPT-2 small
scaled 0.59 on 2 GPUs (docs/results/graphs_cold_start_distributed.md). But NVIDIA's OpenCL imports memory that
CUDA exports (cl_khr_external_memory_opaque_fd; scripts/probe_cuda_interop.py): a buffer allocated with CUDA's
virtual memory API (cuMemCreate, exportable as a POSIX file descriptor) is at once a CUDA tensor (for NCCL) and an
ocl tensor (pytorch_ocl._C._import_external_memory).

How an all-reduce runs: on the calling thread, the ocl tensor is copied (device to device, any strides) into a
staging buffer on the caller's current stream, and an event recorded; the group's worker (_dist_async.py) waits
for that event, runs the all-reduce of an inner ProcessGroupNCCL on the buffer's CUDA view, waits for CUDA, and
copies the result back into the tensor on its side stream (the Work's stream order, as for gloo). A staging
buffer is taken again once its copy back has been enqueued; the next copy into it waits (on the device) for that
copy back's event. Buffers are pooled per size (2 MiB steps) and kept for the group's life.

When: every rank's ocl device imports opaque file descriptors, torch has CUDA and NCCL, each rank's ocl device
is a different GPU (NCCL refuses two ranks on one; matched to its CUDA device by PCI address) whose imported
memory passes a two-way check, and PYTORCH_OCL_DIST_NCCL is not 0; the ranks agree through the group's store, so
all of them use it or none (`refusal` says why not). Other dtypes (bool, complex) and ops (bitwise, PREMUL_SUM,
integer AVG) stay on the host path (_dist_shm.py or gloo).
"""
import atexit
import ctypes as C
import os
import socket
import threading
import time
import weakref

import torch
import torch.distributed as dist

_R = dist.ReduceOp.RedOpType
_OPS = {_R.SUM, _R.MIN, _R.MAX, _R.PRODUCT}
# a list: _dist_peer.py numbers them in its call descriptors
_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.int8,
           torch.uint8]


def wanted():
    """PYTORCH_OCL_DIST_NCCL: unset or 1 = NCCL where every rank can, 0 = never, emulate = the transport's steps
    with host memory and gloo in NCCL's place (tests on CPU devices: _HostPeer)."""
    v = os.environ.get("PYTORCH_OCL_DIST_NCCL", "") or "1"
    if v not in ("0", "1", "emulate"):
        raise ValueError(f"PYTORCH_OCL_DIST_NCCL must be 0, 1 or emulate, got {v!r}")
    return v


class _Cuda:
    """The few CUDA driver calls the staging buffers need (libcuda through ctypes; no CUDA toolkit)."""

    class Prop(C.Structure):
        _fields_ = [("type", C.c_int), ("requestedHandleTypes", C.c_int), ("location", C.c_int * 2),
                    ("win32HandleMetaData", C.c_void_p), ("compressionType", C.c_ubyte),
                    ("gpuDirectRDMACapable", C.c_ubyte), ("usage", C.c_ushort), ("reserved", C.c_ubyte * 4)]

    class Access(C.Structure):
        _fields_ = [("location", C.c_int * 2), ("flags", C.c_int)]

    POSIX_FD, PINNED, ON_DEVICE, READ_WRITE = 1, 1, 1, 3

    def __init__(self, index):
        self.lib = C.CDLL("libcuda.so.1")
        self.index = index
        self._check(self.lib.cuInit(0), "cuInit")
        self.dev = C.c_int()
        self._check(self.lib.cuDeviceGet(C.byref(self.dev), index), "cuDeviceGet")
        self.ctx = C.c_void_p()
        self._check(self.lib.cuDevicePrimaryCtxRetain(C.byref(self.ctx), self.dev), "cuDevicePrimaryCtxRetain")
        self.prop = self.Prop()
        self.prop.type, self.prop.requestedHandleTypes = self.PINNED, self.POSIX_FD
        self.prop.location[0], self.prop.location[1] = self.ON_DEVICE, self.dev.value
        self._current()
        gran = C.c_size_t()
        self._check(self.lib.cuMemGetAllocationGranularity(C.byref(gran), C.byref(self.prop), 0), "granularity")
        self.granularity = max(gran.value, 2 << 20)

    @staticmethod
    def _check(result, what):
        if result != 0:
            raise RuntimeError(f"ocl NCCL staging: {what} failed (CUresult {result})")

    def _current(self):  # the primary context (torch's) on the calling thread
        self._check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def allocate(self, nbytes):
        """(device pointer, handle, exported file descriptor) of `nbytes` mapped read-write on the device."""
        self._current()
        handle, ptr, fd = C.c_ulonglong(), C.c_ulonglong(), C.c_int(-1)
        self._check(self.lib.cuMemCreate(C.byref(handle), C.c_size_t(nbytes), C.byref(self.prop), C.c_ulonglong(0)),
                    "cuMemCreate")
        try:
            self._check(self.lib.cuMemExportToShareableHandle(C.byref(fd), handle, self.POSIX_FD, C.c_ulonglong(0)),
                        "cuMemExportToShareableHandle")
            self._check(self.lib.cuMemAddressReserve(C.byref(ptr), C.c_size_t(nbytes), C.c_size_t(0),
                                                     C.c_ulonglong(0), C.c_ulonglong(0)), "cuMemAddressReserve")
            self._check(self.lib.cuMemMap(ptr, C.c_size_t(nbytes), C.c_size_t(0), handle, C.c_ulonglong(0)), "cuMemMap")
            access = self.Access()
            access.location[0], access.location[1], access.flags = self.ON_DEVICE, self.dev.value, self.READ_WRITE
            self._check(self.lib.cuMemSetAccess(ptr, C.c_size_t(nbytes), C.byref(access), C.c_size_t(1)),
                        "cuMemSetAccess")
        except RuntimeError:
            self.lib.cuMemRelease(handle)
            raise
        return ptr.value, handle.value, fd.value

    def free(self, ptr, handle, nbytes):
        self._current()
        self.lib.cuMemUnmap(C.c_ulonglong(ptr), C.c_size_t(nbytes))
        self.lib.cuMemAddressFree(C.c_ulonglong(ptr), C.c_size_t(nbytes))
        self.lib.cuMemRelease(C.c_ulonglong(handle))


class _CudaArray:
    """__cuda_array_interface__ of a byte range, so torch.as_tensor views it as a CUDA tensor without a copy."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None}


class _Buffer:
    """One staging buffer: the same bytes as an ocl tensor (`ocl`) and as the peer's tensor (`peer`), uint8."""

    def __init__(self, nbytes, ocl, peer, release):
        self.nbytes, self.ocl, self.peer, self._release = nbytes, ocl, peer, release
        self.free_event = None  # recorded after the last copy back out of it (on the worker's side stream)

    def close(self):
        self.ocl = self.peer = None  # the ocl import goes first: it refers to the peer's memory
        self._release()


class _NcclPeer:
    """NCCL on CUDA memory that the ocl device imports (the real transport)."""

    name = "nccl"

    def __init__(self, pg, cuda):
        self.pg, self.cuda, self.granularity = pg, cuda, cuda.granularity

    def buffer(self, ocl_index, nbytes):
        from . import _C

        cuda = self.cuda
        ptr, handle, fd = cuda.allocate(nbytes)
        try:
            ocl = _C._import_external_memory(fd, nbytes, ocl_index)
        except BaseException:
            cuda.free(ptr, handle, nbytes)
            raise
        finally:
            os.close(fd)  # ours: the import handed the driver a duplicate (ExternalMemory.cpp)
        with torch.cuda.device(cuda.index):
            peer = torch.as_tensor(_CudaArray(ptr, nbytes), device=f"cuda:{cuda.index}")
        if peer.data_ptr() != ptr:  # a copy would reduce other bytes than the ocl side reads: never go on
            ocl = None
            cuda.free(ptr, handle, nbytes)
            raise RuntimeError("ocl NCCL staging: torch made a copy of the shared CUDA memory "
                               f"(cuda:{cuda.index}, {nbytes} bytes) instead of a view")
        return _Buffer(nbytes, ocl, peer, lambda: cuda.free(ptr, handle, nbytes))

    def allreduce(self, view, opts):
        with torch.cuda.device(self.cuda.index):
            self.pg.allreduce([view], opts).wait()
            done = torch.cuda.Event()
            done.record(torch.cuda.current_stream(self.cuda.index))
            _wait(done)  # done before the ocl copy back reads it

    def close(self):
        try:
            self.pg.shutdown()
        except (RuntimeError, AttributeError):
            pass


class _HostPeer:
    """PYTORCH_OCL_DIST_NCCL=emulate, for the tests on CPU OpenCL devices (PoCL): host memory that the device uses
    in place stands for the CUDA memory, the group's gloo for NCCL. Every step of the real transport but NCCL's
    call runs as it does on NVIDIA: staging copies, event waits, the pool, the copy back's stream order."""

    name = "emulate"
    granularity = 4096

    def __init__(self, gloo):
        self.gloo = gloo

    def buffer(self, ocl_index, nbytes):
        from . import _C

        # page-aligned, so that PoCL uses the bytes in place (a misaligned host pointer may get a copy of its own)
        raw = torch.empty(nbytes + 4096, dtype=torch.uint8)
        start = -raw.data_ptr() % 4096
        host = raw[start: start + nbytes]
        ocl = _C._wrap_host_memory(host.data_ptr(), nbytes, ocl_index)
        return _Buffer(nbytes, ocl, host, lambda: None)

    def allreduce(self, view, opts):
        op = opts.reduceOp
        if op == dist.ReduceOp.AVG:  # gloo has no AVG (NCCL has)
            self.gloo.allreduce([view], _with_op(opts, dist.ReduceOp.SUM)).wait()
            view.div_(self.gloo.size())  # floating types only (Link.supports)
        else:
            self.gloo.allreduce([view], opts).wait()

    def close(self):
        pass


def _poll_seconds():
    v = os.environ.get("PYTORCH_OCL_DIST_NCCL_POLL_US", "") or "0"
    try:
        return max(float(v), 0.0) * 1e-6
    except ValueError:
        raise ValueError(f"PYTORCH_OCL_DIST_NCCL_POLL_US must be a number of microseconds, got {v!r}") from None


_poll_s = None  # read at the first wait


def _wait(event):
    """The worker's host wait for an ocl or CUDA event: in the driver (default), or polling its status every
    PYTORCH_OCL_DIST_NCCL_POLL_US microseconds, for comparing on NVIDIA, where a thread waiting in one API's driver
    call may slow the other threads' launches (docs/results/graphs_cold_start_distributed.md: host copies did)."""
    global _poll_s
    if _poll_s is None:
        _poll_s = _poll_seconds()
    if _poll_s > 0:
        while not event.query():
            time.sleep(_poll_s)
    event.synchronize()  # at once when complete (an ocl event's deferred checks are collected here)


def _with_op(opts, op):
    new = type(opts)()
    new.reduceOp, new.timeout = op, opts.timeout
    return new


def takes(t, red_kind, device, what):
    """Whether a device-side link (this module's Link, _dist_peer.PeerLink) on `device` takes the all-reduce of `t`
    with `red_kind`; `what` says how the link runs ("runs NCCL") in the error for a tensor on another device."""
    # PREMUL_SUM's factor may be an ocl tensor, and integer AVG is not NCCL's: both stay on the host path
    ops = _OPS | {_R.AVG} if t.is_floating_point() else _OPS
    if t.dtype not in _DTYPES or red_kind not in ops or t.numel() == 0:
        return False
    if t.device != device:  # every rank must decide alike: no quiet switch to the host path here
        raise RuntimeError(f"ocl_gloo: all_reduce of a tensor on {t.device}, but this rank's group {what} on "
                           f"{device} (the current ocl device when the group was made): set the rank's device "
                           f"(torch.ocl.set_device) before init_process_group, as with CUDA")
    return True


class Link:
    """A group's device-side all-reduce for ocl tensors on one device (see the module comment)."""

    name = "nccl"  # the group's transport() (emulated too)

    def __init__(self, peer, ocl_index):
        self.peer, self.device = peer, torch.device("ocl", ocl_index)
        self._free = []  # _Buffers not in use, smallest first
        self._all = []
        self._lock = threading.Lock()
        # PYTORCH_OCL_DIST_DEVICE_TRACE=1: per all-reduce, host times (perf_counter) of its stages, for a timeline of
        # the exchange against the training step (examples/ddp_train.py --trace)
        self.trace = [] if os.environ.get("PYTORCH_OCL_DIST_DEVICE_TRACE") == "1" else None
        _links.add(self)

    def supports(self, t, red_kind):
        return takes(t, red_kind, self.device, "runs NCCL")

    def _take(self, nbytes):
        with self._lock:
            for i, b in enumerate(self._free):
                if b.nbytes >= nbytes:
                    return self._free.pop(i)
        size = -(-nbytes // self.peer.granularity) * self.peer.granularity
        b = self.peer.buffer(self.device.index, size)
        with self._lock:
            self._all.append(b)
        return b

    def _give_back(self, b):
        with self._lock:
            self._free.append(b)
            self._free.sort(key=lambda x: x.nbytes)

    def stage(self, t):
        """On the calling thread: `t` copied into a staging buffer on the current stream (after the buffer's last
        copy back); returns (buffer, its typed view, the copy's event, when it was enqueued)."""
        b = self._take(t.numel() * t.element_size())
        stream = torch.ocl.current_stream(self.device.index)
        if b.free_event is not None:
            stream.wait_event(b.free_event)
        view = b.ocl[: t.numel() * t.element_size()].view(t.dtype).view(t.shape)
        view.copy_(t)
        event = torch.Event(device=self.device)
        event.record(stream)
        return b, view, event, time.perf_counter()

    def run(self, worker, t, staged, opts):
        """On the worker: the peer's all-reduce of the staged copy, then the result back into `t` on the side
        stream."""
        from . import _dist_async

        b, view, event, staged_at = staged
        try:
            start = time.perf_counter()
            _wait(event)  # the copy in is done on the device
            copied = time.perf_counter()
            nbytes = t.numel() * t.element_size()
            self.peer.allreduce(b.peer[:nbytes].view(t.dtype), opts)
            reduced = time.perf_counter()
            _dist_async.copy_back(worker, [t], [view])
            if self.trace is not None:
                # staged: the copy in enqueued (caller); start: the worker took it; copied: the copy in ran on the
                # device; reduced: the peer's all-reduce done (NCCL: its kernel finished); back: copy back enqueued
                self.trace.append({"bytes": nbytes, "staged": staged_at, "start": start, "copied": copied,
                                   "reduced": reduced, "back": time.perf_counter()})
            side = worker.side_stream(self.device)
            b.free_event = torch.Event(device=self.device)
            b.free_event.record(side)
        finally:
            self._give_back(b)

    def close(self):
        """The buffers go (after the device has run what reads them) and the peer's group; idempotent."""
        with self._lock:
            buffers, self._all, self._free = self._all, [], []
        if buffers:
            torch.ocl.synchronize(self.device)
        for b in buffers:
            b.close()
        if self.peer is not None:
            self.peer.close()
            self.peer = None


_links = weakref.WeakSet()


@atexit.register
def _close_links():
    # Before the interpreter finalizes, in order: the groups' queued jobs (they use the buffers), then the
    # buffers, whose ocl imports refer to CUDA memory (freed by the CUDA driver's own exit otherwise, in an
    # order of its choosing). Registered after _dist_async's drain, so it runs first: it drains itself.
    from . import _dist_async

    _dist_async._drain()
    for link in list(_links):
        link.close()


def stage_all(link, tensors, red_kind, opts):
    """On the calling thread: ([(tensor, staged, opts)] for the tensors NCCL takes, their copies in enqueued; the
    other tensors), with `link` the group's Link or None."""
    if link is None:
        return [], tensors
    taken, rest = [], []
    for t in tensors:
        if t.device.type == "ocl" and link.supports(t, red_kind):
            taken.append((t, link.stage(t), opts))
        else:
            rest.append(t)
    return taken, rest


def run_all(link, worker, taken):
    """On the worker: the all-reduces stage_all staged, in order."""
    for t, staged, opts in taken:
        link.run(worker, t, staged, opts)


def _match_pci(bus, cuda_devices):
    """The index in `cuda_devices` ((domain, bus, device number) per CUDA device) of the GPU at `bus` ("domain:bus:slot"
    of NVIDIA's OpenCL), or None. NVIDIA's OpenCL slot may be the PCI device number or device << 3 | function (as
    clinfo reads it); either matches CUDA's device number, and an ambiguous match is none. GPUs of one host can
    share a bus and differ by device number alone (the 2-GPU H200 host: 0000:00:06.0 and 0000:00:07.0)."""
    domain, number, slot = (int(v) for v in bus.split(":"))
    found = [i for i, (d, b, dev) in enumerate(cuda_devices) if d == domain and b == number and dev in (slot, slot >> 3)]
    return found[0] if len(found) == 1 else None


def _cuda_index_at(bus):
    """The CUDA device index (as torch counts them) at `bus` (see _match_pci), or None."""
    lib = C.CDLL("libcuda.so.1")
    if lib.cuInit(0) != 0:
        return None
    devices = []
    for i in range(torch.cuda.device_count()):
        dev, attrs = C.c_int(), []
        ok = lib.cuDeviceGet(C.byref(dev), i) == 0
        for attr in (50, 33, 34):  # CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, _PCI_BUS_ID, _PCI_DEVICE_ID
            v = C.c_int()
            attrs.append(v.value if ok and lib.cuDeviceGetAttribute(C.byref(v), attr, dev) == 0 else -1)
        devices.append(tuple(attrs))
    return _match_pci(bus, devices)


def _local_link(ocl_index):
    """(the CUDA device of the rank's ocl device, "host/bus") when this process can take part, else (None, why)."""
    from . import _C

    if not torch.cuda.is_available() or not dist.is_nccl_available():
        return None, "torch has no CUDA or NCCL"
    if not _C._imports_opaque_fd(ocl_index):
        return None, f"ocl:{ocl_index} does not import opaque file descriptors"
    bus = _C._pci_bus(ocl_index)
    index = _cuda_index_at(bus) if bus else None
    if index is None:
        return None, f"no CUDA device at ocl:{ocl_index}'s PCI bus {bus or '(unknown)'}"
    cuda = _Cuda(index)
    # A buffer both ways before the group relies on it: a driver that imports but does not share fails here, on
    # every rank's setup, not in the middle of a collective on one rank
    b = _NcclPeer(None, cuda).buffer(ocl_index, cuda.granularity)
    try:
        b.ocl.fill_(7)
        torch.ocl.synchronize(ocl_index)
        seen = b.peer[:: cuda.granularity // 8].cpu()
        b.peer.fill_(9)
        torch.cuda.synchronize(index)
        back = b.ocl[:: cuda.granularity // 8].cpu()
    finally:
        b.close()
    if not (bool((seen == 7).all()) and bool((back == 9).all())):
        return None, f"ocl:{ocl_index} and cuda:{index} do not see each other's writes to imported memory"
    return cuda, f"{socket.gethostname()}/{bus}"


refusal = ""  # why the last group made here does not use NCCL (ddp_train.py prints it), "" when it does


def setup(store, rank, world, timeout, gloo):
    """The group's Link, or None where its all-reduces stay on the host path. Collective over the group's store
    (every rank calls it once, when the group is made, and they all get the same answer)."""
    mode = wanted()
    if world < 2:
        return None
    index = torch.ocl.current_device()
    if mode == "emulate":  # tests: every rank sets it
        return Link(_HostPeer(gloo), index)
    cuda, why = None, "PYTORCH_OCL_DIST_NCCL=0"
    if mode == "1":
        try:
            cuda, why = _local_link(index)
        except (RuntimeError, OSError) as e:  # no libcuda, a driver error: the host path
            cuda, why = None, str(e)
    # every rank answers, whatever its setting: a rank with 0 makes the group use the host path
    store.set(f"ocl_nccl/hello/{rank}", why if cuda is not None else "")
    gpus = [store.get(f"ocl_nccl/hello/{r}").decode() for r in range(world)]
    global refusal
    if cuda is None:
        refusal = why
    if not all(gpus) or len(set(gpus)) != world:  # a rank without it, or two ranks on one GPU
        refusal = refusal or (f"ranks share a GPU ({', '.join(gpus)})" if all(gpus) else "another rank cannot")
        return None
    torch.cuda.set_device(cuda.index)
    opts = dist.ProcessGroupNCCL.Options()
    opts._timeout = timeout
    pg = dist.ProcessGroupNCCL(dist.PrefixStore("ocl_nccl/", store), rank, world, opts)
    return Link(_NcclPeer(pg, cuda), index)
