"""Environment changes made from Python take the lock that dlprim's threads read the environment under
(dlprim/env.h): os.environ[...] = ..., del os.environ[...] and pytest's monkeypatch.setenv call the os
module's putenv / unsetenv, which become locked versions here. Without it a background program build
reading PYTORCH_OCL_* while the main thread set a variable could read glibc's freed environment array."""
import os

from . import _C

_plain_putenv, _plain_unsetenv = os.putenv, os.unsetenv


def _locked_putenv(key, value):
    key, value = os.fsencode(key), os.fsencode(value)
    if b"=" in key or b"\0" in key or b"\0" in value or not key:
        _plain_putenv(key, value)  # the checks and errors of os.putenv
        return
    _C._env_set(key, value)


def _locked_unsetenv(key):
    key = os.fsencode(key)
    if b"=" in key or b"\0" in key or not key:
        _plain_unsetenv(key)
        return
    _C._env_unset(key)


def install():
    os.putenv, os.unsetenv = _locked_putenv, _locked_unsetenv
