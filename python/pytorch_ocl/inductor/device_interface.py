"""Dynamo's view of the `ocl` device (torch._dynamo.device_interface): streams, events,
synchronize, current device, properties, mapped onto torch.ocl.*.

Registered when torch._dynamo.device_interface is first imported (see inductor/__init__.py),
so `import torch` does not pay for importing Dynamo."""
import torch
from torch._dynamo.device_interface import DeviceInterface

import importlib

# importlib: the package attribute `device` is the context manager, not the module.
_dev = importlib.import_module("pytorch_ocl.device")
_mem = importlib.import_module("pytorch_ocl.memory")
_streams = importlib.import_module("pytorch_ocl.streams")


class OclInterface(DeviceInterface):
    device = _dev.device

    # torch.Stream / torch.Event on ocl are in-order OpenCL queues and their markers.
    class Event(torch.Event):
        def __new__(cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False):
            return torch.Event(device="ocl", enable_timing=enable_timing)

    class Stream(torch.Stream):
        def __new__(cls, device=None, priority: int = 0, **kwargs):
            return _streams.Stream(device, priority)

    class Worker:
        # Used by Inductor's compile workers (no device context wanted there).
        @staticmethod
        def set_device(device: int) -> None:
            _dev.set_device(device)

        @staticmethod
        def current_device() -> int:
            return _dev.current_device()

        @staticmethod
        def get_device_properties(device=None):
            return _dev.get_device_properties(device)

    current_device = staticmethod(_dev.current_device)
    set_device = staticmethod(_dev.set_device)
    device_count = staticmethod(_dev.device_count)
    is_available = staticmethod(_dev.is_available)
    stream = staticmethod(_streams.stream)
    current_stream = staticmethod(_streams.current_stream)
    set_stream = staticmethod(_streams.set_stream)
    synchronize = staticmethod(_dev.synchronize)
    get_device_properties = staticmethod(_dev.get_device_properties)
    memory_allocated = staticmethod(_mem.memory_allocated)

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        torch.accelerator.set_stream(torch.Stream(stream_id=stream_id, device_index=device_index,
                                                  device_type=device_type))

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        # Kernels launch on the current stream by themselves; the id is only a token.
        return _streams.current_stream(device_idx).stream_id

    @staticmethod
    def exchange_device(device: int) -> int:
        prev = _dev.current_device()
        if device >= 0 and device != prev:
            _dev.set_device(device)
        return prev

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        return OclInterface.exchange_device(device)

    @staticmethod
    def get_compute_capability(device=None):
        return "opencl"

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return _dev.is_available()

    @staticmethod
    def is_dtype_supported(dtype: torch.dtype, including_emulation: bool = False) -> bool:
        if dtype == torch.float64:
            return _dev.is_available() and _dev.get_device_properties().fp64
        return True

    @staticmethod
    def is_triton_capable(device=None) -> bool:
        return False

    @staticmethod
    def raise_if_triton_unavailable(device=None) -> None:
        raise RuntimeError("ocl does not run Triton; torch.compile uses pytorch_ocl's OpenCL C backend")
