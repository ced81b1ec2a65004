"""PyTorch on OpenCL devices: the `ocl` device.

Importing this package (torch does it by itself through autoloading) registers the
device: `torch.randn(3, device="ocl")`, `model.to("ocl:0")`, and the `torch.ocl` module.
"""
import atexit

import torch

from . import _C, _env, library, profiler
from ._registration import register
from .kernel import (  # noqa: F401
    Kernel,
    LocalMemory,
    build_kernels,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from .device import (  # noqa: F401  (public API)
    current_device,
    device,
    device_count,
    get_device_name,
    get_device_properties,
    is_available,
    matrix_engine,
    set_device,
    synchronize,
)
from .memory import (  # noqa: F401
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    memory_allocated,
    memory_reserved,
    memory_stats,
    reset_peak_memory_stats,
)
from .random import (  # noqa: F401
    get_rng_state,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    set_rng_state,
)

__version__ = "0.1.0"


def fallback_stats():
    """Calls per op that ran on the CPU because the ocl device has no kernel for it."""
    return dict(_C.fallback_stats())


def reset_fallback_stats():
    _C.reset_fallback_stats()


def set_strict(strict: bool):
    """Make CPU fallbacks errors (`True`) or warnings; the default comes from PYTORCH_OCL_STRICT."""
    _C.set_strict(bool(strict))


def is_strict() -> bool:
    return _C.is_strict()


def program_cache_stats():
    """This process's program builds from source and binaries loaded from the disk cache, with the wall
    seconds spent in each (build_seconds sums over the build threads, PYTORCH_OCL_BUILD_THREADS;
    binary_seconds: fetching built binaries for the disk cache, on a background thread). builds splits into
    critical_builds (on the thread of the op that needed the program, or its tuning's build threads) and
    background_builds (speculative builds of programs needed soon, build_in_background); background_used counts
    background programs an op then asked for, background_waits the requests that waited for one still building.
    wait_program_seconds / wait_parallel_seconds: wall time an op's own thread waited for single programs (built,
    loaded, or built meanwhile by another thread) / for a tuning's candidates built side by side: a cold step's
    critical path in builds. worker_binaries: binaries stored in the disk cache that a build worker process made
    (CPU devices: PYTORCH_OCL_BINARY_WORKER), also counted in worker_builds."""
    return dict(_C.program_cache_stats())


# Binaries of programs built are stored by a background thread: let it finish before the process ends.
atexit.register(_C.flush_program_cache)
# The autograd engine's ocl threads drop a finished backward pass's Python objects a moment after the caller
# returns: let them be done before the interpreter is finalized (taking the GIL then aborts the process).
atexit.register(_C.finish_autograd_threads)
_env.install()  # os.putenv / os.unsetenv under dlprim's environment lock, before any background build


register()
from . import distributed  # noqa: E402  (c10d backend "ocl_gloo" for the ocl device)

distributed.register()
from . import ops  # noqa: E402,F401  (pytorch_ocl.ops: direct GEMM / convolution kernels)
