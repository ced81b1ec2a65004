"""Device guard, streams and events through torch.Stream / torch.Event / torch.accelerator."""
import pytest
import torch
from torch.testing import assert_close


def _work(x, n=4):
    for _ in range(n):
        x = x * 1.5 + 1
    return x


def _work_cpu(x, n=4):
    for _ in range(n):
        x = x * 1.5 + 1
    return x


def test_torch_stream_on_ocl():
    s = torch.Stream(device="ocl")
    assert s.device.type == "ocl"
    assert s.device_index == 0
    s2 = torch.ocl.Stream()
    assert s2.device.type == "ocl"


def test_current_and_default_stream():
    cur = torch.ocl.current_stream()
    assert cur.device.type == "ocl"
    acc = torch.accelerator.current_stream()
    assert acc.device.type == "ocl"
    assert acc == cur
    default = torch.ocl.default_stream()
    assert default == cur  # nothing was set yet


def test_stream_context_switches_current_stream():
    s = torch.Stream(device="ocl")
    before = torch.accelerator.current_stream()
    with torch.ocl.stream(s):
        assert torch.accelerator.current_stream() == s
        assert torch.ocl.current_stream() == s
    assert torch.accelerator.current_stream() == before


def test_torch_stream_as_context_manager():
    s = torch.Stream(device="ocl")
    before = torch.accelerator.current_stream()
    with s:
        assert torch.accelerator.current_stream() == s
    assert torch.accelerator.current_stream() == before


def test_event_record_and_synchronize():
    cpu = torch.randn(10000)
    x = cpu.to("ocl")
    y = _work(x)
    e = torch.Event(device="ocl")
    e.record()
    e.synchronize()
    assert e.query()
    assert_close(y.cpu(), _work_cpu(cpu))


def test_unrecorded_event_query_is_true():
    e = torch.Event(device="ocl")
    assert e.query()
    e.synchronize()


def test_ocl_event_factory():
    e = torch.ocl.Event(enable_timing=True)
    e.record()
    e.synchronize()
    assert e.query()


def test_elapsed_time():
    start = torch.Event(device="ocl", enable_timing=True)
    end = torch.Event(device="ocl", enable_timing=True)
    x = torch.randn(100000, device="ocl")
    start.record()
    y = _work(x, 8)
    end.record()
    end.synchronize()
    ms = start.elapsed_time(end)
    assert isinstance(ms, float)
    assert ms >= 0.0
    assert ms < 60_000
    assert_close(y.cpu(), _work_cpu(x.cpu(), 8))


def test_side_stream_with_event_dependencies():
    cpu = torch.randn(200000)
    s = torch.Stream(device="ocl")
    x = cpu.to("ocl")
    a = _work(x)  # default stream
    ready = torch.Event(device="ocl")
    ready.record()  # on the default stream
    s.wait_event(ready)
    with torch.ocl.stream(s):
        b = a * 2 - 3
        done = torch.Event(device="ocl")
        done.record(s)
    torch.accelerator.current_stream().wait_event(done)
    c = b + 1
    assert_close(c.cpu(), (_work_cpu(cpu) * 2 - 3) + 1)


def test_stream_wait_stream_and_synchronize():
    cpu = torch.randn(50000)
    s = torch.Stream(device="ocl")
    x = cpu.to("ocl")
    y = x * 3
    s.wait_stream(torch.accelerator.current_stream())
    with torch.ocl.stream(s):
        z = y + 2
    s.synchronize()
    assert all(_queries(s))
    assert_close(z.cpu(), cpu * 3 + 2)


def test_accelerator_synchronize():
    cpu = torch.randn(100000)
    x = cpu.to("ocl")
    y = _work(x)
    torch.accelerator.synchronize()
    torch.accelerator.synchronize(0)
    assert_close(y.cpu(), _work_cpu(cpu))


def test_ops_inside_stream_context_are_correct():
    cpu_a, cpu_b = torch.randn(64, 33), torch.randn(64, 33)
    s = torch.Stream(device="ocl")
    with torch.ocl.stream(s):
        a = cpu_a.to("ocl")
        b = cpu_b.to("ocl")
        c = (a + b) * a - b / 2
        total = c.sum()
        result = c.cpu()
    assert_close(result, (cpu_a + cpu_b) * cpu_a - cpu_b / 2)
    assert_close(total.cpu(), ((cpu_a + cpu_b) * cpu_a - cpu_b / 2).sum(), rtol=1e-4, atol=1e-4)


def test_record_stream_keeps_memory_valid():
    cpu = torch.randn(300000)
    s = torch.Stream(device="ocl")
    x = cpu.to("ocl")
    s.wait_stream(torch.accelerator.current_stream())
    with torch.ocl.stream(s):
        y = _work(x, 6)
    x.record_stream(s)
    del x
    # New allocations on the default stream must not hand out x's block while s may read it.
    junk = [torch.full((300000,), 7.0, device="ocl") for _ in range(3)]
    torch.accelerator.current_stream().wait_stream(s)
    assert_close(y.cpu(), _work_cpu(cpu, 6))
    for j in junk:
        assert_close(j.cpu(), torch.full((300000,), 7.0))


def test_stream_on_invalid_device_raises():
    with pytest.raises((IndexError, RuntimeError, ValueError)):
        torch.Stream(device=f"ocl:{torch.ocl.device_count() + 2}")


def test_device_guard_via_tensor_device():
    # Ops dispatch through the tensor's device guard; the current device is restored afterwards.
    x = torch.ones(3, device="ocl:0")
    with torch.ocl.device(0):
        y = x + x
    assert torch.ocl.current_device() == 0
    assert_close(y.cpu(), torch.full((3,), 2.0))


def test_event_wait_on_default_stream():
    cpu = torch.randn(1000)
    e = torch.Event(device="ocl")
    x = cpu.to("ocl") * 2
    e.record()
    e.wait()  # current stream waits: a no-op ordering-wise, must not deadlock
    torch.ocl.synchronize()
    assert_close(x.cpu(), cpu * 2)


def _queries(stream, n=20):
    return [stream.query() for _ in range(n)]


def test_idle_new_stream_query_is_true():
    results = []
    for _ in range(4):
        s = torch.Stream(device="ocl")
        s.synchronize()
        results += _queries(s)
    assert all(results), f"an idle stream must report query() == True; got {results.count(False)}/80 False"


def test_default_stream_query_after_synchronize():
    cpu = torch.randn(1000)
    x = cpu.to("ocl") * 2
    torch.ocl.synchronize()
    results = _queries(torch.accelerator.current_stream())
    assert all(results), f"after synchronize() query() must be True; got {results.count(False)}/20 False"
    assert_close(x.cpu(), cpu * 2)
