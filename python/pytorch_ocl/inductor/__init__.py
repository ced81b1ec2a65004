"""torch.compile on ocl: the Dynamo device interface and an Inductor backend writing OpenCL C.

Nothing here is imported by `import torch` (Dynamo alone costs ~1 s to import):
- Dynamo: the `ocl` interface is registered right after torch._dynamo.device_interface is
  first imported (a one-shot import hook), or at once if it already is.
- Inductor: init_backend_registration() asks torch.ocl for `Scheduling`,
  `PythonWrapperCodegen` and `CppWrapperCodegen`; torch.ocl's module __getattr__ answers by
  importing this package's codegen and registering it (see install()).

Files: device_interface (Dynamo), printer (sympy -> OpenCL C), overrides (ops -> OpenCL C),
kernel (SIMD kernel: pointwise + reductions), scheduling (Inductor scheduling, wrapper,
device op overrides), runtime (what the generated Python wrapper calls).
"""
import importlib
import importlib.abc
import importlib.util
import sys

_DYNAMO_MODULE = "torch._dynamo.device_interface"
_dynamo_done = False
_inductor_done = False
_INDUCTOR_NAMES = ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen", "WrapperFxCodegen")


def register_dynamo():
    """Registers the `ocl` Dynamo device interface (idempotent)."""
    global _dynamo_done
    if _dynamo_done:
        return
    from torch._dynamo.device_interface import register_interface_for_device

    from .device_interface import OclInterface

    register_interface_for_device("ocl", OclInterface)
    for i in range(importlib.import_module("pytorch_ocl.device").device_count()):
        register_interface_for_device(f"ocl:{i}", OclInterface)
    _dynamo_done = True


def register_inductor():
    """Registers the OpenCL C backend with Inductor (idempotent); returns the classes torch.ocl
    hands to init_backend_registration()."""
    global _inductor_done
    from . import scheduling

    if not _inductor_done:
        register_dynamo()
        scheduling.register()
        _inductor_done = True
    return {
        "Scheduling": scheduling.OclScheduling,
        "PythonWrapperCodegen": scheduling.PythonWrapperCodegen,
        "CppWrapperCodegen": scheduling.OclCppWrapperUnsupported,
        "WrapperFxCodegen": None,
    }


class _AfterImport(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs register_dynamo() right after torch._dynamo.device_interface executes."""

    def find_spec(self, fullname, path, target=None):
        if fullname != _DYNAMO_MODULE:
            return None
        sys.meta_path.remove(self)  # one shot; also keeps find_spec below from recursing
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            register_dynamo()
        except Exception as e:  # never break Dynamo's import because of us
            import warnings

            warnings.warn(f"pytorch_ocl: could not register the ocl Dynamo device interface: {e}")


def install(device_module):
    """Hooks registration into Dynamo's and Inductor's first use; `device_module` is torch.ocl."""
    if _DYNAMO_MODULE in sys.modules:
        register_dynamo()
    elif not any(isinstance(f, _AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport())

    def __getattr__(name):
        if name in _INDUCTOR_NAMES:
            return register_inductor()[name]
        raise AttributeError(f"module 'torch.ocl' has no attribute '{name}'")

    device_module.__getattr__ = __getattr__
