"""Device queries and selection (torch.ocl.*), mirroring torch.cuda."""
from dataclasses import dataclass

import torch

from . import _C

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "device",
    "get_device_name",
    "get_device_properties",
    "matrix_engine",
    "synchronize",
    "is_initialized",
]


def is_available() -> bool:
    return _C.device_count() > 0


def device_count() -> int:
    return _C.device_count()


def is_initialized() -> bool:
    return any(_C.has_context(i) for i in range(device_count()))


def _is_in_bad_fork() -> bool:
    return _C.in_bad_fork()


def _index(dev) -> int:
    """Device index of an int, string, torch.device or None (= current device)."""
    if dev is None:
        return _C.current_device()
    if isinstance(dev, int):
        return dev
    dev = torch.device(dev)
    if dev.type != "ocl":
        raise ValueError(f"expected an ocl device, got {dev}")
    return _C.current_device() if dev.index is None else dev.index


def current_device() -> int:
    return _C.current_device()


def set_device(dev) -> None:
    idx = _index(dev)
    if idx >= 0:
        _C.set_device(idx)


class device:
    """Context manager that makes `dev` the current ocl device (like torch.cuda.device)."""

    def __init__(self, dev):
        self.idx = -1 if dev is None else _index(dev)
        self.prev = -1

    def __enter__(self):
        self.prev = _C.current_device()
        if self.idx >= 0 and self.idx != self.prev:
            _C.set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.prev != self.idx:
            _C.set_device(self.prev)
        return False


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    vendor: str
    platform: str
    driver_version: str
    device_version: str
    opencl_c_version: str
    type: str
    compute_units: int
    total_memory: int
    local_memory: int
    max_alloc_size: int
    max_work_group_size: int
    fp64: bool
    fp16: bool
    extensions: str

    @property
    def multi_processor_count(self) -> int:
        return self.compute_units

    def __repr__(self):
        return (
            f"_OclDeviceProperties(name='{self.name}', platform='{self.platform}', type={self.type}, "
            f"total_memory={self.total_memory // (1 << 20)}MB, compute_units={self.compute_units}, "
            f"fp64={self.fp64}, fp16={self.fp16})"
        )


def get_device_properties(dev=None) -> DeviceProperties:
    return DeviceProperties(**_C.device_properties(_index(dev)))


def matrix_engine(dev=None) -> dict:
    """The device's matrix engine as probed by the library: {"kind": "none" | "nvidia-mma" |
    "intel-dpas", "compute_capability": (major, minor), "tf32"/"bf16"/"fp16": whether an mma.sync
    probe of that type built and summed right, "detail", "description"}. Creates the device's
    context on first use."""
    return _C.matrix_engine(_index(dev))


def get_device_name(dev=None) -> str:
    return _C.device_properties(_index(dev))["name"]


def synchronize(dev=None) -> None:
    """Waits for all work queued on the device (all streams)."""
    _C.synchronize(_index(dev))
