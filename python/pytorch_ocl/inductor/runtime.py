"""What the Python wrapper Inductor writes for ocl calls at run time: `_OclKernel(name, source,
meta).run(*args, xnumel=..., rnumel=...)`. Builds go through pytorch_ocl's program cache (memory +
disk, like every other kernel); launches are asynchronous on the current stream."""
import struct

import torch

from .. import _C
from . import tuning

_pack_long = struct.Struct("<q").pack


def get_raw_stream(device_index):
    # Our launches pick the current stream themselves; the wrapper only wants a value.
    return 0


_blocks = {}


def _pointwise_block(device):
    """Work-group size of pointwise kernels (no __local memory, so chosen at launch): 256 on GPUs;
    64 on CPU devices (PoCL), where fewer, longer work-groups leave cores idle."""
    b = _blocks.get(device)
    if b is None:
        props = torch.ocl.get_device_properties(device)
        b = _blocks[device] = min(64 if "CPU" in props.type.upper() else 256, props.max_work_group_size)
    return b


_defines = {}


def _device_defines(device):
    """Build options every generated kernel gets on this device: -DOCL_PTX_ATOMICS where inline PTX
    builds (NVIDIA with a working matrix-engine probe), for the prelude's native float atomic add."""
    d = _defines.get(device)
    if d is None:
        d = _defines[device] = "-DOCL_PTX_ATOMICS " if torch.ocl.matrix_engine(device)["kind"] == "nvidia-mma" else ""
    return d


_pending = []  # kernels defined by a wrapper module and not built yet


def _build_pending(device):
    """Builds every kernel defined so far in parallel (dlprim's build threads, or helper processes
    where a driver serializes one process's builds): a compiled graph's wrapper defines all its
    kernels at import, and building them one by one at their first launch made the first step of
    a ResNet-50 (hundreds of kernels) take minutes. Reductions build with their default shape."""
    todo = [k for k in _pending if not k.built]
    _pending.clear()
    if len(todo) > 1:
        pre = _device_defines(device)
        jobs = [(k.source, k.name, pre + (k.build_options(k.rblock, k.xblock) if k.reduction else "")) for k in todo]
        _C.build_user_kernels(device, jobs)  # errors surface again at the kernel's own launch
    for k in todo:
        k.built = True


class OclKernel:
    def __init__(self, name, source, meta):
        self.name, self.source = name, source
        self.reduction = meta["reduction"]
        self.rblock, self.xblock = meta["rblock"], meta["xblock"]
        self.xfast = meta.get("xfast", False)  # work-groups (XBLOCK, RBLOCK): x on dimension 0
        self.max_autotune = meta.get("max_autotune", False)  # compiled with mode="max-autotune*": tuning.py times
        # device-side checks (kernel.py check_bounds, device_assert_async): the check slot's argument, with the
        # error its failure raises (IndexError where every check is an index check)
        checks = meta.get("checks") or []
        self.check = (3, f"{'; '.join(m for m, _ in checks)} (a device-side check in {name}, a kernel of a compiled "
                         f"graph, reported at this wait)", all(i for _, i in checks)) if checks else None
        # Symbolic numels are kernel parameters after the tensors / size variables.
        self.x_param, self.r_param = meta["x_param"], meta["r_param"]
        # The tuner may launch it several times: only when that changes nothing.
        # (an index check's atomic_or only sets a flag: running again changes nothing)
        body = source.split("__kernel", 1)[-1].replace("atomic_or(ocl_check", "")
        self.rerunnable = "in_out_ptr" not in source and "atomic" not in body
        self.built = False
        self._refs = {}  # (device, build options) -> handle of the built kernel (launches skip the source)
        _pending.append(self)

    def _ref(self, device, options):
        ref = self._refs.get((device, options))
        if ref is None:
            ref = self._refs[(device, options)] = _C.user_kernel_ref(device, self.source, self.name,
                                                                     _device_defines(device) + options)
        return ref

    @staticmethod
    def build_options(rb, xb):
        return f"-DRBLOCK={rb} -DXBLOCK={xb}"

    def run(self, *args, xnumel, rnumel=None):
        xnumel = int(xnumel)
        if xnumel <= 0:
            return
        specs = []
        device = None
        for a in args:
            if isinstance(a, torch.Tensor):
                if device is None:
                    device = a.device.index
                specs.append((0, a))
            else:
                specs.append((1, _pack_long(int(a))))
        if self.x_param:
            specs.append((1, _pack_long(xnumel)))
        if self.r_param:
            specs.append((1, _pack_long(int(rnumel))))
        if self.check:
            specs.append(self.check)
        if device is None:
            device = torch.ocl.current_device()
        if not self.built:
            _build_pending(device)
        if not self.reduction:
            b = _pointwise_block(device)
            _C.launch_user_kernel_ref(self._ref(device, ""), device, specs, [(xnumel + b - 1) // b * b], [b])
            return

        def launch(rb, xb):
            glob, loc = [rb, (xnumel + xb - 1) // xb * xb], [rb, xb]
            if self.xfast:
                glob, loc = glob[::-1], loc[::-1]
            _C.launch_user_kernel_ref(self._ref(device, self.build_options(rb, xb)), device, specs, glob, loc)

        launch(*tuning.choose(self, device, xnumel, int(rnumel), launch, self.rerunnable))
