"""Helpers shared by the benchmarks: device sync, timing, pinned buffers, markdown and plot output."""
import os
import statistics
import sys
import time
import warnings

import torch


def import_backend():
    """Makes sure `ocl` is registered (torch autoloads it when installed; not when run from a source tree)."""
    try:
        import pytorch_ocl  # noqa: F401
    except ImportError as e:
        sys.exit(f"cannot import pytorch_ocl ({e}): install it with `bash scripts/setup.sh --no-run`")


def synchronize(device) -> None:
    """Waits for all queued work on `device` (nothing to wait for on the cpu)."""
    device = torch.device(device)
    if device.type == "cpu":
        return
    if device.type == "ocl":
        torch.ocl.synchronize(device.index)
    elif device.type == "cuda":
        torch.cuda.synchronize(device)
    else:
        getattr(torch, device.type).synchronize()


def time_it(fn, device, iters: int, warmup: int = 1) -> list:
    """Wall-clock seconds of `iters` calls of fn(), each synchronized before the clock starts and stops."""
    for _ in range(warmup):
        fn()
    synchronize(device)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return times


def median_time(fn, device, iters: int, warmup: int = 1) -> float:
    return statistics.median(time_it(fn, device, iters, warmup))


def kernels_of_step(step):
    """The ocl kernels of one call of `step` after two warm-up calls (state created, programs built):
    (launches, Counter of launches by kernel name, Counter of device microseconds by kernel name)."""
    import collections

    import pytorch_ocl

    step()
    step()
    torch.ocl.synchronize()
    with pytorch_ocl.profiler.profile() as prof:
        step()
        torch.ocl.synchronize()
    calls, us = collections.Counter(), collections.Counter()
    for name, _, dur in prof.records:
        calls[name] += 1
        us[name] += dur
    return len(prof.records), calls, us


def pinned_empty(numel: int, device, dtype=torch.float32):
    """A page-locked host buffer for copies to/from `device`, or None when that cannot be had.

    With `ocl` registered, `pin_memory=True` pins through ocl's hooks (PrivateUse1 is torch's
    accelerator then), so a cuda reference asks for cuda pinning explicitly.
    """
    device = torch.device(device)
    try:
        if device.type == "cuda":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Tensor.pin_memory(device) is deprecated
                t = torch.empty(numel, dtype=dtype).pin_memory("cuda")
        else:
            # Not pin_memory=True: on a CUDA build of torch that pins through CUDA's allocator.
            t = torch.empty(numel, dtype=dtype).pin_memory()
    except (RuntimeError, TypeError) as e:
        print(f"pinned memory not available for {device}: {e}", file=sys.stderr)
        return None
    return t if t.is_pinned() else None


def device_description(device) -> str:
    device = torch.device(device)
    if device.type == "ocl":
        p = torch.ocl.get_device_properties(device.index or 0)
        return f"{device} ({p.name}, {p.platform})"
    if device.type == "cuda":
        return f"{device} ({torch.cuda.get_device_name(device)})"
    if device.type == "cpu":
        return f"cpu ({torch.get_num_threads()} threads)"
    return str(device)


def fmt(value, digits: int = 3) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:.0f}"
    return str(value)


def markdown_table(header, rows) -> str:
    cells = [[str(c) for c in header]] + [[fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def emit(text: str, path=None) -> None:
    """Prints a report and, where `path` is given, writes it there (creating its directory)."""
    print(text)
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)


def write_markdown(path, title: str, preamble: list, header, rows, notes: list = ()) -> str:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    text = f"# {title}\n\n" + "".join(f"{line}  \n" for line in preamble)
    text += "\n" + markdown_table(header, rows) + "\n"
    if notes:
        text += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    with open(path, "w") as f:
        f.write(text)
    return path


def plot_ratios(path, labels, ratios, title: str, ylabel: str):
    """Bar plot of ratios with a line at 1; returns the path, or None when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib to get one)")
        return None
    pairs = [(label, r) for label, r in zip(labels, ratios) if r is not None]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(pairs) + 1.5), 3.5))
    ax.bar([p[0] for p in pairs], [p[1] for p in pairs], color="tab:blue")
    ax.axhline(1.0, color="black", linewidth=0.8, linestyle="--")
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", labelrotation=30)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
