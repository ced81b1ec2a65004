"""uint8 bilinear / bicubic interpolation, plain and antialiased (UpsampleUint8.cpp), bit for bit against the
CPU's fixed-point kernels: channel counts the CPU sends to its AVX2 path (<= 4) and to its generic separable
path (> 4), channels_last and sliced inputs, up- and down-scaling per axis (one pass skipped when a size is
unchanged), align_corners, scale factors with and without recompute_scale_factor, an empty batch; uint8
linear / trilinear still raise, as on the CPU."""
import itertools

import pytest
import torch
import torch.nn.functional as F

import pytorch_ocl  # noqa: F401

MODES = list(itertools.product(["bilinear", "bicubic"], [False, True]))  # (mode, antialias)


def _images(c, h, w, n=2, seed=0):
    return torch.randint(0, 256, (n, c, h, w), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))


def _check(x, **kw):
    want = F.interpolate(x, **kw)
    got = F.interpolate(x.to("ocl"), **kw)
    assert got.dtype == torch.uint8 and got.shape == want.shape
    diff = (got.cpu().int() - want.int()).abs().max().item() if want.numel() else 0
    assert diff == 0, f"{kw}: max difference {diff}"


@pytest.mark.parametrize("mode,antialias", MODES)
def test_uint8_sizes_match_cpu(mode, antialias):
    for c, h, w in [(3, 17, 23), (1, 8, 8), (6, 20, 13)]:
        x = _images(c, h, w)
        for size in [(2 * h, 3 * w), (h // 2 + 1, w // 3 + 1), (h, 2 * w), (7, w), (h + 3, w - 5)]:
            for align in (False, True):
                _check(x, size=size, mode=mode, antialias=antialias, align_corners=align)
        _check(x.contiguous(memory_format=torch.channels_last), size=(h + 5, w // 2), mode=mode,
               antialias=antialias)


@pytest.mark.parametrize("mode,antialias", MODES)
def test_uint8_scale_factors_and_views(mode, antialias):
    x = _images(4, 15, 22, seed=1)
    for sf in (1.7, 0.45, 2.0):
        _check(x, scale_factor=sf, mode=mode, antialias=antialias)
        _check(x, scale_factor=sf, mode=mode, antialias=antialias, recompute_scale_factor=False)
    _check(_images(5, 30, 40, seed=2)[:, 1:4, ::2, 3:], size=(9, 31), mode=mode, antialias=antialias)
    _check(_images(3, 6, 7, n=0), size=(12, 3), mode=mode, antialias=antialias)
    if mode == "bilinear" and not antialias:  # the out= form (channels_last out) writes the same values
        out = torch.empty(2, 4, 8, 9, dtype=torch.uint8, device="ocl").contiguous(memory_format=torch.channels_last)
        torch._C._nn.upsample_bilinear2d(x.to("ocl"), (8, 9), False, out=out)
        assert torch.equal(out.cpu(), torch._C._nn.upsample_bilinear2d(x, (8, 9), False))


def test_uint8_other_modes_raise_as_cpu():
    x = _images(2, 5, 6)
    for kw in (dict(size=9, mode="linear"), dict(size=(3, 9, 9), mode="trilinear")):
        xi = x[:, :, 0] if kw["mode"] == "linear" else x.unsqueeze(2)
        with pytest.raises(RuntimeError):
            F.interpolate(xi, **kw)
        with pytest.raises((RuntimeError, TypeError)):
            F.interpolate(xi.to("ocl"), **kw)
