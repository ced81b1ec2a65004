"""Inductor's hooks for `ocl`: the scheduling (fuses nodes, hands them to OclKernel), the Python
wrapper, and the device ops the wrapper prints (device guard, synchronize, raw stream)."""
import hashlib
import pathlib

import torch
from torch._inductor.codegen.common import (
    BackendFeature,
    DeviceOpOverrides,
    register_backend_for_device,
    register_device_op_overrides,
)
from torch._inductor import config
from torch._inductor.codegen.simd import SIMDScheduling
from torch._inductor.custom_graph_pass import CustomGraphModulePass
from torch._inductor.codegen.wrapper import PythonWrapperCodegen
from torch._inductor.utils import get_kernel_metadata
from torch._inductor.virtualized import V
from torch.utils._ordered_set import OrderedSet

from .kernel import KERNEL_NAME, OclKernel

_RUNTIME_IMPORT = "from pytorch_ocl.inductor.runtime import OclKernel as _OclKernel"


class OclScheduling(SIMDScheduling):
    kernel_type = OclKernel

    @classmethod
    def get_backend_features(cls, device):
        return OrderedSet([BackendFeature.INPLACE_BUFFERS])

    @classmethod
    def select_tiling(cls, node_schedule, numel, reduction_numel=None, coalesce_analysis=None):
        # One x dimension (and one r0_ for reductions): our kernels index from xindex / r0_index.
        import sympy

        return cls.create_tiling([numel], [reduction_numel if reduction_numel is not None else sympy.S.One])

    @classmethod
    def get_tiling_and_scores(cls, node_schedule, numel, reduction_numel=None, coalesce_analysis=None):
        return cls.select_tiling(node_schedule, numel, reduction_numel), None

    def define_kernel(self, src_code, node_schedule, kernel):
        wrapper = V.graph.wrapper_code
        if src_code in wrapper.src_to_kernel:
            return wrapper.src_to_kernel[src_code]
        kind = "red" if kernel.is_reduction_kernel else "pw"
        name = f"ocl_{kind}_{hashlib.sha1(src_code.encode()).hexdigest()[:12]}"
        wrapper.src_to_kernel[src_code] = name
        wrapper.add_import_once(_RUNTIME_IMPORT)
        source = src_code.replace(KERNEL_NAME, name)
        meta = {"reduction": kernel.is_reduction_kernel, "rblock": kernel.rblock, "xblock": kernel.xblock,
                "xfast": kernel.xfast, "max_autotune": bool(config.max_autotune),
                "checks": [list(c) for c in dict.fromkeys(getattr(kernel, "ocl_checks", []))],
                "x_param": kernel._symbolic("x"),
                "r_param": kernel.is_reduction_kernel and kernel._symbolic("r0_")}
        origins, detailed = get_kernel_metadata(node_schedule, wrapper)
        wrapper.define_kernel(name, f"_OclKernel({name!r}, r'''\n{source}''', {meta!r})",
                              f"{origins}\n{detailed}", gpu=False)
        return name


class OclCppWrapperUnsupported:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.compile on ocl: cpp_wrapper / AOTInductor are not supported")

    @staticmethod
    def create(*args, **kwargs):
        raise NotImplementedError("torch.compile on ocl: cpp_wrapper / AOTInductor are not supported")


class OclDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name):
        return f"from pytorch_ocl.inductor.runtime import get_raw_stream as {name}"

    def set_device(self, device_idx):
        return f"torch.ocl.set_device({device_idx})"

    def synchronize(self):
        return "torch.ocl.synchronize()"

    def device_guard(self, device_idx):
        return f"torch.ocl.device({device_idx})"

    def current_stream(self):
        return "torch.ocl.current_stream()"


def _no_layout_opt_on_ocl():
    """Inductor's layout optimization makes convolution inputs channels_last; torch's fake
    convolution then promises a contiguous output for the Overrideable backend (ours), while our
    eager convolution keeps channels_last, and the compiled graph's stride check fails. Graphs
    on ocl therefore keep the layouts they were given."""
    from torch._inductor.graph import GraphLowering

    original = GraphLowering.decide_layout_opt
    if getattr(original, "_ocl", False):
        return

    def decide_layout_opt(gm, *, is_inference):
        for n in gm.graph.nodes:
            val = n.meta.get("val") if n.op == "placeholder" else None
            if isinstance(val, torch.Tensor) and val.device.type == "ocl":
                return False
        return original(gm, is_inference=is_inference)

    decide_layout_opt._ocl = True
    GraphLowering.decide_layout_opt = staticmethod(decide_layout_opt)


def _codegen_hash():
    """A hash of this package's code generator (every .py file of pytorch_ocl.inductor, and the kernel files whose
    functions generated kernels embed: special.py)."""
    from . import special

    h = hashlib.sha256()
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    for source in special.embedded_sources():
        h.update(source.encode())
    return h.hexdigest()


class CodegenVersion(CustomGraphModulePass):
    """Leaves the graph as it is. Inductor puts a device's custom pass's uuid() into its FX graph cache key,
    and the key otherwise knows nothing of our code generator: without this, an upgraded pytorch_ocl would be
    served graphs (and their OpenCL C) generated by the previous version from TORCHINDUCTOR_CACHE_DIR."""

    def __call__(self, gm):
        return None

    def uuid(self):
        if not hasattr(self, "_uuid"):
            self._uuid = "pytorch_ocl.inductor:" + _codegen_hash()
        return self._uuid


def register():
    _no_layout_opt_on_ocl()
    register_device_op_overrides("ocl", OclDeviceOpOverrides())
    # The stock Python wrapper: our kernels are objects called as `kernel.run(*args, xnumel=...)`.
    register_backend_for_device("ocl", OclScheduling, PythonWrapperCodegen, OclCppWrapperUnsupported,
                                device_custom_pass=CodegenVersion())
