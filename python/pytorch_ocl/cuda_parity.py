"""The torch.cuda names that torch.ocl does not implement, and why: the one source of truth.

`RAISES` names exist in torch.ocl so that code calling them gets a NotImplementedError that says
why (not an AttributeError); `ABSENT` names are CUDA-only types, legacy classes or submodules
that torch.ocl leaves out. The README's "torch.ocl and torch.cuda" table is checked against both
by tests/test_cuda_parity.py, which also fails for any new torch.cuda name found in neither
torch.ocl nor here.
"""

_NVML = "OpenCL has no query of the device's {} (torch.cuda asks NVML)"

RAISES = {
    "current_blas_handle": "ocl matrix products run pytorch_ocl's own OpenCL kernels; there is no BLAS library handle",
    "current_solver_handle": "ocl has no cuSOLVER-like library, hence no solver handle",
    "utilization": _NVML.format("utilization"),
    "temperature": _NVML.format("temperature"),
    "power_draw": _NVML.format("power draw"),
    "clock_rate": "OpenCL reports only the maximum clock (CL_DEVICE_MAX_CLOCK_FREQUENCY), not the current one "
    "(torch.cuda asks NVML)",
    "memory_usage": _NVML.format("memory busy time"),
    "device_memory_used": "OpenCL has no query of the memory all processes use on a device (torch.cuda asks NVML); "
    "mem_get_info() counts this process's reservations only",
    "list_gpu_processes": _NVML.format("processes"),
    "MemPool": "user memory pools are not supported; graphs have private pools (graph_pool_handle, OCLGraph.pool)",
    "use_mem_pool": "user memory pools are not supported; graphs have private pools (graph_pool_handle, "
    "OCLGraph.pool)",
    "CUDAPluggableAllocator": "the ocl caching allocator cannot be replaced from Python",
    "change_current_allocator": "the ocl caching allocator cannot be replaced from Python",
    "ExternalStream": "wrapping a cl_command_queue made outside pytorch_ocl as a stream is not supported",
    "get_stream_from_external": "wrapping a cl_command_queue made outside pytorch_ocl as a stream is not supported",
    "GreenContext": "pytorch_ocl does not partition a device (OpenCL sub-devices are not used)",
}

_LEGACY = "legacy typed class; use torch.empty(..., dtype=..., device='ocl') and untyped storages"
_CUDART = "CUDA runtime interface; OpenCL failures raise RuntimeError naming the OpenCL call"

ABSENT = {
    **{
        f"{t}{kind}": _LEGACY
        for kind in ("Storage", "Tensor")
        for t in ("BFloat16", "Bool", "Byte", "Char", "Double", "Float", "Half", "Int", "Long", "Short")
    },
    "ComplexDoubleStorage": _LEGACY,
    "ComplexFloatStorage": _LEGACY,
    "CudaError": _CUDART,
    "DeferredCudaCallError": _CUDART,
    "check_error": _CUDART,
    "cudaStatus": _CUDART,
    "cudart": _CUDART,
    "classproperty": "not torch.cuda API: a helper torch.cuda imports from torch._utils",
    "CUDAGraph": "the ocl graph class is torch.ocl.OCLGraph (same methods)",
    "jiterator": "jit of CUDA C++ elementwise snippets; pytorch_ocl.Kernel compiles your OpenCL C instead",
    "nccl": "NVIDIA's collective library; OpenCL has none",
    "profiler": "starts and stops NVIDIA's profiler; torch.ocl.profile times ocl kernels instead",
    "sparse": ("the legacy per-type sparse classes (torch.cuda.sparse.FloatTensor ...); "
               "sparse COO and CSR tensors work with device='ocl'"),
    "tunable": "TunableOp picks among cuBLAS/hipBLASLt GEMMs; ocl picks its own GEMM configurations",
}


def _raiser(name, reason):
    message = f"torch.ocl.{name}: {reason}"

    def fail(*args, **kwargs):
        raise NotImplementedError(message)

    if name[0].isupper():  # a class in torch.cuda: keep it a class (isinstance checks still work)
        return type(name, (), {"__init__": fail, "__doc__": message})
    fail.__name__, fail.__doc__ = name, message
    return fail


def install(module) -> None:
    """Adds every RAISES name to `module` (torch.ocl)."""
    for name, reason in RAISES.items():
        setattr(module, name, _raiser(name, reason))
