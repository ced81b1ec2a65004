"""Per-rank bodies for tests/test_distributed_shm.py: all-reduces through shared memory (pytorch_ocl/_dist_shm.py).

Every rank can rebuild every rank's inputs (generators seeded by rank), so each checks its result against the
reduction done here on the CPU in the same order as the transport's (rank 0 op rank 1 op ...), bit for bit,
and, on 2 ranks, against gloo's result (a group made with PYTORCH_OCL_DIST_SHM=0), bit for bit.
"""
import datetime
import os

import torch
import torch.distributed as dist
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401  (registers the device and the "ocl_gloo" c10d backend)
from dist_workers import _env

DEV = "ocl:0"
R_ = dist.ReduceOp
_FLOATS = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_INTS = (torch.int32, torch.int64, torch.int8, torch.uint8)


def _input(rank, n, dtype, op):
    g = torch.Generator().manual_seed(1000 * rank + n)
    if dtype.is_floating_point:
        x = torch.randn(n, generator=g, dtype=torch.float64)
        if op == R_.PRODUCT:
            x = 0.5 + x.abs()  # no overflow to inf over the ranks
        return x.to(dtype)
    hi = 4 if op == R_.PRODUCT else 50
    return torch.randint(0 if dtype == torch.uint8 else -hi, hi, (n,), generator=g).to(dtype)


def _expected(world, n, dtype, op):
    """The reduction of every rank's input in rank order, in `dtype`: what the transport computes."""
    xs = [_input(r, n, dtype, op) for r in range(world)]
    if isinstance(op, tuple):  # ("premul", factor): each input times the factor first (on the host, in dtype)
        xs = [x * op[1] for x in xs]
        op = R_.SUM
    fold = {R_.SUM: torch.add, R_.AVG: torch.add, R_.PRODUCT: torch.mul, R_.MIN: torch.minimum,
            R_.MAX: torch.maximum, R_.BAND: torch.bitwise_and, R_.BOR: torch.bitwise_or,
            R_.BXOR: torch.bitwise_xor}[op]
    out = xs[0]
    for x in xs[1:]:
        out = fold(out, x)
    if op == R_.AVG:
        out = out / world if dtype.is_floating_point else torch.div(out, world, rounding_mode="trunc")
    return out


def _reduce_op(op):
    return dist._make_nccl_premul_sum(op[1]) if isinstance(op, tuple) else op


def _cases():
    for dtype in _FLOATS:
        for op in (R_.SUM, R_.AVG, R_.PRODUCT, R_.MIN, R_.MAX, ("premul", 0.5)):
            yield dtype, op
    for dtype in _INTS:
        for op in (R_.SUM, R_.AVG, R_.PRODUCT, R_.MIN, R_.MAX, R_.BAND, R_.BOR, R_.BXOR):
            yield dtype, op


def allreduce(rank, world, port):
    from pytorch_ocl import _dist_async, _dist_shm

    _env(rank, world, port)
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    pg = dist.group.WORLD
    assert pg.transport() == "shm", pg.transport()
    # the switch: one rank saying 0 gives gloo on every rank (agreed through the store)
    os.environ[_dist_shm.ENV] = "0" if rank == world - 1 else "1"
    gloo = dist.new_group(list(range(world)))
    os.environ.pop(_dist_shm.ENV)
    assert gloo.transport() == "gloo", gloo.transport()

    saved = _dist_async.CHUNK_BYTES
    try:
        # every dtype and op, odd sizes, one piece (4 MiB) or several (chunks of 40 bytes): the result is the
        # rank-order reduction bit for bit, and (2 ranks) gloo's
        for chunk in (saved, 40):
            _dist_async.CHUNK_BYTES = chunk
            for i, (dtype, op) in enumerate(_cases()):
                n = ((1, 7, 101, 1001) if chunk == saved else (1, 7, 13, 57))[i % 4]
                t = _input(rank, n, dtype, op).to(DEV)
                dist.all_reduce(t, op=_reduce_op(op))
                want = _expected(world, n, dtype, op)
                msg = f"{dtype} {op} n={n} chunk={chunk}"
                assert torch.equal(t.cpu(), want), msg
                if world == 2:
                    g = _input(rank, n, dtype, op).to(DEV)
                    dist.all_reduce(g, op=_reduce_op(op), group=gloo)
                    assert torch.equal(g.cpu(), t.cpu()), "gloo: " + msg
        done = pg._shm.pieces_done

        # non-contiguous (a transposed view, a strided slice with untouched neighbours), zero-size, 0-dim,
        # bool (MAX: logical or), over several pieces
        _dist_async.CHUNK_BYTES = 64
        base = torch.arange(13 * 9, dtype=torch.float32).reshape(13, 9)
        t = (base * (rank + 1)).to(DEV).t()[1:]
        dist.all_reduce(t)
        assert torch.equal(t.cpu(), (base * (world * (world + 1) // 2)).t()[1:])
        buf = torch.full((77, 2), -1.0, device=DEV)
        buf[:, 0] = rank + 1.0
        dist.all_reduce(buf[:, 0], op=R_.MAX)
        assert buf[:, 0].cpu().eq(world).all() and buf[:, 1].cpu().eq(-1).all()
        z, s = torch.zeros(0, device=DEV), torch.tensor(rank + 1.0, device=DEV)
        dist.all_reduce(z)
        dist.all_reduce(s)
        assert z.shape == (0,) and s.item() == world * (world + 1) / 2
        b = (torch.arange(33) % world == rank).to(DEV)
        dist.all_reduce(b, op=R_.MAX)
        assert b.cpu().all()
        _dist_async.CHUNK_BYTES = saved

        # many async collectives back to back, sizes and dtypes mixed, a gloo broadcast among them: each
        # gets its own values (pieces never mix: their descriptors are checked)
        works, checks = [], []
        for i in range(24):
            dtype = (torch.float32, torch.int64, torch.bfloat16)[i % 3]
            n = 1 + 997 * i
            t = _input(rank, n, dtype, R_.SUM).to(DEV)
            works.append(dist.all_reduce(t, async_op=True))
            checks.append((t, _expected(world, n, dtype, R_.SUM)))
            if i == 10:
                bc = torch.full((5,), float(rank), device=DEV)
                works.append(dist.broadcast(bc, src=world - 1, async_op=True))
                checks.append((bc, torch.full((5,), float(world - 1))))
        for w in works:
            w.wait()
        for i, (t, want) in enumerate(checks):
            assert torch.equal(t.cpu(), want), i
        # one tensor over two 4 MiB slots, and the coalesced form
        n = (5 << 20) // 4 + 3
        t = torch.full((n,), rank + 1.0, device=DEV)
        pair = [torch.full((3,), rank + 1.0, device=DEV), torch.full((5, 4), 2.0 * rank, device=DEV).t()]
        dist.all_reduce(t)
        dist.all_reduce_coalesced(pair)
        assert t.cpu().eq(world * (world + 1) / 2).all()
        assert_close(pair[0].cpu(), torch.full((3,), world * (world + 1) / 2))
        assert pair[1].cpu().eq(world * (world - 1)).all()
        assert pg._shm.pieces_done > done + 30, (done, pg._shm.pieces_done)
        assert all(c == 0 for c in pg._lanes.calls), pg._lanes.calls  # no gloo lane took an ocl all-reduce
    finally:
        _dist_async.CHUNK_BYTES = saved

    pipeline(rank, world)
    switches(rank, world, gloo)

    # a subgroup of the first and last rank gets its own segment
    sub = dist.new_group([0, world - 1])
    if rank in (0, world - 1):
        assert sub.transport() == "shm"
        t = torch.full((9,), rank + 1.0, device=DEV)
        dist.all_reduce(t, group=sub)
        assert t.cpu().eq(world + 1.0).all()

    # ranks that call different all-reduces raise (not mix data); the group's shared memory is then done
    bad = torch.ones(10 + rank, device=DEV)
    try:
        dist.all_reduce(bad)
        raise AssertionError("mismatched all_reduce returned")
    except dist.DistBackendError as e:
        assert "different all_reduces" in str(e), e
    dist.destroy_process_group()
    assert pg._shm._mm is None  # unmapped at destroy


def pipeline(rank, world):
    """Pieces in flight: many async all-reduces back to back, each cut into many odd-sized pieces (up to 3
    in flight over the slot sets, across calls, dtypes and ops): every result bit for bit."""
    from pytorch_ocl import _dist_async

    shm = dist.group.WORLD._shm
    assert (shm.sets, shm.depth) == (3, 3), (shm.sets, shm.depth)
    saved = _dist_async.CHUNK_BYTES
    _dist_async.CHUNK_BYTES = 4 * 257  # odd element counts per piece for every dtype
    try:
        works, checks = [], []
        dtypes = (torch.float32, torch.int64, torch.bfloat16, torch.float64, torch.int8, torch.float16)
        ops = (R_.SUM, R_.MAX, R_.PRODUCT, R_.AVG, ("premul", 0.5))
        for i in range(20):
            dtype, op = dtypes[i % len(dtypes)], ops[i % len(ops)]
            if op == ("premul", 0.5) and not dtype.is_floating_point:
                op = R_.MIN
            n = 1 + 131 * i * (i % 5 + 1)
            t = _input(rank, n, dtype, op).to(DEV)
            works.append(dist.all_reduce(t, op=_reduce_op(op), async_op=True))
            checks.append((t, _expected(world, n, dtype, op), f"{i}: {dtype} {op} n={n}"))
        for w in works:
            w.wait()
        for t, want, msg in checks:
            assert torch.equal(t.cpu(), want), msg
    finally:
        _dist_async.CHUNK_BYTES = saved


def switches(rank, world, gloo):
    """PYTORCH_OCL_DIST_SHM_SETS / _PIECE_KIB (rank 0's values for the group; fewer sets when /dev/shm has
    no room) and the stage trace (PYTORCH_OCL_DIST_SHM_TRACE, pytorch_ocl.distributed.shm_trace)."""
    from pytorch_ocl import _dist_shm, _dist_shm_trace
    from pytorch_ocl.distributed import shm_trace

    env = {_dist_shm.SETS_ENV: "1" if rank == 0 else "5", _dist_shm.PIECE_ENV: "1" if rank == 0 else "64",
           _dist_shm_trace.ENV: "1"}
    os.environ.update(env)
    one = dist.new_group(list(range(world)))  # one set of 1 KiB slots: one piece at a time
    os.environ[_dist_shm.SETS_ENV] = "3"
    fallocate = os.posix_fallocate
    if rank == 0:  # room for 2 sets only: the group gets 2
        def short(fd, offset, size):
            if size > _dist_shm._size(world, 2, 1024):
                raise OSError(28, "No space left on device")
            return fallocate(fd, offset, size)
        os.posix_fallocate = short
    try:
        two = dist.new_group(list(range(world)))
    finally:
        os.posix_fallocate = fallocate
        for k in env:
            os.environ.pop(k)
    assert (one._shm.sets, one._shm.depth, one._shm.slot_bytes) == (1, 1, 1024)
    assert (two._shm.sets, two._shm.depth, two._shm.slot_bytes) == (2, 2, 1024)
    n = 3001  # 12 pieces of at most 1 KiB
    for group in (one, two):
        t = _input(rank, n, torch.float32, R_.SUM).to(DEV)
        dist.all_reduce(t, group=group)
        assert torch.equal(t.cpu(), _expected(world, n, torch.float32, R_.SUM))
        trace = shm_trace(group)
        assert trace.on and len(trace.pieces) == 12, trace.summary()
        summary = trace.summary()
        for stage in ("read", "copy_in", "wait_arrive", "reduce", "wait_reduced", "copy_out", "write", "write_tail"):
            assert stage in summary, summary
        trace.reset(on=False)
        dist.all_reduce(t, group=group)
        assert not trace.pieces
    assert shm_trace(gloo) is None and not shm_trace().on


def _failing_third(stage, message, calls):
    """`stage` (a piece's read or write) that raises `message` on its third call, counting calls in `calls`."""
    def failing(dst, src):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError(message)
        stage(dst, src)
    return failing


def stage_threads(rank, world, port):
    """A thread per stage (_dist_shm_stages.py, PYTORCH_OCL_DIST_SHM_STAGE_THREADS) and the one-thread path:
    many back-to-back async all-reduces of odd sizes over several pieces each, bit for bit on both; the trace's
    per-thread line; a failed write back raises on the caller's wait (not a hang), the peers finish and the
    group goes on; a failed read with pieces in flight raises and poisons the group's transport; the stage
    threads are gone after destroy_process_group."""
    import threading

    from pytorch_ocl import _dist_async, _dist_shm_stages
    from pytorch_ocl.distributed import shm_trace

    _env(rank, world, port)
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    assert (dist.group.WORLD._shm.stages is not None) == _dist_shm_stages.wanted()  # the default: on
    groups = {}
    for value in ("0", "1"):
        os.environ[_dist_shm_stages.ENV] = value
        groups[value] = dist.new_group(list(range(world)))
    os.environ.pop(_dist_shm_stages.ENV)
    assert groups["0"]._shm.stages is None and groups["1"]._shm.stages is not None
    saved = _dist_async.CHUNK_BYTES
    _dist_async.CHUNK_BYTES = 4 * 263  # odd element counts per piece
    try:
        for value, group in groups.items():
            works, checks = [], []
            dtypes = (torch.float32, torch.int64, torch.bfloat16, torch.float16, torch.int8)
            ops = (R_.SUM, R_.MAX, R_.AVG, ("premul", 0.5), R_.PRODUCT)
            for i in range(25):
                dtype, op = dtypes[i % len(dtypes)], ops[i % len(ops)]
                if op == ("premul", 0.5) and not dtype.is_floating_point:
                    op = R_.MIN
                n = 3 + 173 * i * (i % 4 + 1)
                t = _input(rank, n, dtype, op).to(DEV)
                if i % 7 == 3:  # strided: reduced through a dense copy, written back into the view
                    t = torch.stack([t, torch.zeros_like(t)], 1)[:, 0]
                works.append(dist.all_reduce(t, op=_reduce_op(op), group=group, async_op=True))
                checks.append((t, _expected(world, n, dtype, op), f"threads={value} {i}: {dtype} {op} n={n}"))
            for w in works:
                w.wait()
            for t, want, msg in checks:
                assert torch.equal(t.cpu(), want), msg

        group = groups["1"]
        trace = shm_trace(group)
        trace.reset(on=True)
        n = 2001
        t = _input(rank, n, torch.float32, R_.SUM).to(DEV)
        dist.all_reduce(t, group=group)
        summary = trace.summary()
        for word in ("read", "wait_read", "copy_in", "reduce", "write", "wait_write", "write_tail",
                     "busy per thread", _dist_shm_stages.READER, _dist_shm_stages.WRITER):
            assert word in summary, summary
        trace.reset(on=False)

        # a failed write back (the third piece's, on rank 0): rank 0's wait raises, rank 1 gets its result
        write, calls = _dist_shm_stages._write, []
        if rank == 0:
            _dist_shm_stages._write = _failing_third(write, "injected write failure", calls)
        t = _input(rank, n, torch.float32, R_.SUM).to(DEV)
        work = dist.all_reduce(t, group=group, async_op=True)
        try:
            work.wait()
            assert rank != 0, "the failed write back was not raised"
            assert torch.equal(t.cpu(), _expected(world, n, torch.float32, R_.SUM))
        except dist.DistBackendError as e:
            assert rank == 0 and "injected write failure" in str(e), e
        finally:
            _dist_shm_stages._write = write
        assert len(calls) == (3 if rank == 0 else 0), calls  # the later pieces' writes were skipped
        t = _input(rank, n, torch.float32, R_.SUM).to(DEV)
        dist.all_reduce(t, group=group)  # the group goes on
        assert torch.equal(t.cpu(), _expected(world, n, torch.float32, R_.SUM))

        # a failed device read (the third piece's, on every rank: the same place, so no rank waits for another)
        # with two pieces in flight: the wait raises it, and the group's later all-reduces raise too
        read, calls = _dist_shm_stages._read, []
        _dist_shm_stages._read = _failing_third(read, "injected read failure", calls)
        try:
            work = dist.all_reduce(t, group=group, async_op=True)
            try:
                work.wait()
                raise AssertionError("the failed read was not raised")
            except RuntimeError as e:
                assert "injected read failure" in str(e), e
        finally:
            _dist_shm_stages._read = read
        try:
            dist.all_reduce(t, group=group)
            raise AssertionError("an abandoned transport went on")
        except dist.DistBackendError as e:
            assert "pieces in flight" in str(e), e
    finally:
        _dist_async.CHUNK_BYTES = saved
    dist.destroy_process_group()
    names = {_dist_shm_stages.READER, _dist_shm_stages.WRITER}
    assert not [th for th in threading.enumerate() if th.name in names], threading.enumerate()
