"""OpInfo yardstick for the layer ops (pooling, norms, upsampling, padding, shuffles): the
first samples of each entry, float32 with input gradients and float64 forward, vs the CPU."""
import pytest
import torch
from opinfo_compare import opinfos_named, run_opinfo

NAMES = [
    "nn.functional.interpolate", "nn.functional.upsample_nearest", "nn.functional.upsample_bilinear",
    "nn.functional.pad", "nn.functional.group_norm", "nn.functional.instance_norm",
    "nn.functional.local_response_norm", "nn.functional.max_pool1d", "nn.functional.max_pool2d",
    "nn.functional.max_pool3d", "nn.functional.avg_pool1d", "nn.functional.avg_pool2d", "nn.functional.avg_pool3d",
    "nn.functional.adaptive_avg_pool1d", "nn.functional.adaptive_avg_pool2d", "nn.functional.adaptive_avg_pool3d",
    "nn.functional.adaptive_max_pool1d", "nn.functional.adaptive_max_pool2d", "nn.functional.adaptive_max_pool3d",
    "nn.functional.max_unpool1d", "nn.functional.max_unpool2d", "nn.functional.max_unpool3d",
    "nn.functional.pixel_shuffle", "nn.functional.pixel_unshuffle", "nn.functional.channel_shuffle",
]
OPS = opinfos_named(NAMES)
# max_unpool with overlapping windows scatters duplicate indices: the winner is unspecified
# (PyTorch's OpInfo skips the comparison for the same reason), so only shapes are compared.
NONDETERMINISTIC = {"nn.functional.max_unpool1d", "nn.functional.max_unpool2d", "nn.functional.max_unpool3d"}


def label(op):
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


@pytest.mark.parametrize("op", OPS, ids=label)
def test_layer_opinfo(op):
    exact = op.name not in NONDETERMINISTIC
    passed, failures = run_opinfo(op, [torch.float32, torch.float64], compare=exact, check_grad=exact, max_samples=8)
    assert not failures, "\n".join(failures[:5])
    assert passed > 0
