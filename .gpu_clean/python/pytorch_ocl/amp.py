"""torch.ocl.amp: torch.cuda.amp's spellings bound to the ocl device, for code written as
`torch.<device>.amp.autocast()`. They are torch.amp's classes with device_type="ocl"."""
import functools

import torch

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd", "amp_definitely_not_available"]


class autocast(torch.amp.autocast):
    def __init__(self, enabled: bool = True, dtype: torch.dtype = torch.float16, cache_enabled: bool = True):
        super().__init__("ocl", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(torch.amp.GradScaler):
    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        super().__init__("ocl", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


custom_fwd = functools.partial(torch.amp.custom_fwd, device_type="ocl")
custom_bwd = functools.partial(torch.amp.custom_bwd, device_type="ocl")


def amp_definitely_not_available() -> bool:
    return not torch.ocl.is_available()
