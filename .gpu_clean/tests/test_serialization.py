"""torch.save / torch.load of ocl tensors, views and state_dicts."""
import io

import pytest
import torch
from torch.testing import assert_close


def _roundtrip(obj, **load_kwargs):
    buf = io.BytesIO()
    torch.save(obj, buf)
    buf.seek(0)
    return torch.load(buf, **load_kwargs)


def test_save_load_tensor_default_location():
    cpu = torch.randn(4, 5)
    loaded = _roundtrip(cpu.to("ocl"))
    assert loaded.device == torch.device("ocl:0")
    assert_close(loaded.cpu(), cpu)


@pytest.mark.parametrize("location", ["ocl:0", "ocl", torch.device("ocl:0")], ids=["ocl:0", "ocl", "device"])
def test_load_map_location_ocl(location):
    cpu = torch.randn(3, 3)
    loaded = _roundtrip(cpu.to("ocl"), map_location=location)
    assert loaded.device.type == "ocl"
    assert_close(loaded.cpu(), cpu)


def test_load_map_location_cpu():
    cpu = torch.randn(6)
    loaded = _roundtrip(cpu.to("ocl"), map_location="cpu")
    assert loaded.device.type == "cpu"
    assert_close(loaded, cpu)


def test_cpu_tensor_loaded_to_ocl():
    cpu = torch.randn(2, 7)
    loaded = _roundtrip(cpu, map_location="ocl:0")
    assert loaded.device == torch.device("ocl:0")
    assert_close(loaded.cpu(), cpu)


def test_save_load_file(tmp_path):
    cpu = torch.randn(10, 10, dtype=torch.float64)
    path = tmp_path / "t.pt"
    torch.save(cpu.to("ocl"), path)
    loaded = torch.load(path)
    assert loaded.device.type == "ocl" and loaded.dtype == torch.float64
    assert_close(loaded.cpu(), cpu)
    assert_close(torch.load(path, map_location="cpu"), cpu)
    assert_close(torch.load(path, weights_only=True).cpu(), cpu)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool,
                                   torch.uint8, torch.complex64])
def test_save_load_dtypes(dtype):
    cpu = (torch.randn(5, 4) * 5).to(dtype)
    loaded = _roundtrip(cpu.to("ocl"))
    assert loaded.dtype == dtype and loaded.device.type == "ocl"
    assert_close(loaded.cpu(), cpu, rtol=0, atol=0)


def test_views_share_storage_after_load():
    cpu = torch.randn(6, 4)
    base = cpu.to("ocl")
    obj = {"base": base, "view": base[2:5, 1:], "t": base.t()}
    loaded = _roundtrip(obj)
    assert_close(loaded["base"].cpu(), cpu)
    assert_close(loaded["view"].cpu(), cpu[2:5, 1:])
    assert_close(loaded["t"].cpu(), cpu.t())
    assert loaded["view"].untyped_storage().data_ptr() == loaded["base"].untyped_storage().data_ptr()
    loaded["base"].fill_(1.0)
    assert_close(loaded["view"].cpu(), torch.ones(3, 3))


def test_state_dict_roundtrip():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    ref = {k: v.clone() for k, v in model.state_dict().items()}
    model.ocl()
    sd = _roundtrip(model.state_dict())
    for k, v in sd.items():
        assert v.device.type == "ocl", k
        assert_close(v.cpu(), ref[k])
    fresh = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    fresh.load_state_dict(_roundtrip(model.state_dict(), map_location="cpu"))
    for k, v in fresh.state_dict().items():
        assert v.device.type == "cpu"
        assert_close(v, ref[k])
    fresh_ocl = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2)).ocl()
    fresh_ocl.load_state_dict(sd)
    for k, v in fresh_ocl.state_dict().items():
        assert v.device.type == "ocl"
        assert_close(v.cpu(), ref[k])


def test_parameter_and_requires_grad_survive():
    p = torch.nn.Parameter(torch.randn(3).to("ocl"))
    loaded = _roundtrip(p)
    assert isinstance(loaded, torch.nn.Parameter)
    assert loaded.requires_grad
    assert loaded.device.type == "ocl"
    assert_close(loaded.detach().cpu(), p.detach().cpu())


def test_load_in_fresh_process(tmp_path, run_py):
    cpu = torch.randn(5, 3)
    path = tmp_path / "x.pt"
    torch.save({"w": cpu.to("ocl"), "n": 3}, path)
    torch.save(cpu, tmp_path / "ref.pt")
    proc = run_py(
        f"""
        import torch, pytorch_ocl
        obj = torch.load({str(path)!r})
        ref = torch.load({str(tmp_path / 'ref.pt')!r})
        print(obj["w"].device, obj["n"], torch.equal(obj["w"].cpu(), ref))
        cpu_obj = torch.load({str(path)!r}, map_location="cpu")
        print(cpu_obj["w"].device, torch.equal(cpu_obj["w"], ref))
        """
    )
    assert proc.stdout.splitlines() == ["ocl:0 3 True", "cpu True"]


def test_map_location_ocl_index_out_of_range():
    buf = io.BytesIO()
    torch.save(torch.randn(2).to("ocl"), buf)
    buf.seek(0)
    with pytest.raises((RuntimeError, IndexError)):
        torch.load(buf, map_location=f"ocl:{torch.ocl.device_count() + 3}")


def test_map_location_dict_and_callable():
    cpu = torch.randn(4)
    buf = io.BytesIO()
    torch.save(cpu.to("ocl"), buf)
    buf.seek(0)
    t = torch.load(buf, map_location={"ocl:0": "cpu"})
    assert t.device.type == "cpu"
    assert_close(t, cpu)
    buf.seek(0)
    t2 = torch.load(buf, map_location=lambda storage, loc: storage.ocl())
    assert t2.device.type == "ocl"
    assert_close(t2.cpu(), cpu)
    cbuf = io.BytesIO()
    torch.save(cpu, cbuf)
    cbuf.seek(0)
    t3 = torch.load(cbuf, map_location={"cpu": "ocl:0"})
    assert t3.device == torch.device("ocl:0")
    assert_close(t3.cpu(), cpu)
