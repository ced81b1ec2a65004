"""Entry point for torch's backend autoloading (`torch.backends` entry point).

torch calls `load()` at the end of `import torch`; it must never raise, or `import torch`
itself would fail. A machine without OpenCL gets a registered but unavailable device.
"""


def load():
    try:
        import pytorch_ocl  # noqa: F401  (importing registers the device)
    except Exception as exc:  # pragma: no cover - exercised only on broken installs
        import warnings

        warnings.warn(f"pytorch_ocl could not be loaded: {exc}", RuntimeWarning, stacklevel=2)
