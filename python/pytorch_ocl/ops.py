"""Direct access to pytorch_ocl's own GEMM and convolution kernels.

`torch.matmul`, `torch.nn.functional.conv2d` and friends already run these kernels on `ocl`
tensors; the functions here call them without the dispatcher in between (no decomposition,
no fallback) and are differentiable through their own backward kernels.

    pytorch_ocl.ops.matmul(a, b)
        a [..., M, K] @ b [..., K, N]; the batch dims of a and b must be equal, or absent on
        one side (then broadcast). Transposed operands (e.g. `x.t()`) are read in place.
        Floating dtypes: float32, float16 and bfloat16 (accumulated in float32), float64.

    pytorch_ocl.ops.conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1)
        Cross-correlation of x [N, C, H, W] with w [K, C / groups, KH, KW] plus bias b [K];
        stride, padding and dilation are ints or pairs. Same result as F.conv2d.

The kernels are tuned per device on first use of a shape class (PYTORCH_OCL_AUTOTUNE=0
turns tuning off; see docs/kernel_cache.md). `gemm_plan(...)` tells which kernel a GEMM would run.
"""
import torch

from . import _C

__all__ = ["matmul", "conv2d", "gemm_plan", "conv_algorithms", "autotune_decisions", "autotune_stats"]


def _pair(v):
    if isinstance(v, int):
        return [v, v]
    v = list(v)
    if len(v) == 1:
        return v * 2
    if len(v) != 2:
        raise ValueError(f"expected an int or a pair, got {v}")
    return v


def _sum_to(grad, like):
    """Sums the broadcast batch dims of `grad` away when `like` had none."""
    if like.dim() == 2 and grad.dim() > 2:
        return grad.reshape(-1, *grad.shape[-2:]).sum(0)
    return grad


class _Matmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _C.ops_matmul(a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        ga = gb = None
        if ctx.needs_input_grad[0]:
            ga = _sum_to(_C.ops_matmul(grad, b.transpose(-1, -2)), a)
        if ctx.needs_input_grad[1]:
            gb = _sum_to(_C.ops_matmul(a.transpose(-1, -2), grad), b)
        return ga, gb


class _Conv2d(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, stride, padding, dilation, groups):
        ctx.save_for_backward(x, w)
        ctx.params = (stride, padding, dilation, groups)
        ctx.has_bias = b is not None
        return _C.ops_conv2d(x, w, b, stride, padding, dilation, groups)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        stride, padding, dilation, groups = ctx.params
        mask = [ctx.needs_input_grad[0], ctx.needs_input_grad[1], ctx.has_bias and ctx.needs_input_grad[2]]
        gx, gw, gb = _C.ops_conv2d_backward(grad, x, w, stride, padding, dilation, groups, mask)
        return gx, gw, gb, None, None, None, None


def matmul(a, b):
    """a [..., M, K] @ b [..., K, N] with pytorch_ocl's GEMM kernel (see the module docs)."""
    return _Matmul.apply(a, b)


def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution with pytorch_ocl's kernels; same semantics as torch.nn.functional.conv2d."""
    if x.dim() != 4 or w.dim() != 4:
        raise ValueError(f"pytorch_ocl.ops.conv2d expects 4-D x and w, got {x.dim()}-D and {w.dim()}-D")
    return _Conv2d.apply(x, w, b, _pair(stride), _pair(padding), _pair(dilation), int(groups))


def gemm_plan(M, N, K, trans_a=False, trans_b=False, batch=1, dtype=torch.float32, device=None):
    """The kernel a GEMM of this shape runs on `device` (tunes it first when tuning is on),
    e.g. 'tiled 128x128x16 t16x16 v4x4 local splits=1', 'small n-fast' or 'dot local=256'."""
    index = torch.device(device).index if device is not None else None
    if index is None:
        index = _C.current_device()
    return _C.gemm_plan(index, M, N, K, trans_a, trans_b, batch, str(dtype).replace("torch.", ""))


def conv_algorithms(input_shape, weight_shape, stride=1, padding=0, dilation=1, groups=1, dtype=torch.float32,
                    device=None):
    """The algorithm each pass of a conv2d layer runs on `device` for contiguous tensors (tunes
    it first when tuning is on): {'forward': 'winograd' | 'implicit <tile config> splits=n' |
    'im2col' | 'gemm1x1' | 'depthwise', 'backward_data': 'winograd' | 'col2im' | ...,
    'backward_weight': ...}."""
    index = torch.device(device).index if device is not None else None
    if index is None:
        index = _C.current_device()
    return dict(_C.conv_algorithms(index, list(input_shape), list(weight_shape), _pair(stride), _pair(padding),
                                   _pair(dilation), int(groups), str(dtype).replace("torch.", "")))


def autotune_decisions():
    """{'family|shape class': config} for every tuning decision made or loaded in this process."""
    return dict(_C.autotune_decisions())


def autotune_stats():
    """{'timed': shape classes tuned by timing, 'loaded': decisions read from the disk cache, 'deferred': classes
    that ran on the default config while their candidates built in the background (PYTORCH_OCL_TUNE_DEFERRED),
    'deferred_tuned': of those, tuned later}."""
    return dict(_C.autotune_stats())
