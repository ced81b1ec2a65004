"""Caching-allocator statistics and control (torch.ocl.memory_*), as in torch.cuda."""
from . import _C
from .device import _index

__all__ = [
    "empty_cache",
    "memory_stats",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
]


def empty_cache() -> None:
    """Returns every unused cached block to the OpenCL driver."""
    _C.empty_cache()


def memory_stats(device=None) -> dict:
    return dict(sorted(_C.memory_stats(_index(device)).items()))


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
