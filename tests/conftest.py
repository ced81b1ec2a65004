"""Shared fixtures for the pytorch_ocl test suite.

Every test compares what the ocl device computes with the same computation on the CPU.
Strict mode is on for the whole suite: an op that silently fell back to the CPU would
otherwise hide a missing kernel (test_fallback.py switches it off locally and restores it).
"""
import os
import subprocess
import sys
import tempfile
import textwrap

os.environ["PYTORCH_OCL_STRICT"] = "1"

import pytest  # noqa: E402
import torch  # noqa: E402

import pytorch_ocl  # noqa: E402,F401  (registers the device)

# The tests hold float32 results to the fp32 error bound. Convolutions follow CUDA's TF32 switch, on by
# default (TF32 on a matrix engine); the suite turns it off as PyTorch's own CUDA tests do, and the TF32
# tests (test_gemm_mma.py) turn it on where they check the TF32 bound.
torch.backends.cudnn.allow_tf32 = False


@pytest.fixture(autouse=True)
def _no_leaked_settings():
    """Every test leaves the PYTORCH_OCL_* variables as it found them (monkeypatch restores them before
    this check runs): a leaked PYTORCH_OCL_MMA=emulate once made a later test train a network on the
    emulated matrix engine, slowly enough to stall CI."""
    before = {k: v for k, v in os.environ.items() if k.startswith("PYTORCH_OCL_")}
    yield
    after = {k: v for k, v in os.environ.items() if k.startswith("PYTORCH_OCL_")}
    assert after == before, f"PYTORCH_OCL_* variables changed by the test: {before} -> {after}"

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON_DIR = os.path.join(REPO, "python")
# Subprocesses use the source tree only when it holds a built extension (a developer's
# python/pytorch_ocl/_C*.so link to the dev build); otherwise the pip-installed package.
SOURCE_PATHS = [PYTHON_DIR] if any(
    f.startswith("_C") and f.endswith(".so") and os.path.exists(os.path.join(PYTHON_DIR, "pytorch_ocl", f))
    for f in os.listdir(os.path.join(PYTHON_DIR, "pytorch_ocl"))
) else []

SUBPROCESS_TIMEOUT = 300  # a cold kernel cache on a GPU shared by 14 test workers took over 120 s


def _base_env(extra=None, drop=()):
    env = dict(os.environ)
    paths = SOURCE_PATHS + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != PYTHON_DIR]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PYTORCH_OCL_STRICT"] = "1"
    for key in drop:
        env.pop(key, None)
    if extra:
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = str(v)
    return env


def run_python(code, env=None, drop_env=(), check=True, timeout=SUBPROCESS_TIMEOUT, cwd=None, python_path=True,
               as_file=False):
    """Runs `code` (dedented) in a fresh interpreter; returns the CompletedProcess.

    env: variables to add (None values remove the variable); drop_env: variables to remove.
    check: assert that the process exited with status 0 (the message shows its stderr).
    python_path: put the source tree's python/ on PYTHONPATH (False: leave PYTHONPATH out,
    so only an installed pytorch_ocl can be found).
    as_file: run the code from a temporary script file instead of `-c` (needed by
    multiprocessing's spawn start method, which re-imports the main module).
    """
    full_env = _base_env(env, drop_env)
    if not python_path:
        full_env.pop("PYTHONPATH", None)
    code = textwrap.dedent(code)
    if as_file:
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(code)
        argv = [sys.executable, f.name]
    else:
        argv = [sys.executable, "-c", code]
    try:
        proc = subprocess.run(
            argv,
            env=full_env,
            cwd=cwd or REPO,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        if as_file:
            os.unlink(argv[1])
    if check:
        assert proc.returncode == 0, (
            f"subprocess failed with status {proc.returncode}\n--- stdout ---\n{proc.stdout}\n"
            f"--- stderr ---\n{proc.stderr}"
        )
    return proc


@pytest.fixture(scope="module")
def fresh_inductor_cache():
    """A module's torch.compile runs write Inductor's caches to their own empty directory: a graph served from
    an earlier run's cache would skip our code generator, which these tests exercise."""
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="ocl_inductor_")
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
    if old is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = old


@pytest.fixture
def run_py():
    """Fixture form of run_python: run_py(code, env={...}) -> CompletedProcess (stdout, stderr)."""
    return run_python


@pytest.fixture(autouse=True)
def _no_leaked_index_errors():
    """An index error left pending by a test (reported at the next wait for the device) fails that test,
    not whichever test next waits for the device."""
    yield
    if pytorch_ocl._C.pending_index_checks():
        torch.ocl.synchronize()


@pytest.fixture(autouse=True)
def _strict_mode_guard():
    """Every test starts in strict mode and cannot leak a non-strict setting to the next one."""
    pytorch_ocl.set_strict(True)
    yield
    pytorch_ocl.set_strict(True)


@pytest.fixture
def ocl():
    return torch.device("ocl:0")


def to_ocl(t):
    return t.to("ocl:0")


def pytest_runtest_logreport(report):
    """PYTORCH_OCL_TEST_TIMES=FILE: each test's outcome and seconds appended as it finishes (by the process that
    prints the results: xdist's workers report to it), so a run cut by a time limit still says which tests took
    the time."""
    path = os.environ.get("PYTORCH_OCL_TEST_TIMES")
    if path and not os.environ.get("PYTEST_XDIST_WORKER") and (report.when == "call" or report.outcome != "passed"):
        with open(path, "a") as f:
            f.write(f"{report.duration:.2f} {report.when} {report.outcome} {report.nodeid}\n")
