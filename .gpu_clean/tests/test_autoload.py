"""torch backend autoloading: `import torch` alone registers the ocl device.

Two groups of tests:
* installed: the real `torch.backends` entry point of a pip-installed pytorch_ocl. Skipped
  when the package is not installed (a source-tree checkout has no entry point).
* simulated: a throw-away *.dist-info directory declaring the same entry point
  (`pytorch_ocl = pytorch_ocl_autoload:load`) is put on PYTHONPATH, so torch's real
  autoload mechanism runs our `pytorch_ocl_autoload.load` without installing anything.
"""
import importlib.metadata
import re

import pytest
import torch

from conftest import SOURCE_PATHS


def _installed_entry_point():
    eps = importlib.metadata.entry_points(group="torch.backends")
    return [ep for ep in eps if ep.value.startswith("pytorch_ocl")]


INSTALLED = bool(_installed_entry_point())
needs_install = pytest.mark.skipif(
    not INSTALLED,
    reason="pytorch_ocl is not pip-installed: no 'torch.backends' entry point for pytorch_ocl "
    "(importlib.metadata.entry_points(group='torch.backends') is empty); run `pip install .` to test autoloading",
)

ISSUE_EXAMPLE = """
import torch
x1 = torch.randn(5, 5, device="ocl", requires_grad=True)
x2 = torch.ones(5, 5).to("ocl:0")
y = (x1 + x2 * 2 - x1 / 3).sum()
y.backward()
print(x1.grad.cpu(), torch.ocl.device_count(), torch.ocl.get_device_name(0))
torch.ocl.synchronize(); torch.ocl.empty_cache()
# checks (not part of the example)
x1_cpu = x1.detach().cpu().requires_grad_()
(x1_cpu + torch.ones(5, 5) * 2 - x1_cpu / 3).sum().backward()
from torch.testing import assert_close
assert_close(x1.grad.cpu(), x1_cpu.grad)
assert_close(y.detach().cpu(), (x1_cpu + torch.ones(5, 5) * 2 - x1_cpu / 3).sum().detach())
print("CHECKED")
"""


@pytest.fixture
def fake_dist(tmp_path):
    """A directory holding only a dist-info with the package's torch.backends entry point."""
    info = tmp_path / "site" / "pytorch_ocl_autoload_test-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pytorch_ocl_autoload_test\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text("[torch.backends]\npytorch_ocl = pytorch_ocl_autoload:load\n")
    return str(tmp_path / "site")


def _env_with(fake_site, **extra):
    import os

    env = {"PYTHONPATH": os.pathsep.join(SOURCE_PATHS + [fake_site])}
    env.update(extra)
    return env


def _check_issue_output(stdout):
    assert "CHECKED" in stdout
    # x1.grad is 1 - 1/3 everywhere
    assert stdout.count("0.6667") == 25
    m = re.search(r"\]\]\) (\d+) (.+)", stdout)
    assert m, stdout
    assert int(m.group(1)) == torch.ocl.device_count()
    assert m.group(2).strip() == torch.ocl.get_device_name(0)


# ---------------------------------------------------------------------------------------
# the real installed entry point


@needs_install
def test_installed_import_torch_alone(run_py):
    proc = run_py(
        """
        import sys, torch
        x = torch.randn(2, device="ocl")
        print("pytorch_ocl" in sys.modules, x.device, hasattr(torch, "ocl"))
        """,
        python_path=False,
    )
    assert proc.stdout.strip() == "True ocl:0 True"


@needs_install
def test_installed_issue_example(run_py):
    _check_issue_output(run_py(ISSUE_EXAMPLE, python_path=False).stdout)


@needs_install
@pytest.mark.parametrize("order", ["import pytorch_ocl, torch", "import torch, pytorch_ocl"])
def test_installed_import_order(run_py, order):
    proc = run_py(order + "\nprint((torch.ones(2, device='ocl') * 2).cpu().tolist())", python_path=False)
    assert proc.stdout.strip() == "[2.0, 2.0]"


@needs_install
def test_installed_autoload_disabled(run_py):
    proc = run_py(
        """
        import sys, torch
        print(hasattr(torch, "ocl"), "pytorch_ocl" in sys.modules)
        """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        python_path=False,
    )
    assert proc.stdout.strip() == "False False"


# ---------------------------------------------------------------------------------------
# torch's autoload mechanism with a simulated installation


def test_simulated_import_torch_alone(run_py, fake_dist):
    proc = run_py(
        """
        import sys, torch
        x = torch.randn(2, device="ocl")
        print("pytorch_ocl" in sys.modules, x.device, hasattr(torch, "ocl"), x.is_ocl)
        """,
        env=_env_with(fake_dist),
    )
    assert proc.stdout.strip() == "True ocl:0 True True"


def test_simulated_issue_example(run_py, fake_dist):
    _check_issue_output(run_py(ISSUE_EXAMPLE, env=_env_with(fake_dist)).stdout)


@pytest.mark.parametrize("order", ["import pytorch_ocl, torch", "import torch, pytorch_ocl",
                                   "import torch\nimport pytorch_ocl\nimport pytorch_ocl_autoload as a\na.load()"])
def test_simulated_import_order(run_py, fake_dist, order):
    proc = run_py(
        order + "\nimport torch\nprint((torch.ones(2, device='ocl') * 2).cpu().tolist(), torch.ocl.device_count())",
        env=_env_with(fake_dist),
    )
    assert proc.stdout.strip() == f"[2.0, 2.0] {torch.ocl.device_count()}"


def test_simulated_autoload_disabled(run_py, fake_dist):
    proc = run_py(
        """
        import sys, torch
        print(hasattr(torch, "ocl"), "pytorch_ocl" in sys.modules)
        try:
            torch.randn(2, device="ocl")
            print("CREATED")
        except RuntimeError:
            print("NO-OCL")
        """,
        env=_env_with(fake_dist, TORCH_DEVICE_BACKEND_AUTOLOAD="0"),
    )
    assert proc.stdout.splitlines() == ["False False", "NO-OCL"]


def test_simulated_autoload_without_opencl_driver(run_py, fake_dist, tmp_path):
    # No OpenCL platform at all: `import torch` must still work; the device is registered
    # but unavailable, and using it raises a clear error.
    vendors = tmp_path / "no_vendors"
    vendors.mkdir()
    proc = run_py(
        """
        import torch
        print(hasattr(torch, "ocl"), torch.ocl.is_available(), torch.ocl.device_count())
        try:
            torch.empty(1, device="ocl")
            print("CREATED")
        except (RuntimeError, IndexError) as e:
            print("ERR", e)
        print((torch.ones(2) + 1).tolist())
        """,
        env=_env_with(fake_dist, OCL_ICD_VENDORS=str(vendors), OCL_ICD_FILENAMES=""),
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "True False 0"
    assert lines[1].startswith("ERR") and "out of range" in lines[1]
    assert lines[2] == "[2.0, 2.0]"


def test_explicit_import_issue_example(run_py):
    # Without any autoloading, importing the package is enough.
    _check_issue_output(run_py("import pytorch_ocl\n" + ISSUE_EXAMPLE).stdout)


def test_simulated_autoload_disabled_then_explicit_import(run_py, fake_dist):
    proc = run_py(
        """
        import torch
        assert not hasattr(torch, "ocl")
        import pytorch_ocl
        x = torch.tensor([1.0, 2.0]).to("ocl") * 3
        print(hasattr(torch, "ocl"), x.device, x.cpu().tolist())
        """,
        env=_env_with(fake_dist, TORCH_DEVICE_BACKEND_AUTOLOAD="0"),
    )
    assert proc.stdout.strip() == "True ocl:0 [3.0, 6.0]"
