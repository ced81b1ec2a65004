"""Per-rank bodies for the device-side all-reduces of _dist_nccl.py and _dist_peer.py (tests/test_distributed.py),
emulated on a CPU OpenCL device (PYTORCH_OCL_DIST_NCCL / _PEER=emulate: host memory the device uses in place for
CUDA's; gloo for NCCL), which runs every step of the NVIDIA transports but NCCL's own call: staging copies, the
worker's event waits, the buffer pool and its reuse, the peers' buffer exchange and control words, the results in
stream order."""
import datetime
import os

import torch
import torch.distributed as dist
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401  (the ocl device and the "ocl_gloo" backend)

from dist_workers import DEV, _env


def emulated(rank, world, port, transport="nccl"):
    """`transport`: "nccl" (_dist_nccl.py, gloo in NCCL's place) or "peer" (_dist_peer.py: every rank's buffers
    in memfd shared memory that each rank's CPU device uses in place, the exchange and control words as on GPUs)."""
    _env(rank, world, port)
    os.environ["PYTORCH_OCL_DIST_NCCL"] = "emulate" if transport == "nccl" else "0"
    os.environ["PYTORCH_OCL_DIST_PEER"] = "emulate" if transport == "peer" else "0"
    os.environ["PYTORCH_OCL_DIST_NCCL_POLL_US"] = "20"  # the worker's polled waits (test_ddp_matches_single_process
    # [nccl] takes the default, waits in the driver)
    dist.init_process_group("cpu:gloo,ocl:ocl_gloo", timeout=datetime.timedelta(seconds=60))
    pg = dist.group.WORLD
    assert pg.transport() == transport, pg.transport()
    link = pg._device_link
    W = world
    gen = torch.Generator().manual_seed(1)
    # (values on each rank, op, what every rank gets): contiguous, transposed, sliced, broadcast-expanded
    # results written into strided outputs, every dtype the transport takes, and ones it leaves to gloo
    cases = []
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64,
                  torch.int8, torch.uint8, torch.bool):
        base = [torch.randint(0, 3, (5, 7), generator=gen).to(dtype) for _ in range(W)]
        cases.append((base, dist.ReduceOp.SUM if dtype != torch.bool else dist.ReduceOp.MAX, dtype))
    floats = [torch.randn(9, 6, generator=gen) for _ in range(W)]
    for op in (dist.ReduceOp.AVG, dist.ReduceOp.MIN, dist.ReduceOp.MAX, dist.ReduceOp.PRODUCT,
               dist._make_nccl_premul_sum(0.5)):
        cases.append((floats, op, torch.float32))

    def want(values, op):
        stack = torch.stack([v.double() for v in values])
        if op == dist.ReduceOp.MIN:
            return stack.min(0).values
        if op == dist.ReduceOp.MAX:
            return stack.max(0).values
        if op == dist.ReduceOp.PRODUCT:
            return stack.prod(0)
        if op == dist.ReduceOp.AVG:
            return stack.mean(0)
        if not isinstance(op, dist.ReduceOp.RedOpType) and op.op == dist.ReduceOp.PREMUL_SUM:
            return stack.sum(0) * 0.5
        return stack.sum(0)

    for values, op, dtype in cases:
        for layout in ("contiguous", "transposed", "sliced"):
            mine = values[rank]
            if layout == "transposed":
                t = mine.t().contiguous().to(DEV).t()  # not contiguous
            elif layout == "sliced":
                big = torch.zeros(mine.shape[0], mine.shape[1] * 2, dtype=dtype)
                big[:, ::2] = mine
                t = big.to(DEV)[:, ::2]
            else:
                t = mine.to(DEV)
            t.add_(1).sub_(1) if dtype != torch.bool else t.logical_not_().logical_not_()  # pending work first
            work = dist.all_reduce(t, op=op, async_op=True)
            work.wait()
            got = t.cpu()
            expect = want(values, op)
            tol = dict(rtol=1e-2, atol=1e-2) if dtype in (torch.float16, torch.bfloat16) else dict(rtol=1e-5, atol=1e-5)
            assert_close(got.double(), expect if dtype.is_floating_point else expect.to(dtype).double(), **tol,
                         msg=f"{dtype} {op} {layout}")
    # The tensor made by slow work still queued when all_reduce is called: the worker must wait for the copy
    # into the staging buffer (an all-reduce of stale bytes otherwise)
    a = torch.randn(768, 768, generator=torch.Generator().manual_seed(rank)).to(DEV)
    for _ in range(2):
        t = torch.full((1000,), float(rank + 1), device=DEV) + ((a @ a) @ a).sum() * 0
        dist.all_reduce(t)
        assert_close(t.cpu(), torch.full((1000,), float(sum(range(1, W + 1)))), msg="after slow work")
    # Several all-reduces in flight (DDP's buckets): each result right, and buffers reused once their copy
    # back is enqueued: no more buffers than were in flight at once
    sizes = [1000, 300000, 5, 1000, 300000, 70000]
    ts = [torch.full((n,), float(rank + 1 + i), device=DEV) for i, n in enumerate(sizes)]
    for rounds in range(3):
        works = [dist.all_reduce(t, async_op=True) for t in ts]
        for w in works:
            w.wait()
        for i, t in enumerate(ts):
            expect = sum(float(r + 1 + i) for r in range(W)) * W ** rounds
            assert_close(t.cpu(), torch.full_like(t.cpu(), expect), msg=f"in flight {i} round {rounds}")
    # (peer: buffer 0 is the setup's check)
    pool = link._all if transport == "nccl" else link._buffers
    assert len(pool) <= len(sizes) + (transport == "peer"), len(pool)
    # an empty tensor: nothing to stage (left to the host path, which returns it as it is)
    e = torch.empty(0, device=DEV)
    dist.all_reduce(e)
    assert e.numel() == 0
    if transport == "peer":
        # ranks that call different all-reduces raise (not mix data), as do the group's later ones
        for n in (10 + rank, 10):
            try:
                dist.all_reduce(torch.ones(n, device=DEV))
                raise AssertionError("an all_reduce after mismatched calls returned")
            except dist.DistBackendError as e:
                assert "different all_reduces" in str(e), e
    dist.destroy_process_group()
