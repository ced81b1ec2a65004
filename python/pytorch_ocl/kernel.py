"""User OpenCL kernels on ocl tensors: `pytorch_ocl.Kernel(source, name)(*args, global_size=...)`.

A tensor argument becomes two kernel parameters: a `__global T*` pointer to its storage and
a `ulong` element offset of its first element (so views work without copies):

    __kernel void scale(__global float* y, ulong y_off, __global const float* x, ulong x_off, float a) {
        size_t i = get_global_id(0);
        y[y_off + i] = a * x[x_off + i];
    }

Scalars: typed with `pytorch_ocl.int32(3)`, `float32(0.5)`, ... or inferred (int -> int, float -> float).
`LocalMemory(nbytes)` passes a `__local` buffer. Launches are asynchronous on the current stream.
"""
import struct

import torch

from . import _C

__all__ = ["Kernel", "LocalMemory", "build_kernels", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float32", "float64"]

_TENSOR, _BYTES, _LOCAL = 0, 1, 2


class _TypedScalar:
    __slots__ = ("value", "packed", "cl_type")

    def __init__(self, value, fmt, cl_type):
        try:
            self.packed = struct.pack("<" + fmt, value)
        except struct.error as e:
            raise TypeError(f"{value!r} does not fit OpenCL type {cl_type}: {e}") from None
        self.value = value
        self.cl_type = cl_type

    def __repr__(self):
        return f"{self.cl_type}({self.value!r})"


def _scalar_type(fmt, cl_type, cast):
    def make(value):
        return _TypedScalar(cast(value), fmt, cl_type)

    make.__name__ = cl_type
    make.__doc__ = f"A kernel argument of OpenCL type `{cl_type}`."
    return make


int8 = _scalar_type("b", "char", int)
uint8 = _scalar_type("B", "uchar", int)
int16 = _scalar_type("h", "short", int)
uint16 = _scalar_type("H", "ushort", int)
int32 = _scalar_type("i", "int", int)
uint32 = _scalar_type("I", "uint", int)
int64 = _scalar_type("q", "long", int)
uint64 = _scalar_type("Q", "ulong", int)
float32 = _scalar_type("f", "float", float)
float64 = _scalar_type("d", "double", float)


def build_kernels(kernels, device=None):
    """Compiles several `Kernel`s at once on the build threads (PYTORCH_OCL_BUILD_THREADS) instead of one
    by one at their first calls. Raises RuntimeError listing every kernel that failed to build (the others
    are built)."""
    kernels = list(kernels)
    if not kernels:
        return kernels
    dev = kernels[0]._device_index(device, ())
    errors = _C.build_user_kernels(dev, [(k.source, k.name, k.options) for k in kernels])
    failed = [f"Kernel '{k.name}': {e}" for k, e in zip(kernels, errors) if e]
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(kernels)} kernels failed to build:\n" + "\n".join(failed))
    return kernels


class LocalMemory:
    """A `__local` buffer of `nbytes` bytes for one launch."""

    def __init__(self, nbytes: int):
        if int(nbytes) <= 0:
            raise ValueError(f"LocalMemory needs a positive size, got {nbytes}")
        self.nbytes = int(nbytes)


def _sizes(value, what):
    if value is None:
        return []
    dims = [value] if isinstance(value, int) else list(value)
    if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and d > 0 for d in dims):
        raise ValueError(f"{what} must be a positive int or a tuple of 1 to 3 positive ints, got {value!r}")
    return dims


class Kernel:
    """An OpenCL C kernel built through pytorch_ocl's program cache (memory + disk).

    source: OpenCL C source; name: the `__kernel` function to call; options: build options
    (e.g. "-DTILE=16"); strided: accept non-contiguous tensors (the kernel then indexes them
    itself, e.g. with strides passed as extra arguments). A build error raises RuntimeError
    with the compiler's log.
    """

    def __init__(self, source: str, name: str, options: str = "", strided: bool = False):
        self.source, self.name, self.options, self.strided = source, name, options, strided

    def build(self, device=None):
        """Compiles now for `device` (default: the current ocl device) instead of at the first call."""
        _C.build_user_kernel(self._device_index(device, ()), self.source, self.name, self.options)
        return self

    def _device_index(self, device, args):
        if device is not None:
            d = torch.device("ocl", device) if isinstance(device, int) else torch.device(device)
            if d.type != "ocl":
                raise ValueError(f"Kernel '{self.name}': device must be an ocl device, got {d}")
            return torch.ocl.current_device() if d.index is None else d.index
        for a in args:
            if isinstance(a, torch.Tensor) and a.device.type == "ocl":
                return a.device.index
        return torch.ocl.current_device()

    def _marshal(self, i, a, device):
        if isinstance(a, torch.Tensor):
            if a.device.type != "ocl":
                raise TypeError(f"Kernel '{self.name}': argument {i} is a tensor on {a.device}; "
                                f"move it to the ocl device first (tensor.to('ocl'))")
            if a.device.index != device:
                raise ValueError(f"Kernel '{self.name}': argument {i} is on {a.device} but the kernel runs on ocl:{device}")
            if not self.strided and not a.is_contiguous():
                raise ValueError(f"Kernel '{self.name}': argument {i} is not contiguous (strides {a.stride()}); "
                                 f"pass tensor.contiguous() or build the Kernel with strided=True")
            return (_TENSOR, a)
        if isinstance(a, _TypedScalar):
            return (_BYTES, a.packed)
        if isinstance(a, LocalMemory):
            return (_LOCAL, a.nbytes)
        if isinstance(a, bool):
            raise TypeError(f"Kernel '{self.name}': argument {i} is a bool; pass int32(...) or uint8(...) explicitly")
        if isinstance(a, int):
            return (_BYTES, int32(a).packed)
        if isinstance(a, float):
            return (_BYTES, float32(a).packed)
        raise TypeError(f"Kernel '{self.name}': argument {i} has unsupported type {type(a).__name__}; use ocl "
                        f"tensors, ints, floats, typed scalars (pytorch_ocl.int64(...), ...) or LocalMemory")

    def __call__(self, *args, global_size, local_size=None, device=None):
        dev = self._device_index(device, args)
        specs = [self._marshal(i, a, dev) for i, a in enumerate(args)]
        glob, loc = _sizes(global_size, "global_size"), _sizes(local_size, "local_size")
        _C.launch_user_kernel(dev, self.source, self.name, self.options, specs, glob, loc)

    def __repr__(self):
        return f"Kernel(name={self.name!r}, options={self.options!r})"
