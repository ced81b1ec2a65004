"""Two devices (PoCL exposing two pthread devices): ocl:0 and ocl:1.

POCL_DEVICES must be set before the OpenCL runtime starts, so every test runs in a subprocess.
The snippets check their values against the CPU themselves and print OK lines.
"""
import pytest

TWO = {"POCL_DEVICES": "pthread pthread", "PYTORCH_OCL_DEVICES": None}

PRELUDE = """
import torch, pytorch_ocl
from torch.testing import assert_close
assert torch.ocl.device_count() == 2, torch.ocl.device_count()
"""


@pytest.fixture(scope="module")
def two_devices_available():
    import subprocess
    import sys

    from conftest import _base_env

    proc = subprocess.run(
        [sys.executable, "-c", "import torch, pytorch_ocl; print(torch.ocl.device_count())"],
        env=_base_env(TWO), capture_output=True, text=True, timeout=120,
    )
    if proc.returncode != 0 or proc.stdout.strip() != "2":
        pytest.skip(f"POCL_DEVICES='pthread pthread' does not give two devices here: {proc.stdout} {proc.stderr}")


def run2(run_py, body):
    proc = run_py(PRELUDE + body, env=TWO)
    return proc.stdout.splitlines()


def test_device_count_is_two(run_py, two_devices_available):
    out = run2(run_py, """
print(torch.ocl.device_count(), torch.accelerator.device_count())
print(torch.ocl.get_device_name(0) != "" and torch.ocl.get_device_name(1) != "")
print(torch.ocl.get_device_properties(1).compute_units >= 1)
""")
    assert out == ["2 2", "True", "True"]


def test_cross_device_copies(run_py, two_devices_available):
    out = run2(run_py, """
cpu = torch.randn(33, 17)
a0 = cpu.to("ocl:0")
a1 = a0.to("ocl:1")
assert a1.device == torch.device("ocl:1")
assert_close(a1.cpu(), cpu)
back = a1.to("ocl:0")
assert back.device == torch.device("ocl:0")
assert_close(back.cpu(), cpu)
# non-contiguous source and destination across devices
d1 = torch.zeros(17, 66, device="ocl:1")
d1[:, ::2] = a0.t()
ref = torch.zeros(17, 66); ref[:, ::2] = cpu.t()
assert_close(d1.cpu(), ref)
# with dtype conversion
c = a0.to("ocl:1", dtype=torch.float64)
assert c.device == torch.device("ocl:1") and c.dtype == torch.float64
assert_close(c.cpu(), cpu.double())
# copy_ into an existing ocl:1 tensor from ocl:0
e = torch.empty(33, 17, device="ocl:1")
e.copy_(a0)
assert_close(e.cpu(), cpu)
print("OK")
""")
    assert out == ["OK"]


def test_device_context_places_new_tensors(run_py, two_devices_available):
    out = run2(run_py, """
with torch.ocl.device(1):
    assert torch.ocl.current_device() == 1
    x = torch.ones(3, device="ocl")
    y = torch.randn(4, device="ocl")
    z = torch.tensor([1.0, 2.0]).to("ocl")
    e = torch.empty(2, device="ocl")
    print(x.device, y.device, z.device, e.device)
print(torch.ocl.current_device())
w = torch.ones(2, device="ocl")
print(w.device)
torch.ocl.set_device(1)
v = torch.zeros(2, device="ocl")
print(v.device, torch.accelerator.current_device_index())
torch.ocl.set_device(0)
""")
    assert out == ["ocl:1 ocl:1 ocl:1 ocl:1", "0", "ocl:0", "ocl:1 1"]


def test_ops_on_device_1(run_py, two_devices_available):
    out = run2(run_py, """
ca, cb = torch.randn(40, 30), torch.randn(30)
a, b = ca.to("ocl:1"), cb.to("ocl:1")
assert torch.ocl.current_device() == 0
r = (a + b * 2 - a / 3) * a
assert r.device == torch.device("ocl:1")
assert_close(r.cpu(), (ca + cb * 2 - ca / 3) * ca)
s = r.sum(0)
assert s.device == torch.device("ocl:1")
assert_close(s.cpu(), ((ca + cb * 2 - ca / 3) * ca).sum(0), rtol=1e-4, atol=1e-4)
assert_close(r.mean().cpu(), ((ca + cb * 2 - ca / 3) * ca).mean(), rtol=1e-4, atol=1e-5)
a.add_(1).mul_(2)
assert_close(a.cpu(), (ca + 1) * 2)
t = a.t().contiguous()
assert_close(t.cpu(), ((ca + 1) * 2).t())
assert (-a).device == torch.device("ocl:1")
n = torch.empty(1000, device="ocl:1").normal_()
assert abs(n.cpu().mean().item()) < 0.15
f = torch.full((5,), 3.5, device="ocl:1")
assert_close(f.cpu(), torch.full((5,), 3.5))
assert a[3, 4].item() == ((ca + 1) * 2)[3, 4].item()
print(repr(torch.tensor([1.0]).to("ocl:1")))
print("OK")
""")
    assert out == ["tensor([1.], device='ocl:1')", "OK"]


def test_mixing_devices_is_an_error(run_py, two_devices_available):
    out = run2(run_py, """
a = torch.ones(3, device="ocl:0")
b = torch.ones(3, device="ocl:1")
try:
    a + b
    print("NO-ERROR")
except RuntimeError as e:
    print("same device" in str(e) or "devices" in str(e))
""")
    assert out == ["True"]


def test_backward_on_device_1(run_py, two_devices_available):
    out = run2(run_py, """
x_cpu = torch.randn(5, 5, requires_grad=True)
x = x_cpu.detach().to("ocl:1").requires_grad_()
y = (x + torch.ones(5, 5, device="ocl:1") * 2 - x / 3).sum()
y.backward()
(x_cpu + torch.ones(5, 5) * 2 - x_cpu / 3).sum().backward()
assert x.grad.device == torch.device("ocl:1")
assert_close(x.grad.cpu(), x_cpu.grad)
print("OK")
""")
    assert out == ["OK"]


def test_memory_stats_per_device(run_py, two_devices_available):
    out = run2(run_py, """
torch.ones(1, device="ocl:0"); torch.ones(1, device="ocl:1")
m0, m1 = torch.ocl.memory_allocated(0), torch.ocl.memory_allocated(1)
x = torch.empty(4 << 20, dtype=torch.uint8, device="ocl:1")
print(torch.ocl.memory_allocated(1) - m1 >= 4 << 20, torch.ocl.memory_allocated(0) == m0)
print(torch.ocl.memory_allocated("ocl:1") == torch.ocl.memory_stats(1)["allocated_bytes.all.current"])
del x
torch.ocl.empty_cache()
print(torch.ocl.memory_allocated(1) == m1, torch.ocl.memory_reserved(1) < 4 << 20)
""")
    assert out == ["True True", "True", "True True"]


def test_rng_per_device(run_py, two_devices_available):
    out = run2(run_py, """
torch.manual_seed(17)
a0 = torch.randn(100, device="ocl:0").cpu()
a1 = torch.randn(100, device="ocl:1").cpu()
torch.manual_seed(17)
b1 = torch.randn(100, device="ocl:1").cpu()
b0 = torch.randn(100, device="ocl:0").cpu()
assert_close(a0, b0, rtol=0, atol=0)
assert_close(a1, b1, rtol=0, atol=0)
torch.ocl.manual_seed(5, device=1)
c1 = torch.randn(10, device="ocl:1").cpu()
torch.ocl.manual_seed(5, device=1)
assert_close(torch.randn(10, device="ocl:1").cpu(), c1, rtol=0, atol=0)
assert len(torch.ocl.default_generators) == 2
assert torch.ocl.default_generators[1].device == torch.device("ocl:1")
g = torch.Generator(device="ocl:1"); g.manual_seed(3)
d = torch.randn(10, device="ocl:1", generator=g).cpu()
g.manual_seed(3)
assert_close(torch.randn(10, device="ocl:1", generator=g).cpu(), d, rtol=0, atol=0)
print("OK")
""")
    assert out == ["OK"]


def test_streams_and_events_on_device_1(run_py, two_devices_available):
    out = run2(run_py, """
cpu = torch.randn(10000)
s = torch.Stream(device="ocl:1")
assert s.device_index == 1
x = cpu.to("ocl:1")
e0 = torch.Event(device="ocl:1")
e0.record(torch.accelerator.current_stream(1))
s.wait_event(e0)
with torch.ocl.stream(s):
    y = x * 3 + 1
    e = torch.Event(device="ocl:1", enable_timing=True)
    e.record(s)
e.synchronize()
assert_close(y.cpu(), cpu * 3 + 1)
torch.ocl.synchronize(1)
torch.accelerator.synchronize(1)
print(torch.ocl.current_stream(1).device_index, torch.ocl.current_device())
""")
    assert out == ["1 0"]


def test_save_load_keeps_device_1(run_py, two_devices_available, tmp_path):
    path = tmp_path / "t.pt"
    out = run2(run_py, f"""
cpu = torch.randn(4, 4)
torch.save(cpu.to("ocl:1"), {str(path)!r})
t = torch.load({str(path)!r})
print(t.device)
assert_close(t.cpu(), cpu)
t0 = torch.load({str(path)!r}, map_location="ocl:0")
print(t0.device)
assert_close(t0.cpu(), cpu)
""")
    assert out == ["ocl:1", "ocl:0"]


def test_device_filter_selects_and_orders(run_py, two_devices_available):
    proc = run_py(
        """
        import torch, pytorch_ocl
        print(torch.ocl.device_count())
        x = torch.tensor([1.0, 2.0]).to("ocl") * 2
        print(x.cpu().tolist())
        """,
        env={"POCL_DEVICES": "pthread pthread", "PYTORCH_OCL_DEVICES": "0:1"},
    )
    assert proc.stdout.splitlines() == ["1", "[2.0, 4.0]"]
    proc = run_py(
        "import torch, pytorch_ocl; print(torch.ocl.device_count())",
        env={"POCL_DEVICES": "pthread pthread", "PYTORCH_OCL_DEVICES": "0:1,0:0"},
    )
    assert proc.stdout.strip() == "2"


def test_stream_context_restores_current_device(run_py, two_devices_available):
    out = run2(run_py, """
s = torch.Stream(device="ocl:1")
with torch.ocl.stream(s):
    inside = torch.ocl.current_device()
    x = torch.ones(2, device="ocl")
print(inside, x.device, torch.ocl.current_device(), torch.ocl.current_stream(0).device_index)
""")
    # like torch.cuda.stream: the stream's device is current inside, the previous one after
    assert out == ["1 ocl:1 0 0"]


def test_cross_device_stream_wait(run_py, two_devices_available):
    # torch semantics (as on CUDA): a stream may wait for an event / stream of another device.
    out = run2(run_py, """
cpu = torch.randn(5000)
a1 = cpu.to("ocl:1") * 2
e1 = torch.Event(device="ocl:1")
e1.record(torch.accelerator.current_stream(1))
results = []
for name, fn in (("wait_event", lambda: torch.accelerator.current_stream(0).wait_event(e1)),
                 ("wait_stream", lambda: torch.Stream(device="ocl:0").wait_stream(torch.accelerator.current_stream(1)))):
    try:
        fn()
        results.append(name + " ok")
    except Exception as e:
        results.append(f"{name} {type(e).__name__}: {str(e)[:150]}")
b0 = a1.to("ocl:0") + 1
assert_close(b0.cpu(), cpu * 2 + 1)
print("; ".join(results))
""")
    assert out == ["wait_event ok; wait_stream ok"]
