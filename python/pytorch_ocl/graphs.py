"""Graph capture and replay on ocl, with torch.cuda's graph API (torch.ocl.OCLGraph, torch.ocl.graph).

Capture records every kernel launch, buffer copy and fill that ops enqueue on the capturing stream
(nothing runs during capture, as on CUDA); replay() enqueues the recorded list again on the current
stream, with no dispatcher, autograd or allocator work. Allocations made during capture come from
the graph's private memory pool, which stays reserved until reset(), so the tensors made during
capture (the graph's static outputs) stay valid across replays and replays write into them.

As on CUDA: capture on a side stream (torch.ocl.graph does it), run the callable a few times
before capture (program builds and autotuning must not happen inside a capture), keep the static
inputs alive and copy new data into them, and do not read device data on the host inside the
captured region (.item(), .cpu(), printing, data-dependent checks raise "... is not permitted while
the stream is capturing a graph"). Random ops draw fresh numbers at every replay (each replay
takes new Philox offsets from the generator, as CUDA's graph-safe RNG); fft and attention with dropout
raise inside a capture.
"""
import gc

import torch

from . import _C

__all__ = ["OCLGraph", "graph", "graph_pool_handle", "make_graphed_callables", "is_current_stream_capturing"]

_capturing_streams = set()  # (device, stream id) pairs that are capturing: is_current_stream_capturing


def graph_pool_handle():
    """A new memory pool handle to share among graphs (pass as `pool=` to graph / capture_begin)."""
    return (0, -_C._new_graph_pool())


def _pool_id(pool):
    if pool is None:
        return 0
    if isinstance(pool, tuple):
        pool = pool[1]
    return -int(pool)


class OCLGraph:
    """A captured sequence of device work (torch.cuda.CUDAGraph's counterpart). Use torch.ocl.graph."""

    def __init__(self, keep_graph: bool = False):
        self._g = _C._Graph()
        self._stream_key = None

    def capture_begin(self, pool=None, capture_error_mode: str = "global"):
        """Starts capturing the current stream (which must not be the default stream)."""
        self._g.capture_begin(_pool_id(pool))
        s = torch.accelerator.current_stream(torch.ocl.current_device())
        self._stream_key = (s.device_index, s.stream_id)
        _capturing_streams.add(self._stream_key)

    def capture_end(self):
        _capturing_streams.discard(self._stream_key)
        self._g.capture_end()

    def _capture_abort(self):
        _capturing_streams.discard(self._stream_key)
        self._g.capture_abort()

    def instantiate(self):
        """No-op: the recorded list is ready to replay when capture ends."""

    def replay(self):
        """Enqueues the captured work on the current stream."""
        self._g.replay()

    def reset(self):
        """Waits for the device, drops the captured work and releases the private memory pool."""
        self._g.reset()

    def pool(self):
        """The handle of this graph's memory pool (pass as `pool=` to share it with another graph)."""
        return (0, -self._g.pool())

    def enable_debug_mode(self):
        """No-op: debug_dump works without it."""

    def debug_dump(self, debug_path: str):
        """Writes one line per recorded item (kernel name and sizes, copy/fill bytes)."""
        with open(debug_path, "w") as f:
            f.write(self._g.describe())

    def num_items(self) -> int:
        """Number of recorded kernel launches, copies and fills (ocl only)."""
        return self._g.num_items()


_default_capture_stream = {}


class graph:
    """`with torch.ocl.graph(g):` captures the block's ocl work into `g` (an OCLGraph), on a side
    stream (`stream`, or one shared by all captures), as torch.cuda.graph does."""

    def __init__(self, ocl_graph: OCLGraph, pool=None, stream=None, capture_error_mode: str = "global"):
        self.ocl_graph = ocl_graph
        self.pool = pool
        self.capture_error_mode = capture_error_mode
        device = torch.ocl.current_device()
        if stream is None:
            if device not in _default_capture_stream:
                _default_capture_stream[device] = torch.ocl.Stream(device)
            stream = _default_capture_stream[device]
        self.capture_stream = stream
        self.stream_ctx = torch.ocl.stream(stream)

    def __enter__(self):
        torch.ocl.synchronize()
        gc.collect()
        torch.ocl.empty_cache()
        self.stream_ctx.__enter__()
        try:
            self.ocl_graph.capture_begin(pool=self.pool, capture_error_mode=self.capture_error_mode)
        except BaseException:
            self.stream_ctx.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc, tb):
        try:
            if exc_type is None:
                self.ocl_graph.capture_end()
            else:
                self.ocl_graph._capture_abort()  # the error raised inside the block propagates
        finally:
            self.stream_ctx.__exit__(None, None, None)
        return False


def is_current_stream_capturing() -> bool:
    """True while the current stream of the current device is capturing a graph."""
    if not _capturing_streams:
        return False
    s = torch.accelerator.current_stream(torch.ocl.current_device())
    return (s.device_index, s.stream_id) in _capturing_streams


def make_graphed_callables(
    callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False, pool=None
):
    """Graphed versions of `callables` (functions or nn.Modules), as torch.cuda.make_graphed_callables:
    each call copies its inputs into the static sample inputs, replays the forward graph and returns
    the static outputs; when inputs or parameters require grad, backward replays a captured backward
    graph. `sample_args` are tuples of tensors; outputs may be any pytree of tensors. All callables
    share one memory pool. Call the graphed callables with inputs of the sample's shapes and dtypes."""
    from torch.utils._pytree import tree_flatten, tree_unflatten

    just_one = not isinstance(callables, tuple)
    if just_one:
        callables, sample_args = (callables,), (sample_args,)
    if torch.is_autocast_enabled():
        raise RuntimeError("make_graphed_callables does not support the autocast caching; call it outside autocast")
    mempool = graph_pool_handle() if pool is None else pool
    results = []
    for func, args in zip(callables, sample_args):
        if not isinstance(args, tuple):
            args = (args,)
        for a in args:
            if not isinstance(a, torch.Tensor) or a.device.type != "ocl":
                raise TypeError("make_graphed_callables: sample_args must be ocl tensors")
        params = tuple(func.parameters()) if isinstance(func, torch.nn.Module) else ()
        inputs = args + params
        needs_grad = torch.is_grad_enabled() and any(t.requires_grad for t in inputs)
        grad_inputs = tuple(t for t in inputs if t.requires_grad)

        def run_backward(outs, grad_outs):
            diff = [(o, g) for o, g in zip(outs, grad_outs) if o.requires_grad]
            return torch.autograd.grad(
                [o for o, _ in diff], grad_inputs, [g for _, g in diff], allow_unused=allow_unused_input
            )

        side = torch.ocl.Stream()
        side.wait_stream(torch.ocl.current_stream())
        with torch.ocl.stream(side):  # warmup: program builds and autotuning happen outside the capture
            for _ in range(num_warmup_iters):
                outs, _ = tree_flatten(func(*args))
                if needs_grad:
                    run_backward(outs, [torch.ones_like(o) for o in outs])
            del outs
        torch.ocl.synchronize()

        fwd = OCLGraph()
        with graph(fwd, pool=mempool):
            static_out = func(*args)
        static_outs, spec = tree_flatten(static_out)
        static_grad_outs, static_grads, bwd = None, None, None
        if needs_grad:
            static_grad_outs = [torch.empty_like(o) if o.requires_grad else None for o in static_outs]
            bwd = OCLGraph()
            with graph(bwd, pool=mempool):
                static_grads = run_backward(static_outs, static_grad_outs)
        results.append(_graphed(func, args, params, grad_inputs, fwd, bwd, static_outs, spec, static_grad_outs,
                                static_grads, tree_unflatten))
    return results[0] if just_one else tuple(results)


def _graphed(func, args, params, grad_inputs, fwd, bwd, static_outs, spec, static_grad_outs, static_grads,
             tree_unflatten):
    n_args = len(args)
    grad_index = {id(t): i for i, t in enumerate(grad_inputs)}

    class Graphed(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *inputs):
            for static, new in zip(args, inputs[:n_args]):
                if static.data_ptr() != new.data_ptr():
                    static.copy_(new)
            fwd.replay()
            return tuple(o.detach() for o in static_outs)

        @staticmethod
        def backward(ctx, *grads):
            if bwd is None:
                raise RuntimeError("this graphed callable was captured without gradients")
            for static, g in zip(static_grad_outs, grads):
                if static is not None:
                    if g is None:
                        static.zero_()
                    elif static.data_ptr() != g.data_ptr():
                        static.copy_(g)
            bwd.replay()
            out = []
            for t in args + params:
                i = grad_index.get(id(t))
                g = static_grads[i] if i is not None else None
                out.append(g.detach() if g is not None else None)
            return tuple(out)

    def graphed(*user_args):
        if len(user_args) != n_args:
            raise TypeError(f"graphed callable takes {n_args} tensor arguments, got {len(user_args)}")
        outs = Graphed.apply(*(user_args + params))
        return tree_unflatten(list(outs), spec)

    if isinstance(func, torch.nn.Module):
        original = func.forward

        def forward(*user_args):
            return graphed(*user_args) if func.training == training else original(*user_args)

        training = func.training
        func.forward = forward
        return func
    return graphed
