"""torch.ocl device module and the tensor/module methods torch generates for the backend."""
import dataclasses

import pytest
import torch
from torch.testing import assert_close

import pytorch_ocl


def test_is_available_and_count():
    assert torch.ocl.is_available()
    assert torch.ocl.device_count() >= 1
    assert pytorch_ocl.device_count() == torch.ocl.device_count()
    assert pytorch_ocl.is_available() is True


def test_backend_name_registered():
    assert torch._C._get_privateuse1_backend_name() == "ocl"
    assert torch.device("ocl").type == "ocl"
    assert torch.device("ocl:0").index == 0


def test_randn_on_default_device_lands_on_ocl0():
    x = torch.randn(3, device="ocl")
    assert x.device == torch.device("ocl:0")
    assert x.is_ocl
    assert not torch.randn(3).is_ocl


def test_tensor_to_and_ocl_method():
    cpu = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = cpu.to("ocl:0")
    b = cpu.ocl()
    c = cpu.to(torch.device("ocl"))
    for t in (a, b, c):
        assert t.device == torch.device("ocl:0")
        assert_close(t.cpu(), cpu)


def test_module_ocl_moves_parameters():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    ref = {k: v.clone() for k, v in lin.state_dict().items()}
    lin.ocl()
    for name, p in lin.named_parameters():
        assert p.device.type == "ocl", name
        assert_close(p.detach().cpu(), ref[name])
    lin.cpu()
    assert all(p.device.type == "cpu" for p in lin.parameters())


def test_current_and_set_device():
    assert torch.ocl.current_device() == 0
    torch.ocl.set_device(0)
    torch.ocl.set_device("ocl:0")
    torch.ocl.set_device(torch.device("ocl", 0))
    assert torch.ocl.current_device() == 0


def test_device_context_manager_restores():
    with torch.ocl.device(0):
        assert torch.ocl.current_device() == 0
        x = torch.ones(2, device="ocl")
    assert x.device == torch.device("ocl:0")
    assert_close(x.cpu(), torch.ones(2))
    with torch.ocl.device(None):
        assert torch.ocl.current_device() == 0
    assert torch.ocl.current_device() == 0


def test_set_device_out_of_range_raises():
    n = torch.ocl.device_count()
    with pytest.raises((IndexError, RuntimeError), match="out of range"):
        torch.ocl.set_device(n + 5)
    assert torch.ocl.current_device() == 0


def test_get_device_name_and_properties():
    name = torch.ocl.get_device_name(0)
    assert isinstance(name, str) and name
    assert torch.ocl.get_device_name() == name
    assert torch.ocl.get_device_name("ocl:0") == name
    props = torch.ocl.get_device_properties(0)
    assert dataclasses.is_dataclass(props)
    fields = {f.name for f in dataclasses.fields(props)}
    assert fields >= {
        "name", "vendor", "platform", "driver_version", "device_version", "opencl_c_version", "type",
        "compute_units", "total_memory", "local_memory", "max_alloc_size", "max_work_group_size", "fp64",
        "fp16", "extensions",
    }
    assert props.name == name
    assert props.type in ("gpu", "cpu", "other")
    assert props.compute_units >= 1
    assert props.total_memory > 0
    assert 0 < props.max_alloc_size <= props.total_memory
    assert props.max_work_group_size >= 1
    assert props.local_memory > 0
    assert isinstance(props.fp64, bool) and isinstance(props.fp16, bool)
    assert props.fp64 == ("cl_khr_fp64" in props.extensions)
    assert props.device_version.startswith("OpenCL")
    assert str(props.total_memory // (1 << 20)) in repr(props)


def test_get_device_properties_out_of_range():
    with pytest.raises((IndexError, RuntimeError), match="out of range"):
        torch.ocl.get_device_properties(torch.ocl.device_count() + 3)


def test_synchronize_and_is_initialized():
    x = torch.randn(1000, device="ocl")
    y = x + 1
    torch.ocl.synchronize()
    torch.ocl.synchronize(0)
    torch.ocl.synchronize("ocl:0")
    assert torch.ocl.is_initialized()
    assert_close(y.cpu(), x.cpu() + 1)


def test_torch_accelerator_sees_ocl():
    assert torch.accelerator.is_available()
    assert torch.accelerator.current_accelerator() == torch.device("ocl")
    assert torch.accelerator.device_count() == torch.ocl.device_count()
    assert torch.accelerator.current_device_index() == 0


def test_torch_get_device_module():
    assert torch.get_device_module("ocl") is torch.ocl
    assert torch.get_device_module(torch.device("ocl:0")) is torch.ocl


def test_package_functions_match_torch_ocl():
    for name in ("is_available", "device_count", "current_device", "set_device", "device", "get_device_name",
                 "get_device_properties", "synchronize", "empty_cache", "memory_stats", "memory_allocated",
                 "max_memory_allocated", "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats",
                 "manual_seed", "manual_seed_all", "seed", "initial_seed", "get_rng_state", "set_rng_state"):
        assert hasattr(pytorch_ocl, name), name
        assert hasattr(torch.ocl, name), name
    for name in ("default_generators", "Stream", "Event", "stream", "current_stream", "is_initialized",
                 "_is_in_bad_fork"):
        assert hasattr(torch.ocl, name), name
    assert torch.ocl._is_in_bad_fork() is False


def test_storage_methods_generated():
    cpu = torch.arange(4, dtype=torch.float32)
    s = cpu.untyped_storage().ocl()
    assert s.device.type == "ocl"
    assert s.is_ocl
    t = torch.empty(0, device="ocl").set_(s)
    assert_close(t.cpu(), cpu)


def test_device_filter_env_no_match(run_py):
    proc = run_py(
        """
        import torch, pytorch_ocl
        print(torch.ocl.device_count(), torch.ocl.is_available())
        try:
            torch.empty(1, device="ocl")
        except Exception as e:
            print("ERR", type(e).__name__, e)
        """,
        env={"PYTORCH_OCL_DEVICES": "no-such-device-xyz"},
    )
    lines = proc.stdout.splitlines()
    assert lines[0] == "0 False"
    assert lines[1].startswith("ERR")
    assert "no-such-device-xyz" in lines[1] or "out of range" in lines[1]


def test_device_filter_env_cpu_type(run_py):
    proc = run_py(
        """
        import torch, pytorch_ocl
        print(torch.ocl.device_count(), torch.ocl.get_device_properties(0).type)
        x = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0]).to("ocl") * 2
        print(x.cpu().tolist())
        """,
        env={"PYTORCH_OCL_DEVICES": "cpu"},
    )
    lines = proc.stdout.splitlines()
    assert int(lines[0].split()[0]) >= 1 and lines[0].split()[1] == "cpu"
    assert lines[1] == str([0.0, 2.0, 4.0, 6.0, 8.0])


def test_device_filter_env_platform_index(run_py):
    proc = run_py(
        """
        import torch, pytorch_ocl
        print(torch.ocl.device_count(), torch.ocl.get_device_name(0))
        """,
        env={"PYTORCH_OCL_DEVICES": "0:0"},
    )
    count, name = proc.stdout.strip().split(" ", 1)
    assert count == "1"
    assert name == torch.ocl.get_device_name(0)


def test_python_m_pytorch_ocl_report(run_py):
    proc = run_py("import runpy, sys; sys.argv = ['pytorch_ocl']; runpy.run_module('pytorch_ocl', run_name='__main__')")
    assert "pytorch_ocl" in proc.stdout
    assert torch.ocl.get_device_name(0) in proc.stdout
    assert "matrix_engine" in proc.stdout


def test_matrix_engine_is_probed_not_assumed():
    e = torch.ocl.matrix_engine(0)
    assert set(e) == {"kind", "compute_capability", "tf32", "bf16", "fp16", "detail", "description"}
    assert e["kind"] in ("none", "nvidia-mma", "intel-dpas")
    assert e["description"].startswith(e["kind"])
    if e["kind"] == "nvidia-mma":  # the probes ran on the device and summed right
        assert e["compute_capability"] >= (8, 0) and (e["tf32"] or e["bf16"] or e["fp16"])
    else:
        assert not (e["tf32"] or e["bf16"] or e["fp16"]) and e["detail"]
    if torch.ocl.get_device_properties(0).platform == "Portable Computing Language":
        assert e["kind"] == "none"
    assert torch.ocl.matrix_engine(0) == e  # probed once per context
