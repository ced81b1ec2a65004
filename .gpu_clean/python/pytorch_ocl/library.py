"""Registering user kernels as PyTorch custom ops (autograd, torch.compile, profiler).

    @pytorch_ocl.library.custom_op("mylib::scale", fake=lambda x, a: torch.empty_like(x),
                                   backward=lambda ctx, g: (scale(g, ctx.a), None),
                                   setup_context=lambda ctx, inputs, output: setattr(ctx, "a", inputs[1]))
    def scale(x: torch.Tensor, a: float) -> torch.Tensor:
        y = torch.empty_like(x)
        SCALE_KERNEL(y, x, float32(a), global_size=x.numel())
        return y

This is torch.library.custom_op plus the two registrations every kernel op needs: a fake
(meta) implementation, which tells torch.compile and other tracers the output's shape and
dtype without running the kernel, and optionally an autograd formula. Types in the
signature are required by torch.library (Tensor, float, int, bool, lists of them).
"""
import torch

__all__ = ["custom_op"]


def custom_op(qualname, fn=None, *, fake, backward=None, setup_context=None, mutates_args=()):
    def wrap(f):
        op = torch.library.custom_op(qualname, mutates_args=mutates_args)(f)
        op.register_fake(fake)
        if backward is not None:
            op.register_autograd(backward, setup_context=setup_context)
        return op

    return wrap(fn) if fn is not None else wrap
