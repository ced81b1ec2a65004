"""torch.distributed on ocl: all_reduce bandwidth and a DDP step, against gloo on CPU tensors, in one run.

    python3 benchmarks/distributed.py [--world 2] [--max-mib 256] [--out results/distributed.md]

Spawns `--world` processes on this machine (every rank on ocl:LOCAL_RANK modulo the device count; on PoCL
they share one device). Per message size (1 KiB .. --max-mib MiB, x4 steps): median time of an
all_reduce(SUM) of an ocl tensor through the "ocl_gloo" backend and of a CPU tensor through plain gloo,
bus bandwidth 2 (n - 1) / n * bytes / time, and their ratio (cpu time / ocl time: the cost of staging
through host memory). Then a small CNN's training step, single device against DDP on every rank with a
share of the same global batch. Writes a markdown table.
"""
import argparse
import datetime
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def timed(fn, iters, device):
    fn()
    times = []
    for _ in range(iters):
        if device.startswith("ocl"):
            torch.ocl.synchronize()
        t = time.perf_counter()
        fn()
        if device.startswith("ocl"):
            torch.ocl.synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def step_fn(model, opt, x, y):
    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return step


def worker(rank, world, port, sizes, iters, batch, queue):
    import pytorch_ocl  # noqa: F401  (the "ocl_gloo" backend)

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    dist.init_process_group(timeout=datetime.timedelta(seconds=120))  # ocl tensors: ocl_gloo
    cpu_group = dist.new_group(backend="gloo")
    dev = f"ocl:{rank % torch.ocl.device_count()}"
    torch.ocl.set_device(dev)
    rows = []
    for nbytes in sizes:
        a, b = torch.ones(nbytes // 4, device=dev), torch.ones(nbytes // 4)  # allocated once, outside the timer
        t_ocl = timed(lambda: dist.all_reduce(a), iters, dev)
        t_cpu = timed(lambda: dist.all_reduce(b, group=cpu_group), iters, "cpu")
        rows.append((nbytes, t_ocl, t_cpu))
    # DDP: each rank trains on its share of the global batch
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(batch, 3, 32, 32, generator=g), torch.randint(0, 10, (batch,), generator=g)
    share = batch // world
    model = nn.parallel.DistributedDataParallel(net().to(dev))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xs, ys = x[rank * share:(rank + 1) * share].to(dev), y[rank * share:(rank + 1) * share].to(dev)
    t_ddp = timed(step_fn(model, opt, xs, ys), iters, dev)
    dist.barrier()
    if rank == 0:
        queue.put((rows, t_ddp))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--max-mib", type=float, default=256)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--out", default="results/distributed.md")
    args = p.parse_args()
    sizes, s = [], 1024
    while s <= args.max_mib * 2**20:
        sizes.append(s)
        s *= 4
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    mp.spawn(worker, args=(args.world, free_port(), sizes, args.iters, args.batch, queue), nprocs=args.world)
    rows, t_ddp = queue.get()
    # single device, the whole global batch, same net
    import pytorch_ocl  # noqa: F401

    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(args.batch, 3, 32, 32, generator=g), torch.randint(0, 10, (args.batch,), generator=g)
    model = net().to("ocl:0")
    t_single = timed(step_fn(model, torch.optim.SGD(model.parameters(), lr=0.01), x.to("ocl:0"), y.to("ocl:0")),
                     args.iters, "ocl:0")
    w = args.world
    lines = [f"# all_reduce (SUM, float32), {w} processes: ocl tensors through ocl_gloo vs CPU tensors through gloo",
             "", "| size | ocl ms | ocl bus GB/s | cpu ms | cpu bus GB/s | cpu/ocl |", "|---|---|---|---|---|---|"]
    for nbytes, t_ocl, t_cpu in rows:
        bus = 2 * (w - 1) / w * nbytes / 1e9
        size = f"{nbytes // 1024} KiB" if nbytes < 2**20 else f"{nbytes // 2**20} MiB"
        lines.append(f"| {size} | {t_ocl * 1e3:.3f} | {bus / t_ocl:.3f} | {t_cpu * 1e3:.3f} | {bus / t_cpu:.3f} | "
                     f"{t_cpu / t_ocl:.2f} |")
    lines += ["", f"Training step of a small CNN, global batch {args.batch}: single device {t_single * 1e3:.1f} ms, "
              f"DDP on {w} processes ({args.batch // w} each) {t_ddp * 1e3:.1f} ms."]
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
