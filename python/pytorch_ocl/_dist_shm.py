"""A shared-memory all-reduce for the "ocl_gloo" group (_dist_pg.py) when every rank runs on this host.

Why: gloo moves an all-reduce over TCP even between processes of one machine; on a 2x H100 host that gives
2.8-3.0 GB/s of bus bandwidth (NCCL: 213-284 GB/s), too little for DDP's 500 MB of GPT-2 gradients per step.
Between processes of one host the data can go through memory instead: one POSIX shared-memory segment per
group, mapped by every rank.

Layout: `sets` slot sets (PYTORCH_OCL_DIST_SHM_SETS, default 3), each one slot of `slot_bytes` per rank and
one result area of `slot_bytes`, and a control line of 64 bytes per rank and set (three sequence words, a
descriptor of the piece, see below). Piece q of the group (at most slot_bytes; _dist_pg cuts a tensor into
pieces, read from the device chunk by chunk and written back piece by piece) uses set q mod sets:
  1. copy-in: once every rank has reduced piece q - sets (which read this set's slots), the rank copies its
     staged piece into its slot and publishes q (ARRIVE);
  2. reduce: once every rank has arrived and has copied out piece q - sets (the result area's last use),
     rank r reduces element range r of world of the piece over all slots, in rank order (slot 0 op slot 1
     op ...), into the result area: the work is split over the ranks, each with torch's intra-op threads,
     and the bytes of an element come from one rank's arithmetic, so every rank gets the same bits
     whatever the dtype (as with gloo); then it publishes REDUCED;
  3. copy-out: once every rank has reduced, it copies the result area into its staging buffer and
     publishes OUT.
Pipeline: up to 3 pieces are in flight (`depth`, at most `sets`): the worker copies piece i in, then reduces
piece i - 1, then copies piece i - 2 out (and enqueues its write back), so each wait for the peers has a
whole stage of slack behind it, instead of three hand-offs one after another per piece. Waits in the order
of one rank's program target only what every rank publishes earlier in the same program, so it cannot
deadlock; the waits on REDUCED / OUT of piece q - sets before reusing a set are usually already satisfied.
PYTORCH_OCL_DIST_SHM_TRACE=1 records each stage's time per piece (_dist_shm_trace.py). The device reads and
write backs run on a reader and a writer thread of their own (_dist_shm_stages.py,
PYTORCH_OCL_DIST_SHM_STAGE_THREADS; 0: on the caller and the worker, run_staged below).

Synchronisation: each sequence word has one writer (its rank), so no atomic read-modify-write is needed;
waiters sleep in the futex(2) syscall on the word (a shared futex: works across processes mapping the same
file), through ctypes, which releases the GIL, and the writer wakes them after storing. x86 keeps stores in
order, so the data is visible before the word (the futex syscalls are full barriers on other architectures).
The TCP store is used only once, when the group is made: hostname + boot id agree (the same machine), the
environment allows it on every rank, and every rank could open the segment; else gloo as before.

Robustness: the segment's name is unique (rank 0's pid and a random part) and is unlinked as soon as every
rank has opened it (or failed to), so it disappears with the last process even on a crash; the mapping is
closed at the group's shutdown (destroy_process_group) or exit. A wait gives up after the group's timeout
(DistBackendError "... timed out ...", as gloo's) and fails at once when a peer process is gone (checked
every 0.1 s through /proc, when the peers' pids are visible here). Every piece carries a descriptor (which
all-reduce of the group, its offset, length, dtype and op): ranks whose calls disagree raise instead of
mixing data.

PYTORCH_OCL_DIST_SHM=0 keeps gloo for everything; 1 (the default) uses this path when possible.
PYTORCH_OCL_DIST_SHM_SETS: slot sets (1: one piece at a time, as before the pipeline);
PYTORCH_OCL_DIST_SHM_PIECE_KIB: the slot size, i.e. the largest piece (default and at most 4 MiB, the read
chunk); rank 0's choices are used, and fewer sets when /dev/shm has no room for them.
"""
import ctypes
import mmap
import os
import platform
import socket
import threading
import time
import traceback
import uuid
from collections import deque
from time import perf_counter

import torch
import torch.distributed as dist

from . import _dist_lanes, _dist_shm_stages, _dist_shm_trace

ENV = "PYTORCH_OCL_DIST_SHM"
THREADS_ENV = "PYTORCH_OCL_DIST_SHM_THREADS"
SETS_ENV = "PYTORCH_OCL_DIST_SHM_SETS"
PIECE_ENV = "PYTORCH_OCL_DIST_SHM_PIECE_KIB"
DEFAULT_SETS = 3  # a set per piece in flight; more sets grow the data touched per round past the caches
MAX_DEPTH = 3  # copy-in, reduce, copy-out: one piece in each
MAX_THREADS = 8  # the copies and reductions are bound by memory bandwidth well before this
SLOT_BYTES = 4 << 20  # default per rank and set; a piece is at most this (and at most _dist_async.CHUNK_BYTES)
_LINE = 16  # u32 words of control per rank and set (64 bytes: one cache line)
_ARRIVE, _REDUCED, _OUT, _DESC = 0, 1, 2, 3  # word offsets in a line; the descriptor takes 5 words
# words of set 0's lines that the peer-memory transport uses (_dist_peer.py): its copy-in and reduction
# sequence words, then two descriptors of 3 words (all-reduce s uses s mod 2: a rank may post s + 1's while a
# slower one still reads s's, never further ahead)
PEER_READY, PEER_DONE, _PEER_DESC, PEER_DESC_WORDS = 8, 9, 10, 3
_FIELD = {_ARRIVE: "arrival", _REDUCED: "reduction", _OUT: "copy-out", PEER_READY: "peer-memory copy-in",
          PEER_DONE: "peer-memory reduction"}
_POLL_S = POLL_S = 0.1  # how often a waiter checks the deadline and the peers' processes

_R = dist.ReduceOp.RedOpType
_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
           torch.int32, torch.int64, torch.bool]
# gloo_op of _dist_pg._Reduction (AVG / PREMUL_SUM arrive as SUM with a host step before or after)
_COMBINE = {_R.SUM: torch.add, _R.PRODUCT: torch.mul, _R.MIN: torch.minimum, _R.MAX: torch.maximum,
            _R.BAND: torch.bitwise_and, _R.BOR: torch.bitwise_or, _R.BXOR: torch.bitwise_xor}
_OP_CODE = {op: i for i, op in enumerate(_COMBINE)}

_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98, "ppc64le": 221, "riscv64": 98}.get(
    platform.machine().lower())
_FUTEX_WAIT, _FUTEX_WAKE = 0, 1
_libc = ctypes.CDLL(None, use_errno=True) if _SYS_FUTEX is not None else None


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


def wanted():
    """This process's PYTORCH_OCL_DIST_SHM: True (default, "1") or False ("0"); anything else is an error."""
    return _dist_lanes.switch_env(ENV, True, "gloo only", "shared memory between ranks of one host where possible")


def default_threads(world):
    """Intra-op threads of the worker's copies and reductions: PYTORCH_OCL_DIST_SHM_THREADS, else
    min(8, CPUs / ranks) (every rank of the group runs on this host and works at the same time: more would
    oversubscribe the cores, and OpenMP threads spinning between regions would take them from the peers)."""
    k = _dist_lanes.positive_int_env(THREADS_ENV)
    if k is not None:
        return k
    return max(1, min(MAX_THREADS, _dist_lanes.usable_cpus() // world))


def default_sets():
    """Slot sets of a group's segment: PYTORCH_OCL_DIST_SHM_SETS, else 3 (rank 0's value is used)."""
    k = _dist_lanes.positive_int_env(SETS_ENV, " (1: one piece in flight)")
    return DEFAULT_SETS if k is None else k


def default_slot_bytes():
    """The largest piece (a slot's size): PYTORCH_OCL_DIST_SHM_PIECE_KIB KiB, else 4 MiB (rank 0's is used).
    Pieces are also at most a chunk of the device reads (_dist_async.CHUNK_BYTES, 4 MiB): smaller only."""
    k = _dist_lanes.positive_int_env(PIECE_ENV)
    return SLOT_BYTES if k is None else k << 10


def _host_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        return None  # not Linux: no way to tell that two processes share a machine
    return f"{socket.gethostname()}/{boot}"


def _start_time(pid):
    """The process's start time (/proc/PID/stat field 22) and whether it is running (not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None, False
    return fields[19], fields[0] not in ("Z", "X", "x")


def setup(store, rank, world, timeout):
    """The group's Transport, or None where gloo must do it (a rank on another host, the environment says
    0 on some rank, or the segment could not be made or opened on some rank). Collective over the group's
    store: every rank of the group calls it once, when the group is made, and they all get the same answer."""
    want = wanted()
    threads = default_threads(world)  # checked on every rank, whatever the group turns out to use
    sets, slot = default_sets(), default_slot_bytes()
    trace = _dist_shm_trace.wanted()
    stage_threads = _dist_shm_stages.wanted()
    if world < 2:
        return None
    host = _host_id() if want else None
    start, _ = _start_time(os.getpid())
    store.set(f"ocl_shm/hello/{rank}", f"{int(host is not None)}|{host}|{os.getpid()}|{start}")
    hellos = [store.get(f"ocl_shm/hello/{r}").decode().split("|") for r in range(world)]
    if not all(h[0] == "1" and h[1] == hellos[0][1] for h in hellos):
        return None
    path, fd = None, None
    try:
        if rank == 0:
            path = f"/dev/shm/ocl_gloo_{os.getpid()}_{uuid.uuid4().hex[:16]}"
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError:
                path = None
            while fd is not None:
                try:  # ENOSPC now rather than SIGBUS later if /dev/shm is small; then fewer sets
                    os.posix_fallocate(fd, 0, _size(world, sets, slot))
                    break
                except OSError:
                    if sets > 1:
                        sets -= 1
                        continue
                    os.close(fd)
                    os.unlink(path)
                    fd = path = None
            store.set("ocl_shm/name", f"{sets}|{slot}|{path or ''}")
        else:
            sets, slot, path = store.get("ocl_shm/name").decode().split("|", 2)
            sets, slot, path = int(sets), int(slot), path or None
            try:
                fd = os.open(path, os.O_RDWR) if path else None
            except OSError:
                fd = None
        mm = None
        if fd is not None:
            try:
                mm = mmap.mmap(fd, _size(world, sets, slot))
            except (OSError, ValueError):
                mm = None
        store.set(f"ocl_shm/open/{rank}", "1" if mm is not None else "0")
        opened = [store.get(f"ocl_shm/open/{r}") == b"1" for r in range(world)]
    finally:
        if fd is not None:
            os.close(fd)
        if rank == 0 and path:
            os.unlink(path)  # every rank has opened it or failed: it goes with the last mapping
    if not all(opened):
        if mm is not None:
            mm.close()
        return None
    # peers' liveness can be checked only where their pids name them here (one pid namespace)
    peers = {r: int(h[2]) for r, h in enumerate(hellos) if r != rank}
    visible = all(_start_time(pid)[0] == hellos[r][3] for r, pid in peers.items())
    return Transport(mm, _header(world, sets), rank, world, timeout, peers if visible else {}, threads, sets,
                     slot, trace, stage_threads)


def _header(world, sets):
    return -(-4 * _LINE * world * sets // mmap.PAGESIZE) * mmap.PAGESIZE


def _size(world, sets, slot):
    return _header(world, sets) + sets * (world + 1) * slot


class _Piece:
    """One piece in the pipeline: its staging view, number q, set and descriptor."""

    __slots__ = ("h", "op", "q", "set", "desc", "key", "reduced")

    def __init__(self, h, op, q, sets, desc, key):
        self.h, self.op, self.q, self.set, self.desc, self.key = h, op, q, q % sets, desc, key
        self.reduced = False


class Transport:
    """One group's segment and its pieces' protocol (module comment). The pieces run on the group's worker
    thread (stage_in / finish, in order); close() may come from another (the group's shutdown)."""

    def __init__(self, mm, header, rank, world, timeout, peers, threads=1, sets=1, slot_bytes=SLOT_BYTES,
                 trace=False, stage_threads=False):
        self._mm = mm
        self.threads = threads  # set on the worker thread at its first piece (OpenMP's count is per thread)
        self._threads_set = False
        self.rank, self.world, self.sets, self.slot_bytes = rank, world, sets, slot_bytes
        self.depth = min(MAX_DEPTH, sets)  # pieces in flight: a set each (more would wait on themselves)
        self.timeout_s = timeout.total_seconds() if timeout is not None else 1800.0
        self._peers = peers  # rank -> pid, empty when not checkable
        self._words = memoryview(mm)[:header].cast("I")
        self._data = torch.frombuffer(mm, dtype=torch.uint8, offset=header)
        self._anchor = ctypes.c_char.from_buffer(mm)  # the futex words' addresses (released at close)
        self._addr = ctypes.addressof(self._anchor)
        self._q = 0  # pieces started (unbounded; the words hold it modulo 2**32)
        self._unreduced = deque()  # pieces copied in, not yet reduced, oldest first
        self._in_flight = 0  # pieces started and not finished
        self._calls = 0
        self.pieces_done = 0  # tests check the path was taken
        self.error = None  # the first failure: the protocol's state is unknown after it, later calls raise it
        self.trace = _dist_shm_trace.Trace(trace)
        # the reader and writer threads of the device copies (_dist_shm_stages.py), None: run_staged
        self.stages = _dist_shm_stages.Stages() if stage_threads else None
        # Held by the worker through a stage: close() unmaps only outside one (torch's views of the segment
        # do not keep the mapping: an unmap under them would crash), and makes a waiting stage give up.
        self._lock = threading.Lock()
        self._closing = False

    def pieces(self, numel, itemsize, chunk_bytes):
        """The (begin, end) element ranges of one all-reduce: at most min(slot, chunk) bytes each, computed
        on the calling thread (where the chunk size of the reads was read too)."""
        step = max(1, min(self.slot_bytes, chunk_bytes) // itemsize)
        return [(a, min(a + step, numel)) for a in range(0, numel, step)]

    @staticmethod
    def supports(dtype, gloo_op):
        """Whether this path takes an all-reduce of `dtype` with `gloo_op` (else gloo, which also gives
        the errors of bad combinations): decided per tensor on the calling thread, the same on every rank."""
        op = getattr(gloo_op, "op", gloo_op)  # a ReduceOp or its RedOpType
        bitwise = op in (_R.BAND, _R.BOR, _R.BXOR)
        return dtype in _DTYPES and op in _COMBINE and not (bitwise and (dtype.is_floating_point))

    def begin(self):
        """A new all-reduce (on the worker): its number goes into its pieces' descriptors."""
        self._calls += 1
        return self._calls

    def stage_in(self, h, gloo_op, call, offset, index=0):
        """Starts all-reducing the contiguous 1-d host tensor `h` in place (piece `index`, at element
        `offset` of all-reduce number `call`) with gloo_op (a c10d ReduceOp of _COMBINE): copies it into
        the segment, then reduces the pieces started before it. Returns the piece for finish(); at most
        `depth` pieces may be started and not finished."""
        op = getattr(gloo_op, "op", gloo_op)
        n, dtype = h.numel(), h.dtype
        desc = (call & 0xFFFFFFFF, offset & 0xFFFFFFFF, n & 0xFFFFFFFF, n >> 32,
                (_DTYPES.index(dtype) << 8) | _OP_CODE[op])

        def stage():
            q = self._q + 1
            piece = _Piece(h, op, q, self.sets, desc, (call, index))
            s, trace = piece.set, self.trace
            t = perf_counter()
            self._wait_all(s, _REDUCED, q - self.sets)  # every rank is done reading this set's slots
            trace.add(piece.key, "wait_slot", t)
            t = perf_counter()
            self._view(s, self.rank, dtype, n).copy_(h)
            line = self._line(self.rank, s)
            for i, word in enumerate(desc):
                self._words[line + _DESC + i] = word
            self._q = q
            self._in_flight += 1
            self._post(s, _ARRIVE, q)
            trace.add(piece.key, "copy_in", t)
            while self._unreduced:  # the peers have had this copy-in's time to arrive with them
                self._reduce(self._unreduced.popleft())
            self._unreduced.append(piece)
            return piece
        return self._guarded(stage)

    def finish(self, piece):
        """Completes a piece: reduces it (and those before it) if not done, waits for every rank's share
        and copies the result into its staging tensor."""
        def stage():
            while not piece.reduced:
                self._reduce(self._unreduced.popleft())
            t = perf_counter()
            self._wait_all(piece.set, _REDUCED, piece.q)
            self.trace.add(piece.key, "wait_reduced", t)
            t = perf_counter()
            piece.h.copy_(self._view(piece.set, self.world, piece.h.dtype, piece.h.numel()))
            self._post(piece.set, _OUT, piece.q)
            self.trace.add(piece.key, "copy_out", t)
            self._in_flight -= 1
            self.pieces_done += 1
        self._guarded(stage)

    def allreduce(self, h, gloo_op, call, offset):
        """One piece, start to end (no other piece in flight)."""
        self.finish(self.stage_in(h, gloo_op, call, offset))

    def abandon(self, error):
        """The caller gives up on its pieces in flight (an error outside the transport, e.g. a device read):
        the peers' protocol state then differs from ours, so later calls raise instead of going on."""
        if self._in_flight and self.error is None:
            self.error = dist.DistBackendError(f"ocl_gloo: a shared-memory all_reduce stopped with pieces in "
                                               f"flight: {error!r}")

    def _guarded(self, stage):
        if self.error is not None:
            raise self.error
        if not self._threads_set:
            torch.set_num_threads(self.threads)  # this (worker) thread's; the caller's threads keep theirs
            self._threads_set = True
        try:
            with self._lock:
                if self._mm is None:
                    raise dist.DistBackendError("ocl_gloo: the process group was shut down")
                return stage()
        except BaseException as e:
            # kept without its traceback, whose frames hold staging buffers (waited for at exit: _dist_pg)
            self.error = dist.DistBackendError(str(e) if isinstance(e, dist.DistBackendError) else f"ocl_gloo: {e!r}")
            raise

    # ---- the peer-memory transport's words (_dist_peer.py), on the worker too --------------------------

    def post_peer(self, field, q, desc=()):
        """This rank's descriptor of q (at most PEER_DESC_WORDS words, if any), then its word `field` = q."""
        def stage():
            base = self._line(self.rank, 0) + _PEER_DESC + (q & 1) * PEER_DESC_WORDS
            for i, v in enumerate(desc[:PEER_DESC_WORDS]):
                self._words[base + i] = v
            self._post(0, field, q)
        self._guarded(stage)

    def wait_peer(self, field, q):
        """Until every other rank's word `field` has reached q."""
        self._guarded(lambda: self._wait_all(0, field, q))

    def peer_desc(self, rank, q):
        """The descriptor that `rank` posted with all-reduce q."""
        base = self._line(rank, 0) + _PEER_DESC + (q & 1) * PEER_DESC_WORDS
        return tuple(self._words[base:base + PEER_DESC_WORDS])

    def _line(self, rank, s):
        return (rank * self.sets + s) * _LINE

    def _view(self, s, index, dtype, n):
        start = (s * (self.world + 1) + index) * self.slot_bytes
        return self._data[start:start + n * dtype.itemsize].view(dtype)

    def _reduce(self, piece):
        q, s, desc, world, rank, trace = piece.q, piece.set, piece.desc, self.world, self.rank, self.trace
        n, dtype = piece.h.numel(), piece.h.dtype
        t = perf_counter()
        self._wait_all(s, _ARRIVE, q)
        trace.add(piece.key, "wait_arrive", t)
        for p in range(world):
            line = self._line(p, s) + _DESC
            theirs = tuple(self._words[line:line + len(desc)])
            if theirs != desc:
                call, offset = piece.key[0], desc[1]
                raise dist.DistBackendError(
                    f"ocl_gloo: ranks called different all_reduces (shared memory, rank {rank}: call {call} "
                    f"at element {offset}, {n} x {dtype}, {piece.op}; rank {p}: descriptor {theirs} vs ours {desc})")
        t = perf_counter()
        self._wait_all(s, _OUT, q - self.sets)  # every rank has copied out this set's result area
        trace.add(piece.key, "wait_out", t)
        t = perf_counter()
        lo, hi = rank * n // world, (rank + 1) * n // world
        if hi > lo:
            out = self._view(s, world, dtype, n)[lo:hi]
            combine = _COMBINE[piece.op]
            combine(self._view(s, 0, dtype, n)[lo:hi], self._view(s, 1, dtype, n)[lo:hi], out=out)
            for p in range(2, world):
                combine(out, self._view(s, p, dtype, n)[lo:hi], out=out)
        piece.reduced = True
        self._post(s, _REDUCED, q)
        trace.add(piece.key, "reduce", t)

    def _post(self, s, field, q):
        index = self._line(self.rank, s) + field
        self._words[index] = q & 0xFFFFFFFF
        if _libc is not None:
            _libc.syscall(_SYS_FUTEX, ctypes.c_void_p(self._addr + 4 * index), _FUTEX_WAKE, 0x7FFFFFFF,
                          None, None, 0)

    def _wait_all(self, s, field, q):
        """Until every other rank's word `field` of set `s` has reached piece q (nothing when q <= 0)."""
        if q <= 0:
            return
        seq = q & 0xFFFFFFFF
        start = time.monotonic()
        for p in range(self.world):
            if p == self.rank:
                continue
            index = self._line(p, s) + field
            while True:
                value = self._words[index]
                if (value - seq) & 0xFFFFFFFF < 0x80000000:  # value >= seq, modulo wraparound
                    break
                waited = time.monotonic() - start
                if self._closing:
                    raise dist.DistBackendError(f"ocl_gloo: the process group was shut down while rank "
                                                f"{self.rank} waited for rank {p} (shared-memory all_reduce)")
                if waited > self.timeout_s:
                    raise dist.DistBackendError(
                        f"ocl_gloo: shared-memory all_reduce timed out after {self.timeout_s:.0f} s waiting "
                        f"for rank {p} (rank {self.rank}, piece {q}, {_FIELD[field]})")
                if p in self._peers and waited > _POLL_S and not _start_time(self._peers[p])[1]:
                    raise dist.DistBackendError(
                        f"ocl_gloo: shared-memory all_reduce: rank {p} (pid {self._peers[p]}) has exited "
                        f"(rank {self.rank} waiting for piece {q})")
                self._sleep(index, value, min(_POLL_S, self.timeout_s - waited + 0.01))

    def _sleep(self, index, value, seconds):
        """Until the word at `index` changes from `value`, a wake, or `seconds` (GIL released)."""
        if _libc is None:
            time.sleep(min(seconds, 50e-6))
            return
        ts = _Timespec(int(seconds), int((seconds % 1) * 1e9))
        _libc.syscall(_SYS_FUTEX, ctypes.c_void_p(self._addr + 4 * index), _FUTEX_WAIT, ctypes.c_uint32(value),
                      ctypes.byref(ts), None, 0)

    def close(self):
        """Unmaps the segment (its name is gone already). A piece in progress on the worker gives up first
        (within _POLL_S); if it does not let go in time, the mapping stays until the process exits."""
        self._closing = True
        if self.stages is not None:
            self.stages.close()  # a worker waiting for them gives up; they touch no shared memory
        if not self._lock.acquire(timeout=10 * _POLL_S):
            return
        try:
            mm, self._mm = self._mm, None
            if mm is None:
                return
            self._words.release()
            self._data = self._anchor = None
            try:
                mm.close()
            except BufferError:  # still exported (a memoryview somewhere): unmapped when that goes
                pass
        finally:
            self._lock.release()


def run_staged(transport, worker, st, red, keep, pieces):
    """On the worker: an ocl tensor staged in chunks (_dist_async.StagedTensor) all-reduced piece by piece
    through `transport`, with the reduction's host steps (AVG, PREMUL_SUM: _dist_pg._Reduction) around each;
    up to transport.depth pieces in flight, each written back as soon as it is done (StagedTensor.run)."""
    call = transport.begin()
    trace = transport.trace

    def start(h, i):
        red.before([h])
        piece = transport.stage_in(h, red.gloo_op, call, pieces[i][0], i)

        def finish():
            transport.finish(piece)
            red.after([h])
        return finish
    try:
        st.run(worker, start, keep, depth=transport.depth, pieces=pieces,
               timing=(lambda i, stage, t: trace.add((call, i), stage, t)) if trace.on else None)
        if trace.on:  # how long the device takes to finish the writes after the last enqueue
            t = perf_counter()
            worker.side_stream(st.tensor.device).synchronize()
            trace.add((call, len(pieces) - 1), "write_tail", t)
    except BaseException as e:
        transport.abandon(e)
        # The error goes to the Work (and its waiter's traceback); without this its frames would hold the
        # staging buffers, which exit waits for as if gloo still held them (_dist_pg._staged).
        traceback.clear_frames(e.__traceback__)
        st.host = None
        raise


def allreduce_host(transport, t, gloo_op):
    """All-reduces the contiguous host tensor `t` in place through `transport` on the calling thread, piece
    by piece through the pipeline (benchmarks/dist_shm_probe.py: the hand-offs without the device)."""
    flat = t.view(-1)
    call = transport.begin()
    pending = deque()
    try:
        for i, (a, b) in enumerate(transport.pieces(flat.numel(), flat.element_size(), transport.slot_bytes)):
            pending.append(transport.stage_in(flat[a:b], gloo_op, call, a, i))
            if len(pending) >= transport.depth:
                transport.finish(pending.popleft())
        while pending:
            transport.finish(pending.popleft())
    except BaseException as e:
        transport.abandon(e)
        raise
