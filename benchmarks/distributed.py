"""torch.distributed on ocl: all_reduce bandwidth and a DDP step, against gloo on CPU tensors, in one run.

    python3 benchmarks/distributed.py [--world 2] [--max-mib 256] [--iters 5] [--ref nccl] [--out results/distributed.md]

Spawns `--world` processes on this machine (every rank on ocl:LOCAL_RANK modulo the device count; on PoCL
they share one device). Per message size (1 KiB .. --max-mib MiB, x4 steps): median time of an
all_reduce(SUM) of an ocl float32 tensor through the "ocl_gloo" backend and of a CPU tensor of the same
size through plain gloo, bus bandwidth 2 (n - 1) / n * bytes / time, and their ratio (cpu time / ocl time:
what staging through host memory costs; the issue's target is >= 0.8 at 64 MiB). Then a small CNN's
training step: single device on the global batch against DDP on every rank with a share of it, DDP once
with the asynchronous collectives (all-reduce of a bucket overlapping the rest of the backward pass) and
once with every collective waited for where it is issued (pytorch_ocl._dist_async.SYNCHRONOUS).
All-reduces of ocl tensors go through shared memory between the ranks (pytorch_ocl/_dist_shm.py; every rank
here is on this machine) unless --transport gloo (PYTORCH_OCL_DIST_SHM=0): the table then has the other
transport's columns too ("ocl gloo"), from a second group of the same ranks, and the preamble names the transport
of the "ocl" columns and of the DDP step. Through gloo, ocl tensors over 4 MiB are all-reduced over
PYTORCH_OCL_GLOO_LANES parallel gloo groups (the default depends on the CPU count; 1 is plain gloo's one
connection per peer, as the cpu tensors get): set it to compare.
With --ref nccl (a machine with --world CUDA GPUs) the same all_reduce sizes also run on CUDA tensors through
NCCL, in a child process that does not load pytorch_ocl (a column nccl/ocl: NCCL's time over ocl_gloo's).
--bf16-compress registers torch's bf16_compress_hook on the DDP model (buckets all-reduced as bfloat16).
--shm-trace prints, per size from 1 MiB, the stages of one more shared-memory all_reduce on rank 0 (where the
time goes: device read wait, copy in, waits for the peers, reduce, copy out, write back; _dist_shm_trace.py).
Writes a markdown table, and a plot of cpu/ocl per size when matplotlib is installed.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def net():
    # ~3 M parameters (12 MB of gradients: a dozen 1 MiB DDP buckets) for little compute, so that the
    # all-reduce of the last layers' buckets has the rest of the backward pass to overlap with
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, stride=2, padding=1),
                         nn.ReLU(), nn.Flatten(), nn.Linear(32 * 8 * 8, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                         nn.ReLU(), nn.Linear(1024, 10))


def step_fn(model, opt, x, y):
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def batch(size, dev, part=slice(None)):
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(size, 3, 32, 32, generator=g), torch.randint(0, 10, (size,), generator=g)
    return x[part].to(dev), y[part].to(dev)


def worker(rank, world, port, sizes, iters, global_batch, transport, queue, shm_trace=False, bf16_compress=False):
    common.import_backend()
    import pytorch_ocl.distributed
    from pytorch_ocl import _dist_async

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank), PYTORCH_OCL_DIST_SHM=str(int(transport == "shm")))
    dev = f"ocl:{rank % torch.ocl.device_count()}"
    torch.ocl.set_device(dev)  # before the group: its NCCL transport runs on the current device (_dist_nccl.py)
    dist.init_process_group(timeout=datetime.timedelta(seconds=300))  # ocl tensors: ocl_gloo
    cpu_group = dist.new_group(backend="gloo")
    used = dist.group.WORLD.transport()  # "nccl" or "shm" where possible, else "gloo"
    other = None
    if used != "gloo":  # the same all-reduces through gloo, from a group of the same ranks
        os.environ["PYTORCH_OCL_DIST_SHM"] = os.environ["PYTORCH_OCL_DIST_NCCL"] = "0"
        other = dist.new_group()
        assert other.transport() == "gloo"
    rows, traces = [], []
    progress = sizes
    if rank == 0:
        from tqdm import tqdm

        progress = tqdm(sizes, desc="all_reduce", unit="size", file=sys.stderr)
    for nbytes in progress:
        a, b = torch.ones(nbytes // 4, device=dev), torch.ones(nbytes // 4)  # allocated once, outside the timer
        t_ocl = common.median_time(lambda: dist.all_reduce(a), dev, iters)
        t_other = common.median_time(lambda: dist.all_reduce(a, group=other), dev, iters) if other else None
        t_cpu = common.median_time(lambda: dist.all_reduce(b, group=cpu_group), "cpu", iters)
        rows.append((nbytes, t_ocl, t_cpu, t_other))
        trace = pytorch_ocl.distributed.shm_trace() if shm_trace and used == "shm" else None
        if trace is not None and nbytes >= 1 << 20:  # one more all-reduce, its stages recorded (rank 0's)
            trace.reset(on=True)
            start = time.perf_counter()
            dist.all_reduce(a)
            torch.ocl.synchronize()
            wall = time.perf_counter() - start
            size = f"{nbytes // 1024} KiB" if nbytes < 2**20 else f"{nbytes // 2**20} MiB"
            traces.append(f"{size}: one all_reduce {wall * 1e3:.2f} ms (rank {rank}), "
                          f"{dist.group.WORLD._shm.sets} slot sets of {dist.group.WORLD._shm.slot_bytes >> 10} KiB\n"
                          + trace.summary())
            trace.reset(on=False)
        del a, b
    # DDP: each rank trains on its share of the global batch
    share = global_batch // world
    x, y = batch(global_batch, dev, slice(rank * share, (rank + 1) * share))
    ddp = {}
    for mode in ("async", "sync"):
        _dist_async.SYNCHRONOUS = mode == "sync"
        model = nn.parallel.DistributedDataParallel(net().to(dev), bucket_cap_mb=1)
        if bf16_compress:  # the buckets all-reduced as bfloat16 (torch's hook, through pytorch_ocl's name for it)
            model.register_comm_hook(None, pytorch_ocl.distributed.ocl_bf16_compress_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        ddp[mode] = common.median_time(step_fn(model, opt, x, y), dev, iters, warmup=2)
    _dist_async.SYNCHRONOUS = False
    dist.barrier()
    if rank == 0:  # gloo lanes of the large all-reduces (PYTORCH_OCL_GLOO_LANES; none made below 2 chunks)
        lanes = max(1, len((other or dist.group.WORLD)._lanes.calls))
        queue.put((rows, ddp, common.device_description(dev), lanes, used, traces))
    dist.destroy_process_group()


def nccl_worker(rank, world, port, sizes, iters, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=300))
    times = []
    for nbytes in sizes:
        a = torch.ones(nbytes // 4, device="cuda")
        times.append(common.median_time(lambda: dist.all_reduce(a), "cuda", iters))
        del a
    if rank == 0:
        queue.put(times)
    dist.barrier()
    dist.destroy_process_group()


def nccl_times(args, sizes):
    """all_reduce times through NCCL at `sizes`, from a child process that does not load pytorch_ocl."""
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    cmd = [sys.executable, os.path.abspath(__file__), "--child-nccl", "--world", str(args.world), "--max-mib",
           str(args.max_mib), "--iters", str(args.iters)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        print(f"nccl reference failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--max-mib", type=float, default=256)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--batch", type=int, default=64, help="global batch of the DDP step")
    p.add_argument("--out", default="results/distributed.md")
    p.add_argument("--ref", choices=["nccl"], help="also all_reduce CUDA tensors through NCCL (child process)")
    p.add_argument("--transport", choices=["shm", "gloo"], default="shm",
                   help="of the ocl all-reduces and the DDP step (shm: shared memory where possible, and gloo too)")
    p.add_argument("--shm-trace", action="store_true",
                   help="per size from 1 MiB, the shared-memory stages of one more all_reduce (rank 0's trace)")
    p.add_argument("--bf16-compress", action="store_true",
                   help="the DDP step with torch's bf16_compress_hook (gradient buckets all-reduced as bfloat16)")
    p.add_argument("--child-nccl", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    sizes, s = [], 1024
    while s <= args.max_mib * 2**20:
        sizes.append(s)
        s *= 4
    if args.child_nccl:
        queue = mp.get_context("spawn").Queue()
        mp.spawn(nccl_worker, args=(args.world, free_port(), sizes, args.iters, queue), nprocs=args.world)
        print(json.dumps(queue.get()))
        return
    nccl = nccl_times(args, sizes) if args.ref == "nccl" else None
    queue = mp.get_context("spawn").Queue()
    mp.spawn(worker, args=(args.world, free_port(), sizes, args.iters, args.batch, args.transport, queue,
                           args.shm_trace, args.bf16_compress), nprocs=args.world)
    rows, ddp, device, lanes, used, traces = queue.get()

    common.import_backend()
    from pytorch_ocl import _dist_async

    x, y = batch(args.batch, "ocl:0")  # single device, the whole global batch, same net
    model = net().to("ocl:0")
    t_single = common.median_time(step_fn(model, torch.optim.SGD(model.parameters(), lr=0.01), x, y), "ocl:0",
                                  args.iters, warmup=2)

    w = args.world
    header = ["size", "ocl ms", "ocl bus GB/s", "cpu ms", "cpu bus GB/s", "cpu/ocl"]
    other = rows[0][3] is not None
    if other:
        header += ["ocl gloo ms", "ocl gloo bus GB/s", "gloo/ocl"]
    if nccl:
        header += ["nccl ms", "nccl bus GB/s", "nccl/ocl"]
    table, labels, ratios = [], [], []
    for i, (nbytes, t_ocl, t_cpu, t_other) in enumerate(rows):
        bus = 2 * (w - 1) / w * nbytes / 1e9
        size = f"{nbytes // 1024} KiB" if nbytes < 2**20 else f"{nbytes // 2**20} MiB"
        table.append([size, t_ocl * 1e3, bus / t_ocl, t_cpu * 1e3, bus / t_cpu, t_cpu / t_ocl])
        if other:
            table[-1] += [t_other * 1e3, bus / t_other, t_other / t_ocl]
        if nccl:
            table[-1] += [nccl[i] * 1e3, bus / nccl[i], nccl[i] / t_ocl]
        labels.append(size)
        ratios.append(t_cpu / t_ocl)
    print(common.markdown_table(header, table))
    per = args.batch // w
    notes = [f"Training step of a small CNN (~{sum(q.numel() for q in model.parameters()) / 1e6:.2f} M parameters, "
             f"DDP buckets of 1 MiB), global batch {args.batch}: single device {t_single * 1e3:.1f} ms; DDP on {w} "
             f"processes ({per} each, all-reduces through {used}"
             f"{', bf16_compress_hook' if args.bf16_compress else ''}) {ddp['async'] * 1e3:.1f} ms with asynchronous "
             "collectives, "
             f"{ddp['sync'] * 1e3:.1f} ms with each collective waited for where it is issued.",
             "cpu/ocl: gloo's time on CPU tensors over ocl_gloo's on ocl tensors of the same size (1 = staging "
             "through host memory costs nothing)."]
    if other:
        notes.append("gloo/ocl: the ocl all-reduce's time through gloo over its time through shared memory.")
    for n in notes:
        print(n)
    for t in traces:
        print(t)
    preamble = [f"{w} processes on one machine, each on {device}; median of {args.iters}; "
                f"ocl columns: all-reduces through {used} (PYTORCH_OCL_DIST_SHM"
                + (", ocl gloo: a group with it 0" if other else "") + "); "
                f"{lanes} gloo lane(s) for gloo's all_reduces over {_dist_async.CHUNK_BYTES >> 20} MiB "
                f"(PYTORCH_OCL_GLOO_LANES), cpu tensors on one",
                f"torch {torch.__version__}"]
    md = common.write_markdown(args.out, f"all_reduce (SUM, float32): ocl tensors through ocl_gloo vs CPU tensors "
                               f"through gloo", preamble, header, table, notes)
    png = common.plot_ratios(os.path.splitext(args.out)[0] + ".png", labels, ratios,
                             "all_reduce: gloo on cpu tensors / ocl_gloo on ocl tensors", "time ratio (cpu/ocl)")
    print(f"wrote {md}" + (f" and {png}" if png else ""))


if __name__ == "__main__":
    main()
