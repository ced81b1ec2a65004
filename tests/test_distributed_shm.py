"""The shared-memory all-reduce between ranks of one host (pytorch_ocl/_dist_shm.py).

Rank bodies in dist_shm_workers.py; DDP and the dead-peer tests run on both transports in test_distributed.py.
"""
import os

import pytest
import torch.distributed as dist

import dist_shm_workers
from test_distributed import _spawn

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="torch built without distributed/gloo")


@pytest.mark.parametrize("world", [2, 3])
def test_shm_allreduce(world):
    """Every op and dtype, bit for bit the rank-order reduction (and gloo's on 2 ranks); odd sizes, one or
    many pieces, strided, zero-size, back-to-back async calls, many pieces in flight; the switches (slot
    sets, piece size, trace); mismatched calls raise."""
    _spawn(dist_shm_workers.allreduce, world)


def test_switch_values(monkeypatch):
    from pytorch_ocl import _dist_shm

    for value, want in (("", True), ("1", True), ("0", False)):
        monkeypatch.setenv("PYTORCH_OCL_DIST_SHM", value)
        assert _dist_shm.wanted() is want
    monkeypatch.setenv("PYTORCH_OCL_DIST_SHM", "yes")
    with pytest.raises(ValueError, match="PYTORCH_OCL_DIST_SHM"):
        _dist_shm.wanted()
    # intra-op threads of the copies and reductions: the variable, else min(8, CPUs / ranks)
    monkeypatch.setenv("PYTORCH_OCL_DIST_SHM_THREADS", "3")
    assert _dist_shm.default_threads(2) == 3
    for bad in ("0", "many"):
        monkeypatch.setenv("PYTORCH_OCL_DIST_SHM_THREADS", bad)
        with pytest.raises(ValueError, match="PYTORCH_OCL_DIST_SHM_THREADS"):
            _dist_shm.default_threads(2)
    monkeypatch.delenv("PYTORCH_OCL_DIST_SHM_THREADS")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(32)), raising=False)
    assert [_dist_shm.default_threads(w) for w in (2, 8, 64)] == [8, 4, 1]
    # slot sets, largest piece, trace
    from pytorch_ocl import _dist_shm_trace

    assert (_dist_shm.default_sets(), _dist_shm.default_slot_bytes(), _dist_shm_trace.wanted()) == (3, 4 << 20, False)
    monkeypatch.setenv("PYTORCH_OCL_DIST_SHM_SETS", "1")
    monkeypatch.setenv("PYTORCH_OCL_DIST_SHM_PIECE_KIB", "256")
    monkeypatch.setenv("PYTORCH_OCL_DIST_SHM_TRACE", "1")
    assert (_dist_shm.default_sets(), _dist_shm.default_slot_bytes(), _dist_shm_trace.wanted()) == (1, 256 << 10, True)
    for name, fn in (("PYTORCH_OCL_DIST_SHM_SETS", _dist_shm.default_sets),
                     ("PYTORCH_OCL_DIST_SHM_PIECE_KIB", _dist_shm.default_slot_bytes),
                     ("PYTORCH_OCL_DIST_SHM_TRACE", _dist_shm_trace.wanted)):
        monkeypatch.setenv(name, "-1")
        with pytest.raises(ValueError, match=name):
            fn()


def test_abandoned_pieces_poison_the_transport():
    """An error outside the transport with pieces in flight (a failed device read) leaves the peers' state
    different from ours: later calls raise instead of pairing pieces wrongly."""
    import datetime
    import mmap

    import torch
    from pytorch_ocl import _dist_shm

    mm = mmap.mmap(-1, _dist_shm._size(2, 3, 1024))
    t = _dist_shm.Transport(mm, _dist_shm._header(2, 3), 0, 2, datetime.timedelta(seconds=1), {}, 1, 3, 1024)
    t.abandon(RuntimeError("nothing in flight"))
    assert t.error is None
    h = torch.arange(10, dtype=torch.float32)
    t.stage_in(h, dist.ReduceOp.SUM, t.begin(), 0)  # copied in, waits for no one yet
    t.abandon(RuntimeError("device read failed"))
    with pytest.raises(dist.DistBackendError, match="pieces in flight"):
        t.stage_in(h, dist.ReduceOp.SUM, t.begin(), 0)
    t.close()
    assert t._mm is None


def test_stage_threads():
    """The device reads and write backs on threads of their own (_dist_shm_stages.py) and on the worker."""
    _spawn(dist_shm_workers.stage_threads, 2)


def test_stage_threads_switch(monkeypatch):
    from pytorch_ocl import _dist_shm_stages

    for value, want in (("", True), ("1", True), ("0", False)):
        monkeypatch.setenv(_dist_shm_stages.ENV, value)
        assert _dist_shm_stages.wanted() is want
    monkeypatch.setenv(_dist_shm_stages.ENV, "2")
    with pytest.raises(ValueError, match=_dist_shm_stages.ENV):
        _dist_shm_stages.wanted()
