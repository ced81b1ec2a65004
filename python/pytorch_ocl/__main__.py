"""`python -m pytorch_ocl` / `pytorch-ocl`: versions, devices, kernel cache and settings, for bug reports;
`python -m pytorch_ocl cache info|export|import|warmup`: the kernel cache (pytorch_ocl/cache.py)."""
import os
import sys

ENV_VARS = (
    ("PYTORCH_OCL_STRICT", "1: CPU fallbacks raise NotImplementedError"),
    ("PYTORCH_OCL_CACHE_DIR", "kernel binary cache directory"),
    ("PYTORCH_OCL_BUILD_THREADS", "threads building programs at once (1: one at a time)"),
    ("PYTORCH_OCL_BUILD_PROCESSES", "helper processes building tuning candidates at once (default 8 on NVIDIA, 0 elsewhere)"),
    ("PYTORCH_OCL_BINARY_WORKER", "1/0: CPU devices' disk-cache binaries made by a build worker in the background (default on)"),
    ("PYTORCH_OCL_SPECULATIVE_BUILDS", "1/0: background builds of the programs an op knows the step needs next (default: on GPUs)"),
    ("PYTORCH_OCL_TRACE_BUILDS", "1: a stderr line per program build and tuning; a directory: also the sources"),
    ("PYTORCH_OCL_DEVICES", "filter/order devices"),
    ("PYTORCH_OCL_MEMORY_LIMIT", "cap on device memory in bytes"),
    ("PYTORCH_OCL_DEBUG", "1: trace device operations on stderr"),
    ("PYTORCH_OCL_EXTRA_BUILD_OPTIONS", "appended to every OpenCL program build"),
    ("PYTORCH_OCL_AUTOTUNE", "0: built-in kernel configs; force: re-time every shape class"),
    ("PYTORCH_OCL_TUNE", "random:SEED: every tunable choice random (tests)"),
    ("PYTORCH_OCL_SDPA", "math: scaled_dot_product_attention without the fused kernel"),
    ("PYTORCH_OCL_ATTN_TILED", "BQ,BK,KC,NTC or 0: the attention forward's tile layout"),
    ("PYTORCH_OCL_ATTN_MMA", "0: fused attention on the FMA kernels, not the matrix engine (default on); NW,BKT,PREFETCH: mma layout"),
    ("PYTORCH_OCL_ATTN_BWD_TILED", "0 (row kernels), 1 (default), BQ,BK,NTC or dq[=BQ,BK,NTC]+dkdv[=BQ,BK,NTC]: the attention backward on register tiles"),
    ("PYTORCH_OCL_ATTN_MMA_BWD", "dq=NW,BKT[,split][,rN]+dkdv=...: the matrix engine's attention backward layouts (experiments)"),
    ("PYTORCH_OCL_WGMMA", "0: products on Hopper (sm_90) on mma.sync instead of wgmma (default there for 16-bit and "
                           "TF32/3xTF32 products with M/N/K >= 1024; timed against mma.sync for those of >= one tile per "
                           "compute unit, M/N/K >= 128); 1: wgmma for every size; tune: the timed choice, emulated too; "
                           "rule: that range on wgmma untimed"),
    ("PYTORCH_OCL_SPLIT_WAVES", "W (1-64): split-K aims at W work-groups per compute unit (default 2 on GPUs, 1 on CPUs; experiments)"),
    ("PYTORCH_OCL_WGMMA_MARGIN", "X (default 1.25): wgmma taken untuned where it beats the fallback tile config X times "
                                 "(timed range; 0: always; experiments)"),
    ("PYTORCH_OCL_WGMMA_TILE", "BN,STAGES: the wgmma kernel's tile columns (64/128/256) and K stages (default 128,5; experiments)"),
    ("PYTORCH_OCL_CONV_IMPLICIT_MMA", "0: the implicit-GEMM convolution forward's matrix-engine configs stay out of its tuning"),
    ("PYTORCH_OCL_ATTN_BWD_ONEPASS", "1: the matrix engine's attention backward in one kernel (dq added in a fixed order by the dk/dv pass) where it applies (default 0: two passes, faster on an H200); NW,BKT: its layout"),
    ("PYTORCH_OCL_ATTN_MASK_BLOCKS", "0: fused attention reads the whole mask (no skipped all-masked tiles, no unread all-visible ones)"),
    ("PYTORCH_OCL_RNN", "steps: nn.LSTM/nn.GRU step by step instead of whole layers"),
    ("PYTORCH_OCL_LSTM_FUSED", "1/0: whole-layer nn.LSTM steps fused (GEMM + cell, one launch) or not; unset: GPUs, by shape"),
    ("PYTORCH_OCL_GRU_FUSED", "1/0: whole-layer nn.GRU steps fused (GEMM + cell, one launch) or not; unset: GPUs, by shape"),
    ("PYTORCH_OCL_RNN_KSPLIT", "n: the fused LSTM / GRU steps split K over at most n slices of a group (unset: GPUs the most that fit, CPUs 1)"),
    ("PYTORCH_OCL_LINALG_ON_CHIP", "0/1: blocked Cholesky's diagonal blocks, LU's leaves and small triangular solves on chip or not (default: Cholesky on, the others on GPUs)"),
    ("PYTORCH_OCL_EIGH_QL_SWEEPS", "QL sweeps per eigenvalue before eigh raises its failure to converge (default 60)"),
    ("PYTORCH_OCL_GLOO_LANES", "ocl_gloo: parallel gloo groups per large all_reduce (default min(4, CPUs / local ranks); 1: one)"),
    ("PYTORCH_OCL_DIST_PEER", "ocl_gloo: 0 leaves all-reduces to NCCL or the host path (default 1: each GPU of one host "
                              "reads the others' memory, no CUDA kernels); emulate: tests on CPU devices"),
    ("PYTORCH_OCL_DIST_NCCL", "ocl_gloo: 0 keeps all-reduces on the host path (default 1: through NCCL on the devices "
                              "where every rank's NVIDIA GPU imports CUDA memory); emulate: tests on CPU devices"),
    ("PYTORCH_OCL_DIST_DEVICE_TRACE", "ocl_gloo peer-memory / NCCL transport: 1 records each all-reduce's stage times (pytorch_ocl.distributed.device_trace)"),
    ("PYTORCH_OCL_DIST_NCCL_POLL_US", "ocl_gloo peer-memory / NCCL transport: n > 0 polls the device events every n microseconds instead of waiting in the driver (default 0)"),
    ("PYTORCH_OCL_DIST_SHM", "ocl_gloo: 0 keeps gloo for ranks on one host (default 1: shared-memory all_reduce)"),
    ("PYTORCH_OCL_DIST_SHM_SETS", "ocl_gloo shared memory: slot sets, pieces in flight up to 3 (default 3; 1: one at a time)"),
    ("PYTORCH_OCL_DIST_SHM_PIECE_KIB", "ocl_gloo shared memory: largest piece in KiB (default and at most 4096)"),
    ("PYTORCH_OCL_DIST_SHM_STAGE_THREADS", "ocl_gloo shared memory: 1 (default) device reads and write backs on a reader and a writer thread; 0: on the caller and the worker"),
    ("PYTORCH_OCL_DIST_SHM_TRACE", "1: ocl_gloo shared memory records per-piece stage times (distributed.shm_trace)"),
)


def _device_lines(torch, index):
    p = torch.ocl.get_device_properties(index)
    rows = [
        ("name", p.name),
        ("vendor", p.vendor),
        ("platform", p.platform),
        ("type", p.type),
        ("driver_version", p.driver_version),
        ("opencl_c_version", p.opencl_c_version),
        ("compute_units", p.compute_units),
        ("total_memory", f"{p.total_memory / 2**20:.0f} MiB"),
        ("local_memory", f"{p.local_memory / 2**10:.0f} KiB"),
        ("max_work_group_size", p.max_work_group_size),
        ("fp64", p.fp64),
        ("fp16", p.fp16),
        ("matrix_engine", torch.ocl.matrix_engine(index)["description"]),
    ]
    width = max(len(k) for k, _ in rows)
    return [f"ocl:{index}"] + [f"    {k:<{width}}  {v}" for k, v in rows]


def native_ops():
    """aten operators with an ocl kernel (base names, overloads folded), from the dispatcher."""
    import torch

    import pytorch_ocl  # noqa: F401  (registers the kernels when autoloading is off)

    # Sparse COO and CSR tensors on ocl have their own dispatch keys.
    regs = [r for key in ("PrivateUse1", "SparsePrivateUse1", "SparseCsrPrivateUse1")
            for r in torch._C._dispatch_get_registrations_for_dispatch_key(key)]
    return sorted({r.split("::", 1)[1].split(".")[0] for r in regs if r.startswith("aten::")})


def main(argv=None) -> int:
    import torch

    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["cache"]:
        from pytorch_ocl import cache

        return cache.main(argv[1:])
    if "--ops" in argv:
        ops = native_ops()
        print("\n".join(ops))
        print(f"# {len(ops)} aten operators with an ocl kernel", file=sys.stderr)
        return 0

    import pytorch_ocl
    from pytorch_ocl import _C

    print(f"pytorch_ocl {pytorch_ocl.__version__}")
    print(f"torch       {torch.__version__} (pytorch_ocl built against torch {_C.torch_version_built})")
    print()

    n = torch.ocl.device_count()
    if n == 0:
        reason = _C.enumeration_error() or "no OpenCL platform reported a device"
        print(f"no OpenCL device: {reason}")
    else:
        print(f"{n} OpenCL device{'s' if n != 1 else ''}:")
        for i in range(n):
            print("\n".join("  " + line for line in _device_lines(torch, i)))
    print()

    print(f"kernel cache: {_C.disk_cache_path()}")
    if not _C.disk_cache_compiled:
        print("disk cache:   not available (built without SQLite3 headers)")
    else:
        usable = _C.disk_cache_usable()
        print(f"disk cache:   compiled in, {'usable' if usable else 'NOT usable'}")
        warning = _C.disk_cache_warning() if hasattr(_C, "disk_cache_warning") else ""
        if warning:
            print(f"              {warning}")
    print(f"strict mode:  {pytorch_ocl.is_strict()}")
    print()

    print("environment:")
    width = max(len(name) for name, _ in ENV_VARS)
    for name, meaning in ENV_VARS:
        value = os.environ.get(name)
        shown = repr(value) if value is not None else "(unset)"
        print(f"  {name:<{width}}  {shown:<12}  {meaning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
