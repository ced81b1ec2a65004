"""All-reduces over several gloo lanes (pytorch_ocl/_dist_lanes.py), for tests/test_distributed.py.

Run inside dist_workers.collectives, whose ranks set PYTORCH_OCL_GLOO_LANES to 3 on rank 0 and 1 on the
others before init_process_group: every rank must take rank 0's count (ranks on different lane counts would
hang). A chunk of 40 bytes (_dist_async.CHUNK_BYTES) makes tensors of a few dozen elements span several
chunks, so they take the lanes; the rest of dist_workers.collectives runs its chunked checks on them too.
"""
import torch
import torch.distributed as dist
from torch.testing import assert_close

DEV = "ocl:0"
LANES = 3  # rank 0's PYTORCH_OCL_GLOO_LANES in dist_workers.collectives

_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32,
           torch.int64)


def _strided(values):
    """`values` as every other element of an ocl buffer whose other elements hold -1 (checked after)."""
    buf = torch.full((values.numel(), 2), -1 if values.dtype != torch.uint8 else 255, dtype=values.dtype,
                     device=DEV)
    view = buf[:, 0]
    view.copy_(values)
    return buf, view


def lanes(R, W, sub):
    from pytorch_ocl import _dist_async

    pg = dist.group.WORLD
    saved, _dist_async.CHUNK_BYTES = _dist_async.CHUNK_BYTES, 40
    try:
        # each piece (_dist_lanes.Lanes.pieces: 16 chunks of 10 elements -> 18 pieces of 8-9) is the same
        # gloo all-reduce as that piece alone (one chunk, no lanes), bit for bit; on 2 ranks the whole also
        # equals one lane's result (its 10-element chunks alone): a + b == b + a whatever the ring's order
        x = torch.randn(157, generator=torch.Generator().manual_seed(R))
        whole = x.to(DEV)
        dist.all_reduce(whole)
        pieces = pg._lanes.pieces(157, 4, 40)
        assert len(pieces) == 18 and pieces[0] == (0, 8) and pieces[-1][1] == 157, pieces
        one_lane = [(a, min(a + 10, 157)) for a in range(0, 157, 10)]
        for ranges in [pieces] + ([one_lane] if W == 2 else []):
            alone = [x[a:b].to(DEV) for a, b in ranges]
            for p in alone:
                dist.all_reduce(p)
            assert torch.equal(whole.cpu(), torch.cat([p.cpu() for p in alone]))
        every = torch.stack([torch.randn(157, generator=torch.Generator().manual_seed(r)) for r in range(W)])
        assert_close(whole.cpu(), every.sum(0))
        assert pg._lanes.count() == LANES, pg._lanes.count()  # rank 0's count, on every rank
        assert all(c > 0 for c in pg._lanes.calls), pg._lanes.calls

        # SUM in every dtype, on strided tensors (their neighbours untouched), exact
        n = 61
        base = torch.arange(n) % 7
        for dtype in _DTYPES:
            buf, t = _strided((base + R).to(dtype))
            dist.all_reduce(t)
            assert_close(t.cpu(), (W * base + W * (W - 1) // 2).to(dtype), msg=str(dtype))
            assert (buf[:, 1].cpu() == buf[0, 1].item()).all() and buf[0, 1].item() != 0, str(dtype)

        # every other op, values r + 1 + i % 3
        vals = [1.0 + r + base % 3 for r in range(W)]
        stack = torch.stack(vals).double()
        floats = {
            dist.ReduceOp.MIN: stack.min(0).values, dist.ReduceOp.MAX: stack.max(0).values,
            dist.ReduceOp.PRODUCT: stack.prod(0), dist.ReduceOp.AVG: stack.mean(0),
        }
        for op, want in floats.items():
            t = vals[R].float().to(DEV)
            dist.all_reduce(t, op=op)
            assert_close(t.cpu(), want.float(), msg=str(op))
        t = vals[R].float().to(DEV)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
        assert_close(t.cpu(), (stack.sum(0) * 0.5).float())
        t = (base + R).to(torch.int32).to(DEV)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)  # integer AVG truncates
        assert t.cpu().tolist() == ((W * base + W * (W - 1) // 2) // W).tolist()
        bits = (1 << (torch.arange(n) % 5 + R)).to(torch.int64)
        every_bits = [(1 << (torch.arange(n) % 5 + r)) for r in range(W)]
        for op, fold in ((dist.ReduceOp.BOR, torch.bitwise_or), (dist.ReduceOp.BAND, torch.bitwise_and),
                         (dist.ReduceOp.BXOR, torch.bitwise_xor)):
            t = bits.to(DEV)
            dist.all_reduce(t, op=op)
            want = every_bits[0]
            for b in every_bits[1:]:
                want = fold(want, b)
            assert t.cpu().tolist() == want.tolist(), str(op)
        t = (torch.arange(n) % W == R).to(DEV)  # bool MAX: logical or over the ranks
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert t.cpu().all()

        # the coalesced form: each tensor its own all-reduce over the lanes
        pair = [torch.full((37,), R + 1.0, device=DEV), torch.full((5, 9), 2.0 * (R + 1), device=DEV).t()]
        dist.all_reduce_coalesced(pair)
        assert_close(pair[0].cpu(), torch.full((37,), W * (W + 1) / 2))
        assert_close(pair[1].cpu(), torch.full((9, 5), float(W * (W + 1))))

        # a subgroup makes its own lanes, on its ranks only
        if R in (0, W - 1):
            t = torch.full((50,), R + 1.0, device=DEV)
            dist.all_reduce(t, group=sub)
            assert_close(t.cpu(), torch.full((50,), W + 1.0))
            assert sub._lanes.count() == LANES and all(c > 0 for c in sub._lanes.calls), sub._lanes.calls
    finally:
        _dist_async.CHUNK_BYTES = saved
