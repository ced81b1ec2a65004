"""All-reduces of ocl tensors between the GPUs of one host, each rank reading the others' device memory (peer
access over NVLink or PCIe) in kernels of its own OpenCL context: no CUDA kernels, no NCCL, no host memory.

Why: the NCCL transport (_dist_nccl.py) runs NCCL's kernels in CUDA's context while the backward pass runs in
NVIDIA's OpenCL context on the same GPU, and the GPU takes turns between contexts instead of running both:
scripts/probe_ctx_overlap.py on 2x H200 timed CUDA matmuls next to ocl ones at an overlap of -0.21 (slower than
one after the other), and GPT-2 small scaled 0.69 on 2 GPUs through NCCL (0.97 with no exchange at all). The
same probe found that ocl:0 reads and writes memory that lives on GPU 1 once imported into its context, at 370
GB/s: so the ranks can sum each other's gradients with their own kernels, next to their backward passes.

How: each rank's exchange buffers are CUDA virtual-memory allocations on its own GPU (_dist_nccl._Cuda: made with
cuMemCreate and exported as file descriptors; CUDA itself runs nothing on them), imported into its ocl context;
the descriptors go to every other rank over Unix sockets (SCM_RIGHTS), which import them too, so every rank sees
buffer k of every rank as an ocl tensor. An all-reduce runs on the group's worker (_dist_async.py), in submission
order, which is the same on every rank:
  1. its buffer: the smallest of the group's buffers that fits and that the previous all-reduce did not use (the
     same choice on every rank: it depends on the sizes and their order only); none: a new one, made and exchanged
     by every rank at this point;
  2. copy in: the tensor (any strides) into this rank's buffer, on the worker's side stream, waited for on the
     host; then the all-reduce's descriptor and READY = its number s are posted;
  3. once every rank has posted READY = s (descriptors compared: ranks whose calls differ raise), the reduction:
     rank 0's buffer op rank 1's op ... in rank order into the tensor, on the side stream: the same kernels in the
     same order on every rank, so every rank gets the same bits; waited for, then DONE = s is posted.
A buffer is written again only after every rank posted DONE for its last use, which never waits in practice:
its last use is at most s - 2, and READY(s - 1) of a rank comes after its DONE(s - 2).
The control words are the group's shared-memory segment's (_dist_shm.Transport: futex waits, the group's
timeout, a dead peer noticed), so this transport exists only where that one does (every rank on this host).

When: PYTORCH_OCL_DIST_PEER unset or 1, the shared-memory segment exists, every rank's ocl device is a GPU of its
own that imports opaque file descriptors (as for NCCL: _dist_nccl._local_link), and a check all-reduce at setup
gives the right sum on every rank; else the NCCL transport, then the host paths. emulate: shared host memory
(memfd) that a CPU device uses in place stands for the CUDA allocations (tests on PoCL). Float AVG, SUM, MIN,
MAX and PRODUCT of the dtypes NCCL takes; the rest stays on the host path.
"""
import ctypes
import mmap
import os
import socket
import struct
import time
import uuid

import torch
import torch.distributed as dist

from . import _dist_nccl, _dist_shm

ENV = "PYTORCH_OCL_DIST_PEER"
_R = dist.ReduceOp.RedOpType
# the ops and dtypes of _dist_nccl.takes (the same as NCCL's transport)
_COMBINE = {_R.SUM: torch.add, _R.PRODUCT: torch.mul, _R.MIN: torch.minimum, _R.MAX: torch.maximum}
_DTYPES = _dist_nccl._DTYPES
SETUP_TIMEOUT_S = 120.0
_MESSAGE = struct.Struct("<iqq")  # sender's rank, buffer number, bytes

refusal = ""  # why the last group made here does not read peers' memory, "" when it does (ddp_train.py prints it)


def wanted():
    """PYTORCH_OCL_DIST_PEER: unset or 1 = where every rank can, 0 = never, emulate = host memory in place of
    the GPUs' (tests on CPU devices)."""
    v = os.environ.get(ENV, "") or "1"
    if v not in ("0", "1", "emulate"):
        raise ValueError(f"{ENV} must be 0, 1 or emulate, got {v!r}")
    return v


class _CudaMemory:
    """Exchange buffers on the rank's GPU: CUDA allocations exported as file descriptors, imported by OpenCL."""

    def __init__(self, cuda):
        self.cuda, self.granularity = cuda, cuda.granularity

    def allocate(self, nbytes):
        """(file descriptor, release) of a new allocation."""
        ptr, handle, fd = self.cuda.allocate(nbytes)
        return fd, lambda: self.cuda.free(ptr, handle, nbytes)

    @staticmethod
    def open(fd, nbytes, ocl_index):
        """(ocl uint8 tensor, release) of an exported allocation, this rank's or another's."""
        from . import _C

        return _C._import_external_memory(fd, nbytes, ocl_index), lambda: None


class _HostMemory:
    """PYTORCH_OCL_DIST_PEER=emulate: memfd shared memory that a CPU device (PoCL) uses in place."""

    granularity = mmap.PAGESIZE

    @staticmethod
    def allocate(nbytes):
        fd = os.memfd_create("ocl_peer", os.MFD_CLOEXEC)
        os.ftruncate(fd, nbytes)
        return fd, lambda: None  # the memory goes with the last mapping

    @staticmethod
    def open(fd, nbytes, ocl_index):
        from . import _C

        mm = mmap.mmap(fd, nbytes)
        anchor = ctypes.c_char.from_buffer(mm)
        t = _C._wrap_host_memory(ctypes.addressof(anchor), nbytes, ocl_index)
        holder = [mm, anchor]

        def release():
            mm_ = holder[0]
            holder.clear()  # the export (anchor) goes before the unmap
            mm_.close()
        return t, release


class _Buffer:
    """Buffer k of every rank: `views[r]` is rank r's as an ocl uint8 tensor here."""

    def __init__(self, nbytes, views, releases):
        self.nbytes, self.views, self._releases = nbytes, views, releases
        self.last = 0  # the number of the last all-reduce that used it

    def close(self):
        self.views = None  # the ocl imports go before the memory they refer to
        for release in self._releases:
            release()


class PeerLink:
    """A group's device-side all-reduce by reading the other ranks' buffers (module comment). Runs on the group's
    worker; setup() and close() on the caller's thread."""

    name = "peer"

    def __init__(self, memory, shm, ocl_index, listener, names, rank, world, timeout_s):
        self.memory, self.shm, self.device = memory, shm, torch.device("ocl", ocl_index)
        self.rank, self.world, self.timeout_s = rank, world, timeout_s
        self._listener, self._names = listener, names
        self._stash = {}  # (buffer number, rank) -> (bytes, fd) of messages that came early
        self._buffers = []
        self._seq = 0  # all-reduces run (the READY / DONE words hold it modulo 2**32)
        self._closing = False
        self.error = None  # the first failure, raised again by every later all-reduce
        self.trace = [] if os.environ.get("PYTORCH_OCL_DIST_DEVICE_TRACE") == "1" else None
        _dist_nccl._links.add(self)  # closed at exit before the CUDA driver frees its memory

    # ---- the caller's side (stage_all / run_all of _dist_nccl.py) -------------------------------------------

    def supports(self, t, red_kind):
        return _dist_nccl.takes(t, red_kind, self.device, "reads its peers' memory")

    def stage(self, t):
        """Nothing to enqueue on the caller's stream: the worker's side stream waits for it (_dist_async)."""
        return time.perf_counter()

    # ---- the worker's side --------------------------------------------------------------------------------

    def run(self, worker, t, staged_at, opts):
        if self.error is not None:  # the ranks' sequence numbers may differ after a failure: never mix data
            raise self.error
        try:
            self._run(worker, t, staged_at, opts)
        except BaseException as e:
            self.error = e if isinstance(e, dist.DistBackendError) else dist.DistBackendError(f"ocl_gloo: {e!r}")
            raise self.error from None

    def _run(self, worker, t, staged_at, opts):
        start = time.perf_counter()
        kind = opts.reduceOp.op if isinstance(opts.reduceOp, dist.ReduceOp) else opts.reduceOp
        self._seq += 1
        s, nbytes = self._seq, t.numel() * t.element_size()
        b = self._take(nbytes, s)
        self._wait(_dist_shm.PEER_DONE, b.last)
        side = worker.side_stream(self.device)
        views = [v[:nbytes].view(t.dtype) for v in b.views]
        with torch.ocl.stream(side):
            views[self.rank].view(t.shape).copy_(t)
        _dist_nccl._wait(_record(side))
        copied = time.perf_counter()
        op = list(_COMBINE).index(kind) if kind in _COMBINE else len(_COMBINE)
        desc = (nbytes & 0xFFFFFFFF, nbytes >> 32, _DTYPES.index(t.dtype) << 8 | op)
        self.shm.post_peer(_dist_shm.PEER_READY, s, desc)
        self._wait(_dist_shm.PEER_READY, s)
        peers = time.perf_counter()
        for p in range(self.world):
            theirs = self.shm.peer_desc(p, s)
            if theirs != desc:
                raise dist.DistBackendError(
                    f"ocl_gloo: ranks called different all_reduces (peer memory, all-reduce {s}: rank {self.rank} "
                    f"{t.numel()} x {t.dtype}, {kind}; descriptors (bytes low, high, dtype << 8 | op): rank {p} "
                    f"{theirs}, rank {self.rank} {desc})")
        with torch.ocl.stream(side):
            out = t.view(-1) if t.is_contiguous() else torch.empty(t.numel(), dtype=t.dtype, device=self.device)
            combine = _COMBINE.get(kind, torch.add)
            combine(views[0], views[1], out=out)
            for p in range(2, self.world):
                combine(out, views[p], out=out)
            if kind == _R.AVG:
                out.div_(self.world)
            if not t.is_contiguous():
                t.copy_(out.view(t.shape))
        t.record_stream(side)
        _dist_nccl._wait(_record(side))  # no rank writes its buffer again before every rank has read it
        reduced = time.perf_counter()
        self.shm.post_peer(_dist_shm.PEER_DONE, s)
        b.last = s
        if self.trace is not None:  # the stages' host times (pytorch_ocl.distributed.device_trace)
            self.trace.append({"bytes": nbytes, "staged": staged_at, "start": start, "copied": copied,
                               "peers": peers, "reduced": reduced, "back": reduced})

    def _wait(self, field, s):
        self.shm.wait_peer(field, s)

    def _take(self, nbytes, s):
        fits = [b for b in self._buffers if b.nbytes >= nbytes and b.last < s - 1]
        if fits:
            return min(fits, key=lambda b: b.nbytes)
        size = -(-nbytes // self.memory.granularity) * self.memory.granularity
        b = self.new_buffer(size)
        self._buffers.append(b)
        return b

    def new_buffer(self, nbytes):
        """Buffer len(self._buffers) of `nbytes` on every rank: this rank's made, its descriptor sent to every
        other rank and theirs imported. Collective: every rank calls it at the same point."""
        k = len(self._buffers)
        fd, release = self.memory.allocate(nbytes)
        views, releases = [None] * self.world, [release]
        try:
            views[self.rank], own = self.memory.open(fd, nbytes, self.device.index)
            releases.insert(0, own)
            for p in range(self.world):
                if p != self.rank:
                    self._send(p, k, nbytes, fd)
        finally:
            os.close(fd)
        for p, peer_fd in self._receive(k, nbytes).items():
            try:
                views[p], peer_release = self.memory.open(peer_fd, nbytes, self.device.index)
            finally:
                os.close(peer_fd)
            releases.insert(0, peer_release)
        return _Buffer(nbytes, views, releases)

    def _send(self, p, k, nbytes, fd):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(self.timeout_s)
            conn.connect(self._names[p])
            socket.send_fds(conn, [_MESSAGE.pack(self.rank, k, nbytes)], [fd])

    def _receive(self, k, nbytes):
        """{rank: descriptor} of buffer k from every other rank (messages of later buffers kept for later)."""
        got = {}
        deadline = time.monotonic() + self.timeout_s
        while len(got) < self.world - 1:
            ready = [key for key in self._stash if key[0] == k]
            for key in ready:
                size, fd = self._stash.pop(key)
                if size != nbytes:
                    os.close(fd)
                    raise dist.DistBackendError(f"ocl_gloo: peer memory: rank {key[1]} made buffer {k} of {size} "
                                                f"bytes, rank {self.rank} of {nbytes} (ranks called different "
                                                f"all_reduces)")
                got[key[1]] = fd
            if len(got) == self.world - 1:
                break
            if self._closing or time.monotonic() > deadline:
                for fd in got.values():
                    os.close(fd)
                raise dist.DistBackendError(f"ocl_gloo: peer memory: rank {self.rank} waited "
                                            f"{self.timeout_s:.0f} s for the other ranks' buffer {k}"
                                            if not self._closing else "ocl_gloo: the process group was shut down")
            try:
                conn, _ = self._listener.accept()
            except socket.timeout:
                continue
            with conn:
                conn.settimeout(self.timeout_s)
                msg, fds, _, _ = socket.recv_fds(conn, _MESSAGE.size, 1)
            if len(fds) != 1 or len(msg) != _MESSAGE.size:
                for fd in fds:
                    os.close(fd)
                raise dist.DistBackendError("ocl_gloo: peer memory: a malformed message on the exchange socket")
            rank, kk, size = _MESSAGE.unpack(msg)
            self._stash[(kk, rank)] = (size, fds[0])
        return got

    def close(self):
        """The buffers go (after the device has run what reads them), then the socket; idempotent."""
        self._closing = True
        buffers, self._buffers = self._buffers, []
        if buffers:
            torch.ocl.synchronize(self.device)
        for b in buffers:
            b.close()
        for _, fd in self._stash.values():
            os.close(fd)
        self._stash = {}
        if self._listener is not None:
            self._listener.close()
            self._listener = None


def _record(stream):
    event = torch.Event(device=stream.device)
    event.record(stream)
    return event


def _check(link, store):
    """Buffer 0 made and exchanged, each rank's filled with rank + 1, the sum of all read on every rank: "" when
    this rank's device reads its peers' memory right, else why not. Every rank posts its steps to the store
    whatever happens, so that none waits for a rank that gave up."""
    rank, world = link.rank, link.world
    why = ""
    try:
        b = link.new_buffer(link.memory.granularity)
        link._buffers.append(b)
        b.views[rank].view(torch.float32).fill_(rank + 1)
        torch.ocl.synchronize(link.device)
    except (RuntimeError, OSError) as e:
        why = f"the exchange of a first buffer failed: {e}"
    store.set(f"ocl_peer/filled/{rank}", "0" if why else "1")
    if not why and all(store.get(f"ocl_peer/filled/{r}") == b"1" for r in range(world)):
        try:
            n = b.nbytes // 4
            total = b.views[0].view(torch.float32)[:n].clone()
            for p in range(1, world):
                total.add_(b.views[p].view(torch.float32)[:n])
            if not bool((total == world * (world + 1) / 2).all()):
                why = f"ocl:{link.device.index} read wrong values from the other ranks' memory"
        except RuntimeError as e:
            why = f"reading the other ranks' memory failed: {e}"
    elif not why:
        why = "another rank could not exchange a first buffer"
    return why


def setup(store, rank, world, timeout, shm):
    """The group's PeerLink, or None (see the module comment). Collective over the group's store: every rank
    calls it once, when the group is made, and they all get the same answer."""
    global refusal
    mode = wanted()
    if world < 2:
        return None
    index = torch.ocl.current_device()
    memory, why = None, f"{ENV}=0"
    if shm is None:
        why = "not every rank is on this host (or PYTORCH_OCL_DIST_SHM=0)"
    elif mode == "emulate":
        memory = _HostMemory()
    elif mode == "1":
        try:
            cuda, why = _dist_nccl._local_link(index)
            memory = _CudaMemory(cuda) if cuda is not None else None
        except (RuntimeError, OSError) as e:  # no libcuda, a driver error: another transport
            why = str(e)
    listener = None
    if memory is not None:
        name = f"\0ocl_peer_{os.getpid()}_{uuid.uuid4().hex[:12]}"
        try:
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            listener.bind(name)
            listener.listen(world)
            listener.settimeout(_dist_shm.POLL_S)
        except OSError as e:
            listener, memory, why = None, None, f"no Unix socket for the exchange: {e}"
    gpu = why if mode == "1" else f"emulated/{rank}"
    store.set(f"ocl_peer/hello/{rank}", f"{name}|{gpu}|{memory.granularity}" if memory is not None else "")
    hellos = [store.get(f"ocl_peer/hello/{r}").decode() for r in range(world)]
    refusal = why if memory is None else ""
    if not all(hellos) or len({h.split("|")[1] for h in hellos}) != world:
        refusal = refusal or ("ranks share a GPU" if all(hellos) else "another rank cannot")
        if listener is not None:
            listener.close()
        return None
    names = [h.split("|")[0] for h in hellos]
    granularity = max(int(h.split("|")[2]) for h in hellos)
    memory.granularity = granularity
    timeout_s = timeout.total_seconds() if timeout is not None else 1800.0
    # the check's exchange has a limit of its own: sooner than a default collective's (a rank that cannot take part
    # fails at once), but not the group's when that is shorter: the check pays one-time costs (CUDA's context, the
    # first imports, program builds), and a group made with a 5 s timeout would lose the link to them
    link = PeerLink(memory, shm, index, listener, names, rank, world, SETUP_TIMEOUT_S)
    why = _check(link, store)
    store.set(f"ocl_peer/checked/{rank}", why or "1")  # also: every rank has read the others' buffer 0
    agreed = all(store.get(f"ocl_peer/checked/{r}") == b"1" for r in range(world))
    if not agreed:
        refusal = why or "another rank's check failed"
        link.close()
        return None
    link.timeout_s = timeout_s
    return link
