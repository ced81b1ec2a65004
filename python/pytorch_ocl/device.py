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
    "init",
    "device_of",
    "get_device_capability",
    "is_bf16_supported",
    "is_tf32_supported",
    "get_arch_list",
    "get_gencode_flags",
    "can_device_access_peer",
    "ipc_collect",
    "get_sync_debug_mode",
    "set_sync_debug_mode",
    "has_half",
    "has_magma",
    "OutOfMemoryError",
    "AcceleratorError",
]

# Storage is 16-bit everywhere (vload_half/vstore_half); no MAGMA library behind linear algebra.
has_half = True
has_magma = False
OutOfMemoryError = torch.OutOfMemoryError  # what the ocl allocator raises
AcceleratorError = torch.AcceleratorError


def is_available() -> bool:
    return _C.device_count() > 0


def device_count() -> int:
    return _C.device_count()


def is_initialized() -> bool:
    return any(_C.has_context(i) for i in range(device_count()))


def init() -> None:
    """Creates the current device's OpenCL context now instead of at its first tensor (no-op
    without a device)."""
    if device_count():
        _C.init_device(_C.current_device())


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


class device_of(device):
    """Context manager making the device of `obj` (a tensor or storage) current; a no-op when
    `obj` is not on ocl."""

    def __init__(self, obj):
        super().__init__(obj.get_device() if obj.device.type == "ocl" else None)


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


def get_device_capability(dev=None) -> tuple:
    """(major, minor) of the OpenCL C version the device compiles, e.g. (1, 2): what a kernel may
    use, as a CUDA compute capability says. Not an NVIDIA compute capability (see matrix_engine()),
    so checks written for CUDA such as `>= (8, 0)` stay False."""
    version = get_device_properties(dev).opencl_c_version  # "OpenCL C 1.2 pocl" / "OpenCL C 3.0 "
    major, minor = version.split()[2].split(".")[:2]
    return int(major), int(minor)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """True on every OpenCL device: bfloat16 is stored as 16 bits and computed in float32 by our
    kernels, so no device feature is needed."""
    return is_available()


def is_tf32_supported() -> bool:
    """Whether the current device's matrix engine runs TF32 products (NVIDIA mma.sync, see
    matrix_engine()): then torch.set_float32_matmul_precision('high') and torch.backends.cudnn.allow_tf32
    put float32 matmuls / convolutions on it, as on CUDA."""
    return bool(is_available() and matrix_engine().get("tf32"))


def get_arch_list() -> list:
    """The kernel language the library ships: its kernels are OpenCL C 1.2 source, compiled at run
    time for whichever device is used ([] without a device, as torch.cuda)."""
    return ["OpenCL C 1.2"] if is_available() else []


def get_gencode_flags() -> str:
    """The options added to every OpenCL program build (PYTORCH_OCL_EXTRA_BUILD_OPTIONS)."""
    import os

    return os.environ.get("PYTORCH_OCL_EXTRA_BUILD_OPTIONS", "")


def can_device_access_peer(dev, peer) -> bool:
    """False: each ocl device has its own OpenCL context and no kernel reads another device's
    buffers (copies between devices go through the host)."""
    for d in (_index(dev), _index(peer)):
        if not 0 <= d < device_count():
            raise ValueError(f"torch.ocl.can_device_access_peer: invalid ocl device {d}")
    return False


def ipc_collect() -> None:
    """A no-op: ocl memory is never shared between processes, so there is nothing to collect."""


def get_sync_debug_mode() -> int:
    """0 (default), 1 (warn) or 2 (error): what a synchronizing operation does (set_sync_debug_mode)."""
    return _C.get_sync_debug_mode()


def set_sync_debug_mode(debug_mode) -> None:
    """Report operations that make the host wait for the device: "default"/0 says nothing,
    "warn"/1 warns, "error"/2 raises. Reported: blocking copies between host and device (so
    .item(), .cpu(), printing, torch.tensor(..., device="ocl")); not torch.ocl.synchronize() or
    Stream/Event waits, which ask to wait. Copies with non_blocking=True from/to pinned memory
    do not wait."""
    modes = {"default": 0, "warn": 1, "error": 2}
    if isinstance(debug_mode, str):
        if debug_mode not in modes:
            raise RuntimeError(f"torch.ocl.set_sync_debug_mode: invalid value of debug_mode {debug_mode!r}; "
                               "expected 'default', 'warn', 'error' or 0, 1, 2")
        debug_mode = modes[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"torch.ocl.set_sync_debug_mode: invalid value of debug_mode {debug_mode!r}; "
                           "expected 'default', 'warn', 'error' or 0, 1, 2")
    _C.set_sync_debug_mode(int(debug_mode))
