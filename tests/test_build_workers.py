"""Program builds in helper processes (dlprim/src/build_workers.cpp, the ocl_build_worker executable).

On NVIDIA the tuner's candidate builds go to helper processes (one OpenCL compiler per process builds one
program at a time there). PoCL builds in threads, so here PYTORCH_OCL_BUILD_PROCESSES forces the workers on,
each run in a fresh process with an empty kernel cache: results must equal the CPU's, the builds must have
happened in workers, no worker may outlive the tuning, and every way a worker can fail must end in a build in
the process itself, with the same result or the same error as without workers.
"""
import os

import pytest

import pytorch_ocl

pytestmark = pytest.mark.skipif(
    not os.access(os.path.join(os.path.dirname(pytorch_ocl._C.__file__), "ocl_build_worker"), os.X_OK),
    reason="ocl_build_worker is not installed next to the extension")

# A GEMM shape class that tunes (several candidates: parallel_builds), checked against the CPU.
GEMM = """
import json, os, subprocess, torch, pytorch_ocl
a = torch.randn(300, 200); b = torch.randn(200, 100)
r = (a.to('ocl') @ b.to('ocl')).cpu()
err = (r - a @ b).abs().max().item()
pytorch_ocl._C.flush_program_cache()  # speculative builds of the backward's products (background workers) end
kids = subprocess.run(['ps', '--no-headers', '-o', 'comm', '--ppid', str(os.getpid())], capture_output=True,
                      text=True).stdout.split()
print(json.dumps(dict(err=err, kids=[k for k in kids if 'ocl_build' in k], **pytorch_ocl.program_cache_stats())))
"""


def run_gemm(run_py, tmp_path, **env):
    base = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "ocl"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
            "PYTORCH_OCL_AUTOTUNE": None, "PYTORCH_OCL_TUNE": None,  # ordinary tuning, on the call
            "PYTORCH_OCL_TUNE_DEFERRED": "0", "PYTORCH_OCL_BINARY_WORKER": "0",  # the tuning's workers alone
            "PYTORCH_OCL_WGMMA": "0"}  # the tiled kernel's tuning (sm_90 runs float32 products on wgmma, untuned)
    import json
    return json.loads(run_py(GEMM, env={**base, **env}).stdout.strip().splitlines()[-1])


def test_tuning_builds_in_worker_processes(run_py, tmp_path):
    r = run_gemm(run_py, tmp_path, PYTORCH_OCL_BUILD_PROCESSES="2")
    assert r["err"] < 1e-3
    assert r["worker_builds"] >= 2, r  # the candidates went to the workers
    assert r["kids"] == [], "a build worker outlived the tuning"


def test_default_workers_on_nvidia_only(run_py, tmp_path):
    import torch

    nvidia = "NVIDIA" in torch.ocl.get_device_properties(0).vendor
    r = run_gemm(run_py, tmp_path, PYTORCH_OCL_BUILD_PROCESSES=None)
    assert r["err"] < 1e-3
    assert (r["worker_builds"] > 0) == nvidia, r


@pytest.mark.parametrize("worker", ["/nonexistent/ocl_build_worker", "/bin/false"])
def test_a_missing_or_dead_worker_builds_locally(run_py, tmp_path, worker):
    """/bin/false starts and exits at once: the parent's writes then fail (no SIGPIPE may kill it)."""
    r = run_gemm(run_py, tmp_path, PYTORCH_OCL_BUILD_PROCESSES="2", PYTORCH_OCL_BUILD_WORKER=worker)
    assert r["err"] < 1e-3 and r["worker_builds"] == 0 and r["builds"] >= 2


def test_build_error_through_workers_keeps_the_build_log(run_py, tmp_path):
    code = """
    import torch, pytorch_ocl
    good = pytorch_ocl.Kernel("__kernel void ok(__global float* x, ulong xo) { x[xo] = 1; }", "ok")
    bad = pytorch_ocl.Kernel("__kernel void broken(__global float* x, ulong xo) { x[xo] = undeclared_name; }", "broken")
    try:
        pytorch_ocl.build_kernels([good, bad])
    except RuntimeError as e:
        print("ERROR", e)
    x = torch.zeros(1, device="ocl")
    good(x, global_size=[1])
    print("GOOD", x.item(), pytorch_ocl.program_cache_stats()["worker_builds"])
    """
    out = run_py(code, env={"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "ocl"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
                            "PYTORCH_OCL_BUILD_PROCESSES": "2", "PYTORCH_OCL_BINARY_WORKER": "0"}).stdout
    assert "1 of 2 kernels failed to build" in out and "broken" in out and "undeclared_name" in out, out
    assert "GOOD 1.0 1" in out, out  # the good one came from a worker



# Programs of several families in one process: elementwise, a reduction, a random fill, then (after the background
# queue is flushed, so that a dead worker is known by then) another elementwise program and a GEMM.
BINARIES = """
import json, torch, pytorch_ocl
x = torch.linspace(-3, 3, 3072).reshape(64, 48)
err = ((x.to('ocl') * 2 + 1).relu().sum(0).cpu() - (x * 2 + 1).relu().sum(0)).abs().max().item()
torch.manual_seed(0); torch.rand(10, device='ocl')
pytorch_ocl._C.flush_program_cache()
err = max(err, (x.to('ocl').tanh().cpu() - x.tanh()).abs().max().item())
err = max(err, ((x.to('ocl') @ x.T.to('ocl')).cpu() - x @ x.T).abs().max().item() / 100)
pytorch_ocl._C.flush_program_cache()
print(json.dumps(dict(err=err, **pytorch_ocl.program_cache_stats())))
"""


@pytest.mark.parametrize("setting", [None, "0", "dead"])
def test_binaries_of_cpu_devices_from_a_worker(run_py, tmp_path, setting):
    """CPU devices (PoCL) compile every kernel of a program to hand out its binary, which on the op's thread was
    most of a cold step (a tiny GPT-2's 31.6 s waited 25.8 s for it): a build worker makes the binaries for the disk
    cache in the background instead (PYTORCH_OCL_BINARY_WORKER unset; "0": fetched on the op's thread). A second
    process then loads every program from the cache either way; a worker that dies ("dead": /bin/false) loses
    the binaries queued by then, and later programs store theirs on the op's thread."""
    import json
    import torch

    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "ocl"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
           "PYTORCH_OCL_BUILD_THREADS": "2", "PYTORCH_OCL_BUILD_PROCESSES": "0", "PYTORCH_OCL_AUTOTUNE": "0",
           "PYTORCH_OCL_BINARY_WORKER": "0" if setting == "0" else None,
           "PYTORCH_OCL_BUILD_WORKER": "/bin/false" if setting == "dead" else None}
    first, second = (json.loads(run_py(BINARIES, env=env).stdout.strip().splitlines()[-1]) for _ in range(2))
    assert first["err"] < 1e-4 and second["err"] < 1e-4, (first, second)
    assert first["builds"] >= 5, first
    cpu = torch.ocl.get_device_properties(0).type == "cpu"
    if setting is None:
        assert first["worker_binaries"] == (first["builds"] if cpu else 0), first
        assert second["builds"] == 0 and second["disk_hits"] == first["builds"], second
    elif setting == "0":
        assert first["worker_binaries"] == 0 and second["builds"] == 0, (first, second)
    else:
        assert first["worker_binaries"] == 0, first
        # the programs queued before the flush lost their binaries (on GPUs none: fetched in the process)
        assert (0 < second["builds"] < first["builds"]) if cpu else second["builds"] == 0, (first, second)
