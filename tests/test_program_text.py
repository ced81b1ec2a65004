"""Build traces (PYTORCH_OCL_TRACE_BUILDS) name each program by its kernels (program_cache.cpp's program_label)."""
from conftest import run_python


def traced_builds(code, tmp_path, **env):
    env = {"PYTORCH_OCL_CACHE_DIR": str(tmp_path / "ocl"), "POCL_CACHE_DIR": str(tmp_path / "pocl"),
           "PYTORCH_OCL_TRACE_BUILDS": "1", "PYTORCH_OCL_BUILD_PROCESSES": "0", **env}
    proc = run_python(code, env=env)
    assert "ok" in proc.stdout, proc.stdout
    return [ln.split(" s ", 1)[1].split(" (")[0] for ln in proc.stderr.splitlines()
            if ln.startswith("[pytorch_ocl build]")]


def test_traced_builds_name_their_kernel(tmp_path):
    """A program is named by its last kernel, through a macro-named one and past an __attribute__ (the tiled GEMM's
    programs all read "gemm_split_reduce", their shared first kernel, before)."""
    names = traced_builds("""
        import torch, pytorch_ocl
        a = torch.randn(300, 200, device="ocl")
        print((a @ a.T).sum().item(), "ok")
    """, tmp_path, PYTORCH_OCL_WGMMA="0", PYTORCH_OCL_AUTOTUNE="0")
    assert any(n.startswith(("gemm_tiled", "gemm_mma")) for n in names), names
    assert not any(n.startswith(("__attribute__", "KERNEL_NAME", "gemm_split_reduce", "?")) for n in names), names
