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
    many pieces, strided, zero-size, back-to-back async calls; the switch; mismatched calls raise."""
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
