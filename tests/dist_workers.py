"""Per-rank bodies for tests/test_distributed.py, run in spawned processes (one per rank).

They live in their own module so that multiprocessing's spawn can import them by name in the children.
Every body checks its own results (assert / torch.testing.assert_close) and raises on a mismatch, which
the parent sees as a failed process. Every rank uses ocl:0 unless LOCAL_RANK selects another device:
PoCL exposes one device that all processes share.
"""
import contextlib
import datetime
import os
import time
import unittest.mock
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.testing import assert_close

import pytorch_ocl  # noqa: F401  (registers the device and the "ocl_gloo" c10d backend)

import dist_async_workers
import dist_lane_workers

# torch 2.13 renamed all_gather_into_tensor/reduce_scatter_tensor; we test the names CUDA code uses.
warnings.filterwarnings("ignore", category=FutureWarning, message=".*is deprecated")

DEV = "ocl:0"


def _env(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                      WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    # Each rank's convolutions at fp32 accuracy (TF32 on a matrix engine otherwise), so ranks equal
    # single-process training. Set here, in the spawned rank: the pytest process importing this module
    # may have torch.testing's frozen cuDNN flags.
    torch.backends.cudnn.allow_tf32 = False


def _transport_env(rank, transport):
    """The ocl all-reduce transport the group made next will use: "shm", "gloo", "peer" or "nccl" (the last two
    emulated on a CPU device; on GPUs the real ones, a GPU per rank, which this rank's DEV then names). "peer"
    needs the shared-memory segment (its control words)."""
    global DEV
    on_devices = transport in ("peer", "nccl")
    os.environ["PYTORCH_OCL_DIST_SHM"] = str(int(transport in ("shm", "peer")))
    os.environ["PYTORCH_OCL_DIST_PEER"] = "emulate" if transport == "peer" else "0"
    os.environ["PYTORCH_OCL_DIST_NCCL"] = "emulate" if transport == "nccl" else "0"
    if on_devices and torch.ocl.get_device_properties(0).type != "cpu":
        os.environ["PYTORCH_OCL_DIST_PEER" if transport == "peer" else "PYTORCH_OCL_DIST_NCCL"] = "1"
        DEV = f"ocl:{rank}"
        torch.ocl.set_device(rank)


def _full(value, n=4, dtype=torch.float32):
    return torch.full((n,), value, dtype=dtype, device=DEV)


# ---- every collective --------------------------------------------------------------------------------

def collectives(rank, world, port):
    _env(rank, world, port)
    # the gloo transport of ocl all-reduces, whose lanes are checked here (shared memory between ranks of
    # one host: dist_shm_workers.py)
    os.environ["PYTORCH_OCL_DIST_SHM"] = "0"
    # large all-reduces on 3 gloo lanes (rank 0's count: the others must follow it), see dist_lane_workers
    os.environ["PYTORCH_OCL_GLOO_LANES"] = "3" if rank == 0 else "1"
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))  # no backend: torch picks ours for ocl
    from pytorch_ocl._dist_pg import OclGlooProcessGroup

    assert isinstance(dist.group.WORLD, OclGlooProcessGroup), type(dist.group.WORLD)
    assert dist.group.WORLD.transport() == "gloo"
    R, W = rank, world
    ranks = torch.arange(1, W + 1, dtype=torch.float64)  # every rank's value r + 1

    # all_reduce: every op on float32, values r + 1
    expected = {
        dist.ReduceOp.SUM: ranks.sum(), dist.ReduceOp.PRODUCT: ranks.prod(), dist.ReduceOp.MIN: 1.0,
        dist.ReduceOp.MAX: float(W), dist.ReduceOp.AVG: ranks.mean(),
    }
    for op, value in expected.items():
        t = _full(R + 1.0)
        dist.all_reduce(t, op=op)
        assert_close(t.cpu(), torch.full((4,), float(value)), msg=f"all_reduce {op}")
    t = _full(R + 1.0)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    assert_close(t.cpu(), torch.full((4,), float(ranks.sum() * 0.5)))

    # every dtype gloo takes (int16 it refuses); bool reduces with MAX = logical or
    for dtype in (torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int32, torch.int64):
        t = _full(R + 1, dtype=dtype)
        dist.all_reduce(t)
        assert t.dtype == dtype and t.device.type == "ocl"
        assert_close(t.cpu(), torch.full((4,), W * (W + 1) // 2, dtype=dtype), msg=str(dtype))
    t = torch.tensor([R == 0, False], device=DEV)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.cpu().tolist() == [True, False]
    # bitwise ops on ints, and the coalesced form (one call for several tensors)
    t = _full(1 << R, dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.BOR)
    assert t.cpu().tolist() == [(1 << W) - 1] * 4
    pair = [_full(R + 1.0, n=2), _full(10.0 * (R + 1), n=3)]
    dist.all_reduce_coalesced(pair)
    assert [p.cpu().tolist() for p in pair] == [[float(ranks.sum())] * 2, [10.0 * float(ranks.sum())] * 3]
    # integer AVG truncates (gloo has no AVG: summed, then divided on the host)
    t = _full(R + 1, dtype=torch.int32)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.cpu().tolist() == [W * (W + 1) // 2 // W] * 4

    # non-contiguous: a transposed view, and a strided column slice whose neighbours must stay untouched
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) * (R + 1)
    t = base.to(DEV).t()
    assert not t.is_contiguous()
    dist.all_reduce(t)
    assert_close(t.cpu(), (base * ranks.sum().item() / (R + 1)).t())
    big = torch.zeros(5, 6, device=DEV)
    big[:, ::2] = R + 1.0
    view = big[:, ::2]
    dist.all_reduce(view)
    ref = torch.zeros(5, 6)
    ref[:, ::2] = ranks.sum().item()
    assert_close(big.cpu(), ref)

    # a cpu tensor goes to gloo directly
    c = torch.full((3,), R + 1.0)
    dist.all_reduce(c)
    assert_close(c, torch.full((3,), float(ranks.sum())))

    # broadcast from the last rank into a non-contiguous tensor
    b = torch.zeros(4, 6, device=DEV)[:, 1::2]
    if R == W - 1:
        b.copy_(torch.arange(12.0).reshape(4, 3))
    dist.broadcast(b, src=W - 1)
    assert_close(b.cpu(), torch.arange(12.0).reshape(4, 3))

    # all_gather (int64) and all_gather_into_tensor
    outs = [torch.zeros(3, dtype=torch.int64, device=DEV) for _ in range(W)]
    dist.all_gather(outs, torch.full((3,), 10 * R, dtype=torch.int64, device=DEV))
    assert [o.cpu().tolist() for o in outs] == [[10 * r] * 3 for r in range(W)]
    out = torch.zeros(W * 2, device=DEV)
    dist.all_gather_into_tensor(out, _full(float(R), n=2))
    assert out.cpu().tolist() == [float(r) for r in range(W) for _ in range(2)]

    # reduce_scatter (list) and reduce_scatter_tensor, SUM and AVG: rank r contributes (r+1) * i to chunk i
    o = torch.zeros(2, device=DEV)
    dist.reduce_scatter(o, [_full((R + 1.0) * i, n=2) for i in range(W)])
    assert_close(o.cpu(), torch.full((2,), float(ranks.sum() * R)))
    o = torch.zeros(2, device=DEV)
    src = torch.arange(W, dtype=torch.float32).repeat_interleave(2).to(DEV) * (R + 1)
    dist.reduce_scatter_tensor(o, src, op=dist.ReduceOp.AVG)
    assert_close(o.cpu(), torch.full((2,), float(ranks.mean() * R)))

    # all_to_all_single, equal splits, then uneven splits (rank r sends j + 1 elements to rank j)
    o = torch.zeros(W, device=DEV)
    dist.all_to_all_single(o, torch.arange(W, dtype=torch.float32, device=DEV) + 100 * R)
    assert o.cpu().tolist() == [100.0 * r + R for r in range(W)]
    in_splits = [j + 1 for j in range(W)]
    inp = torch.cat([torch.full((j + 1,), 100.0 * R + j) for j in range(W)]).to(DEV)
    o = torch.zeros(W * (R + 1), device=DEV)
    dist.all_to_all_single(o, inp, output_split_sizes=[R + 1] * W, input_split_sizes=in_splits)
    assert o.cpu().tolist() == [100.0 * r + R for r in range(W) for _ in range(R + 1)]

    # all_to_all of lists (gloo has only the flat form): rank r sends j + 1 elements to rank j, into
    # outputs of R + 1 elements, one of them a strided view
    outs = [torch.zeros(R + 1, device=DEV) for _ in range(W)]
    outs[0] = torch.zeros(R + 1, 2, device=DEV)[:, 1]
    dist.all_to_all(outs, [torch.full((j + 1,), 100.0 * R + j, device=DEV) for j in range(W)])
    assert [o.cpu().tolist() for o in outs] == [[100.0 * r + R] * (R + 1) for r in range(W)]

    # reduce to rank 0: the other ranks' inputs are left alone
    t = _full(R + 1.0)
    dist.reduce(t, dst=0)
    assert_close(t.cpu(), torch.full((4,), float(ranks.sum()) if R == 0 else R + 1.0))
    t = _full(R + 1.0)
    dist.reduce(t, dst=W - 1, op=dist.ReduceOp.AVG)
    if R == W - 1:
        assert_close(t.cpu(), torch.full((4,), float(ranks.mean())))

    # gather to rank 1 and scatter from rank 0
    g = [torch.zeros(2, device=DEV) for _ in range(W)] if R == 1 else None
    dist.gather(_full(float(R), n=2), g, dst=1)
    if R == 1:
        assert [x.cpu().tolist() for x in g] == [[float(r)] * 2 for r in range(W)]
    s = torch.zeros(2, device=DEV)
    dist.scatter(s, [_full(7.0 * i, n=2) for i in range(W)] if R == 0 else None, src=0)
    assert s.cpu().tolist() == [7.0 * R] * 2

    # chunked pipeline (_dist_async.StagedTensor) at a chunk of 10 float32 elements: odd tails, several
    # chunks, strided tensors, the host-side AVG / PREMUL_SUM steps per chunk, a chunked broadcast
    from pytorch_ocl import _dist_async

    saved, _dist_async.CHUNK_BYTES = _dist_async.CHUNK_BYTES, 40
    try:
        t = (torch.arange(103.0) * (R + 1)).to(DEV)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait()
        assert_close(t.cpu(), torch.arange(103.0) * float(ranks.sum()))
        base = torch.arange(13 * 9, dtype=torch.float32).reshape(13, 9)
        t = (base * (R + 1)).to(DEV).t()[1:]
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert_close(t.cpu(), (base * float(ranks.mean())).t()[1:])
        t = _full(R + 1.0, n=33)
        dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
        assert_close(t.cpu(), torch.full((33,), 2.0 * float(ranks.sum())))
        b = torch.zeros(8, 7, dtype=torch.int64, device=DEV)[:, ::2]
        if R == 0:
            b.copy_(torch.arange(32).reshape(8, 4))
        dist.broadcast(b, src=0)
        assert b.cpu().tolist() == torch.arange(32).reshape(8, 4).tolist()
        z, s0 = torch.zeros(0, device=DEV), torch.tensor(R + 1.0, device=DEV)  # zero-size, 0-dim
        dist.all_reduce(z)
        dist.all_reduce(s0)
        assert z.shape == (0,) and s0.item() == float(ranks.sum())
        # several collectives in flight at once complete in order, each with its own values
        ts = [_full(R + 1.0 + i, n=25) for i in range(4)]
        works = [dist.all_reduce(x, async_op=True) for x in ts]
        for i, (x, w) in enumerate(zip(ts, works)):
            w.wait()
            assert_close(x.cpu(), torch.full((25,), float(ranks.sum()) + W * i))
    finally:
        _dist_async.CHUNK_BYTES = saved

    # async_op: the Work waits and its future holds the result
    t = _full(R + 1.0)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    (fut_t,) = work.get_future().wait()
    assert_close(fut_t.cpu(), torch.full((4,), float(ranks.sum())))

    # point to point: blocking 0 -> 1, then a ring of isend/irecv posted before either is waited on
    if R == 0:
        dist.send(torch.arange(5.0, device=DEV), dst=1)
    elif R == 1:
        r = torch.zeros(5, device=DEV)
        dist.recv(r, src=0)
        assert r.cpu().tolist() == list(range(5))
    if R == 1:
        dist.send(_full(42.0, n=2), dst=0)
    elif R == 0:
        r = torch.zeros(2, device=DEV)
        assert dist.recv(r) == 1  # from any source: returns the sender
        assert r.cpu().tolist() == [42.0, 42.0]
    dist.barrier()  # else the ring's message from the last rank could be the one that any-source receive takes
    recv = torch.zeros(6, device=DEV)[::2]  # non-contiguous receive buffer
    works = [dist.isend(_full(R + 0.5, n=3), dst=(R + 1) % W), dist.irecv(recv, src=(R - 1) % W)]
    for w in works:
        w.wait()
    assert recv.cpu().tolist() == [(R - 1) % W + 0.5] * 3

    # functional collectives (what DTensor and traced code use) reach this group through C++
    import torch.distributed._functional_collectives as funcol

    r = funcol.all_reduce(_full(R + 1.0), "sum", dist.group.WORLD)
    assert_close(r.cpu(), torch.full((4,), float(ranks.sum())))
    # all_gather/reduce_scatter_tensor come back through the coalesced forms (DTensor.full_tensor, FSDP2)
    g = funcol.all_gather_tensor(_full(float(R), n=2), 0, dist.group.WORLD)
    assert g.cpu().tolist() == [float(r) for r in range(W) for _ in range(2)]
    out = torch.zeros(2 * W, device=DEV)  # the _out form: C++ calls all_gather_single (not forwarded by torch)
    torch.ops._c10d_functional.all_gather_into_tensor_out(_full(float(R), n=2), W, dist.group.WORLD.group_name, out=out)
    torch.ops._c10d_functional.wait_tensor(out)
    assert out.cpu().tolist() == [float(r) for r in range(W) for _ in range(2)]
    rs = funcol.reduce_scatter_tensor(torch.arange(2.0 * W, device=DEV) * (R + 1), "sum", 0, dist.group.WORLD)
    assert_close(rs.cpu(), torch.arange(2.0 * R, 2.0 * R + 2) * float(ranks.sum()))

    # object collectives (torch runs them on cpu tensors: this group serves cpu too)
    objs = [None] * W
    dist.all_gather_object(objs, {"rank": R})
    assert objs == [{"rank": r} for r in range(W)]

    # a subgroup of the first and last rank gets its own instance of this backend
    sub = dist.new_group([0, W - 1])
    t = _full(R + 1.0)
    if R in (0, W - 1):
        assert isinstance(sub, OclGlooProcessGroup), type(sub)
        dist.all_reduce(t, group=sub)
        assert_close(t.cpu(), torch.full((4,), 1.0 + W))

    dist_async_workers.async_and_strided(R, W)
    dist_lane_workers.lanes(R, W, sub)
    dist.barrier()
    dist.destroy_process_group()


# ---- DDP -------------------------------------------------------------------------------------------

def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 6, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 4 * 4, 5),
    )


def _data(global_batch):
    gen = torch.Generator().manual_seed(1234)
    x = torch.randn(5, global_batch, 3, 8, 8, generator=gen)
    y = torch.randint(0, 5, (5, global_batch), generator=gen)
    return x, y


def _train(model, x, y, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for step in range(x.shape[0]):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x[step].to(DEV)), y[step].to(DEV))
        loss.backward()
        opt.step()


def ddp(rank, world, port, transport, per_rank=2):
    """5 SGD steps with DDP on each rank's share equal single-process training on the global batch,
    once with DDP's built-in allreduce and once through a comm hook (which uses the Work's future)
    with gradient_as_bucket_view; all-reduces through `transport` ("shm": shared memory, "gloo", "peer": the
    device-side exchange of _dist_peer.py, or "nccl": the device-side staging of _dist_nccl.py; both emulated with
    host memory on a CPU device)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    from pytorch_ocl import _dist_async

    _env(rank, world, port)
    os.environ["PYTORCH_OCL_GLOO_LANES"] = "2"  # gloo: the buckets' chunks over 2 lanes (_dist_lanes.py)
    _transport_env(rank, transport)
    dist.init_process_group("cpu:gloo,ocl:ocl_gloo", timeout=datetime.timedelta(seconds=60))
    assert dist.group.WORLD.transport() == transport
    _dist_async.CHUNK_BYTES = 1024  # every bucket in several chunks
    x, y = _data(per_rank * world)
    mine = slice(rank * per_rank, (rank + 1) * per_rank)

    models = []
    for hook in (None, default_hooks.allreduce_hook):
        torch.manual_seed(rank)  # different initial weights per rank: DDP must broadcast rank 0's
        # the hooked run also has the gradients live in DDP's buckets (no copy into .grad)
        model = DDP(small_cnn().to(DEV), gradient_as_bucket_view=hook is not None)
        if hook is not None:
            model.register_comm_hook(None, hook)
        _train(model, x[:, mine], y[:, mine])
        models.append(model.module)

    torch.manual_seed(0)  # rank 0's initial weights
    reference = small_cnn().to(DEV)
    _train(reference, x, y)
    for model in models:
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert_close(p.detach().cpu(), q.detach().cpu(), rtol=1e-5, atol=1e-5, msg=name)
    dist.destroy_process_group()


def alone(rank, world, port):
    """A group of one reduces on the device: no host staging, no blocking read; the results are the inputs
    (times the factor for PREMUL_SUM), in order on the caller's stream; DDP then trains as a plain model."""
    import pytorch_ocl
    from torch.nn.parallel import DistributedDataParallel as DDP

    _env(rank, world, port)
    dist.init_process_group("cpu:gloo,ocl:ocl_gloo", timeout=datetime.timedelta(seconds=60))
    x = torch.arange(6, dtype=torch.float32, device=DEV).reshape(2, 3).t()  # not contiguous
    n = torch.arange(5, device=DEV)
    for op, want in ((dist.ReduceOp.SUM, x), (dist.ReduceOp.AVG, x), (dist.ReduceOp.MAX, x),
                     (dist._make_nccl_premul_sum(0.5), x * 0.5)):
        t = x.clone()
        t.add_(1).sub_(1)  # pending work on the stream that the reduction must follow
        torch.ocl.synchronize()
        before = dict(pytorch_ocl._C.host_counters())
        work = dist.all_reduce(t, op=op, async_op=True)
        after = dict(pytorch_ocl._C.host_counters())
        assert after["blocking_reads"] == before["blocking_reads"], op
        assert work._done.is_set(), op  # finished in the call: nothing went to the gloo worker thread
        work.wait()
        assert work.is_completed() and work.get_future().value()[0] is t
        assert_close(t.cpu(), want.cpu(), msg=str(op))
    m = n.clone()
    dist.all_reduce(m, op=dist.ReduceOp.AVG)  # integer average of one: unchanged
    assert torch.equal(m.cpu(), n.cpu())
    xs, ys = _data(2)
    torch.manual_seed(0)
    model = DDP(small_cnn().to(DEV))
    _train(model, xs, ys)
    torch.manual_seed(0)
    reference = small_cnn().to(DEV)
    _train(reference, xs, ys)
    for (name, p), q in zip(model.module.named_parameters(), reference.parameters()):
        assert torch.equal(p.detach().cpu(), q.detach().cpu()), name
    dist.destroy_process_group()


# ---- FSDP2 ------------------------------------------------------------------------------------------

def _mlp():
    # 5 output rows: the 2 ranks' shards are uneven (FSDP2 pads the last one)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 5, bias=False), nn.ReLU(), nn.Linear(5, 3))


def _train_mlp(model, opt, x, y):
    for step in range(x.shape[0]):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x[step].to(DEV)), y[step].to(DEV)).backward()
        opt.step()


@contextlib.contextmanager
def _cuda_present():
    """torch.cuda.is_available() answers True inside (unless it does anyway)."""
    if torch.cuda.is_available():
        yield
        return
    with unittest.mock.patch.object(torch.cuda, "is_available", return_value=True):
        yield


def fsdp(rank, world, port, ckpt_dir, per_rank=2):
    """fully_shard (per layer and the root) with Adam: 5 steps on each rank's share equal single-process
    training on the global batch; the sharded model and optimizer state round-trip through
    torch.distributed.checkpoint (a 6th step after loading still matches)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from torch.distributed.fsdp import fully_shard

    _env(rank, world, port)
    dist.init_process_group(timeout=datetime.timedelta(seconds=60))
    gen = torch.Generator().manual_seed(7)
    x, y = torch.randn(6, per_rank * world, 6, generator=gen), torch.randint(0, 3, (6, per_rank * world), generator=gen)
    mine = slice(rank * per_rank, (rank + 1) * per_rank)
    torch.manual_seed(0)
    model = _mlp().to(DEV)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    _train_mlp(model, opt, x[:5, mine], y[:5, mine])

    torch.manual_seed(0)
    reference = _mlp().to(DEV)
    ref_opt = torch.optim.Adam(reference.parameters(), lr=0.01)
    _train_mlp(reference, ref_opt, x[:5], y[:5])

    def check(msg):
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert p.to_local().device.type == "ocl"
            assert_close(p.full_tensor().cpu(), q.detach().cpu(), rtol=1e-5, atol=1e-5, msg=f"{msg}: {name}")

    check("after 5 steps")
    model_sd, optim_sd = get_state_dict(model, opt)
    # Saved with README's recipe (a FileSystemWriter without copy-ahead: each tensor read with .cpu()), as
    # where CUDA is present: there torch's default writer copies ahead only tensors of
    # _get_available_device_type(), which answers "cuda", and rejects ours ("Tensor must be on CPU").
    # Without CUDA, torch.cuda.is_available() answers True inside _cuda_present(): the one question about
    # CUDA that save and load ask (the writer's choice of loader; the recipe's writer chooses the same
    # either way).
    with _cuda_present():
        try:  # the default writer takes the CUDA branch here and fails: why the recipe (this assert fails
            # the day torch copies every non-cpu tensor, and README's limit can go)
            dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=ckpt_dir + "-default")
            default_failed = ""
        except dcp.api.CheckpointException as e:  # a BaseException carrying every rank's error
            default_failed = str(e)
        assert "Tensor must be on CPU" in default_failed or "not compiled with CUDA" in default_failed, default_failed
        writer = dcp.FileSystemWriter(ckpt_dir, per_thread_copy_ahead=0)
        dcp.save({"model": model_sd, "optim": optim_sd}, storage_writer=writer)
    # scramble the weights and the optimizer state, then load them back
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_()
    for state in opt.state.values():
        for value in state.values():
            value.zero_() if isinstance(value, torch.Tensor) and value.dim() else None
    model_sd, optim_sd = get_state_dict(model, opt)
    loaded = {"model": model_sd, "optim": optim_sd}
    with _cuda_present():
        dcp.load(loaded, checkpoint_id=ckpt_dir)
    set_state_dict(model, opt, model_state_dict=loaded["model"], optim_state_dict=loaded["optim"])
    check("after loading")
    _train_mlp(model, opt, x[5:, mine], y[5:, mine])  # Adam's moments came back too
    _train_mlp(reference, ref_opt, x[5:], y[5:])
    check("a step after loading")
    dist.destroy_process_group()


# ---- failures --------------------------------------------------------------------------------------

def dead_peer(rank, world, port, result_dir, mode, transport):
    """Rank `world - 1` is SIGKILLed (mode "kill") or never joins the collective (mode "hang");
    the others must raise within the 5 s timeout instead of waiting forever. The all-reduces go through
    `transport` ("shm": shared memory, "gloo", or "peer": _dist_peer.py, emulated on a CPU device).
    A surviving rank writes its outcome to result_dir/rank<N>; anything that ends it earlier (an exception before
    the timed all-reduce, a crash: faulthandler) goes to the same file, so the test shows why."""
    import faulthandler
    import traceback

    result = os.path.join(result_dir, f"rank{rank}")
    fault = open(result + ".fault", "w")
    faulthandler.enable(fault)
    try:
        _env(rank, world, port)
        _transport_env(rank, transport)
        t = _full(1.0)
        t.add_(0).cpu()  # device init and the first program builds happen before the 5 s clock starts
        # The 5 s timeout covers the rendezvous too: start it together, not after uneven imports on a
        # loaded machine.
        open(os.path.join(result_dir, f"ready{rank}"), "w").close()
        deadline = time.monotonic() + 60
        while not all(os.path.exists(os.path.join(result_dir, f"ready{r}")) for r in range(world)):
            assert time.monotonic() < deadline, "ranks did not start"
            time.sleep(0.05)
        dist.init_process_group(timeout=datetime.timedelta(seconds=5))
        from pytorch_ocl import _dist_nccl, _dist_peer

        assert dist.group.WORLD.transport() == transport, (dist.group.WORLD.transport(), _dist_peer.refusal,
                                                           _dist_nccl.refusal)
        dist.all_reduce(t)  # everyone is there once
        # ... and done with it: an all-reduce returns once enqueued, and a rank killed while its worker still
        # exchanges would fail the others' first all-reduce, not the timed one
        t.cpu()
        dist.barrier()
    except BaseException:
        with open(result, "w") as f:
            f.write(f"0\nbefore the timed all-reduce: {traceback.format_exc()}")
        os._exit(1)
    if rank == world - 1:
        if mode == "kill":
            os.kill(os.getpid(), 9)
        time.sleep(60)  # "hang": alive, connected, silent
        return
    start = time.monotonic()
    try:
        dist.all_reduce(t)
        outcome = "returned"
    except Exception as e:  # noqa: BLE001  (the test reads the message)
        outcome = f"{type(e).__name__}: {e}"
    with open(result, "w") as f:
        f.write(f"{time.monotonic() - start:.2f}\n{outcome}")
    os._exit(0)  # skip destroy_process_group, which would wait for the missing rank


# ---- init_process_group(device_id=...) ----------------------------------------------------------------

def bound_device(rank, world, port):
    _env(rank, world, port)
    device = torch.device("ocl", rank % torch.ocl.device_count())
    # Accepted as with cuda:N. torch keeps the binding on the ProcessGroup it made, which a Python
    # backend's group replaces, so bound_device_id reads None: only eager NCCL-style connection uses it.
    dist.init_process_group(device_id=device)
    t = torch.full((3,), rank + 1.0, device=device)
    dist.all_reduce(t)
    assert_close(t.cpu(), torch.full((3,), world * (world + 1) / 2))
    sub = dist.new_group(list(range(world)))  # no splitting: a group of its own
    dist.all_reduce(t, group=sub)
    assert_close(t.cpu(), torch.full((3,), world * world * (world + 1) / 2))
    dist.barrier()
    dist.destroy_process_group()


# ---- device selection from LOCAL_RANK --------------------------------------------------------------

def local_rank_device(rank, world, port):
    _env(rank, world, port)
    torch.ocl.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("ocl_gloo")  # the backend by name: serves cpu tensors too
    c = torch.ones(2)
    dist.all_reduce(c)
    assert c.tolist() == [float(world)] * 2
    t = torch.full((3,), rank + 1.0, device="ocl")
    assert t.device == torch.device("ocl", rank), t.device
    dist.all_reduce(t)
    assert t.device == torch.device("ocl", rank)
    assert_close(t.cpu(), torch.full((3,), world * (world + 1) / 2))
    dist.destroy_process_group()
