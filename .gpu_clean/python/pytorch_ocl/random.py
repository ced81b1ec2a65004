"""Seeding and RNG state of the per-device Philox generators (torch.ocl.*), as in torch.cuda."""
import torch

from . import _C
from .device import _index, device_count

__all__ = [
    "default_generators",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "initial_seed",
    "get_rng_state",
    "set_rng_state",
    "get_rng_state_all",
    "set_rng_state_all",
]


class _DefaultGenerators:
    """Lazy tuple-like access to each device's default torch.Generator."""

    def __getitem__(self, idx):
        if not 0 <= idx < device_count():
            raise IndexError(f"ocl device index {idx} out of range ({device_count()} devices)")
        return _C.default_generator(idx)

    def __len__(self):
        return device_count()


default_generators = _DefaultGenerators()


def manual_seed(seed: int, device=None) -> None:
    if device_count():
        _C.default_generator(_index(device)).manual_seed(int(seed))


def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _C.default_generator(i).manual_seed(int(seed))


def seed(device=None) -> None:
    if device_count():
        _C.default_generator(_index(device)).seed()


def seed_all() -> None:
    for i in range(device_count()):
        _C.default_generator(i).seed()


def initial_seed(device=None) -> int:
    return _C.default_generator(_index(device)).initial_seed()


def get_rng_state(device="ocl") -> torch.Tensor:
    return _C.default_generator(_index(device)).get_state()


def set_rng_state(new_state: torch.Tensor, device="ocl") -> None:
    _C.default_generator(_index(device)).set_state(new_state.cpu())


def get_rng_state_all():
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(states) -> None:
    for i, state in enumerate(states):
        set_rng_state(state, i)
