"""torch.distributed for ocl tensors: a c10d process group that runs gloo on host copies.

Registered as the c10d backend "ocl_gloo" for the `ocl` device, so CUDA-style code works unchanged:

    dist.init_process_group()                 # no backend: torch picks ours because `ocl` is the accelerator
    dist.init_process_group("cpu:gloo,ocl:ocl_gloo")   # the explicit form
    model = DDP(model.to("ocl:0"))

Every collective stages the ocl tensors into contiguous pinned host buffers, runs gloo's collective on
the host buffers, and copies the results back into the (possibly non-contiguous) ocl tensors. CPU tensors
go to the same gloo instance directly, without staging. We use the field's library (gloo through c10d)
for the transport; only the staging is ours.

Why a Python `ProcessGroup` subclass, not a C++ `c10d::Backend`: torch binds a Python trampoline only for
ProcessGroup (PyProcessGroup), not for Backend, and init_process_group uses a ProcessGroup returned by a
backend's creator as the whole group (see torch's test_c10d_pypg.py). A consequence: this group serves
every device type itself, cpu included, which is what gives `init_process_group()` without a backend
working cpu collectives too (torch 2.13 maps an undefined backend to the accelerator's backend only).
With "cpu:gloo,ocl:ocl_gloo" torch first builds a ProcessGroupGloo for cpu and then discards it when
our group replaces the whole group (its connections stay open until it is collected): harmless, and not
ours to avoid without patching torch. C++ callers (DDP's Reducer, _broadcast_coalesced) reach us through PyProcessGroup's virtual overrides;
the public Python API calls our methods by name, including the ones PyProcessGroup does not forward.

Collectives are asynchronous and stream-ordered (_dist_async.py), as NCCL's: the calling thread only
enqueues non-blocking device->host reads of the ocl inputs (all_reduce and single-tensor broadcast in
chunks of 4 MiB, each with an event) and returns a Work; the group's worker thread runs gloo as the reads
complete and enqueues the write back on a side stream, so DDP's bucketed all-reduce overlaps the backward
pass. The Work's future is device-aware (torch.futures.Future(devices=...)): `wait()` (the Work's, or the
future's that DDP's Reducer calls) blocks the host only until gloo is done and the write back enqueued,
then makes the current stream wait on an event recorded after the write back, so later kernels read the
results without the host waiting for the device. Point-to-point ops stay direct gloo calls: isend/irecv
pairs must be able to be posted before either is waited on, so send reads with a blocking copy and recv
returns a Work that waits for gloo and copies back (on the current stream) inside wait().

Large all-reduces (more than one chunk) spread their chunks over several gloo groups of the same ranks, K in
flight at once (_dist_lanes.py, PYTORCH_OCL_GLOO_LANES): one gloo group is one TCP stream per peer. When every rank of a
group is on this host, its all-reduces of ocl tensors go through a shared-memory segment instead of gloo
(_dist_shm.py, PYTORCH_OCL_DIST_SHM).
"""
import torch

BACKEND_NAME = "ocl_gloo"
_registered = False


def register():
    """Registers the backend with c10d (idempotent; a no-op when torch has no distributed support)."""
    global _registered
    if _registered:
        return
    if not torch.distributed.is_available():
        return
    from torch.distributed import Backend

    Backend.register_backend(BACKEND_NAME, _create_process_group, devices=["ocl"])
    _registered = True


def _create_process_group(store, rank, world_size, timeout):
    return _process_group_class()(store, rank, world_size, timeout)


_pg_class = None


def _process_group_class():
    # Built on first use: defining the subclass needs torch.distributed's classes, which
    # `import pytorch_ocl` (run by `import torch` through autoloading) should not have to touch.
    global _pg_class
    if _pg_class is None:
        from . import _dist_pg

        _pg_class = _dist_pg.OclGlooProcessGroup
    return _pg_class


def shm_trace(group=None):
    """The stage trace (_dist_shm_trace.Trace) of `group`'s shared-memory all-reduces (default: the world
    group), None when the group goes through gloo. `.reset(on=True)` starts recording, `.summary()` gives
    the per-stage breakdown; PYTORCH_OCL_DIST_SHM_TRACE=1 starts it for every group made afterwards."""
    import torch.distributed as dist

    pg = group if group is not None else dist.group.WORLD
    shm = getattr(pg, "_shm", None)
    return shm.trace if shm is not None else None


def device_trace(group=None):
    """The list of `group`'s all-reduces on the devices (peer memory or NCCL; default: the world group) with each
    one's host times (time.perf_counter) of its stages: "staged" (the caller's all_reduce call; NCCL: the copy into
    the staging buffer enqueued), "start" (the group's worker took it), "copied" (the copy in ran on the device),
    "peers" (peer memory only: every rank had posted its copy in), "reduced" (the reduction done: the rank-order
    sum on this device, or NCCL's all-reduce), "back" (the result's copy back enqueued; peer memory reduces into
    the tensor: = reduced), and "bytes"; recorded when PYTORCH_OCL_DIST_DEVICE_TRACE=1 was set before the group
    was made, else None (also when the group's all-reduces do not run on the devices)."""
    import torch.distributed as dist

    pg = group if group is not None else dist.group.WORLD
    link = getattr(pg, "_device_link", None)
    return link.trace if link is not None else None


def ocl_bf16_compress_hook(process_group, bucket) -> torch.futures.Future[torch.Tensor]:
    """torch's DDP comm hook default_hooks.bf16_compress_hook (the bucket cast to bfloat16 and divided by the
    world size, all-reduced, cast back), registrable on an ocl DDP model: `model.register_comm_hook(None,
    pytorch_ocl.distributed.ocl_bf16_compress_hook)`. Why not torch's function itself: register_comm_hook
    refuses a hook named bf16_compress_hook unless CUDA with NCCL 2.10+ or XPU with XCCL is present, but
    ocl_gloo all-reduces bfloat16 too (shared memory and gloo alike)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

    return default_hooks.bf16_compress_hook(process_group, bucket)
