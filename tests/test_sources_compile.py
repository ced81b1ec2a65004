"""Every Python file shipped beside the package (benchmarks, examples, scripts, top-level tools) compiles:
they run only on a GPU or by hand, so a syntax error would otherwise reach a lent machine first."""
import glob
import os
import py_compile

import pytest

from conftest import REPO

FILES = sorted(f for pattern in ("benchmarks/*.py", "examples/*.py", "scripts/*.py", "*.py")
               for f in glob.glob(os.path.join(REPO, pattern)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, REPO))
def test_compiles(path, tmp_path):
    py_compile.compile(path, cfile=str(tmp_path / "out.pyc"), doraise=True)
