"""os.putenv / os.unsetenv go through dlprim's environment lock (pytorch_ocl/_env.py, dlprim/env.h), so
background build threads reading PYTORCH_OCL_* never race a change made from Python. The variables still
reach the process environment, and bad names fail as os.putenv makes them fail."""
import ctypes
import os

import pytest

import pytorch_ocl
from pytorch_ocl import _env

_libc = ctypes.CDLL(None)
_libc.getenv.restype = ctypes.c_char_p


def test_os_environ_goes_through_the_lock():
    assert os.putenv is _env._locked_putenv and os.unsetenv is _env._locked_unsetenv


def test_changes_reach_the_process_environment(monkeypatch):
    monkeypatch.setenv("PYTORCH_OCL_ENV_LOCK_TEST", "a b=c")
    assert _libc.getenv(b"PYTORCH_OCL_ENV_LOCK_TEST") == b"a b=c"
    os.environ["PYTORCH_OCL_ENV_LOCK_TEST"] = "2"
    assert _libc.getenv(b"PYTORCH_OCL_ENV_LOCK_TEST") == b"2"
    del os.environ["PYTORCH_OCL_ENV_LOCK_TEST"]
    assert _libc.getenv(b"PYTORCH_OCL_ENV_LOCK_TEST") is None
    monkeypatch.delenv("PYTORCH_OCL_ENV_LOCK_TEST", raising=False)


def test_a_switch_set_from_python_is_seen_by_the_kernels(monkeypatch):
    """dlprim reads its switches at each use: PYTORCH_OCL_MMA=0 keeps bf16 products off the matrix engine."""
    monkeypatch.setenv("PYTORCH_OCL_MMA", "0")
    import torch

    assert "mma" not in pytorch_ocl.ops.gemm_plan(256, 256, 256, dtype=torch.bfloat16)


@pytest.mark.parametrize("key", ["A=B", "", "A\0B"])
def test_bad_names_fail_as_before(key):
    for locked, plain in ((os.putenv, _env._plain_putenv), (os.unsetenv, _env._plain_unsetenv)):
        args = (key, "1") if plain is _env._plain_putenv else (key,)
        with pytest.raises((ValueError, OSError)) as expected:
            plain(*args)
        with pytest.raises(type(expected.value)):
            locked(*args)
