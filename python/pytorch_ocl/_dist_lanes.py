"""Parallel gloo "lanes" for the large all-reduces of the "ocl_gloo" group (_dist_pg.py).

Why: one ProcessGroupGloo moves a collective over one TCP connection per peer, with one thread running the
ring's reductions and one event-loop thread receiving, so a large all-reduce (DDP's 25 MiB buckets, 500 MB of
GPT-2 gradients per step) is bound by that single stream, whatever the machine has. A lane is one more
ProcessGroupGloo of the same ranks (its own connections and threads); the pieces of one all-reduce of more
than one chunk (_dist_async.StagedTensor, CHUNK_BYTES each) go round-robin to K lanes, up to K of them in
flight at once, so K rings run concurrently while the reads of the next chunks still come in.

The pieces given to the lanes are the chunks' count rounded up to a multiple of K, of equal size (pieces()),
so that no wave of K concurrent pieces runs part empty. Results: a piece's result does not depend on the
lane (connection) that carries it, but gloo's ring reduces an element in an order set by its position within
the call: with 3 or more ranks, floating-point SUM / PRODUCT / AVG / PREMUL_SUM may differ from one lane's in
the last bits (as one lane's 4 MiB chunks already differ from a single call on the whole tensor), and are
deterministic for a given K. Integer ops, MIN / MAX (NaN aside) / bitwise ops, and any op on 2 ranks (a + b == b + a in
floating point) give identical results for every K.

Same lanes on every rank, without deadlock: the lanes are created on the group's worker thread at its
first all-reduce of more than one chunk. c10d requires every rank to call the same collectives in the same
order on tensors of the same sizes, so that is the same collective on every rank, and each rank's worker
gets there after the same earlier collectives: deciding by size is safe. K is rank 0's choice, published
through the group's store (ranks may have different CPU counts or environments): every rank uses it.
Waiting there for rank 0's count and for the other ranks to connect releases the GIL (torch's Store.get and
ProcessGroupGloo's constructor), so the calling thread goes on meanwhile (a send it issues can be what
another rank waits for before reaching this collective).
"""
import os

import torch.distributed as dist

ENV = "PYTORCH_OCL_GLOO_LANES"
MAX_DEFAULT = 4  # beyond this a ring's share gets too small to keep TCP busy, and the threads compete
_STORE_KEY = "ocl_gloo_lanes"


def positive_int_env(name, hint=""):
    """The positive integer set in environment variable `name`, None when unset; anything else raises."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    try:
        k = int(env)
    except ValueError:
        k = 0
    if k < 1:
        raise ValueError(f"ocl_gloo: {name} must be a positive integer{hint}, got {env!r}")
    return k


def switch_env(name, default, off="", on=""):
    """Environment switch `name`: True for "1", False for "0", `default` when unset; anything else raises,
    naming what 0 and 1 mean (`off`, `on`)."""
    env = os.environ.get(name, "").strip()
    if env not in ("", "0", "1"):
        meaning = f" ({off})" if off else ""
        meaning1 = f" ({on})" if on else ""
        raise ValueError(f"ocl_gloo: {name} must be 0{meaning} or 1{meaning1}, got {env!r}")
    return default if not env else env == "1"


def usable_cpus():
    """CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_count(world_size):
    """This process's choice of K: PYTORCH_OCL_GLOO_LANES, else min(4, CPUs / processes on this host)
    (each lane is a reduction thread and a receiving thread per process)."""
    k = positive_int_env(ENV, " (1: one gloo group)")
    if k is not None:
        return k
    local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size) or world_size)
    return max(1, min(MAX_DEFAULT, usable_cpus() // max(1, local)))


class Lanes:
    """The gloo groups of one "ocl_gloo" group's large all-reduces; the first is the group's own gloo."""

    def __init__(self, store, rank, world_size, timeout, first):
        self._store = store
        self._rank = rank
        self._size = world_size
        self._timeout = timeout
        self._first = first
        self._wanted = default_count(world_size)  # read (and checked) when the group is made; rank 0's wins
        self._groups = [first] if world_size == 1 else None  # alone: nothing to run in parallel
        self.calls = [0] * len(self._groups or [])  # chunks handed to each lane (tests check all are used)

    def groups(self):
        """The K lanes, created at the first call (on the worker thread, as a job: see the module comment)."""
        if self._groups is None:
            k = self._agree()
            extra = [dist.ProcessGroupGloo(dist.PrefixStore(f"ocl_gloo_lane{i}/", self._store), self._rank,
                                           self._size, self._timeout)
                     for i in range(1, k)]
            self._groups = [self._first] + extra
            self.calls = [0] * k
        return self._groups

    def _agree(self):
        if self._rank == 0:
            self._store.set(_STORE_KEY, str(self._wanted))
        return int(self._store.get(_STORE_KEY))  # waits for rank 0's value (the store's timeout bounds it)

    def pieces(self, numel, itemsize, chunk_bytes):
        """The element ranges one all-reduce of `numel` elements is cut into for the lanes: as many pieces
        as chunks of `chunk_bytes`, rounded up to a multiple of K, of equal size, so that every wave of K
        concurrent pieces is full (a 25 MiB DDP bucket: 8 pieces of 3.1 MiB on 4 lanes, two waves, rather
        than 7 chunks of 4 MiB, of which the last wave has 3). One lane: None (the read chunks)."""
        k = self.count()
        if k == 1:
            return None
        n = -(-numel * itemsize // chunk_bytes)
        n = min(numel, -(-n // k) * k)
        bounds = [numel * j // n for j in range(n + 1)]
        return list(zip(bounds[:-1], bounds[1:]))

    def count(self):
        return len(self.groups())

    def lane(self, i):
        """The gloo group of chunk number `i` (round-robin), counted in `calls`."""
        groups = self.groups()
        self.calls[i % len(groups)] += 1
        return groups[i % len(groups)]
