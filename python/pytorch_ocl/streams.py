"""Streams and events on ocl (in-order OpenCL queues), through torch.Stream / torch.Event."""
import torch

from .device import _index

__all__ = [
    "Stream",
    "Event",
    "current_stream",
    "default_stream",
    "set_stream",
    "stream",
    "StreamContext",
]


def Stream(device=None, priority: int = 0) -> torch.Stream:
    """A new stream (own OpenCL queue) on `device`."""
    return torch.Stream(device=torch.device("ocl", _index(device)), priority=priority)


def Event(enable_timing: bool = False) -> torch.Event:
    return torch.Event(device="ocl", enable_timing=enable_timing)


def current_stream(device=None) -> torch.Stream:
    return torch._C._get_current_stream(torch.device("ocl", _index(device))) if hasattr(
        torch._C, "_get_current_stream"
    ) else torch.accelerator.current_stream(_index(device))


def default_stream(device=None) -> torch.Stream:
    import torch.accelerator

    with torch.ocl.device(_index(device)):
        saved = torch.accelerator.current_stream()
    return torch.Stream(stream_id=0, device_index=_index(device), device_type=saved.device_type)


def set_stream(s: torch.Stream) -> None:
    torch.accelerator.set_stream(s)


class StreamContext:
    """Context manager making `s` the current stream of its device (and restoring the previous
    stream and current device on exit); a no-op for None."""

    def __init__(self, s):
        self.s = s
        self.prev = None

    def __enter__(self):
        if self.s is not None:
            self.prev_device = torch.ocl.current_device()
            self.prev = torch.accelerator.current_stream(self.s.device_index)
            torch.accelerator.set_stream(self.s)
        return self.s

    def __exit__(self, *exc):
        if self.prev is not None:
            torch.accelerator.set_stream(self.prev)
            torch.ocl.set_device(self.prev_device)
        return False


def stream(s) -> StreamContext:
    """`with torch.ocl.stream(s):` runs the block's ops on `s` (see StreamContext)."""
    return StreamContext(s)
