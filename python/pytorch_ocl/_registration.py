"""Registers `ocl` with torch exactly once (the torch calls involved raise if repeated)."""
import sys

import torch

_registered = False


def _patch_printing():
    # Formatting a tensor runs a dozen ops (masked_select, isfinite, min, ...). Like XLA
    # tensors, ocl tensors are formatted from a host copy; the device suffix is kept.
    import torch._tensor_str as ts

    original = ts._tensor_str
    if getattr(original, "_ocl_patched", False):
        return

    def _tensor_str(self, indent):
        if self.device.type == "ocl":
            self = self.to("cpu")
        return original(self, indent)

    _tensor_str._ocl_patched = True
    ts._tensor_str = _tensor_str


def register():
    global _registered
    if _registered:
        return
    torch.utils.rename_privateuse1_backend("ocl")
    module = sys.modules[__name__.rsplit(".", 1)[0]]
    torch._register_device_module("ocl", _device_module(module))
    torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True)
    _patch_printing()
    _registered = True


def _device_module(package):
    """The object installed as `torch.ocl`: the functions torch itself looks up plus ours."""
    import importlib
    import types

    # importlib, not `from . import device`: the package attribute `device` is the context manager.
    device, memory, random, streams, amp, nvtx, cuda_parity, graphs = (
        importlib.import_module(f"{package.__name__}.{name}")
        for name in ("device", "memory", "random", "streams", "amp", "nvtx", "cuda_parity", "graphs")
    )
    mod = types.ModuleType("torch.ocl")
    for source in (device, memory, random, streams, graphs):
        for name in getattr(source, "__all__", []):
            setattr(mod, name, getattr(source, name))
    # Submodules under torch.cuda's names (torch.ocl.memory._snapshot, torch.ocl.amp.autocast, ...).
    mod.memory, mod.random, mod.streams, mod.amp, mod.nvtx, mod.graphs = memory, random, streams, amp, nvtx, graphs
    cuda_parity.install(mod)  # torch.cuda names with no meaning here raise NotImplementedError naming why
    # torch._functorch's graph-safe RNG asks torch.<device>._get_generator(device).
    mod._get_generator = lambda dev: random.default_generators[device._index(dev)]
    mod._initialized = True
    mod._is_in_bad_fork = device._is_in_bad_fork
    mod.get_amp_supported_dtype = lambda: [torch.float16, torch.bfloat16, torch.float32]
    mod.fallback_stats = package.fallback_stats
    mod.profile = package.profiler.profile
    # torch.compile: Dynamo device interface + Inductor OpenCL C backend, registered on first use.
    importlib.import_module(f"{package.__name__}.inductor").install(mod)
    return mod
