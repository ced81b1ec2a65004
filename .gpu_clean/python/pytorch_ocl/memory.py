"""Caching-allocator statistics and control (torch.ocl.memory_*), as in torch.cuda."""
import contextlib
import warnings

import torch

from . import _C
from .device import _index, device_count, get_device_properties

__all__ = [
    "empty_cache",
    "memory_stats",
    "memory_stats_as_nested_dict",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_cached",
    "max_memory_cached",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
    "reset_max_memory_allocated",
    "reset_max_memory_cached",
    "mem_get_info",
    "memory_summary",
    "memory_snapshot",
    "set_per_process_memory_fraction",
    "get_per_process_memory_fraction",
    "caching_allocator_alloc",
    "caching_allocator_delete",
    "get_allocator_backend",
    "caching_allocator_enable",
    "caching_allocator_disabled",
    "host_memory_stats",
    "host_memory_stats_as_nested_dict",
    "reset_peak_host_memory_stats",
    "reset_accumulated_host_memory_stats",
]


def empty_cache() -> None:
    """Returns every unused cached block to the OpenCL driver."""
    _C.empty_cache()


def memory_stats(device=None) -> dict:
    return dict(sorted(_C.memory_stats(_index(device)).items()))


def memory_stats_as_nested_dict(device=None) -> dict:
    """memory_stats() before flattening: {"allocated_bytes": {"all": {"current": ...}}, ...}."""
    nested = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def memory_allocated(device=None) -> int:
    return _C.memory_stats(_index(device))["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return _C.memory_stats(_index(device))["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return _C.memory_stats(_index(device))["reserved_bytes.all.current"]


def max_memory_reserved(device=None) -> int:
    return _C.memory_stats(_index(device))["reserved_bytes.all.peak"]


def reset_peak_memory_stats(device=None) -> None:
    _C.reset_peak_memory_stats(_index(device))


def reset_accumulated_memory_stats(device=None) -> None:
    _C.reset_accumulated_memory_stats(_index(device))


# torch.cuda's deprecated spellings, kept with the same FutureWarnings so old scripts run unchanged.
def memory_cached(device=None) -> int:
    warnings.warn("torch.ocl.memory_cached has been renamed to torch.ocl.memory_reserved", FutureWarning)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    warnings.warn("torch.ocl.max_memory_cached has been renamed to torch.ocl.max_memory_reserved", FutureWarning)
    return max_memory_reserved(device)


def reset_max_memory_allocated(device=None) -> None:
    warnings.warn(
        "torch.ocl.reset_max_memory_allocated now calls torch.ocl.reset_peak_memory_stats, which resets all peak "
        "memory stats",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def reset_max_memory_cached(device=None) -> None:
    warnings.warn(
        "torch.ocl.reset_max_memory_cached now calls torch.ocl.reset_peak_memory_stats, which resets all peak "
        "memory stats",
        FutureWarning,
    )
    reset_peak_memory_stats(device)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device's global memory. OpenCL cannot ask the driver what is free,
    so `free` is the total less what this process's caching allocator has reserved: other
    processes' use of the device is not seen."""
    idx = _index(device)
    total = get_device_properties(idx).total_memory
    return max(total - memory_reserved(idx), 0), total


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Caps what this process's allocator may reserve on the device at `fraction` of its global
    memory; a request beyond it (after emptying the cache) raises torch.OutOfMemoryError.
    PYTORCH_OCL_MEMORY_LIMIT, when lower, still applies. 1.0 removes the cap."""
    if not isinstance(fraction, (int, float)):
        raise TypeError(f"torch.ocl.set_per_process_memory_fraction: fraction must be a float, got {type(fraction)}")
    if not 0 <= fraction <= 1:
        raise ValueError(f"torch.ocl.set_per_process_memory_fraction: fraction must be in [0, 1], got {fraction}")
    _C.set_memory_fraction(_index(device), float(fraction))


def get_per_process_memory_fraction(device=None) -> float:
    return _C.memory_fraction(_index(device))


def memory_snapshot(mempool_id=None) -> list:
    """Every allocator segment of every device, in torch.cuda.memory_snapshot()'s layout: dicts with
    device, address, total_size, allocated_size, active_size, requested_size, stream, segment_type
    ('small'/'large'), is_expandable (False) and blocks (address, size, requested_size, state).
    Addresses are in the allocator's private range (see the README's memory model); `frames` are
    empty because no allocation history is recorded."""
    if mempool_id is not None:
        raise NotImplementedError("torch.ocl.memory_snapshot: memory pools are issue 21 item 2")
    return [seg for d in range(device_count()) for seg in _C.memory_snapshot(d)]


def _snapshot(device=None) -> dict:
    """The dict torch.cuda.memory._snapshot() returns, for tools that read it: no traces."""
    return {"segments": memory_snapshot(), "device_traces": [[] for _ in range(device_count())]}


def _record_memory_history(enabled="all", *args, **kwargs) -> None:
    if enabled in (None, False):
        return  # turning recording off: there is nothing recording
    raise NotImplementedError(
        "torch.ocl.memory._record_memory_history: the ocl caching allocator records no allocation history "
        "(stack traces per block); torch.ocl.memory_snapshot() shows the current segments and blocks"
    )


_raw_allocations = {}  # data_ptr -> the uint8 tensor that owns it


def caching_allocator_alloc(size: int, device=None, stream=None) -> int:
    """Allocates `size` bytes from the caching allocator (on `stream` when given) and returns the
    device pointer; free it with caching_allocator_delete."""
    idx = _index(device)
    from .streams import StreamContext

    with StreamContext(stream):
        block = torch.empty(int(size), dtype=torch.uint8, device=torch.device("ocl", idx))
    ptr = block.data_ptr()
    if ptr:
        _raw_allocations[ptr] = block
    return ptr


def caching_allocator_delete(mem_ptr: int) -> None:
    if mem_ptr == 0:
        return
    if _raw_allocations.pop(mem_ptr, None) is None:
        raise RuntimeError(f"torch.ocl.caching_allocator_delete: {mem_ptr:#x} was not returned by caching_allocator_alloc")


def caching_allocator_enable(value: bool = True) -> None:
    """Turns the cache on or off for every device. Off, each free returns the segments that no
    longer hold a tensor to the driver at once (after the streams still using them finish),
    which keeps memory_reserved() close to memory_allocated() at the cost of a driver
    allocation per new tensor."""
    _C.set_caching_enabled(bool(value))


@contextlib.contextmanager
def caching_allocator_disabled():
    """Context manager running its block with the cache off (caching_allocator_enable(False))."""
    prev = _C.caching_enabled()
    caching_allocator_enable(False)
    try:
        yield
    finally:
        caching_allocator_enable(prev)


def host_memory_stats() -> dict:
    """The pinned-memory allocator's counters with torch.cuda.host_memory_stats()'s keys:
    allocations / allocated_bytes (pinned blocks the allocator owns; never returned, so `freed`
    stays 0), active_requests / active_bytes (blocks held by tensors), num_host_alloc,
    num_host_free, host_alloc_time.* and host_free_time.* (microseconds)."""
    return dict(sorted(_C.host_memory_stats().items()))


def host_memory_stats_as_nested_dict() -> dict:
    nested = {}
    for key, value in host_memory_stats().items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def reset_peak_host_memory_stats() -> None:
    _C.reset_peak_host_memory_stats()


def reset_accumulated_host_memory_stats() -> None:
    _C.reset_accumulated_host_memory_stats()


def get_allocator_backend() -> str:
    """Always "native": pytorch_ocl's own caching allocator (csrc/core/Allocator.cpp)."""
    return "native"


def _fmt_bytes(n: int) -> str:
    for unit in ("B  ", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 10240 or unit == "TiB":
            return f"{n:6d} {unit}"
        n //= 1024


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """memory_stats() as the table torch.cuda.memory_summary() prints: current, peak, total
    allocated and total freed of memory and of counts, per pool unless `abbreviated`."""
    idx = _index(device)
    stats = memory_stats(idx)
    rows = [
        ("allocated_bytes", "Allocated memory", _fmt_bytes),
        ("active_bytes", "Active memory", _fmt_bytes),
        ("requested_bytes", "Requested memory", _fmt_bytes),
        ("reserved_bytes", "Reserved memory", _fmt_bytes),
        ("inactive_split_bytes", "Non-releasable memory", _fmt_bytes),
        ("allocation", "Allocations", lambda n: f"{n:10d}"),
        ("active", "Active allocs", lambda n: f"{n:10d}"),
        ("segment", "Reserved segments", lambda n: f"{n:10d}"),
        ("inactive_split", "Non-releasable allocs", lambda n: f"{n:10d}"),
    ]
    line, thick = "|" + "-" * 75 + "|", "|" + "=" * 75 + "|"
    fraction = get_per_process_memory_fraction(idx)
    out = [
        thick,
        "|{:^75}|".format(f"PyTorch ocl memory summary, device ID {idx}"),
        line,
        "|{:^37}|{:^37}|".format(f"ocl OOMs: {stats['num_ooms']}", f"alloc retries: {stats['num_alloc_retries']}"),
        "|{:^75}|".format(f"per-process memory fraction: {fraction:g}"),
        thick,
        "| {:<22}| Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |".format("Metric"),
    ]
    pools = [("all", "")] if abbreviated else [("all", ""), ("large_pool", "      from large pool"),
                                                ("small_pool", "      from small pool")]
    for key, title, fmt in rows:
        out.append(line)
        for pool, label in pools:
            values = [stats[f"{key}.{pool}.{f}"] for f in ("current", "peak", "allocated", "freed")]
            out.append("| {:<22}| {} | {} | {} | {} |".format(label or title, *(fmt(v) for v in values)))
    out.append(thick)
    return "\n".join(out) + "\n"
