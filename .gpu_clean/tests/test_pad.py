"""Padding (reflect, replicate, circular, constant) forward and backward against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from layer_check import check

CL = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731

PADS = {1: [(2, 3), (0, 1), (3, 0), (-1, 2)], 2: [(1, 2, 3, 0), (2, 2, 2, 2), (0, -1, 1, 1)],
        3: [(1, 0, 2, 1, 1, 2), (1, 1, 1, 1, 1, 1)]}
SHAPES = {1: [(2, 3, 7), (3, 5)], 2: [(2, 3, 5, 6), (1, 4, 4)], 3: [(1, 2, 3, 4, 5), (2, 3, 3, 4)]}


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_pad_modes(mode, k):
    for shape in SHAPES[k]:
        for pad in PADS[k]:
            check(lambda t: F.pad(t, pad, mode=mode), torch.randn(shape), dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_dtypes_and_layouts(dtype, mode):
    x = torch.randn(2, 3, 6, 5)
    fn = lambda t: F.pad(t, (2, 1, 3, 2), mode=mode)  # noqa: E731
    check(fn, x, dtype=dtype)
    check(fn, x, dtype=dtype, layout=CL)
    check(fn, x, dtype=dtype, layout=lambda t: t.transpose(-1, -2))
    check(lambda t: F.pad(t, (2, 1, 2, 1), mode=mode), x[:, :, ::2], dtype=dtype)


def test_pad_modules_and_constant_value():
    x = torch.randn(1, 2, 5, 5)
    check(torch.nn.ReflectionPad2d(2), x)
    check(torch.nn.ReplicationPad3d((1, 2, 0, 1, 2, 0)), torch.randn(1, 1, 3, 4, 5))
    check(torch.nn.ZeroPad2d((1, 0, 2, 3)), x)
    check(lambda t: F.pad(t, (1, 2, 3, 4), value=2.5), x)


def test_pad_errors():
    with pytest.raises(RuntimeError):
        F.pad(torch.randn(1, 1, 3, 3, device="ocl"), (3, 3, 0, 0), mode="reflect")
