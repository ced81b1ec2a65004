"""Stream-ordered waits and the remaining collectives on strided tensors, for tests/test_distributed.py.

Run inside dist_workers.collectives (a rank process with the default "ocl_gloo" group initialised); every
check raises on a mismatch, which the parent sees as a failed rank.
"""
import time

import torch
import torch.distributed as dist
from torch.testing import assert_close

DEV = "ocl:0"


def _full(value, n=4, dtype=torch.float32):
    return torch.full((n,), value, dtype=dtype, device=DEV)


_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
           torch.int64, torch.bool)


def _strided(values, dtype):
    """`values` (a 1-d cpu tensor) as a non-contiguous ocl tensor of `dtype`: every other column of a
    (n, 2) buffer whose other column holds a sentinel that must stay untouched."""
    buf = torch.full((values.numel(), 2), 1, dtype=dtype, device=DEV)
    view = buf[:, 0]
    view.copy_(values.to(dtype))
    assert not view.is_contiguous()
    return buf, view


def _sentinel_ok(buf):
    assert (buf[:, 1].cpu() == 1).all(), "a collective wrote outside its strided view"


def async_and_strided(R, W):
    """Async collectives consumed by a kernel right after wait() (no synchronize) give the right values;
    on 2 ranks wait() returns while kernels queued after the collective still run; reduce, gather,
    scatter, list all_to_all and list broadcast on strided inputs and outputs in every dtype gloo takes.
    Called by dist_workers.collectives (one process start for both) with the default group initialised."""
    total = W * (W + 1) // 2
    pg = dist.group.WORLD

    # wait() then a kernel on the current stream: ordered after the write back by the Work's event
    big = 1 << 16  # several 4 KiB chunks at the chunk size below
    from pytorch_ocl import _dist_async

    saved, _dist_async.CHUNK_BYTES = _dist_async.CHUNK_BYTES, 4096
    try:
        for make in (lambda: _full(R + 1.0, n=big), lambda: _full(R + 1.0, n=2 * big).view(big, 2).t()):
            t = make()
            dist.all_reduce(t, async_op=True).wait()
            y = t * 2 + 1
            assert_close(y.cpu(), torch.full(y.shape, 2.0 * total + 1))
    finally:
        _dist_async.CHUNK_BYTES = saved
    outs = [torch.zeros(3, 2, device=DEV)[:, 1] for _ in range(W)]
    checks = [
        (dist.all_gather(outs, _full(R + 1.0, n=3), async_op=True), lambda: torch.cat(outs) + 0,
         torch.arange(1.0, W + 1).repeat_interleave(3)),
        (dist.all_gather_into_tensor(o := torch.empty(3 * W, device=DEV), _full(R + 1.0, n=3), async_op=True),
         lambda: o * 1, torch.arange(1.0, W + 1).repeat_interleave(3)),
        (dist.reduce_scatter_tensor(rs := torch.empty(2, device=DEV), _full(R + 1.0, n=2 * W), async_op=True),
         lambda: rs + 0, torch.full((2,), float(total))),
        (dist.all_to_all_single(a2a := torch.empty(W, device=DEV), _full(R + 1.0, n=W), async_op=True),
         lambda: a2a + 0, torch.arange(1.0, W + 1)),
        (dist.broadcast(b := _full(R + 1.0), src=W - 1, async_op=True), lambda: b + 0, torch.full((4,), float(W))),
        (dist.reduce(red := _full(R + 1.0), dst=0, async_op=True), lambda: red + 0,
         torch.full((4,), float(total) if R == 0 else R + 1.0)),
    ]
    for work, consume, expected in checks:
        work.wait()
        assert_close(consume().cpu(), expected)
    # the future: its wait() and a then() callback order their consumers the same way
    t = _full(R + 1.0)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 3)
    assert_close(fut.wait().cpu(), torch.full((4,), 3.0 * total))

    if W == 2:
        # wait() does not wait for the device: kernels queued after the collective (and before wait) are
        # still running when it returns, and the result is right once they are done. A matmul chain of
        # about a second (calibrated here) against a 16-byte exchange on the host.
        # GPUs get bigger matrices: a 512^3 matmul takes microseconds there, and the chain must outlast
        # the host's exchange. The chain's length is calibrated by doubling to about 0.2 s, then scaled.
        n = 512 if "cpu" in str(torch.ocl.get_device_properties(DEV).type).lower() else 2048
        a = torch.randn(n, n, device=DEV)
        ((a @ a) * 1e-3).sum().item()  # built (and tuned) before it is timed
        k = 1
        while True:
            start = time.monotonic()
            b = a
            for _ in range(k):
                b = (b @ b) * 1e-3
            b.sum().item()
            elapsed = time.monotonic() - start
            if elapsed > 0.2 or k >= 4096:
                break
            k *= 2
        count = max(2, min(8192, int(k * 1.0 / max(elapsed, 1e-3))))
        dist.barrier()
        t = _full(R + 1.0)
        work = dist.all_reduce(t, async_op=True)
        for _ in range(count):
            a = (a @ a) * 1e-3
        work.wait()
        still_running = not torch.ocl.current_stream().query()
        assert_close((t + 0).cpu(), torch.full((4,), float(total)))
        assert still_running, f"wait() waited for the device ({count} matmuls had finished)"

    # reduce, gather, scatter, list all_to_all and list broadcast: strided inputs and outputs, every dtype
    for dtype in _DTYPES:
        msg = str(dtype)
        # reduce (MAX for bool, SUM otherwise) into rank W - 1
        buf, t = _strided(torch.full((3,), R + 1), dtype)
        op = dist.ReduceOp.MAX if dtype == torch.bool else dist.ReduceOp.SUM
        dist.reduce(t, dst=W - 1, op=op)
        want = (True if dtype == torch.bool else total) if R == W - 1 else R + 1
        assert_close(t.cpu(), torch.full((3,), want).to(dtype), msg=msg)
        _sentinel_ok(buf)
        # gather of rank r's [r, r + 1] (mod 2 for bool) into rank 0's strided outputs
        vals = lambda r: torch.tensor([r, r + 1]) % (2 if dtype == torch.bool else 1 << 30)  # noqa: E731
        _, src = _strided(vals(R), dtype)
        gathered = [_strided(torch.zeros(2), dtype) for _ in range(W)] if R == 0 else None
        dist.gather(src, [v for _, v in gathered] if R == 0 else None, dst=0)
        if R == 0:
            for r, (gbuf, v) in enumerate(gathered):
                assert_close(v.cpu(), vals(r).to(dtype), msg=msg)
                _sentinel_ok(gbuf)
        # scatter from the last rank: rank r gets vals(r)
        sbuf, dst = _strided(torch.zeros(2), dtype)
        dist.scatter(dst, [_strided(vals(r), dtype)[1] for r in range(W)] if R == W - 1 else None, src=W - 1)
        assert_close(dst.cpu(), vals(R).to(dtype), msg=msg)
        _sentinel_ok(sbuf)
        # list all_to_all: rank R sends vals(R + j) to rank j, strided on both sides
        outs = [_strided(torch.zeros(2), dtype) for _ in range(W)]
        dist.all_to_all([v for _, v in outs], [_strided(vals(R + j), dtype)[1] for j in range(W)])
        for r, (obuf, v) in enumerate(outs):
            assert_close(v.cpu(), vals(r + R).to(dtype), msg=msg)
            _sentinel_ok(obuf)
        # broadcast of a list of tensors (ProcessGroup.broadcast's list form, as C++ callers use it: one
        # tensor per local device, every one gets the root rank's first)
        pair = [_strided(vals(R), dtype), _strided(vals(R + 5), dtype)]
        opts = dist.BroadcastOptions()
        opts.rootRank = 1
        pg.broadcast([v for _, v in pair], opts).wait()
        assert_close(pair[0][1].cpu(), vals(1).to(dtype), msg=msg)
        assert_close(pair[1][1].cpu(), vals(1).to(dtype), msg=msg)
        for bbuf, _ in pair:
            _sentinel_ok(bbuf)
