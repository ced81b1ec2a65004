"""Data-parallel training of a small CNN, resnet50 or a small GPT-2 on ocl devices with torch.distributed,
written as for CUDA.

    torchrun --standalone --nproc-per-node 2 examples/ddp_train.py [--steps 5] [--batch 8]
    python examples/ddp_train.py              # one process, world size 1
    torchrun --standalone --nproc-per-node 2 examples/ddp_train.py --model resnet50 --batch 64 --image-size 224 \
        --steps 13 --warmup 3                 # scaling: images/s over the steps after the warm-up
    torchrun --standalone --nproc-per-node 2 examples/ddp_train.py --model gpt2 --batch 8 --seq-len 256 \
        --n-layer 6 --n-embd 512 --n-head 8 --steps 13 --warmup 3   # transformers' GPT2LMHeadModel, tokens/s

--model gpt2 builds transformers' GPT2LMHeadModel from a GPT2Config (random weights, nothing downloaded;
small by default: 2 layers, 128 wide, 4 heads, vocabulary 1000) and trains it on random tokens as a
language model (labels = inputs).

--bf16-compress registers torch's bf16_compress_hook on the DDP model (on ocl as
pytorch_ocl.distributed.ocl_bf16_compress_hook: the same function under a name DDP does not refuse without
NCCL): each gradient bucket is all-reduced as bfloat16 (half the bytes through the host), then cast back.

--comm waited makes every collective wait where it is issued (pytorch_ocl's collectives are otherwise
asynchronous, so DDP's bucket all-reduces overlap the rest of the backward pass) and --comm none trains under
DDP's no_sync() (no gradient all-reduce: ranks then drift apart, so the weight check is skipped). Step times
of the three modes show how much of the communication the backward pass hides.

`dist.init_process_group()` gets no backend: `ocl` is the accelerator, so torch picks the one pytorch_ocl
registered for it ("ocl_gloo": gloo on host copies of the ocl tensors; see pytorch_ocl/distributed.py).
Each rank trains on its own random batch; DDP averages the gradients, so every rank ends with the same
weights, which the script checks at the end ("check OK ..."; exit status 1 otherwise).
"""
import argparse
import contextlib
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def small_cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
    )


def print_trace(rank, steps, first):
    """--trace: per timed step, what its gradient all-reduces on the devices (peer memory or NCCL) waited for
    (pytorch_ocl.distributed.device_trace), in ms from the step's start."""
    from pytorch_ocl.distributed import device_trace

    trace = device_trace()
    if trace is None:
        print(f"trace rank {rank}: the group's all-reduces do not run on the devices (or tracing was off)", flush=True)
        return
    for i, (t0, t_bwd, t1) in enumerate(steps):
        ex = [e for e in trace if t0 <= e["staged"] < t1]
        if not ex:
            continue

        def ms(t, t0=t0):
            return (t - t0) * 1e3
        waits = sum(e["copied"] - e["start"] for e in ex) * 1e3
        exchange = [(e["reduced"] - e["copied"]) * 1e3 for e in ex]
        last = ex[-1]
        print(f"trace rank {rank} step {first + i}: {ms(t1):.1f} ms, backward enqueued by {ms(t_bwd):.1f}; "
              f"{len(ex)} all-reduces (gradient buckets, the loss) of {sum(e['bytes'] for e in ex) / 2**20:.1f} MiB: "
              f"the worker waited "
              f"{waits:.1f} ms in all for the copies in, "
              f"the exchange took {sum(exchange):.1f} ms in all (longest {max(exchange):.1f}); "
              f"the last one staged {ms(last['staged']):.1f}, copied {ms(last['copied']):.1f}, reduced "
              f"{ms(last['reduced']):.1f}, copied back {ms(last['back']):.1f}", flush=True)
        if "peers" in last:  # peer memory: the longest exchange split into the wait for the other ranks' copies in
            # and the reduction (on the device, behind what the worker's queue holds)
            e = max(ex, key=lambda e: e["reduced"] - e["copied"])
            print(f"trace rank {rank} step {first + i}: longest exchange, all-reduce {ex.index(e) + 1} of {len(ex)} "
                  f"({e['bytes'] / 2**20:.1f} MiB): staged {ms(e['staged']):.1f}, copied {ms(e['copied']):.1f}, "
                  f"the other ranks ready {ms(e['peers']):.1f}, reduced {ms(e['reduced']):.1f}", flush=True)


def plot_trace(path, rank, world, steps, first):
    """--trace-plot: the median timed step of every rank as a timeline (PNG at `path`, written by rank 0): the step,
    when its backward was enqueued, and per gradient all-reduce the wait for its bucket's gradients (the copy in),
    for the other ranks (peer memory) and its reduction, so one sees how far the exchange hides under the
    backward. Host times from pytorch_ocl.distributed.device_trace, relative to each rank's own step start."""
    from pytorch_ocl.distributed import device_trace

    trace = device_trace() or []
    gathered = [None] * world
    dist.all_gather_object(gathered, (steps, trace))
    if rank != 0:
        return
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("trace plot: matplotlib is not installed (pip install matplotlib to get one)", flush=True)
        return
    durations = [t1 - t0 for t0, _, t1 in gathered[0][0]]
    k = sorted(range(len(durations)), key=durations.__getitem__)[len(durations) // 2]  # the median step
    colors = {"bucket": "#9ecae1", "peers": "#fd8d3c", "reduce": "#31a354"}
    fig, axes = plt.subplots(world, 1, figsize=(11, 1.2 + 1.6 * world), sharex=True, squeeze=False)
    for r, (rank_steps, rank_trace) in enumerate(gathered):
        ax = axes[r][0]
        t0, t_bwd, t1 = rank_steps[k]
        ex = [e for e in rank_trace if t0 <= e["staged"] < t1]
        ms = lambda t: (t - t0) * 1e3  # noqa: E731
        ax.barh(-1, ms(t1), color="#d9d9d9", height=0.8)
        ax.axvline(ms(t_bwd), color="black", lw=1, ls="--")
        for i, e in enumerate(ex):
            mid = e.get("peers", e["reduced"])  # NCCL: copied -> reduced is one stage
            for name, a, b in (("bucket", e["staged"], e["copied"]), ("peers", e["copied"], mid),
                               ("reduce", mid, e["reduced"])):
                ax.barh(i, max(ms(b) - ms(a), 0.05), left=ms(a), color=colors[name], height=0.8)
        ax.set_yticks([-1] + list(range(len(ex))), ["step"] + [f"{e['bytes'] / 2**20:.1f} MiB" for e in ex],
                      fontsize=6)
        ax.invert_yaxis()
        ax.set_title(f"rank {r}, step {first + k}: {ms(t1):.1f} ms, backward enqueued by {ms(t_bwd):.1f} "
                     f"(dashed)", fontsize=9)
    axes[-1][0].set_xlabel("ms from the step's start")
    handles = [matplotlib.patches.Patch(color=c, label=label) for c, label in (
        (colors["bucket"], "waiting for the bucket's gradients (copy in)"),
        (colors["peers"], "waiting for the other ranks (NCCL: its all-reduce)"),
        (colors["reduce"], "reduction (peer memory)"))]
    fig.legend(handles=handles, loc="lower center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=130)
    print(f"trace plot: wrote {path}", flush=True)


def gpt2(args):
    """transformers' GPT-2 language model with random weights, sized by the --model gpt2 options."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=args.vocab, n_positions=args.seq_len, n_embd=args.n_embd, n_layer=args.n_layer,
                        n_head=args.n_head)
    return GPT2LMHeadModel(config)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8, help="per rank")
    parser.add_argument("--model", default="small", choices=["small", "resnet50", "gpt2"])
    parser.add_argument("--image-size", type=int, default=16)
    gpt = parser.add_argument_group("--model gpt2")
    gpt.add_argument("--seq-len", type=int, default=64)
    gpt.add_argument("--vocab", type=int, default=1000)
    gpt.add_argument("--n-layer", type=int, default=2)
    gpt.add_argument("--n-embd", type=int, default=128)
    gpt.add_argument("--n-head", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=0, help="steps left out of the images/s figure")
    parser.add_argument("--device", default="ocl", choices=["ocl", "cuda"],
                        help="cuda: the same script on CUDA with NCCL, for comparison (run it with "
                             "TORCH_DEVICE_BACKEND_AUTOLOAD=0: a process that loaded pytorch_ocl cannot run CUDA backward)")
    parser.add_argument("--comm", default="overlapped", choices=["overlapped", "waited", "none"],
                        help="gradient all-reduce: asynchronous (default), waited where issued, or none (no_sync)")
    parser.add_argument("--bucket-mb", type=float, help="DDP's bucket_cap_mb (default torch's 25): fewer, larger "
                        "all-reduces per backward pass")
    parser.add_argument("--trace", action="store_true",
                        help="ocl, all-reduces on the devices (peer memory or NCCL): each rank prints a timeline of "
                             "every timed step's gradient all-reduces "
                             "(the device synchronized at each step's end, so steps do not overlap)")
    parser.add_argument("--trace-plot", metavar="PNG",
                        help="with --trace: the median timed step of every rank drawn as a timeline into this file")
    parser.add_argument("--bf16-compress", action="store_true",
                        help="DDP comm hook bf16_compress_hook: gradients all-reduced in bfloat16 (half the bytes)")
    args = parser.parse_args()
    acc = getattr(torch, args.device)  # torch.ocl or torch.cuda: the same calls

    if "WORLD_SIZE" not in os.environ:  # plain `python`: a world of one on a free local port
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ["LOCAL_RANK"])

    # One device per local rank, as with CUDA. PoCL on a CPU has one device that every process shares,
    # hence the modulo (POCL_DEVICES="pthread pthread" gives two).
    acc.set_device(local_rank % acc.device_count())
    device = torch.device(args.device, acc.current_device())
    if args.trace:
        os.environ["PYTORCH_OCL_DIST_DEVICE_TRACE"] = "1"  # read when the group is made
    dist.init_process_group()

    torch.manual_seed(0)
    if args.model == "resnet50":
        import torchvision

        net = torchvision.models.resnet50(num_classes=10)
    elif args.model == "gpt2":
        net = gpt2(args)
    else:
        net = small_cnn()
    model = DDP(net.to(device), **({} if args.bucket_mb is None else {"bucket_cap_mb": args.bucket_mb}))
    if args.bf16_compress:  # torch's bf16_compress_hook: the bucket cast to bfloat16 / world, all-reduced, cast back
        if args.device == "ocl":
            from pytorch_ocl.distributed import ocl_bf16_compress_hook as bf16_compress_hook  # a name DDP takes
        else:
            from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import bf16_compress_hook
        model.register_comm_hook(None, bf16_compress_hook)
    if args.comm == "waited" and args.device == "ocl":
        from pytorch_ocl import _dist_async

        _dist_async.SYNCHRONOUS = True  # each collective waited for where DDP issues it
    comm = model.no_sync if args.comm == "none" else contextlib.nullcontext
    if args.model == "gpt2":
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator().manual_seed(100 + rank)  # each rank its own data
    start = None
    steps = []  # --trace: (start, backward enqueued, end) per step, host times
    for step in range(args.steps):
        if step == args.warmup:
            acc.synchronize()
            start = time.perf_counter()
        t0 = time.perf_counter()
        opt.zero_grad()
        with comm():
            if args.model == "gpt2":
                tokens = torch.randint(0, args.vocab, (args.batch, args.seq_len), generator=gen).to(device)
                loss = model(input_ids=tokens, labels=tokens).loss
            else:
                x = torch.randn(args.batch, 3, args.image_size, args.image_size, generator=gen).to(device)
                y = torch.randint(0, 10, (args.batch,), generator=gen).to(device)
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
        t_backward = time.perf_counter()
        opt.step()
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        if rank == 0:
            print(f"step {step}: loss {mean_loss.item():.4f} (mean over {world} ranks)", flush=True)
        if args.trace:
            acc.synchronize()
            steps.append((t0, t_backward, time.perf_counter()))
    if args.trace and len(steps) > args.warmup:
        print_trace(rank, steps[args.warmup:], args.warmup)
        if args.trace_plot:
            plot_trace(args.trace_plot, rank, world, steps[args.warmup:], args.warmup)

    if start is not None and rank == 0:
        # the ocl group's all-reduce transport: "peer" (each GPU reads the others' memory) or "nccl" (on the
        # devices, NVIDIA), "shm" (shared memory between ranks of one host) or "gloo"
        pg = dist.group.WORLD
        transport = f" through {pg.transport()}" if hasattr(pg, "transport") and world > 1 else ""
        if transport and pg.transport() != "peer":
            from pytorch_ocl import _dist_nccl, _dist_peer

            why = [f"not {name}: {mod.refusal}" for name, mod in (("peer", _dist_peer), ("NCCL", _dist_nccl))
                   if mod.refusal and (name == "peer" or pg.transport() != "nccl")]
            transport += f" ({'; '.join(why)})" if why else ""
        acc.synchronize()
        timed = args.steps - args.warmup
        rate = timed * args.batch * world / (time.perf_counter() - start)
        unit = "images"
        if args.model == "gpt2":
            rate, unit = rate * args.seq_len, "tokens"
        print(f"throughput: {rate:.1f} {unit}/s over {timed} steps ({world} ranks x batch {args.batch}, {args.model}, "
              f"communication {args.comm}{transport}{', bf16-compressed' if args.bf16_compress else ''}"
              f"{f', buckets of {args.bucket_mb:g} MB' if args.bucket_mb else ''})", flush=True)
    if args.comm == "none":  # the ranks trained apart: nothing to compare
        dist.destroy_process_group()
        return 0

    # Every rank must hold the same weights: compare with rank 0's.
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    ref = flat.clone()
    dist.broadcast(ref, src=0)
    same = torch.equal(flat.cpu(), ref.cpu())
    ok = torch.tensor([int(same)], device=device)
    dist.all_reduce(ok, op=dist.ReduceOp.MIN)
    if rank == 0:
        print(f"check {'OK' if ok.item() else 'FAILED'}: weights identical on all {world} ranks after {args.steps} "
              f"steps on {acc.get_device_name(device)}", flush=True)
    dist.destroy_process_group()
    return 0 if ok.item() else 1


if __name__ == "__main__":
    sys.exit(main())
