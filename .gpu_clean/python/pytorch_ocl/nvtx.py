"""torch.ocl.nvtx: torch.cuda.nvtx's annotation calls as no-ops, so annotated code runs on ocl.
No OpenCL tool reads NVTX ranges; pushes and pops are only counted (range_push/range_pop return
the nesting depth as nvtx does)."""
from contextlib import contextmanager

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_depth = 0
_next_handle = 0


def range_push(msg: str) -> int:
    global _depth
    _depth += 1
    return _depth - 1


def range_pop() -> int:
    global _depth
    if _depth == 0:
        return -1  # nvtx's answer for a pop without a push
    _depth -= 1
    return _depth


def range_start(msg: str) -> int:
    global _next_handle
    _next_handle += 1
    return _next_handle


def range_end(range_id: int) -> None:
    pass


def mark(msg: str) -> None:
    pass


@contextmanager
def range(msg: str, *args, **kwargs):
    """Context manager / decorator, like torch.cuda.nvtx.range."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
