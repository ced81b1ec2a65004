"""Does CUDA work run alongside our OpenCL work on the same NVIDIA GPU? (issue 20: the NCCL transport)

The NCCL transport (_dist_nccl.py) runs NCCL's all-reduce kernels in a CUDA context while the backward pass runs in
NVIDIA's OpenCL context on the same GPU. Kernels of two contexts do not run at once (the GPU time-slices between
them); copy engines may. This probe times, on ocl:0 / cuda:0 in one process, an OpenCL load alone (fp32
matmuls), each CUDA load alone, then the OpenCL load with each CUDA load at once: CUDA matmuls (kernels),
device-to-device copies (cudaMemcpyAsync: a copy engine, or the driver's copy kernel), and copies to cuda:1 when
there is one (NVLink). "both" close to the longer of the two alone: they overlap (1); close to the sum: they take
turns (0). First, how fast OpenCL copies into and out of CUDA memory it imported (the transport's staging
buffers), and with 2 GPUs whether ocl:0 can use memory of GPU 1 imported the same way (peer_import).

Run on the GPU machine: python3 scripts/probe_ctx_overlap.py (prints a table).
"""
import threading
import time

import torch

import pytorch_ocl  # noqa: F401  (registers ocl)


def matmuls(device, n, size=4096):
    """A load of n float32 size^3 matmuls on `device` ("ocl" or "cuda"), waited for at its end."""
    acc = getattr(torch, device)  # torch.ocl / torch.cuda: the same calls
    a = torch.randn(size, size, device=device)
    b = torch.randn(size, size, device=device)
    acc.synchronize()

    def run():
        for _ in range(n):
            torch.mm(a, b)
        acc.synchronize()
    return run


def cuda_copies(dst_device="cuda:0", n=40, mib=512):
    src = torch.empty(mib << 18, device="cuda:0")  # float32: mib MiB
    dst = torch.empty_like(src, device=dst_device)
    torch.cuda.synchronize()

    def run():
        for _ in range(n):
            dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize("cuda:0")
        torch.cuda.synchronize(dst_device)
    return run


def timed(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def together(ocl_fn, cuda_fn):
    """Both loads started at once (CUDA on a thread): (wall, ocl's own time, cuda's own time)."""
    times = {}
    start = threading.Barrier(2)

    def cuda_side():
        start.wait()
        times["cuda"] = timed(cuda_fn)

    th = threading.Thread(target=cuda_side)
    th.start()
    t0 = time.perf_counter()
    start.wait()
    times["ocl"] = timed(ocl_fn)
    th.join()
    return time.perf_counter() - t0, times["ocl"], times["cuda"]


def imported_copies(mib=256, n=20):
    """ms per copy of `mib` MiB on ocl:0: ocl tensor -> ocl tensor, into CUDA memory the OpenCL context imported (as
    the NCCL transport's staging does), and back out of it."""
    import os

    from pytorch_ocl import _C, _dist_nccl

    cuda = _dist_nccl._Cuda(0)
    nbytes = -(-(mib << 20) // cuda.granularity) * cuda.granularity
    ptr, handle, fd = cuda.allocate(nbytes)
    try:
        staged = _C._import_external_memory(fd, nbytes, 0)[: mib << 20].view(torch.float32)
    finally:
        os.close(fd)
    src = torch.randn(mib << 18, device="ocl")
    dst = torch.empty_like(src)

    def per_copy(a, b):
        a.copy_(b)
        torch.ocl.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            a.copy_(b)
        torch.ocl.synchronize()
        return (time.perf_counter() - t) / n * 1e3
    rows = {"ocl -> ocl": per_copy(dst, src), "ocl -> imported": per_copy(staged, src),
            "imported -> ocl": per_copy(dst, staged)}
    assert torch.equal(dst.cpu(), src.cpu())
    del staged
    torch.ocl.synchronize()
    cuda.free(ptr, handle, nbytes)
    return rows


def peer_import(mib=256, n=10):
    """Can ocl:0 use memory that lives on cuda:1? CUDA memory made on GPU 1, exported and imported into ocl:0's
    context, filled by CUDA, then read and written by OpenCL copies on ocl:0 (over NVLink if the driver maps it):
    a transport with no CUDA kernels at all would exchange this way. Returns a line to print."""
    import os

    from pytorch_ocl import _C, _dist_nccl

    cuda = _dist_nccl._Cuda(1)
    nbytes = -(-(mib << 20) // cuda.granularity) * cuda.granularity
    ptr, handle, fd = cuda.allocate(nbytes)
    remote = None
    try:
        try:
            remote = _C._import_external_memory(fd, nbytes, 0)[: mib << 20].view(torch.float32)
        finally:
            os.close(fd)
        with torch.cuda.device(1):
            on_gpu1 = torch.as_tensor(_dist_nccl._CudaArray(ptr, nbytes), device="cuda:1")[: mib << 20]
            on_gpu1.view(torch.float32).copy_(torch.arange(mib << 18, dtype=torch.float32, device="cuda:1"))
            torch.cuda.synchronize(1)
        local = torch.empty(mib << 18, device="ocl")
        local.copy_(remote)
        torch.ocl.synchronize()
        if not torch.equal(local[:1000].cpu(), torch.arange(1000, dtype=torch.float32)):
            return "peer import: ocl:0 read wrong values from cuda:1's memory"
        t = time.perf_counter()
        for _ in range(n):
            local.copy_(remote)
        torch.ocl.synchronize()
        read = (time.perf_counter() - t) / n
        t = time.perf_counter()
        for _ in range(n):
            remote.copy_(local)
        torch.ocl.synchronize()
        write = (time.perf_counter() - t) / n
        gb = (mib << 20) / 1e9
        return (f"peer import: ocl:0 reads cuda:1's memory right; {mib} MiB read in {read * 1e3:.2f} ms "
                f"({gb / read:.0f} GB/s), written in {write * 1e3:.2f} ms ({gb / write:.0f} GB/s)")
    except Exception as e:  # noqa: BLE001  (the answer may be no)
        return f"peer import: failed: {type(e).__name__}: {e}"
    finally:
        remote = None  # the ocl import goes before the CUDA memory it refers to
        torch.ocl.synchronize()
        cuda.free(ptr, handle, nbytes)


def main():
    torch.cuda.init()
    if torch.cuda.device_count() > 1:
        print(peer_import(), flush=True)
    for name, ms in imported_copies().items():
        print(f"copy of 256 MiB, {name}: {ms:.3f} ms ({256 * 2**20 / ms / 1e6:.0f} GB/s)", flush=True)
    loads = {"cuda matmuls (kernels)": matmuls("cuda", 60), "cuda d2d copies (cudaMemcpyAsync)": cuda_copies()}
    if torch.cuda.device_count() > 1:
        loads["cuda copies to cuda:1 (peer)"] = cuda_copies("cuda:1")
    ocl = matmuls("ocl", 40)
    ocl()
    for fn in loads.values():
        fn()  # warm up
    t_ocl = min(timed(ocl) for _ in range(2))
    print(f"ocl matmuls alone: {t_ocl * 1e3:.1f} ms")
    print("| cuda load | cuda alone ms | both wall ms | ocl in both ms | cuda in both ms | overlap |")
    print("|---|---|---|---|---|---|")
    for name, fn in loads.items():
        t_cuda = min(timed(fn) for _ in range(2))
        wall, o, c = together(ocl, fn)
        # 1: the wall time is the longer load's (full overlap); 0: the sum (taking turns)
        overlap = (t_ocl + t_cuda - wall) / min(t_ocl, t_cuda)
        print(f"| {name} | {t_cuda * 1e3:.1f} | {wall * 1e3:.1f} | {o * 1e3:.1f} | {c * 1e3:.1f} | {overlap:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
