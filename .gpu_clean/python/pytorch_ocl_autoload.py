"""Entry point for torch's backend autoloading (`torch.backends` entry point).

torch calls `load()` at the end of `import torch`; it must never raise, or `import torch`
itself would fail. A machine without OpenCL gets a registered but unavailable device.
This is a top-level module, not `pytorch_ocl._autoload`: importing a submodule runs the
package's `__init__` first, outside of the try below, so a broken install (no OpenCL
loader library, a torch ABI mismatch) would break `import torch`.
"""


def load():
    try:
        import pytorch_ocl  # noqa: F401  (importing registers the device)
    except Exception as exc:  # pragma: no cover - exercised only on broken installs
        import warnings

        warnings.warn(f"pytorch_ocl could not be loaded: {exc}", RuntimeWarning, stacklevel=2)
