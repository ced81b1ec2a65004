"""Upsampling / F.interpolate forward and backward against the CPU."""
import pytest
import torch
import torch.nn.functional as F
from layer_check import check

CL = lambda t: t.contiguous(memory_format=torch.channels_last)  # noqa: E731
TR = lambda t: t.transpose(-1, -2)  # noqa: E731

CASES_2D = [  # mode, align_corners
    ("nearest", None), ("nearest-exact", None), ("bilinear", False), ("bilinear", True), ("bicubic", False),
    ("bicubic", True),
]


@pytest.mark.parametrize("mode,align", CASES_2D)
@pytest.mark.parametrize("size,scale", [((13, 7), None), ((4, 3), None), ((1, 1), None), (None, 2.0), (None, 0.6),
                                        (None, (1.7, 3.0))])
def test_interpolate_2d(mode, align, size, scale):
    x = torch.randn(2, 3, 6, 5)
    check(lambda t: F.interpolate(t, size=size, scale_factor=scale, mode=mode, align_corners=align), x,
          dtype=torch.float64)


@pytest.mark.parametrize("mode,align", CASES_2D)
def test_interpolate_2d_layouts_float(mode, align):
    x = torch.randn(1, 4, 7, 9)
    fn = lambda t: F.interpolate(t, size=(10, 5), mode=mode, align_corners=align)  # noqa: E731
    check(fn, x)
    check(fn, x, layout=CL)
    check(fn, x, layout=TR)
    check(fn, x[:, :, ::2], layout=None)
    check(lambda t: F.interpolate(t, scale_factor=2.5, mode=mode, align_corners=align, recompute_scale_factor=True), x)


@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None), ("linear", False),
                                        ("linear", True)])
@pytest.mark.parametrize("size,scale", [(17, None), (3, None), (None, 1.5), (None, 0.5)])
def test_interpolate_1d(mode, align, size, scale):
    x = torch.randn(3, 2, 8)
    check(lambda t: F.interpolate(t, size=size, scale_factor=scale, mode=mode, align_corners=align), x,
          dtype=torch.float64)


@pytest.mark.parametrize("mode,align", [("nearest", None), ("nearest-exact", None), ("trilinear", False),
                                        ("trilinear", True)])
@pytest.mark.parametrize("size,scale", [((5, 7, 3), None), (None, 2.0), (None, 0.75)])
def test_interpolate_3d(mode, align, size, scale):
    x = torch.randn(1, 2, 4, 5, 3)
    check(lambda t: F.interpolate(t, size=size, scale_factor=scale, mode=mode, align_corners=align), x,
          dtype=torch.float64)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic"])
def test_interpolate_low_precision(dtype, mode):
    check(lambda t: F.interpolate(t, scale_factor=2, mode=mode), torch.randn(2, 3, 5, 4), dtype=dtype)


def test_upsample_modules_and_empty_batch():
    x = torch.randn(1, 2, 3, 4)
    check(torch.nn.Upsample(scale_factor=3, mode="nearest"), x)
    check(torch.nn.UpsamplingBilinear2d(scale_factor=2), x)
    e = torch.randn(0, 2, 3, 4)
    assert F.interpolate(e.to("ocl"), scale_factor=2).shape == (0, 2, 6, 8)


def test_upsample_errors():
    with pytest.raises(RuntimeError):
        torch.ops.aten.upsample_nearest2d(torch.randn(1, 2, 3, 4, device="ocl"), [0, 3])
    with pytest.raises(TypeError):
        F.interpolate(torch.ones(1, 1, 2, 2, dtype=torch.int32, device="ocl"), scale_factor=2, mode="bilinear")


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("size,scale", [((3, 2), None), ((13, 4), None), (None, 0.3), (None, 1.5)])
def test_interpolate_antialias(mode, align, size, scale):
    x = torch.randn(2, 3, 11, 9)
    fn = lambda t: F.interpolate(t, size=size, scale_factor=scale, mode=mode, align_corners=align,  # noqa: E731
                                 antialias=True)
    check(fn, x, dtype=torch.float64)
    check(fn, x, layout=CL)
